package console

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/tool"
)

// recordingBackend is a hand-written fake of review-decision: there is no
// local stand-in of the CLI's signing transport inside this package (the
// browser tests in infra/local/console drive the real one on the local
// stack). It records every call, and checks its arguments: an unknown id,
// a status it does not list or a decision without a sha256 digest fail
// the test rather than being accepted.
type recordingBackend struct {
	t       *testing.T
	view    review.View
	park    park.View
	calls   []string
	decided []decideCall
	refuse  error
	// parkDigests are the digests ParkDecide was bound to, in order.
	parkDigests []string
}

type decideCall struct {
	ID            string
	Verdict       review.Verdict
	Digest        string
	Reason        string
	Answer, Edits json.RawMessage
}

func (b *recordingBackend) List(_ context.Context, status string) (review.ListResult, error) {
	b.calls = append(b.calls, "list "+status)
	switch status {
	case "pending":
		return review.ListResult{Reviews: []review.View{b.view}}, nil
	case "approved", "rejected":
		return review.ListResult{}, nil
	}
	b.t.Errorf("List(%q): not a review status", status)
	return review.ListResult{}, fmt.Errorf("bad status")
}

func (b *recordingBackend) Show(_ context.Context, id string) (review.View, error) {
	b.calls = append(b.calls, "show "+id)
	if id != b.view.ReviewID {
		b.t.Errorf("Show(%q): want %q", id, b.view.ReviewID)
		return review.View{}, &Refusal{Code: string(review.CodeNotFound), Message: "no such review"}
	}
	return b.view, nil
}

func (b *recordingBackend) Decide(_ context.Context, id string, v review.Verdict, digest, reason string, answer, edits json.RawMessage) (review.DecideResult, error) {
	b.calls = append(b.calls, "decide "+id)
	if id != b.view.ReviewID || !strings.HasPrefix(digest, "sha256:") || (v != review.Approve && v != review.Reject) {
		b.t.Errorf("Decide(%q, %q, %q): want the review's id, approve or reject and a sha256 digest", id, v, digest)
	}
	if v == review.Reject && strings.TrimSpace(reason) == "" {
		b.t.Errorf("Decide: a rejection reached the backend without a reason")
	}
	if _, err := review.DecideBinding(id, v, digest, answer, edits); err != nil {
		b.t.Errorf("Decide: no binding for its arguments: %v", err)
	}
	b.decided = append(b.decided, decideCall{id, v, digest, reason, answer, edits})
	if b.refuse != nil {
		return review.DecideResult{}, b.refuse
	}
	return review.DecideResult{ReviewID: id, Status: review.Approved, Changed: true}, nil
}

func (b *recordingBackend) ParkList(_ context.Context, status string) (park.ListResult, error) {
	b.calls = append(b.calls, "park list "+status)
	if status != "parked" {
		b.t.Errorf("ParkList(%q): want parked", status)
	}
	return park.ListResult{Parks: []park.View{b.park}}, nil
}

func (b *recordingBackend) ParkShow(_ context.Context, id string) (park.View, error) {
	b.calls = append(b.calls, "park show "+id)
	if id != b.park.ParkID {
		b.t.Errorf("ParkShow(%q): want %q", id, b.park.ParkID)
	}
	return b.park, nil
}

func (b *recordingBackend) ParkDecide(_ context.Context, id, decision, digest, reason string) (park.DecideResult, error) {
	b.calls = append(b.calls, "park decide "+id+" "+decision)
	b.parkDigests = append(b.parkDigests, digest)
	if id != b.park.ParkID || decision != "approve" && decision != "reject" && decision != "resume" {
		b.t.Errorf("ParkDecide(%q, %q)", id, decision)
	}
	if b.refuse != nil {
		return park.DecideResult{}, b.refuse
	}
	return park.DecideResult{ParkID: id, Changed: true}, nil
}

const port = 48123

var now = time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)

func emailInput() json.RawMessage {
	return json.RawMessage(`{"to":["ana@example.com","bob@xn--bcher-kva.example"],"cc":["eve@evil.example"],"subject":"Your invoice\u202e","text":"Hello","html":"<p>Hi<script>fetch('http://127.0.0.1:9/x')</script><img src=\"http://images.example/p.png\"><meta http-equiv=\"refresh\" content=\"0;url=http://127.0.0.1:9/\"><link rel=stylesheet href=\"http://127.0.0.1:9/c.css\"><base href=\"http://127.0.0.1:9/\"><div style=\"background:url(http://127.0.0.1:9/bg)\">x</div><a href=\"http://127.0.0.1:9/click\">click</a></p>"}`)
}

