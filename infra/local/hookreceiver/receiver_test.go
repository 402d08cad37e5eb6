package hookreceiver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

func start(t *testing.T) *Receiver {
	t.Helper()
	r, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// post sends body to path with headers as webhook-delivery sends a
// delivery, through webhook.Sender (the local stack's endpoint rules:
// the receiver's host and port allowed, 127.0.0.1 exempted), and returns
// the status answered.
func post(t *testing.T, r *Receiver, path string, body []byte, headers http.Header) int {
	t.Helper()
	rules, err := webhook.ParseEndpointRules([]string{r.Host()}, []string{"127.0.0.1/32"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := (&webhook.Sender{Rules: rules}).Send(t.Context(), r.URL(path), headers, body)
	if a.Status == 0 {
		t.Fatalf("no answer from the receiver: %s", a.ErrorClass)
	}
	return a.Status
}

// delivery is one delivery signed with key at ts: its webhook-id, its
// body (an event's shape; the receiver reads none of it) and its header
// fields, the Standard Webhooks three and traceparent.
func delivery(t *testing.T, key []byte, ts time.Time) (string, []byte, http.Header) {
	t.Helper()
	id, body := "evt_0123456789abcdef", []byte(`{"type":"call.unknown","timestamp":"2026-12-02T23:00:00Z","data":{"run":"run-1"}}`)
	sig, err := webhook.Sign([][]byte{key}, id, ts, body)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(webhook.HeaderID, id)
	h.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(webhook.HeaderSignature, sig)
	h.Set(HeaderTraceparent, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	return id, body, h
}

func newKey(t *testing.T) []byte {
	t.Helper()
	_, key, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// The receiver listens on 127.0.0.1 only, on a port the system chose, and
// its URL for a path is plain http to that host.
func TestReceiverListensOnLoopbackOnly(t *testing.T) {
	r := start(t)
	host, port, err := net.SplitHostPort(r.Host())
	if err != nil || host != "127.0.0.1" || port == "0" || port != r.Port() {
		t.Fatalf("Host %q, Port %q (%v): want 127.0.0.1 and the port chosen", r.Host(), r.Port(), err)
	}
	if got := r.URL("/hooks/a"); got != "http://127.0.0.1:"+port+"/hooks/a" {
		t.Errorf("URL %q", got)
	}
}

// Each request is recorded under its path, in arrival order, with its
// attempt number on that path, the Standard Webhooks headers and
// traceparent, every header field, its body and the status answered.
func TestReceiverRecordsEachRequestUnderItsPath(t *testing.T) {
	r := start(t)
	key := newKey(t)
	id, body, headers := delivery(t, key, time.Now())
	before := time.Now()
	headers.Set("X-Other", "other")
	post(t, r, "/a", body, headers)
	post(t, r, "/b", []byte("second"), nil)
	post(t, r, "/a", []byte("third"), nil)

	a := r.Requests("/a")
	if len(a) != 2 {
		t.Fatalf("%d requests to /a, want 2", len(a))
	}
	first := a[0]
	if first.Path != "/a" || first.Attempt != 1 || first.ID != id || first.Timestamp != headers.Get(webhook.HeaderTimestamp) ||
		first.Signature != headers.Get(webhook.HeaderSignature) || first.Traceparent != headers.Get(HeaderTraceparent) || !bytes.Equal(first.Body, body) || first.Truncated || first.Status != http.StatusOK {
		t.Errorf("first request to /a: %+v", first)
	}
	if first.Header.Get("X-Other") != "other" || first.At.Before(before) || first.At.After(time.Now()) {
		t.Errorf("first request to /a: header %v, at %v", first.Header, first.At)
	}
	if a[1].Attempt != 2 || string(a[1].Body) != "third" || a[1].ID != "" {
		t.Errorf("second request to /a: %+v", a[1])
	}
	if b := r.Requests("/b"); len(b) != 1 || b[0].Attempt != 1 || string(b[0].Body) != "second" {
		t.Errorf("requests to /b: %+v", b)
	}
	if n := len(r.Requests("/c")); n != 0 {
		t.Errorf("%d requests to /c, which got none", n)
	}
}

// A path answers 200 until it is given an answer function; then each
// request gets the status of its attempt number on that path, counted
// from the path's first request; a nil function restores 200. Other
// paths keep answering 200.
func TestReceiverAnswersEachPathByAttempt(t *testing.T) {
	r := start(t)
	if got := post(t, r, "/flaky", nil, nil); got != http.StatusOK {
		t.Fatalf("the default answer is %d, want 200", got)
	}
	r.Answer("/flaky", func(attempt int) int {
		if attempt <= 3 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	var got []int
	for range 3 {
		got = append(got, post(t, r, "/flaky", nil, nil))
	}
	got = append(got, post(t, r, "/steady", nil, nil))
	r.Answer("/flaky", nil)
	got = append(got, post(t, r, "/flaky", nil, nil))
	want := []int{500, 500, 204, 200, 200}
	if !slices.Equal(got, want) {
		t.Errorf("answered %v, want %v", got, want)
	}
	var recorded []int
	for _, q := range r.Requests("/flaky") {
		recorded = append(recorded, q.Status)
	}
	if want := []int{200, 500, 500, 204, 200}; !slices.Equal(recorded, want) {
		t.Errorf("recorded statuses %v, want %v", recorded, want)
	}
}

// Wait returns a path's requests once its condition accepts them, woken
// by each arrival; requests to other paths do not satisfy it.
func TestReceiverWaitReturnsOnceTheConditionHolds(t *testing.T) {
	r := start(t)
	type result struct {
		got []Request
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := r.Wait(t.Context(), "/a", func(got []Request) bool { return len(got) >= 2 })
		done <- result{got, err}
	}()
	for _, p := range []string{"/a", "/b", "/a"} {
		post(t, r, p, []byte(p), nil)
	}
	res := <-done
	if res.err != nil || len(res.got) != 2 || res.got[0].Path != "/a" || res.got[1].Path != "/a" {
		t.Fatalf("Wait: %+v, %v; want the two requests to /a", res.got, res.err)
	}
}

// Wait checks its condition at once, so requests that arrived before it
// are seen without another arrival.
func TestReceiverWaitSeesRequestsThatArrivedBefore(t *testing.T) {
	r := start(t)
	post(t, r, "/a", nil, nil)
	got, err := r.Wait(t.Context(), "/a", func(got []Request) bool { return len(got) == 1 })
	if err != nil || len(got) != 1 {
		t.Fatalf("Wait: %d requests, %v", len(got), err)
	}
}

// When its context ends first, Wait returns the requests so far and an
// error wrapping the context's, saying how many arrived.
func TestReceiverWaitEndsWithItsContext(t *testing.T) {
	r := start(t)
	post(t, r, "/a", nil, nil)
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	got, err := r.Wait(ctx, "/a", func(got []Request) bool {
		if calls++; calls == 1 {
			cancel()
		}
		return false
	})
	if !errors.Is(err, context.Canceled) || len(got) != 1 || !strings.Contains(err.Error(), "/a got 1 request(s)") {
		t.Fatalf("Wait: %d requests, %v; want 1 and context.Canceled", len(got), err)
	}
}

// A body longer than MaxBody is read to MaxBody only, recorded cut and
// answered 413, whatever the path's answer; one of exactly MaxBody is
// whole.
func TestReceiverCutsABodyLongerThanMaxBody(t *testing.T) {
	r := start(t)
	r.Answer("/big", func(int) int { return http.StatusOK })
	if got := post(t, r, "/big", bytes.Repeat([]byte("a"), MaxBody), nil); got != http.StatusOK {
		t.Errorf("a body of MaxBody bytes was answered %d", got)
	}
	if got := post(t, r, "/big", bytes.Repeat([]byte("a"), MaxBody+1), nil); got != http.StatusRequestEntityTooLarge {
		t.Errorf("a body of MaxBody+1 bytes was answered %d, want 413", got)
	}
	got := r.Requests("/big")
	if len(got) != 2 || len(got[0].Body) != MaxBody || got[0].Truncated || len(got[1].Body) != MaxBody || !got[1].Truncated ||
		got[1].Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("records: %d; want one whole body and one cut", len(got))
	}
}

// Verify accepts a delivery signed with the key and arrived within the
// tolerance, and refuses one signed with another key, one whose body
// changed, one that arrived past the tolerance, one without headers and
// one whose body was cut, with shared/webhook's errors.
func TestVerifyChecksTheSignatureAgainstTheArrival(t *testing.T) {
	r := start(t)
	key, other := newKey(t), newKey(t)
	ts := time.Now().Truncate(time.Second)
	_, body, headers := delivery(t, key, ts)
	post(t, r, "/v", body, headers)
	got := r.Requests("/v")
	if len(got) != 1 {
		t.Fatalf("%d requests", len(got))
	}
	q := got[0]
	if err := Verify(q, key); err != nil {
		t.Fatalf("Verify of a delivery signed with the key: %v", err)
	}
	changed, late, bare, cut := q, q, q, q
	changed.Body = bytes.Replace(q.Body, []byte("run-1"), []byte("run-2"), 1)
	late.At = ts.Add(webhook.Tolerance + time.Second)
	bare.ID, bare.Timestamp, bare.Signature = "", "", ""
	cut.Truncated = true
	for _, c := range []struct {
		name string
		q    Request
		key  []byte
		want error
	}{
		{"another key", q, other, webhook.ErrNoMatchingSig},
		{"a changed body", changed, key, webhook.ErrNoMatchingSig},
		{"past the tolerance", late, key, webhook.ErrTooOld},
		{"no headers", bare, key, webhook.ErrMissingHeader},
		{"a cut body", cut, key, webhook.ErrNoMatchingSig},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := Verify(c.q, c.key); !errors.Is(err, c.want) {
				t.Errorf("Verify: %v, want %v", err, c.want)
			}
		})
	}
}

// After Close the receiver takes no request, and what it recorded stays
// readable.
func TestReceiverCloseKeepsTheRecords(t *testing.T) {
	r, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	post(t, r, "/a", nil, nil)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Post(r.URL("/a"), "text/plain", nil); err == nil {
		t.Errorf("a closed receiver took a request")
	}
	if n := len(r.Requests("/a")); n != 1 {
		t.Errorf("%d records after Close, want 1", n)
	}
	if err := r.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// ReadSubscription reads what toolgate webhooks subscribe --json prints:
// the subscription and the key of its secret; output that is not one
// object, holds no id or no valid secret is refused without quoting the
// secret.
func TestReadSubscriptionKeepsTheKeyOfTheSecret(t *testing.T) {
	whsec, key, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(webhookapi.SubscribeResult{Subscription: webhookapi.Subscription{ID: "sub_a", URL: "http://127.0.0.1:4000/a",
		Events: []string{"run.*"}, Status: "active"}, Secret: whsec}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadSubscription(out)
	if err != nil || s.ID != "sub_a" || s.URL != "http://127.0.0.1:4000/a" || !bytes.Equal(s.Key, key) {
		t.Fatalf("ReadSubscription: %+v, %v", s.Subscription, err)
	}
	for name, bad := range map[string]string{
		"the text form": "sub_a active http://127.0.0.1:4000/a events run.*\nsecret (shown once; store it where the receiver reads it): " + whsec + "\n",
		"no id":         `{"subscription": {}, "secret": "` + whsec + `"}`,
		"no secret":     `{"subscription": {"id": "sub_a"}}`,
		"a short key":   `{"subscription": {"id": "sub_a"}, "secret": "whsec_AAAA"}`,
	} {
		if _, err := ReadSubscription([]byte(bad)); err == nil || strings.Contains(err.Error(), whsec[len(webhook.SecretPrefix):len(webhook.SecretPrefix)+8]) {
			t.Errorf("%s: ReadSubscription: %v; want an error without the secret", name, err)
		}
	}
}
