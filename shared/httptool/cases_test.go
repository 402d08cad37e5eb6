package httptool

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/fetch"
	"github.com/toolgate/toolgate/shared/fetch/fetchtest"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// TestCases runs every case of testdata/fetch/ssrf.jsonl through the http
// tool with GET and with POST, the case's list as both the platform
// allow-list and the http_hosts entries (pinning the method). An allowed
// GET is served; an allowed POST is served when it has no redirect, and
// a redirect is not followed (TOOL_PERMANENT_FAILURE). A refused case is
// refused before its refused target is reached, and never reaches it.
func TestCases(t *testing.T) {
	cases := fetchtest.LoadCases(t, "../../testdata/fetch/ssrf.jsonl")
	if len(cases) != 50 {
		t.Fatalf("%d cases, want 50", len(cases))
	}
	for _, method := range []string{"GET", "POST"} {
		for i, c := range cases {
			t.Run(fmt.Sprintf("%s_%02d_%s", method, i, c.Why), func(t *testing.T) {
				list := c.List(t)
				var hosts []toolset.HTTPHost
				for _, e := range list {
					hosts = append(hosts, toolset.HTTPHost{Host: e.String(), Methods: []string{method}})
				}
				res := c.Resolver(t)
				var final atomic.Bool
				var up *fetchtest.Upstream
				up = fetchtest.NewUpstream(t, checkAddr, func(w http.ResponseWriter, r *http.Request) {
					n := len(up.Served()) - 1
					if n < len(c.RedirectsTo) {
						w.Header().Set("Location", c.RedirectsTo[n])
						w.WriteHeader([]int{307, 302, 301, 303, 308}[n%5])
						return
					}
					final.Store(true)
					jsonHandler(`{"ok": true}`)(w, r)
				})
				cfg := &Config{Config: fetch.Config{Allow: list, Resolver: res, Dial: up.Dial, RootCAs: up.RootCAs(), Timeout: 10 * time.Second}}
				in := Input{Method: method, URL: c.URL}
				if method == "POST" {
					in.Body = json.RawMessage(`{"n":1}`)
				}
				out, err := cfg.Do(context.Background(), in, hosts, "key", tool.TraceContext{}, nil)
				code, applied := codeOf(t, err)
				served := up.Served()
				switch {
				case c.Expect == "allow" && (method == "GET" || len(c.RedirectsTo) == 0):
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					if out.Status != 200 || string(out.Data) != `{"ok": true}` || !final.Load() || len(served) != len(c.RedirectsTo)+1 {
						t.Fatalf("output %+v, served %q", out, served)
					}
				case c.Expect == "allow":
					if code != tool.PermanentFailure || applied || len(served) != 1 || final.Load() {
						t.Fatalf("a POST's redirect: %v (applied %v), served %q", err, applied, served)
					}
				case method == "POST" && len(c.RedirectsTo) > 0:
					// Refused by the first URL's checks, or sent once and
					// its redirect not followed.
					if code != tool.PermissionDenied && code != tool.PermanentFailure || applied || len(served) > 1 || final.Load() {
						t.Fatalf("Do = %v (applied %v), served %q", err, applied, served)
					}
				default:
					if code != tool.PermissionDenied || applied {
						t.Fatalf("Do = %+v, %v; want %s", out, err, tool.PermissionDenied)
					}
					if final.Load() || len(c.RedirectsTo) == 0 && len(served) != 0 || len(served) > len(c.RedirectsTo) {
						t.Fatalf("served %q", served)
					}
				}
				if lookups := res.Hosts(); c.DNSSequence != nil && len(lookups) > 1 {
					t.Errorf("rebinding case: %d look-ups, want at most 1", len(lookups))
				}
			})
		}
	}
}