func newBackend(t *testing.T) *recordingBackend {
	in := emailInput()
	_, digest, err := tool.InputDigest(in)
	if err != nil {
		t.Fatal(err)
	}
	return &recordingBackend{t: t,
		view: review.View{ReviewID: "rv_1", Status: review.Pending, RunID: "arn:aws:states:eu-west-1:123456789012:execution:sm:run1",
			Step: "send", Of: "send", Tool: "send-email", Kind: tool.ReviewOfCall, Input: in, InputDigest: digest,
			ExpiresAt: now.Add(time.Hour).Format(time.RFC3339), Requester: "arn:aws:iam::123456789012:user/author",
			Editable: []string{"subject"},
			Email: &review.EmailView{From: review.AddressVerdict{Address: "news@example.com", Verdict: "allow"},
				To: []review.AddressVerdict{{Address: "ana@example.com", Verdict: "allow"}, {Address: "bob@xn--bcher-kva.example", Verdict: "allow"}},
				Cc: []review.AddressVerdict{{Address: "eve@evil.example", Verdict: "refuse", Rule: "no rule matches"}}},
			RunCalls: []review.RunCall{{Seq: "0001", Step: "draft", Tool: "http", Status: "COMPLETED", At: "2026-12-03T17:59:00Z"}}},
		park: park.View{ParkID: "pk_aaaaaaaaaaaaaaaaaaaaaaaaaa", Status: park.StatusParked, Cause: park.SchemaChanged, Tool: "lookup",
			ChangedPointers: []string{"/inputSchema/properties/a", "/inputSchema/required"}, AdditivePointers: []string{"/inputSchema/properties/a"},
			PinnedDigest: "sha256:aa", CurrentDigest: "sha256:bb"}}
}

// newServer is a server over b, with a seeded random source (not for
// production: tests only) and its log in logs.
func newServer(t *testing.T, b Backend, seed uint64) (*Server, *bytes.Buffer) {
	var logs bytes.Buffer
	s, err := New(Config{Backend: b, Port: port, Now: func() time.Time { return now },
		Random: rand.NewChaCha8([32]byte{byte(seed)}), Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return s, &logs
}

const origin = "http://127.0.0.1:48123"

// navigate is a request as a browser sends a top-level navigation typed
// or pasted into its address bar.
func navigate(target string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, origin+target, nil)
	r.Header.Set("Sec-Fetch-Site", "none")
	r.Header.Set("Sec-Fetch-Mode", "navigate")
	r.Header.Set("Sec-Fetch-Dest", "document")
	return r
}

// sameOrigin is a request the console's own page makes.
func sameOrigin(method, target string, form url.Values, cookie string) *http.Request {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, origin+target, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Origin", origin)
	}
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	r.Header.Set("Sec-Fetch-Mode", "navigate")
	r.Header.Set("Sec-Fetch-Dest", "document")
	if cookie != "" {
		r.AddCookie(&http.Cookie{Name: SessionCookieName(port), Value: cookie})
	}
	return r
}

func serve(s *Server, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

// open opens s with its capability and returns the session cookie.
func open(t *testing.T, s *Server) string {
	t.Helper()
	u, _ := url.Parse(s.OpenURL())
	w := serve(s, navigate(u.RequestURI()))
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/" {
		t.Fatalf("open: %d %q; want 303 to /", w.Code, w.Header().Get("Location"))
	}
	for _, c := range w.Result().Cookies() {
		if c.Name == SessionCookieName(port) {
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
				t.Fatalf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/", c)
			}
			return c.Value
		}
	}
	t.Fatal("open set no session cookie")
	return ""
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
var digestField = regexp.MustCompile(`name="digest" value="([^"]+)"`)

func TestCapabilityOpensOnceAndASecondUseIsRefusedAndLoggedWithoutIt(t *testing.T) {
	b := newBackend(t)
	s, logs := newServer(t, b, 1)
	capURL := s.OpenURL()
	if !strings.HasPrefix(capURL, origin+"/open?c=") {
		t.Fatalf("OpenURL = %q", capURL)
	}
	capability := strings.TrimPrefix(capURL, origin+"/open?c=")
	if raw, err := decodeB64(capability); err != nil || len(raw) != CapabilityBytes {
		t.Fatalf("capability %q: want %d random bytes, base64url", capability, CapabilityBytes)
	}
	cookie := open(t, s)
	u, _ := url.Parse(capURL)
	w := serve(s, navigate(u.RequestURI()))
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), textUsed) {
		t.Fatalf("second use: %d %s; want 403 saying the link was used", w.Code, w.Body)
	}
	if len(w.Result().Cookies()) != 0 {
		t.Fatal("the second use set a cookie")
	}
	if !strings.Contains(logs.String(), "used again") || strings.Contains(logs.String(), capability) || strings.Contains(logs.String(), cookie) {
		t.Fatalf("log %q: want the reuse logged without the capability or the cookie", logs)
	}
	if w := serve(s, navigate("/")); w.Code != http.StatusUnauthorized {
		t.Fatalf("the list without the cookie: %d; want 401", w.Code)
	}
	if w := serve(s, sameOrigin(http.MethodGet, "/", nil, cookie)); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `data-review-id="rv_1"`) {
		t.Fatalf("the list with the cookie: %d %s", w.Code, w.Body)
	}
}

