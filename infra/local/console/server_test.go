package console_test

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/net/html"

	"github.com/toolgate/toolgate/infra/local"
)

// cookieName is the session cookie's name of the console at base
// (docs/reviews.md, "The review console"): toolgate_console_PORT.
func cookieName(t *testing.T, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	return "toolgate_console_" + u.Port()
}

// plainClient is an HTTP client that follows no redirect, keeps no
// cookie and sends only the headers a test sets.
var plainClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// request is one request to the console's server, built by a test and
// then spoiled in one way.
type request struct {
	method, path string
	host         string // the Host header; the console's own when empty
	cookie       string // the session cookie's value; none when empty
	origin       string // the Origin header; none when empty
	fetchSite    string // Sec-Fetch-Site; none when empty
	navigate     bool   // Sec-Fetch-Mode navigate and Sec-Fetch-Dest document
	form         url.Values
}

// send sends r to the console at base and returns the status and body.
func (r request) send(t *testing.T, base string) (int, http.Header, string) {
	t.Helper()
	var body io.Reader
	if r.form != nil {
		body = strings.NewReader(r.form.Encode())
	}
	req, err := http.NewRequest(r.method, base+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if r.host != "" {
		req.Host = r.host
	}
	if r.cookie != "" {
		req.AddCookie(&http.Cookie{Name: cookieName(t, base), Value: r.cookie})
	}
	if r.origin != "" {
		req.Header.Set("Origin", r.origin)
	}
	if r.fetchSite != "" {
		req.Header.Set("Sec-Fetch-Site", r.fetchSite)
	}
	if r.navigate {
		req.Header.Set("Sec-Fetch-Mode", "navigate")
		req.Header.Set("Sec-Fetch-Dest", "document")
	}
	resp, err := plainClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// formValues are the named inputs of the form with the id in the page,
// with their values.
func formValues(t *testing.T, page, id string) url.Values {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	attr := func(n *html.Node, k string) (string, bool) {
		for _, a := range n.Attr {
			if a.Key == k {
				return a.Val, true
			}
		}
		return "", false
	}
	var form *html.Node
	for n := range doc.Descendants() {
		if v, _ := attr(n, "id"); n.Type == html.ElementNode && n.Data == "form" && v == id {
			form = n
			break
		}
	}
	if form == nil {
		t.Fatalf("no form#%s in the page:\n%s", id, page)
	}
	vals := url.Values{}
	for n := range form.Descendants() {
		if n.Type != html.ElementNode || (n.Data != "input" && n.Data != "button") {
			continue
		}
		if name, ok := attr(n, "name"); ok {
			v, _ := attr(n, "value")
			vals.Set(name, v)
		}
	}
	return vals
}

func TestConsoleServerRefusesForeignRequestsAndItsCapabilityWorksOnce(t *testing.T) {
	t.Parallel()
	subject := fresh("Request checks")
	e, _, id := reviewedMail(t, mailInput(subject, "checks@example.com", "<p>checks</p>"))
	c := e.startConsole(t, reviewer)
	u, err := url.Parse(c.open)
	if err != nil {
		t.Fatal(err)
	}
	openPath := u.RequestURI()

	// The capability: exchanged once for the cookie and a 303 to /.
	status, h, _ := request{method: "GET", path: openPath, fetchSite: "none", navigate: true}.send(t, c.base)
	if status != http.StatusSeeOther || h.Get("Location") != "/" {
		t.Fatalf("GET %s: %d to %q, want 303 to /", openPath, status, h.Get("Location"))
	}
	var cookie *http.Cookie
	for _, ck := range (&http.Response{Header: h}).Cookies() {
		if ck.Name == cookieName(t, c.base) {
			cookie = ck
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" {
		t.Fatalf("GET %s set %v, want %s HttpOnly, SameSite=Strict, Path=/", openPath, h.Values("Set-Cookie"), cookieName(t, c.base))
	}
	if status, _, _ := (request{method: "GET", path: openPath, fetchSite: "none", navigate: true}).send(t, c.base); status != http.StatusForbidden {
		t.Errorf("the capability's second use: %d, want 403", status)
	}
	if strings.Contains(c.stderr.String(), u.Query().Get("c")) {
		t.Errorf("the console logged its capability:\n%s", c.stderr)
	}

	// The page a browser gets, and the form it would post.
	nav := request{method: "GET", path: "/reviews/" + id, cookie: cookie.Value, fetchSite: "none", navigate: true}
	status, h, page := nav.send(t, c.base)
	if status != http.StatusOK {
		t.Fatalf("GET /reviews/%s with the cookie: %d, want 200\n%s", id, status, page)
	}
	for _, want := range []string{"default-src 'none'", "frame-ancestors 'none'", "form-action 'self'"} {
		if !strings.Contains(h.Get("Content-Security-Policy"), want) {
			t.Errorf("the review page's Content-Security-Policy %q lacks %q", h.Get("Content-Security-Policy"), want)
		}
	}
	approve := formValues(t, page, "approve")
	if approve.Get("csrf") == "" || approve.Get("digest") == "" {
		t.Fatalf("form#approve carries %v, want csrf and digest", approve)
	}
	post := request{method: "POST", path: "/reviews/" + id + "/decide", cookie: cookie.Value, origin: c.base, fetchSite: "same-origin", form: approve}
	without := func(k string) url.Values {
		v := url.Values{}
		for name, vs := range approve {
			if name != k {
				v[name] = vs
			}
		}
		return v
	}
	otherPort := newCanary(t).url("")
	_, port, _ := strings.Cut(strings.TrimPrefix(c.base, "http://"), ":")

	for _, tc := range []struct {
		name string
		r    request
	}{
		{"a page request without the cookie", request{method: "GET", path: "/", fetchSite: "none", navigate: true}},
		{"a page request with a wrong Host", request{method: "GET", path: "/", host: "localhost:" + port, cookie: cookie.Value, fetchSite: "none", navigate: true}},
		{"a page request from another site", request{method: "GET", path: "/", cookie: cookie.Value, fetchSite: "cross-site", navigate: true}},
		{"a decision without the cookie", func() request { r := post; r.cookie = ""; return r }()},
		{"a decision from another port on 127.0.0.1", func() request { r := post; r.origin = otherPort; return r }()},
		{"a decision from another origin", func() request { r := post; r.origin = "http://attacker.example"; return r }()},
		{"a decision without an Origin", func() request { r := post; r.origin = ""; return r }()},
		{"a decision without the CSRF token", func() request { r := post; r.form = without("csrf"); return r }()},
		{"a decision with another CSRF token", func() request {
			r := post
			r.form = without("csrf")
			r.form.Set("csrf", strings.Repeat("A", len(approve.Get("csrf"))))
			return r
		}()},
		{"a decision with a wrong Host", func() request { r := post; r.host = "localhost:" + port; return r }()},
		{"a decision from another site", func() request { r := post; r.fetchSite = "cross-site"; return r }()},
	} {
		if status, _, body := tc.r.send(t, c.base); status < 400 || status > 499 {
			t.Errorf("%s: %d, want a 4xx refusal\n%.300s", tc.name, status, body)
		}
	}
	if !slices.ContainsFunc(e.list(t), func(v reviewView) bool { return v.ReviewID == id }) {
		t.Fatalf("review %s is no longer pending after requests the console must refuse", id)
	}
	if status, h, body := post.send(t, c.base); status != http.StatusSeeOther || h.Get("Location") != "/reviews/"+id {
		t.Fatalf("the decision with everything in place: %d to %q, want 303 to /reviews/%s\n%.300s", status, h.Get("Location"), id, body)
	}
	if slices.ContainsFunc(e.list(t), func(v reviewView) bool { return v.ReviewID == id }) {
		t.Fatalf("review %s is still pending after its approval from the console", id)
	}
}

// envDocsScreenshot names the PNG TestDocsScreenshotOfTheDemoReview
// writes (make docs-screenshot sets it to docs/images/review-console.png).
const envDocsScreenshot = "TOOLGATE_DOCS_SCREENSHOT"

// TestDocsScreenshotOfTheDemoReview takes the screenshot docs/reviews.md
// shows: the demo's (testdata/demo/demo-reviews.yaml) e-mail review in the
// console, after its first review was answered. Only make docs-screenshot
// runs it.
func TestDocsScreenshotOfTheDemoReview(t *testing.T) {
	out := os.Getenv(envDocsScreenshot)
	if out == "" {
		t.Skip(envDocsScreenshot + " is not set: make docs-screenshot takes the docs' screenshot")
	}
	root, err := local.Root()
	if err != nil {
		t.Fatal(err)
	}
	yaml, err := os.ReadFile(filepath.Join(root, "testdata", "demo", "demo-reviews.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e := sharedEnv(t)
	e.publish(t, "demo-reviews", string(yaml))
	run := e.start(t, "demo-reviews", map[string]any{"customer": "customer@example.com", "total": 120})
	check := e.pending(t, run, nil)
	e.decideCLI(t, "approve", check, "--reason", "the total is right", "--answer", "Leave the parcel with the neighbour at number 12.")
	mailReview := e.pending(t, run, map[string]bool{check: true})

	c := e.startConsole(t, reviewer)
	b := newBrowser(t)
	b.do(t, chromedp.EmulateViewport(1000, 800), chromedp.Navigate(c.open), chromedp.WaitReady(chromedp.CSS("#pending")))
	b.openReview(t, mailReview)
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join(root, out)
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes) of review %s", out, len(png), mailReview)
}
