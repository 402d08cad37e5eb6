package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	consolesrv "github.com/toolgate/toolgate/resolver/cli/console"
)

// formPostOrigin is the Origin header the browser sends with a form POST
// from a page served with the Referrer-Policy policy.
func formPostOrigin(t *testing.T, b *browser, policy string) string {
	t.Helper()
	var mu sync.Mutex
	origin := "(no POST)"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Referrer-Policy", policy)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.Method == http.MethodPost {
			mu.Lock()
			origin = r.Header.Get("Origin")
			mu.Unlock()
			fmt.Fprint(w, `<!doctype html><p id="outcome">posted</p>`)
			return
		}
		fmt.Fprint(w, `<!doctype html><form id="approve" method="post" action="/decide"><button id="approve-button">Approve</button></form>`)
	}))
	defer srv.Close()
	b.do(t, chromedp.Navigate(srv.URL+"/"), chromedp.WaitReady(chromedp.CSS("#approve-button")))
	b.submit(t, "#approve-button", "#outcome")
	mu.Lock()
	defer mu.Unlock()
	return origin
}

// The console checks a POST's Origin against its own exactly, so its pages
// must let the browser send it: under Referrer-Policy no-referrer the
// Fetch standard ("serializing a request origin") makes a form POST's
// Origin "null", under same-origin it is the page's origin.
func TestFormPostCarriesThePageOriginOnlyWhenTheReferrerPolicyAllowsIt(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	if got := formPostOrigin(t, b, "no-referrer"); got != "null" {
		t.Errorf("Referrer-Policy no-referrer: a form POST's Origin %q, want null", got)
	}
	if got := formPostOrigin(t, b, consolesrv.ReferrerPolicy); got == "null" || got == "" {
		t.Errorf("Referrer-Policy %s (the console's): a form POST's Origin %q, want the page's origin", consolesrv.ReferrerPolicy, got)
	}
}