func TestRefusedRequestsNeverReachTheBackend(t *testing.T) {
	b := newBackend(t)
	s, _ := newServer(t, b, 2)
	cookie := open(t, s)
	other, _ := newServer(t, newBackend(t), 3)
	otherCookie := open(t, other)
	page := serve(s, sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie)).Body.String()
	token := csrfField.FindStringSubmatch(page)[1]
	digest := digestField.FindStringSubmatch(page)[1]
	otherToken := other.csrf("/reviews/rv_1")
	approve := func(tok string) url.Values {
		return url.Values{"csrf": {tok}, "digest": {digest}, "decision": {"approve"}}
	}
	b.calls = nil
	cases := []struct {
		name string
		req  func() *http.Request
		want int
	}{
		{"no cookie", func() *http.Request { return sameOrigin(http.MethodGet, "/reviews/rv_1", nil, "") }, 401},
		{"another session's cookie", func() *http.Request { return sameOrigin(http.MethodGet, "/reviews/rv_1", nil, otherCookie) }, 401},
		{"wrong Host", func() *http.Request {
			r := sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie)
			r.Host = "localhost:48123"
			return r
		}, 421},
		{"foreign Origin", func() *http.Request {
			r := sameOrigin(http.MethodPost, "/reviews/rv_1/decide", approve(token), cookie)
			r.Header.Set("Origin", "https://evil.example")
			return r
		}, 403},
		{"another port of 127.0.0.1 as Origin", func() *http.Request {
			r := sameOrigin(http.MethodPost, "/reviews/rv_1/decide", approve(token), cookie)
			r.Header.Set("Origin", "http://127.0.0.1:48124")
			return r
		}, 403},
		{"POST without Origin", func() *http.Request {
			r := sameOrigin(http.MethodPost, "/reviews/rv_1/decide", approve(token), cookie)
			r.Header.Del("Origin")
			return r
		}, 403},
		{"GET with a foreign Origin", func() *http.Request {
			r := sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie)
			r.Header.Set("Origin", "http://127.0.0.1:8080")
			return r
		}, 403},
		{"Sec-Fetch-Site cross-site", func() *http.Request {
			r := sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie)
			r.Header.Set("Sec-Fetch-Site", "cross-site")
			return r
		}, 403},
		{"Sec-Fetch-Site same-site", func() *http.Request {
			r := sameOrigin(http.MethodPost, "/reviews/rv_1/decide", approve(token), cookie)
			r.Header.Set("Sec-Fetch-Site", "same-site")
			return r
		}, 403},
		{"no Sec-Fetch-Site", func() *http.Request {
			r := sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie)
			r.Header.Del("Sec-Fetch-Site")
			return r
		}, 403},
		{"Sec-Fetch-Site none on a POST", func() *http.Request {
			r := sameOrigin(http.MethodPost, "/reviews/rv_1/decide", approve(token), cookie)
			r.Header.Set("Sec-Fetch-Site", "none")
			return r
		}, 403},
		{"Sec-Fetch-Site none for a subresource", func() *http.Request {
			r := sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie)
			r.Header.Set("Sec-Fetch-Site", "none")
			r.Header.Set("Sec-Fetch-Mode", "no-cors")
			return r
		}, 403},
		{"no CSRF token", func() *http.Request {
			f := approve(token)
			f.Del("csrf")
			return sameOrigin(http.MethodPost, "/reviews/rv_1/decide", f, cookie)
		}, 403},
		{"another session's CSRF token", func() *http.Request {
			return sameOrigin(http.MethodPost, "/reviews/rv_1/decide", approve(otherToken), cookie)
		}, 403},
		{"another page's CSRF token", func() *http.Request {
			return sameOrigin(http.MethodPost, "/reviews/rv_1/decide", approve(s.csrf("/parks/pk_aaaaaaaaaaaaaaaaaaaaaaaaaa")), cookie)
		}, 403},
		{"the HTML part as a document", func() *http.Request { return sameOrigin(http.MethodGet, "/reviews/rv_1/html", nil, cookie) }, 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := serve(s, c.req())
			if w.Code != c.want {
				t.Fatalf("status %d; want %d (%s)", w.Code, c.want, w.Body)
			}
			if len(b.calls) != 0 {
				t.Fatalf("the backend was called: %v", b.calls)
			}
		})
	}
	// The same POST, admitted, does reach it.
	if w := serve(s, sameOrigin(http.MethodPost, "/reviews/rv_1/decide", approve(token), cookie)); w.Code != http.StatusSeeOther || len(b.decided) != 1 {
		t.Fatalf("the admitted approval: %d, decided %v", w.Code, b.decided)
	}
}

func TestEmailHTMLIsServedRewrittenUnderACSPThatLoadsNothing(t *testing.T) {
	b := newBackend(t)
	s, _ := newServer(t, b, 4)
	cookie := open(t, s)
	r := sameOrigin(http.MethodGet, "/reviews/rv_1/html", nil, cookie)
	r.Header.Set("Sec-Fetch-Dest", "iframe")
	r.Header.Set("Sec-Fetch-Mode", "navigate")
	w := serve(s, r)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	if got := w.Header().Get("Content-Security-Policy"); got != FrameCSP {
		t.Fatalf("CSP %q; want %q", got, FrameCSP)
	}
	if w.Header().Get("X-DNS-Prefetch-Control") != "off" || w.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("headers %v", w.Header())
	}
	body := strings.ToLower(w.Body.String())
	for _, gone := range []string{"<script", "<img", "<meta", "http-equiv", "<link", "<base", "url(", "fetch(", " href=", " src="} {
		if strings.Contains(body, gone) {
			t.Errorf("the rewritten HTML still holds %q: %s", gone, body)
		}
	}
	if !strings.Contains(body, "[image from images.example]") || !strings.Contains(body, "click") {
		t.Errorf("want the image's placeholder naming its host and the link's text: %s", body)
	}
	page := serve(s, sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie))
	for _, want := range []string{`<iframe id="html-body" sandbox src="/reviews/rv_1/html" title="HTML part">`, `id="email-subject">Your invoice\u{202E}<`,
		`data-verdict="refuse"`, `bob@bücher.example`, `A-label bob@xn--bcher-kva.example`, `id="email-from" data-verdict="allow"`} {
		if !strings.Contains(page.Body.String(), want) {
			t.Errorf("the review page lacks %q", want)
		}
	}
	if got := page.Header().Get("Content-Security-Policy"); got != CSP {
		t.Errorf("page CSP %q", got)
	}
}

