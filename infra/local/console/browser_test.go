package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserPackage is the Debian package that installs the browser the
// tests drive.
const browserPackage = "chromium-headless-shell"

// Environment variables of the harness (doc.go).
const (
	// envBrowser names the browser's executable in place of the search
	// of browserPaths.
	envBrowser = "TOOLGATE_BROWSER"
	// envRequireBrowser = "1" makes a missing browser a failure, not a
	// skip (.ci/run sets it).
	envRequireBrowser = "TOOLGATE_REQUIRE_BROWSER"
	// envScreenshotDir is where a failed test's screenshot goes in place
	// of the test's artifact directory.
	envScreenshotDir = "TOOLGATE_SCREENSHOT_DIR"
)

// browserPaths are where Debian's chromium-headless-shell and chromium
// packages put their executables, in the order the harness tries them.
var browserPaths = []string{
	"/usr/bin/chromium-headless-shell",
	"/usr/lib/chromium/chromium-headless-shell",
	"/usr/lib/chromium-headless-shell/chromium-headless-shell",
	"/usr/bin/chromium",
	"/usr/lib/chromium/chromium",
}

// findBrowser is the browser's path: $TOOLGATE_BROWSER when set (it must
// exist), else the first of browserPaths that exists. Without one, the
// test skips with a message naming the apt package, or fails with it
// under TOOLGATE_REQUIRE_BROWSER=1.
func findBrowser(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(envBrowser); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s=%s: %v", envBrowser, p, err)
		}
		return p
	}
	for _, p := range browserPaths {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("no headless Chromium found (looked for %s): install it with `apt-get install -y %s`, or name it with %s",
		strings.Join(browserPaths, ", "), browserPackage, envBrowser)
	if os.Getenv(envRequireBrowser) == "1" {
		t.Fatal(msg + " (" + envRequireBrowser + "=1 makes this a failure)")
	}
	t.Skip(msg)
	return ""
}

// browser is one browser process of t's, with a fresh profile directory.
type browser struct {
	path string
	// ctx is the browser's chromedp context (its first tab).
	ctx context.Context
}

// newBrowser starts a headless browser for t, stopped when t ends; when t
// has failed by then, the browser's current page is kept as a screenshot
// first (keepScreenshot).
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := findBrowser(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // the tests run as root in CI
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("no-pings", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	// The first Run starts the browser; its context is the browser's life.
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("start %s: %v", path, err)
	}
	b := &browser{path: path, ctx: ctx}
	t.Cleanup(func() {
		if t.Failed() {
			b.keepScreenshot(t)
		}
		cancel()
		cancelAlloc()
	})
	return b
}

// do runs the actions on the browser's tab, within a minute.
func (b *browser) do(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// eval is the value of the JavaScript expression on the browser's tab.
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// text is the text of the first element that matches the CSS selector,
// waiting for it to be there.
func (b *browser) text(t *testing.T, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(v)
}

// screenshotDir is where t's screenshots go: $TOOLGATE_SCREENSHOT_DIR
// when set, else t's artifact directory (kept with go test -artifacts).
func screenshotDir(t *testing.T) string {
	if d := os.Getenv(envScreenshotDir); d != "" {
		return d
	}
	return t.ArtifactDir()
}

// keepScreenshot saves a full-page PNG screenshot of the browser's tab as
// <screenshotDir>/<test name>.png and logs its path; a screenshot that
// cannot be taken is logged, not a failure of its own.
func (b *browser) keepScreenshot(t *testing.T) string {
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot: %v", err)
		return ""
	}
	dir := screenshotDir(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("screenshot: %v", err)
		return ""
	}
	path := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Logf("screenshot: %v", err)
		return ""
	}
	if os.Getenv(envScreenshotDir) == "" {
		t.Logf("screenshot of the page: %s (kept with go test -artifacts, or set %s)", path, envScreenshotDir)
	} else {
		t.Logf("screenshot of the page: %s", path)
	}
	return path
}

// canary is an HTTP server on 127.0.0.1 that counts every request it
// receives: the HTML part of an e-mail names canaries, and the console
// must let none of them be reached.
type canary struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []string
}

// newCanary starts a canary, closed when t ends.
func newCanary(t *testing.T) *canary {
	c := &canary{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.got = append(c.got, r.Method+" "+r.URL.String())
		c.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, "canary")
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// url is the canary's URL for path.
func (c *canary) url(path string) string { return c.srv.URL + path }

// requests are the requests the canary received ("METHOD URL").
func (c *canary) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}
