package httprecorder

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func start(t *testing.T, o Options) *Server {
	t.Helper()
	s, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// noRedirects is a client that returns a 3xx as it is.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// send sends method to path with body and the header fields kv, and
// returns the status, the Retry-After and Location fields, and the body.
func send(t *testing.T, ctx context.Context, s *Server, method, path, body string, kv ...string) (int, http.Header, []byte, error) {
	t.Helper()
	r, err := http.NewRequestWithContext(ctx, method, s.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		r.Header.Set(kv[i], kv[i+1])
	}
	resp, err := noRedirects.Do(r)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestListensOnLoopbackOnly(t *testing.T) {
	s := start(t, Options{})
	u, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if u.Hostname() != "127.0.0.1" || u.Port() == "" || u.Port() == "0" || s.Host() != u.Host {
		t.Fatalf("URL %s, Host %s: want http://127.0.0.1:<port chosen>", s.URL(), s.Host())
	}
}

func TestWriteAnsweredOKIsAppliedAndRecordedByLengthAndDigest(t *testing.T) {
	s := start(t, Options{})
	const body = `{"text":"deploy done"}`
	status, _, got, err := send(t, t.Context(), s, http.MethodPost, "/hooks/chat?room=ops", body, "Content-Type", "application/json", "X-Team", "core")
	if err != nil || status != http.StatusOK {
		t.Fatalf("POST: %d %v", status, err)
	}
	var answer struct {
		ID, Method, Path, SHA256 string
		Bytes                    int
	}
	if err := json.Unmarshal(got, &answer); err != nil || answer.ID != "A-1" || answer.Method != "POST" || answer.Path != "/hooks/chat" ||
		answer.Bytes != len(body) || answer.SHA256 != digest(body) {
		t.Errorf("answer %s (%v)", got, err)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	r := reqs[0]
	if r.Seq != 1 || r.Method != "POST" || r.Path != "/hooks/chat" || r.Query != "room=ops" || r.BodyBytes != len(body) || r.BodySHA256 != digest(body) ||
		r.Status != 200 || !r.Applied || r.Replayed || r.Application != "A-1" || r.Header.Get("X-Team") != "core" || r.Key != "" {
		t.Errorf("record %+v", r)
	}
	if s.Applications() != 1 {
		t.Errorf("%d applications, want 1", s.Applications())
	}
}

func TestReadsNeverApply(t *testing.T) {
	s := start(t, Options{})
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		status, _, got, err := send(t, t.Context(), s, m, "/items", "", "Idempotency-Key", "k-read")
		if err != nil || status != http.StatusOK || (m == http.MethodGet && string(got) != `{"path":"/items"}`) {
			t.Errorf("%s: %d %s %v", m, status, got, err)
		}
	}
	for _, r := range s.Requests() {
		if r.Applied || r.Replayed || r.Application != "" || r.Key != "k-read" {
			t.Errorf("record %+v", r)
		}
	}
	if s.Applications() != 0 {
		t.Errorf("%d applications, want 0", s.Applications())
	}
}

func TestSameKeyAndBodyIsAppliedOnceAndAnsweredTheSame(t *testing.T) {
	s := start(t, Options{})
	var answers []string
	for range 3 {
		status, _, got, err := send(t, t.Context(), s, http.MethodPost, "/jobs", `{"n":1}`, "Idempotency-Key", "run-1/2")
		if err != nil || status != http.StatusOK {
			t.Fatalf("POST: %d %v", status, err)
		}
		answers = append(answers, string(got))
	}
	if answers[0] != answers[1] || answers[1] != answers[2] {
		t.Errorf("answers differ: %q", answers)
	}
	reqs := s.Requests()
	if s.Applications() != 1 || !reqs[0].Applied || !reqs[1].Replayed || reqs[1].Applied || !reqs[2].Replayed || reqs[2].Application != "A-1" {
		t.Errorf("%d applications; records %+v", s.Applications(), reqs)
	}
	// Another key is another application.
	if status, _, got, _ := send(t, t.Context(), s, http.MethodPost, "/jobs", `{"n":1}`, "Idempotency-Key", "run-1/3"); status != 200 || !strings.Contains(string(got), `"A-2"`) {
		t.Errorf("another key: %d %s", status, got)
	}
}

func TestSameKeyWithAnotherBodyIsRefused422(t *testing.T) {
	s := start(t, Options{KeyHeader: "x-request-key"})
	if status, _, _, err := send(t, t.Context(), s, http.MethodPut, "/doc", "a", "X-Request-Key", "k"); err != nil || status != 200 {
		t.Fatalf("first: %d %v", status, err)
	}
	if status, _, _, err := send(t, t.Context(), s, http.MethodPut, "/doc", "b", "X-Request-Key", "k"); err != nil || status != http.StatusUnprocessableEntity {
		t.Fatalf("another body under the key: %d %v, want 422", status, err)
	}
	if s.Applications() != 1 {
		t.Errorf("%d applications, want 1", s.Applications())
	}
}

func TestAnswersNotAppliedLeaveTheKeyFree(t *testing.T) {
	s := start(t, Options{})
	s.Script("/hooks/chat", TooManyRequests(2), Status(http.StatusServiceUnavailable), Redirect(http.StatusTemporaryRedirect, "http://other.example/x"))
	want := []struct {
		status int
		field  string
		value  string
	}{{429, "Retry-After", "2"}, {503, "", ""}, {307, "Location", "http://other.example/x"}, {200, "", ""}}
	for i, w := range want {
		status, h, _, err := send(t, t.Context(), s, http.MethodPost, "/hooks/chat", "hi", "Idempotency-Key", "k1")
		if err != nil || status != w.status || (w.field != "" && h.Get(w.field) != w.value) {
			t.Errorf("attempt %d: %d %v %v, want %d %s: %s", i+1, status, h, err, w.status, w.field, w.value)
		}
	}
	reqs := s.Requests()
	for i, r := range reqs[:3] {
		if r.Applied || r.Replayed {
			t.Errorf("attempt %d (%d) applied", i+1, r.Status)
		}
	}
	if !reqs[3].Applied || reqs[3].Application != "A-1" || s.Applications() != 1 {
		t.Errorf("the fourth attempt %+v; %d applications", reqs[3], s.Applications())
	}
}

func TestAppliedGatewayErrorIsReplayedUnderItsKey(t *testing.T) {
	s := start(t, Options{})
	s.Script("/jobs", Answer{Status: http.StatusBadGateway, Applied: true})
	if status, _, _, _ := send(t, t.Context(), s, http.MethodPost, "/jobs", "x", "Idempotency-Key", "k"); status != http.StatusBadGateway {
		t.Fatalf("first: %d, want 502", status)
	}
	status, _, got, _ := send(t, t.Context(), s, http.MethodPost, "/jobs", "x", "Idempotency-Key", "k")
	if status != 200 || !strings.Contains(string(got), `"A-1"`) || s.Applications() != 1 {
		t.Errorf("retry: %d %s, %d applications; want the kept answer of A-1, applied once", status, got, s.Applications())
	}
}

func TestHangAppliesTheWriteAndAnswersNothingUntilTheClientGivesUp(t *testing.T) {
	s := start(t, Options{})
	s.Script("/slow", Hang())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, _, _, err := send(t, ctx, s, http.MethodPost, "/slow", `{"a":1}`, "Idempotency-Key", "k")
		done <- err
	}()
	reqs, err := s.Wait(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if r := reqs[0]; r.Status != 0 || !r.Applied || r.BodyBytes != 7 {
		t.Errorf("the hanging request's record %+v: want status 0, applied, its whole body read", r)
	}
	select {
	case err := <-done:
		t.Fatalf("the client had an answer before giving up: %v", err)
	default:
	}
	cancel() // the client's timeout
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the client ended with %v, want its own cancellation", err)
	}
	// A retry under the key gets the applied write's answer.
	if status, _, got, _ := send(t, t.Context(), s, http.MethodPost, "/slow", `{"a":1}`, "Idempotency-Key", "k"); status != 200 || !strings.Contains(string(got), `"A-1"`) {
		t.Errorf("retry: %d %s", status, got)
	}
}

func TestCloseEndsAHangingAnswer(t *testing.T) {
	s, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Script("/slow", Hang())
	done := make(chan error, 1)
	go func() {
		_, _, _, err := send(t, t.Context(), s, http.MethodGet, "/slow", "")
		done <- err
	}()
	if _, err := s.Wait(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Error("the hanging request got an answer after Close")
	}
	if _, _, _, err := send(t, t.Context(), s, http.MethodGet, "/", ""); err == nil {
		t.Error("the service answered after Close")
	}
}

func TestCredentialsAreRedactedInRecords(t *testing.T) {
	s := start(t, Options{})
	const secret = "s3cr3t-token-value"
	if _, _, _, err := send(t, t.Context(), s, http.MethodPost, "/x", "b", "Authorization", "Bearer "+secret, "Cookie", "sid="+secret, "Proxy-Authorization", "Basic "+secret); err != nil {
		t.Fatal(err)
	}
	r := s.Requests()[0]
	if got := fmt.Sprintf("%+v", r); strings.Contains(got, secret) {
		t.Errorf("the record holds a credential: %s", got)
	}
	for _, k := range redacted {
		if r.Header.Get(k) != "<redacted>" {
			t.Errorf("%s: %q, want <redacted> (the record shows it was sent)", k, r.Header.Get(k))
		}
	}
}

func TestOversizedBodyIsRefused413AndNotApplied(t *testing.T) {
	s := start(t, Options{MaxBody: 4})
	if status, _, _, err := send(t, t.Context(), s, http.MethodPost, "/x", "12345"); err != nil || status != http.StatusRequestEntityTooLarge {
		t.Fatalf("%d %v, want 413", status, err)
	}
	if status, _, _, err := send(t, t.Context(), s, http.MethodPost, "/x", "1234"); err != nil || status != http.StatusOK {
		t.Fatalf("at the bound: %d %v, want 200", status, err)
	}
	if r := s.Requests(); r[0].Applied || !r[1].Applied || s.Applications() != 1 {
		t.Errorf("records %+v", r)
	}
}

func TestOtherMethodsAre405(t *testing.T) {
	s := start(t, Options{})
	status, h, _, err := send(t, t.Context(), s, http.MethodOptions, "/x", "")
	if err != nil || status != http.StatusMethodNotAllowed || h.Get("Allow") == "" {
		t.Errorf("OPTIONS: %d %v %v", status, h, err)
	}
}

func TestScriptedBodyIsSentAsJSON(t *testing.T) {
	s := start(t, Options{})
	s.Script("/issues", Answer{Status: http.StatusCreated, Body: map[string]any{"number": 7}, Header: http.Header{"Etag": {`"v1"`}}})
	status, h, got, err := send(t, t.Context(), s, http.MethodPost, "/issues", "{}")
	if err != nil || status != http.StatusCreated || string(got) != `{"number":7}` || h.Get("Content-Type") != "application/json" || h.Get("ETag") != `"v1"` {
		t.Errorf("%d %v %s %v", status, h, got, err)
	}
	if !s.Requests()[0].Applied {
		t.Error("a 201 to a POST was not applied")
	}
}

func TestWaitReturnsTheContextsErrorWhenTooFewArrive(t *testing.T) {
	s := start(t, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Wait(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait: %v, want context.Canceled", err)
	}
}

func TestEchoHeadersQuotesTheAuthorizationTheRecordOnlyDigests(t *testing.T) {
	srv, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.Script("/echo", Answer{Status: http.StatusInternalServerError, EchoHeaders: true})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL()+"/echo", nil)
	req.Header.Set("Authorization", "Bearer canary-1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "Bearer canary-1") {
		t.Errorf("answer %d %s, want 500 quoting the Authorization", res.StatusCode, body)
	}
	rec := srv.Requests()[0]
	d := sha256.Sum256([]byte("Bearer canary-1"))
	if rec.AuthorizationSHA256 != hex.EncodeToString(d[:]) || rec.Header.Get("Authorization") != "<redacted>" {
		t.Errorf("record %q %q, want the digest and <redacted>", rec.AuthorizationSHA256, rec.Header.Get("Authorization"))
	}
}