func TestDecisionIsBoundToTheDigestThePageShowed(t *testing.T) {
	b := newBackend(t)
	s, _ := newServer(t, b, 5)
	cookie := open(t, s)
	page := serve(s, sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie)).Body.String()
	shown := digestField.FindStringSubmatch(page)[1]
	if shown != b.view.InputDigest || !strings.Contains(page, `id="input-digest" class="digest">`+shown) {
		t.Fatalf("the page shows %q; want the view's digest %q", shown, b.view.InputDigest)
	}
	// The review's input changes after the page was rendered: the
	// decision still names what the reviewer read.
	b.view.InputDigest = "sha256:" + strings.Repeat("0", 64)
	form := url.Values{"csrf": {csrfField.FindStringSubmatch(page)[1]}, "digest": {shown}, "decision": {"approve"}, "edit.subject": {"Your invoice, edited"}}
	w := serve(s, sameOrigin(http.MethodPost, "/reviews/rv_1/decide", form, cookie))
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/reviews/rv_1" {
		t.Fatalf("approve: %d %s", w.Code, w.Body)
	}
	if len(b.decided) != 1 || b.decided[0].Digest != shown || b.decided[0].Verdict != review.Approve || string(b.decided[0].Edits) != `{"subject":"Your invoice, edited"}` {
		t.Fatalf("Decide got %+v; want the shown digest %s and the edit", b.decided, shown)
	}
}

func TestPreviewShowsTheDiffAndTheEditedDigest(t *testing.T) {
	b := newBackend(t)
	s, _ := newServer(t, b, 6)
	cookie := open(t, s)
	page := serve(s, sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie)).Body.String()
	form := url.Values{"csrf": {csrfField.FindStringSubmatch(page)[1]}, "digest": {b.view.InputDigest}, "decision": {"approve"}, "edit.subject": {"New subject"}}
	w := serve(s, sameOrigin(http.MethodPost, "/reviews/rv_1/preview", form, cookie))
	var in map[string]any
	json.Unmarshal(b.view.Input, &in)
	in["subject"] = "New subject"
	merged, _ := json.Marshal(in)
	_, want, _ := tool.InputDigest(merged)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `id="edit-diff"`) || !strings.Contains(w.Body.String(), `id="edited-digest" class="digest">`+want) {
		t.Fatalf("preview: %d; want #edit-diff and #edited-digest %s: %s", w.Code, want, w.Body)
	}
	if len(b.decided) != 0 {
		t.Fatal("a preview decided")
	}
}

func TestRejectionWithoutReasonAndRefusalsAreShownInWords(t *testing.T) {
	b := newBackend(t)
	s, _ := newServer(t, b, 7)
	cookie := open(t, s)
	page := serve(s, sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie)).Body.String()
	token := csrfField.FindStringSubmatch(page)[1]
	w := serve(s, sameOrigin(http.MethodPost, "/reviews/rv_1/decide", url.Values{"csrf": {token}, "digest": {b.view.InputDigest}, "decision": {"reject"}, "reason": {"  "}}, cookie))
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `id="refusal"`) || !strings.Contains(w.Body.String(), "needs a reason") || len(b.decided) != 0 {
		t.Fatalf("reject without reason: %d %v", w.Code, b.decided)
	}
	for code, words := range map[review.Code]string{
		review.CodeSelfApproval: "you asked for this review: another reviewer must decide it",
		review.CodeExpired:      "expired",
		review.CodeConflict:     "already decided",
		review.CodeForbidden:    "not a reviewer",
	} {
		b.refuse = &Refusal{Code: string(code), Message: "refused"}
		w := serve(s, sameOrigin(http.MethodPost, "/reviews/rv_1/decide", url.Values{"csrf": {token}, "digest": {b.view.InputDigest}, "decision": {"approve"}}, cookie))
		if w.Code < 400 || !strings.Contains(w.Body.String(), words) || !strings.Contains(w.Body.String(), `id="refusal"`) {
			t.Errorf("%s: %d; want a 4xx page saying %q", code, w.Code, words)
		}
	}
}

func TestParkPageShowsChangedPointersWithTheirClass(t *testing.T) {
	b := newBackend(t)
	s, _ := newServer(t, b, 8)
	cookie := open(t, s)
	w := serve(s, sameOrigin(http.MethodGet, "/parks/pk_aaaaaaaaaaaaaaaaaaaaaaaaaa", nil, cookie))
	body := w.Body.String()
	for _, want := range []string{`<li data-class="additive"><code>/inputSchema/properties/a</code>`, `<li data-class="breaking"><code>/inputSchema/required</code>`, `id="approve"`, `id="reject-button"`} {
		if !strings.Contains(body, want) {
			t.Errorf("park page lacks %q", want)
		}
	}
	token := csrfField.FindStringSubmatch(body)[1]
	w = serve(s, sameOrigin(http.MethodPost, "/parks/pk_aaaaaaaaaaaaaaaaaaaaaaaaaa/decide", url.Values{"csrf": {token}, "decision": {"approve"}, "digest": {"sha256:bb"}}, cookie))
	if w.Code != http.StatusSeeOther || b.calls[len(b.calls)-1] != "park decide pk_aaaaaaaaaaaaaaaaaaaaaaaaaa approve" {
		t.Fatalf("park approve: %d %v", w.Code, b.calls)
	}
}

