package httptool

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/fetch"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/testkit"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// ssrfCase is one line of testdata/fetch/ssrf.jsonl (see
// shared/cases/README.md for the fields).
type ssrfCase struct {
	URL         string     `json:"url"`
	Allow       []string   `json:"allow"`
	ResolvesTo  []string   `json:"resolves_to"`
	RedirectsTo []string   `json:"redirects_to"`
	DNSSequence [][]string `json:"dns_sequence"`
	Expect      string     `json:"expect"`
	Why         string     `json:"why"`
	Source      string     `json:"source"`
}

// upstream is package fetch's test upstream: a local HTTP server and an
// HTTPS one (httptest's certificate, for example.com and *.example.com)
// behind an injected Dial that carries connections for public addresses
// to them, 443 and 8443 to the HTTPS one. Dialling a refused address
// fails the test.
type upstream struct {
	t          testing.TB
	plain, tls *httptest.Server
	mu         sync.Mutex
	requests   []string
}

func newUpstream(t testing.TB, h http.HandlerFunc) *upstream {
	u := &upstream{t: t}
	serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.requests = append(u.requests, r.Method+" "+r.Host+" "+r.URL.RequestURI())
		u.mu.Unlock()
		h(w, r)
	})
	quiet := log.New(io.Discard, "", 0)
	u.plain = httptest.NewUnstartedServer(serve)
	u.plain.Config.ErrorLog = quiet
	u.plain.Start()
	u.tls = httptest.NewUnstartedServer(serve)
	u.tls.Config.ErrorLog = quiet
	u.tls.StartTLS()
	t.Cleanup(func() { u.plain.Close(); u.tls.Close() })
	return u
}

func (u *upstream) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		u.t.Errorf("dial %s %q: not an address", network, addr)
		return nil, err
	}
	if ok, why := fetch.CheckAddr(ap.Addr(), nil); !ok {
		u.t.Errorf("dial to a refused address: %s", why)
		return nil, errors.New("refused address dialled")
	}
	target := u.plain.Listener.Addr().String()
	if ap.Port() == 443 || ap.Port() == 8443 {
		target = u.tls.Listener.Addr().String()
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", target)
}

func (u *upstream) served() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.requests...)
}

// TestCases runs every case of testdata/fetch/ssrf.jsonl through the http
// tool with GET and with POST, the case's list as both the platform
// allow-list and the http_hosts entries (pinning the method). An allowed
// GET is served; an allowed POST is served when it has no redirect, and
// a redirect is not followed (TOOL_PERMANENT_FAILURE). A refused case is
// refused before its refused target is reached, and never reaches it.
func TestCases(t *testing.T) {
	cases := testkit.LoadJSONL[ssrfCase](t, "../../testdata/fetch/ssrf.jsonl")
	if len(cases) != 50 {
		t.Fatalf("%d cases, want 50", len(cases))
	}
	for _, method := range []string{"GET", "POST"} {
		for i, c := range cases {
			t.Run(fmt.Sprintf("%s_%02d_%s", method, i, c.Why), func(t *testing.T) {
				var list hostlist.List
				var hosts []toolset.HTTPHost
				for _, s := range c.Allow {
					e, err := hostlist.ParseEntry(s)
					if err != nil {
						if c.Expect != "refuse" {
							t.Fatalf("allow entry %q is refused by hostlist in an allow case: %v", s, err)
						}
						continue
					}
					list = append(list, e)
					hosts = append(hosts, toolset.HTTPHost{Host: e.String(), Methods: []string{method}})
				}
				res := &fakeResolver{answers: addrs(t, c.ResolvesTo...)}
				for _, step := range c.DNSSequence {
					res.seq = append(res.seq, addrs(t, step...))
				}
				var final atomic.Bool
				var up *upstream
				up = newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
					n := len(up.served()) - 1
					if n < len(c.RedirectsTo) {
						w.Header().Set("Location", c.RedirectsTo[n])
						w.WriteHeader([]int{307, 302, 301, 303, 308}[n%5])
						return
					}
					final.Store(true)
					jsonHandler(`{"ok": true}`)(w, r)
				})
				pool := x509.NewCertPool()
				pool.AddCert(up.tls.Certificate())
				cfg := &Config{Config: fetch.Config{Allow: list, Resolver: res, Dial: up.dial, RootCAs: pool, Timeout: 10 * time.Second}}
				in := Input{Method: method, URL: c.URL}
				if method == "POST" {
					in.Body = json.RawMessage(`{"n":1}`)
				}
				out, err := cfg.Do(context.Background(), in, hosts, "key")
				code, applied := codeOf(t, err)
				served := up.served()
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
				if c.DNSSequence != nil && len(res.lookups) > 1 {
					t.Errorf("rebinding case: %d look-ups, want at most 1", len(res.lookups))
				}
			})
		}
	}
}
