package console_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The tests in this file prove the harness (browser_test.go) on pages of
// their own, without the local stack: that a canary counts what an
// unguarded page sends it, that the policy the console gives an e-mail's
// HTML part (a sandboxed iframe under a CSP that loads nothing) leaves
// the canaries untouched even when a link in the frame is clicked, and
// that a failed test keeps a screenshot.

// leakyHTML is an e-mail's HTML part that tries every way the console must
// stop to reach the canaries at base: a script that fetches, a meta
// refresh, a remote image, a CSS url() and a link (#canary-link) a test
// clicks.
// The refresh waits refresh seconds (0 in a test of a guarded frame, so
// that it would fire at once).
func leakyHTML(base string, refresh int) string {
	return `<!doctype html><html><head>
<meta http-equiv="refresh" content="` + fmt.Sprint(refresh) + `; url=` + base + `/refresh">
<style>body { background: url(` + base + `/css-url) }</style>
</head><body>
<script>fetch("` + base + `/script-fetch"); new Image().src = "` + base + `/script-image";</script>
<p>Hello <img src="` + base + `/remote-image" alt="logo"></p>
<a id="canary-link" href="` + base + `/clicked-link">read more</a>
</body></html>`
}

// framePolicy is the Content-Security-Policy the console serves an
// e-mail's HTML part with (docs/reviews.md, "The review console").
const framePolicy = "default-src 'none'; style-src 'unsafe-inline'; sandbox"

// pagePolicy is the console pages' Content-Security-Policy.
const pagePolicy = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; frame-src 'self'; child-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// framedPage serves / as a page that embeds /html in an iframe with an
// empty sandbox attribute, and /html as body; guarded adds the console's
// headers to both.
func framedPage(t *testing.T, body string, guarded bool) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		if guarded {
			w.Header().Set("Content-Security-Policy", pagePolicy)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		sandbox := ""
		if guarded {
			sandbox = " sandbox"
		}
		fmt.Fprintf(w, `<!doctype html><title>review</title><h1 id="tool">send-email</h1>
<iframe id="html-body"%s src="/html" title="HTML part" style="width:300px;height:200px"></iframe>`, sandbox)
	})
	mux.HandleFunc("GET /html", func(w http.ResponseWriter, r *http.Request) {
		if guarded {
			w.Header().Set("Content-Security-Policy", framePolicy)
			w.Header().Set("X-DNS-Prefetch-Control", "off")
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// clickInFrame clicks the element the CSS selector matches inside
// iframe#html-body with the mouse, at the element's own place.
func (b *browser) clickInFrame(t *testing.T, sel string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	frames, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSS("iframe#html-body"), chromedp.Populate(-1, true)))
	if err != nil || len(frames) == 0 {
		t.Fatalf("iframe#html-body: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.FromNode(frames[0]))); err != nil {
		t.Fatalf("click %s in iframe#html-body: %v", sel, err)
	}
}

// settle is how long a test waits for requests that must not come: the
// browser sends a page's requests within milliseconds of loading or of a
// click, so a request still absent after it is one the page did not make.
const settle = 1500 * time.Millisecond

// waitForRequests waits until c has received at least n requests, for at
// most settle.
func waitForRequests(c *canary, n int) []string {
	deadline := time.Now().Add(settle)
	for {
		got := c.requests()
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestCanaryCountsWhatAnUnguardedFrameSends(t *testing.T) {
	t.Parallel()
	c := newCanary(t)
	page := framedPage(t, leakyHTML(c.url(""), 30), false)
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(page.URL+"/"), chromedp.WaitReady(chromedp.CSS("#tool")))
	if got := waitForRequests(c, 3); len(got) < 3 {
		t.Fatalf("an unguarded frame's script, image and CSS reached the canary %d times (%v); want at least 3: the canary would not see a leak", len(got), got)
	}
	before := len(c.requests())
	b.clickInFrame(t, "#canary-link")
	got := waitForRequests(c, before+1)
	if !strings.Contains(strings.Join(got[before:], " "), "/clicked-link") {
		t.Fatalf("a click at the frame's centre did not follow its link: the canary received %v", got)
	}
}

func TestSandboxedFrameUnderTheConsolePolicyReachesNoCanary(t *testing.T) {
	t.Parallel()
	c := newCanary(t)
	page := framedPage(t, leakyHTML(c.url(""), 0), true)
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(page.URL+"/"), chromedp.WaitReady(chromedp.CSS("#tool")))
	b.clickInFrame(t, "#canary-link")
	if got := waitForRequests(c, 1); len(got) != 0 {
		t.Fatalf("the sandboxed HTML part reached the canary: %v", got)
	}
}

// envFailOnPurpose makes TestFailingBrowserTestOnPurpose fail; only
// TestFailedBrowserTestKeepsAScreenshot sets it, in a child test binary.
const envFailOnPurpose = "TOOLGATE_CONSOLE_FAIL_ON_PURPOSE"

func TestFailingBrowserTestOnPurpose(t *testing.T) {
	if os.Getenv(envFailOnPurpose) != "1" {
		t.Skip("fails on purpose only in TestFailedBrowserTestKeepsAScreenshot's child test binary")
	}
	page := framedPage(t, "<p>the page a failed test leaves</p>", true)
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(page.URL+"/"), chromedp.WaitReady(chromedp.CSS("#tool")))
	t.Error("failing on purpose")
}

func TestFailedBrowserTestKeepsAScreenshot(t *testing.T) {
	t.Parallel()
	findBrowser(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestFailingBrowserTestOnPurpose$", "-test.v")
	cmd.Env = append(os.Environ(), envFailOnPurpose+"=1", envScreenshotDir+"="+dir)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the test that fails on purpose passed:\n%s", out)
	}
	path := filepath.Join(dir, "TestFailingBrowserTestOnPurpose.png")
	png, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no screenshot kept: %v\n%s", err, out)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("%s is not a PNG (%d bytes)", path, len(png))
	}
	if !strings.Contains(string(out), path) {
		t.Fatalf("the failed test's log does not name its screenshot %s:\n%s", path, out)
	}
}