// A park decision is bound to the current definition's digest the page
// showed, carried by the form, never to one read again at decision time:
// a definition that changed again after the page was rendered (another
// breaking change) must not be approved from the old page.
func TestParkDecisionIsBoundToTheDigestThePageShowed(t *testing.T) {
	b := newBackend(t)
	s, _ := newServer(t, b, 10)
	cookie := open(t, s)
	body := serve(s, sameOrigin(http.MethodGet, "/parks/pk_aaaaaaaaaaaaaaaaaaaaaaaaaa", nil, cookie)).Body.String()
	for _, form := range []string{"approve", "reject"} {
		if !regexp.MustCompile(`<form id="` + form + `"[^>]*>\n(?:<input[^>]*>\n)*<input type="hidden" name="digest" value="sha256:bb">`).MatchString(body) {
			t.Errorf("the %s form does not carry the digest the page shows", form)
		}
	}
	token := csrfField.FindStringSubmatch(body)[1]
	// The definition changes again while the page is open.
	b.park.CurrentDigest = "sha256:cc"
	w := serve(s, sameOrigin(http.MethodPost, "/parks/pk_aaaaaaaaaaaaaaaaaaaaaaaaaa/decide", url.Values{"csrf": {token}, "decision": {"approve"}, "digest": {"sha256:bb"}}, cookie))
	if w.Code != http.StatusSeeOther || len(b.parkDigests) != 1 || b.parkDigests[0] != "sha256:bb" {
		t.Fatalf("approve from the old page: %d, bound to %v; want the shown sha256:bb", w.Code, b.parkDigests)
	}
	w = serve(s, sameOrigin(http.MethodPost, "/parks/pk_aaaaaaaaaaaaaaaaaaaaaaaaaa/decide", url.Values{"csrf": {token}, "decision": {"approve"}}, cookie))
	if w.Code != http.StatusBadRequest || len(b.parkDigests) != 1 || !strings.Contains(w.Body.String(), `id="refusal"`) {
		t.Fatalf("a form without the digest: %d, backend bound %v; want 400 before the backend", w.Code, b.parkDigests)
	}
}

func TestNoSessionSecretOrCredentialInAnyResponse(t *testing.T) {
	b := newBackend(t)
	s, _ := newServer(t, b, 9)
	cookie := open(t, s)
	for _, path := range []string{"/", "/reviews/rv_1", "/parks/pk_aaaaaaaaaaaaaaaaaaaaaaaaaa", "/static/console.css", "/static/countdown.js"} {
		w := serve(s, sameOrigin(http.MethodGet, path, nil, cookie))
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d", path, w.Code)
		}
		all := fmt.Sprint(w.Header()) + w.Body.String()
		for _, secret := range []string{cookie, "X-Amz-", "proof", "AKIA", "aws_secret"} {
			if strings.Contains(all, secret) {
				t.Errorf("%s: the response holds %q", path, secret)
			}
		}
		for _, h := range []string{"Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy", "Cache-Control", "X-DNS-Prefetch-Control"} {
			if w.Header().Get(h) == "" {
				t.Errorf("%s: no %s", path, h)
			}
		}
	}
}

func decodeB64(s string) ([]byte, error) { return base64RawURL.DecodeString(s) }

var base64RawURL = base64.RawURLEncoding

// An edit field holds the member's own text, so that approving without
// touching it edits nothing, even for a member with invisible characters
// or line breaks a textarea submits as CRLF.
func TestUnchangedEditFieldsEditNothing(t *testing.T) {
	b := newBackend(t)
	b.view.Editable = []string{"subject", "text"}
	var in map[string]any
	json.Unmarshal(b.view.Input, &in)
	in["text"] = strings.Repeat("line\n", 30)
	b.view.Input, _ = json.Marshal(in)
	_, b.view.InputDigest, _ = tool.InputDigest(b.view.Input)
	s, _ := newServer(t, b, 12)
	cookie := open(t, s)
	page := serve(s, sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie)).Body.String()
	if !strings.Contains(page, "value=\"Your invoice\u202e\"") {
		t.Fatalf("the subject's edit field does not hold its own text")
	}
	form := url.Values{"csrf": {csrfField.FindStringSubmatch(page)[1]}, "digest": {b.view.InputDigest}, "decision": {"approve"},
		"edit.subject": {"Your invoice\u202e"}, "edit.text": {strings.ReplaceAll(in["text"].(string), "\n", "\r\n")}}
	if w := serve(s, sameOrigin(http.MethodPost, "/reviews/rv_1/decide", form, cookie)); w.Code != http.StatusSeeOther {
		t.Fatalf("approve: %d %s", w.Code, w.Body)
	}
	if len(b.decided) != 1 || b.decided[0].Edits != nil {
		t.Fatalf("Decide got edits %s; want none", b.decided[0].Edits)
	}
}

// Every member of the call's input reaches the page, in the e-mail and
// HTTP views too: a requester cannot hide a reply-to address, a header
// (an Authorization, a method override) or any member the special views
// do not name.
func TestEveryInputMemberIsShownInTheEmailAndHTTPViews(t *testing.T) {
	b := newBackend(t)
	in := json.RawMessage(`{"to":["ana@example.com"],"reply_to":["phish@evil.example"],"subject":"s","text":"t"}`)
	_, digest, _ := tool.InputDigest(in)
	b.view.Input, b.view.InputDigest = in, digest
	b.view.Email.ReplyTo = []review.AddressVerdict{{Address: "phish@evil.example", Verdict: "refuse", Rule: "no rule"}}
	s, _ := newServer(t, b, 13)
	cookie := open(t, s)
	page := serve(s, sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie)).Body.String()
	if !regexp.MustCompile(`<ul id="email-reply-to"[^>]*><li data-verdict="refuse"[^>]*>phish@evil.example<`).MatchString(page) {
		t.Errorf("the e-mail's reply_to is not shown with its verdict:\n%s", page)
	}
	// Without the show answer's verdicts, the input's reply_to still shows.
	b.view.Email = nil
	page = serve(s, sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie)).Body.String()
	if !strings.Contains(page, `<li data-verdict="unknown">phish@evil.example<`) {
		t.Errorf("the e-mail's reply_to is not shown without the show answer's verdicts")
	}

	in = json.RawMessage(`{"method":"GET","url":"https://api.example.com/x","headers":{"X-HTTP-Method-Override":"DELETE","Authorization":"Bearer planted"},"accept":"text","select":"/a"}`)
	_, digest, _ = tool.InputDigest(in)
	b.view.Tool, b.view.Input, b.view.InputDigest, b.view.Email = "http", in, digest, nil
	page = serve(s, sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie)).Body.String()
	for _, want := range []string{`id="http-headers"`, "X-HTTP-Method-Override", "DELETE", "Authorization", "Bearer planted", `id="input-other"`, "accept", "select"} {
		if !strings.Contains(page, want) {
			t.Errorf("the http review page lacks %q", want)
		}
	}
}

// An input that is not an object or an array (a tool whose schema takes
// a string) is still shown: the page never shows a call without its
// input.
func TestAScalarInputIsShown(t *testing.T) {
	b := newBackend(t)
	in := json.RawMessage(`"DELETE FROM invoices"`)
	_, digest, _ := tool.InputDigest(in)
	b.view.Tool, b.view.Input, b.view.InputDigest, b.view.Email, b.view.Editable = "sql", in, digest, nil, nil
	s, _ := newServer(t, b, 14)
	cookie := open(t, s)
	page := serve(s, sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie)).Body.String()
	if !strings.Contains(page, `id="input-tree"`) || !strings.Contains(page, "DELETE FROM invoices") {
		t.Fatalf("the scalar input is not shown:\n%s", page)
	}
}

// Two consoles at once (two stages, two shells) on two ports of
// 127.0.0.1: a browser's cookie jar ignores ports, so each console's
// session cookie needs a name of its own, or opening the second one
// overwrites the first one's cookie and locks it out.
func TestTwoConsolesAtOnceKeepTheirOwnSessions(t *testing.T) {
	b := newBackend(t)
	first, _ := newServer(t, b, 16)
	second, err := New(Config{Backend: b, Port: port + 1, Now: func() time.Time { return now }, Random: rand.NewChaCha8([32]byte{17})})
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	through := func(s *Server, target string, site string) *httptest.ResponseRecorder {
		u, _ := url.Parse(target)
		r := navigate(u.RequestURI())
		r.Host = u.Host
		r.Header.Set("Sec-Fetch-Site", site)
		for _, c := range jar.Cookies(u) {
			r.AddCookie(c)
		}
		w := serve(s, r)
		jar.SetCookies(u, w.Result().Cookies())
		return w
	}
	for _, s := range []*Server{first, second} {
		if w := through(s, s.OpenURL(), "none"); w.Code != http.StatusSeeOther {
			t.Fatalf("open %s: %d", s.OpenURL(), w.Code)
		}
	}
	for _, s := range []*Server{first, second} {
		if w := through(s, s.origin+"/", "same-origin"); w.Code != http.StatusOK {
			t.Errorf("%s with both consoles open: %d; want 200", s.origin, w.Code)
		}
	}
}

// Another server on 127.0.0.1 (any port: cookies ignore ports) can set a
// cookie of the console's name with a longer Path, which the browser then
// sends first: the console's own cookie beside it still opens the page.
func TestACookieTossedByAnotherPortDoesNotShadowTheSession(t *testing.T) {
	b := newBackend(t)
	s, _ := newServer(t, b, 15)
	cookie := open(t, s)
	r := sameOrigin(http.MethodGet, "/reviews/rv_1", nil, "")
	r.AddCookie(&http.Cookie{Name: SessionCookieName(port), Value: "tossed-by-127.0.0.1:8080"})
	r.AddCookie(&http.Cookie{Name: SessionCookieName(port), Value: cookie})
	if w := serve(s, r); w.Code != http.StatusOK {
		t.Fatalf("status %d; want 200 with the console's cookie second", w.Code)
	}
}

// The input tree stops nesting at MaxTreeDepth and shows what is deeper
// as JSON text: each level read the whole rest again, so an input 9000
// arrays deep (within JSON's nesting limits) took seconds to render.
func TestTheInputTreeStopsAtMaxTreeDepth(t *testing.T) {
	b := newBackend(t)
	n := 9000
	in := json.RawMessage(`{"a":` + strings.Repeat("[", n) + `"deep"` + strings.Repeat("]", n) + `}`)
	_, digest, err := tool.InputDigest(in)
	if err != nil {
		t.Fatal(err)
	}
	b.view.Tool, b.view.Input, b.view.InputDigest, b.view.Email, b.view.Editable = "lookup", in, digest, nil, nil
	s, _ := newServer(t, b, 16)
	cookie := open(t, s)
	page := serve(s, sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie)).Body.String()
	if got := strings.Count(page, "<dl>"); got > MaxTreeDepth+2 {
		t.Fatalf("%d nested lists; want at most %d", got, MaxTreeDepth+2)
	}
	if !strings.Contains(page, `[[[[`) || !strings.Contains(page, "deep") {
		t.Fatal("what is deeper than the tree is not shown as JSON text")
	}
}

// The http view names the host a URL's request goes to: a URL whose
// user information reads as a trusted host ("https://api.example.com@
// evil.example/") goes to evil.example.
func TestTheHTTPViewNamesTheURLsHost(t *testing.T) {
	b := newBackend(t)
	in := json.RawMessage(`{"method":"POST","url":"https://api.example.com@evil.example/pay","body":{}}`)
	_, digest, _ := tool.InputDigest(in)
	b.view.Tool, b.view.Input, b.view.InputDigest, b.view.Email, b.view.Editable = "http", in, digest, nil, nil
	s, _ := newServer(t, b, 17)
	cookie := open(t, s)
	page := serve(s, sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie)).Body.String()
	if !strings.Contains(page, `<span id="http-host">host evil.example</span>`) {
		t.Fatalf("the URL's host is not named:\n%s", page)
	}
}

// A review-decision deployed before its show answer carried reply_to
// answers an EmailView without it: the input's reply_to is still shown,
// its verdict unknown.
func TestReplyToIsShownWhenTheShowAnswerLacksIt(t *testing.T) {
	b := newBackend(t)
	in := json.RawMessage(`{"to":["ana@example.com"],"reply_to":["phish@evil.example"],"subject":"s","text":"t"}`)
	_, digest, _ := tool.InputDigest(in)
	b.view.Input, b.view.InputDigest, b.view.Editable = in, digest, nil
	s, _ := newServer(t, b, 18)
	cookie := open(t, s)
	page := serve(s, sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie)).Body.String()
	if !strings.Contains(page, `<ul id="email-reply-to" class="addresses"><li data-verdict="unknown">phish@evil.example</li>`) {
		t.Fatalf("reply_to is not shown:\n%s", page)
	}
}

// A hostile or broken review-decision answer is shown, never run: HTML
// in every string member of a review, a park and a refusal is escaped by
// html/template, and no member becomes a link's address of its own.
func TestAHostileAnswerIsEscapedEverywhere(t *testing.T) {
	const evil = `"'><script>alert(1)</script><img src=x onerror=alert(2)><a href="javascript:alert(3)">`
	b := newBackend(t)
	// The review's id and digest route and bind the page, so they keep
	// their shape; every other member carries the payload.
	v := &b.view
	v.RunID, v.Step, v.Of, v.ToolsetID, v.Requester, v.Approver, v.Reason, v.Lane = evil, evil, evil, evil, evil, evil, evil, evil
	v.CreatedAt, v.ExpiresAt, v.DecidedAt, v.Solution, v.SolutionVersion = evil, evil, evil, evil, evil
	v.Reviewers, v.Editable = []string{evil}, []string{evil, "subject"}
	v.Ask = json.RawMessage(`{"type":"object","description":` + jsonString(evil) + `,"properties":{` + jsonString(evil) + `:{"type":"string","title":` + jsonString(evil) + `,"description":` + jsonString(evil) + `},"e":{"enum":[` + jsonString(evil) + `]}}}`)
	v.InputSchema = json.RawMessage(`{"properties":{"other":{"description":` + jsonString(evil) + `}}}`)
	v.Input = json.RawMessage(`{"to":[` + jsonString(evil) + `],"subject":` + jsonString(evil) + `,"text":` + jsonString(evil) + `,"other":` + jsonString(evil) + `,` + jsonString(evil) + `:1}`)
	v.Email.From = review.AddressVerdict{Address: evil, Verdict: evil, Rule: evil}
	v.Email.To = []review.AddressVerdict{{Address: evil + "@" + evil, Verdict: evil, Rule: evil}}
	v.RunCalls = []review.RunCall{{Seq: evil, Step: evil, Tool: evil, Status: evil, At: evil}}
	b.park = park.View{ParkID: b.park.ParkID, Status: park.StatusParked, Cause: park.SchemaChanged, Tool: evil, Step: evil, Seq: evil,
		RunID: evil, ToolsetID: evil, Starter: evil, Deciders: evil, PinnedDigest: evil, CurrentDigest: evil, Target: evil, Scope: evil,
		CreatedAt: evil, Deadline: evil, ChangedPointers: []string{evil}}
	s, _ := newServer(t, b, 18)
	cookie := open(t, s)
	check := func(what, body string) {
		t.Helper()
		for _, raw := range []string{"<script>alert", "<img src=x", `href="javascript:`, "onerror=alert(2)>"} {
			if strings.Contains(body, raw) {
				t.Errorf("%s holds %q unescaped", what, raw)
			}
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)") {
			t.Errorf("%s does not show the payload as text", what)
		}
	}
	check("the list", serve(s, sameOrigin(http.MethodGet, "/", nil, cookie)).Body.String())
	page := serve(s, sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie)).Body.String()
	check("the review page", page)
	check("the park page", serve(s, sameOrigin(http.MethodGet, "/parks/pk_aaaaaaaaaaaaaaaaaaaaaaaaaa", nil, cookie)).Body.String())
	b.refuse = &Refusal{Code: evil, Message: evil}
	token := csrfField.FindStringSubmatch(page)[1]
	check("a refusal", serve(s, sameOrigin(http.MethodPost, "/reviews/rv_1/decide", url.Values{"csrf": {token}, "digest": {v.InputDigest}, "decision": {"reject"}, "reason": {"no"}}, cookie)).Body.String())
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// submitted is what a browser submits for the edit field name on page
// when the reviewer leaves it untouched (WHATWG HTML): the input stream
// turns CRLF and CR into LF, html/template writes U+0000 as U+FFFD, a
// text input strips line breaks from its value, and a textarea submits
// its line breaks as CRLF.
func submitted(t *testing.T, page, name string, member string) string {
	t.Helper()
	v := strings.ReplaceAll(member, "\x00", "\uFFFD")
	v = strings.ReplaceAll(strings.ReplaceAll(v, "\r\n", "\n"), "\r", "\n")
	switch {
	case strings.Contains(page, `<textarea id="`+name+`"`):
		return strings.ReplaceAll(v, "\n", "\r\n")
	case strings.Contains(page, `<input type="text" id="`+name+`"`):
		return strings.ReplaceAll(v, "\n", "")
	}
	t.Fatalf("the page has no field %s", name)
	return ""
}

// Approving without touching the edit fields sends no edit, whatever the
// members hold: a carriage return or U+0000 the browser cannot hold in a
// field unchanged, or an editable member the input lacks (its empty field
// is no member the reviewer added). Otherwise the run would execute an
// input the reviewer never saw, whose digest the page never showed.
func TestAFieldTheBrowserCannotHoldUnchangedIsNoEdit(t *testing.T) {
	b := newBackend(t)
	b.view.Editable = []string{"subject", "account", "note"}
	var in map[string]any
	json.Unmarshal(b.view.Input, &in)
	in["subject"] = "Invoice 12\r34"
	in["account"] = "DE12\x0034"
	b.view.Input, _ = json.Marshal(in)
	_, b.view.InputDigest, _ = tool.InputDigest(b.view.Input)
	s, _ := newServer(t, b, 19)
	cookie := open(t, s)
	page := serve(s, sameOrigin(http.MethodGet, "/reviews/rv_1", nil, cookie)).Body.String()
	form := url.Values{"csrf": {csrfField.FindStringSubmatch(page)[1]}, "digest": {b.view.InputDigest}, "decision": {"approve"},
		"edit.subject": {submitted(t, page, "edit.subject", in["subject"].(string))},
		"edit.account": {submitted(t, page, "edit.account", in["account"].(string))},
		"edit.note":    {submitted(t, page, "edit.note", "")}}
	if w := serve(s, sameOrigin(http.MethodPost, "/reviews/rv_1/decide", form, cookie)); w.Code != http.StatusSeeOther {
		t.Fatalf("approve: %d %s", w.Code, w.Body)
	}
	if len(b.decided) != 1 || b.decided[0].Edits != nil {
		t.Fatalf("Decide got edits %s; want none", b.decided[0].Edits)
	}
}

// A parked call's refusals are said in a parked call's words: its run's
// starter is refused as such (a parked call has no requester), and a
// changed definition is named, not an input digest.
func TestParkRefusalsAreSaidInAParkedCallsWords(t *testing.T) {
	b := newBackend(t)
	s, _ := newServer(t, b, 20)
	cookie := open(t, s)
	page := serve(s, sameOrigin(http.MethodGet, "/parks/pk_aaaaaaaaaaaaaaaaaaaaaaaaaa", nil, cookie)).Body.String()
	token := csrfField.FindStringSubmatch(page)[1]
	for code, words := range map[review.Code]string{
		review.CodeSelfApproval:    "you started this run",
		review.CodeUnauthenticated: "definition changed since this page showed it",
		review.CodeForbidden:       "not one of its deciders",
		review.CodeExpired:         "expired",
	} {
		b.refuse = &Refusal{Code: string(code), Message: "refused"}
		w := serve(s, sameOrigin(http.MethodPost, "/parks/pk_aaaaaaaaaaaaaaaaaaaaaaaaaa/decide", url.Values{"csrf": {token}, "decision": {"approve"}, "digest": {"sha256:bb"}}, cookie))
		if w.Code < 400 || !strings.Contains(w.Body.String(), words) || strings.Contains(w.Body.String(), "you asked for this review") {
			t.Errorf("%s: %d; want a 4xx page saying %q", code, w.Code, words)
		}
	}
}
