package fetch

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/tool"
)

// fakeResolver is a hand-written fake, because no local stand-in for DNS
// can answer any name with addresses a test chooses. It gives the same
// answers for every name (answers), or, when seq is set, the answers of the
// n-th look-up (DNS rebinding). It records every look-up.
type fakeResolver struct {
	mu      sync.Mutex
	answers []netip.Addr
	seq     [][]netip.Addr
	lookups []string
}

func (f *fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.lookups)
	f.lookups = append(f.lookups, host)
	if network != "ip" {
		return nil, errors.New("fake resolver: network " + network)
	}
	ans := f.answers
	if f.seq != nil {
		ans = f.seq[min(n, len(f.seq)-1)]
	}
	if len(ans) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return append([]netip.Addr(nil), ans...), nil
}

func (f *fakeResolver) hosts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.lookups...)
}

// upstream is a local HTTP server and HTTPS server (httptest, with its
// certificate for example.com and *.example.com) behind an injected Dial
// that carries connections for public addresses to them: port 443 and 8443
// to the HTTPS one, any other port to the HTTP one. Dialling a refused
// address is a test failure.
type upstream struct {
	t     testing.TB
	plain *httptest.Server
	tls   *httptest.Server

	mu       sync.Mutex
	handler  http.HandlerFunc
	requests []string // "host path" of every request served
	dials    []string
}

func newUpstream(t testing.TB, h http.HandlerFunc) *upstream {
	u := &upstream{t: t, handler: h}
	serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.requests = append(u.requests, r.Host+" "+r.URL.RequestURI())
		h := u.handler
		u.mu.Unlock()
		h(w, r)
	})
	quiet := log.New(io.Discard, "", 0) // refused handshakes are expected
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
	if ok, why := CheckAddr(ap.Addr(), nil); !ok {
		u.t.Errorf("dial to a refused address: %s", why)
		return nil, errors.New("refused address dialled")
	}
	u.mu.Lock()
	u.dials = append(u.dials, addr)
	u.mu.Unlock()
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

func (u *upstream) dialled() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.dials...)
}

// config returns a Config that uses the production decision code with the
// fake resolver and the upstream's Dial. AllowAddresses stays empty.
func (u *upstream) config(allow hostlist.List, r Resolver) *Config {
	pool := x509.NewCertPool()
	pool.AddCert(u.tls.Certificate())
	return &Config{Allow: allow, Resolver: r, Dial: u.dial, RootCAs: pool, Timeout: 10 * time.Second}
}

func mustList(t testing.TB, entries ...string) hostlist.List {
	t.Helper()
	l, err := hostlist.ParseList(entries)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func addrs(t testing.TB, ss ...string) []netip.Addr {
	t.Helper()
	var out []netip.Addr
	for _, s := range ss {
		a, err := netip.ParseAddr(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// code returns the tool.Error code of err, failing the test for any other
// error type and for MaybeApplied (a GET has no side effect).
func code(t *testing.T, err error) tool.Code {
	t.Helper()
	if err == nil {
		return ""
	}
	var te *tool.Error
	if !errors.As(err, &te) || te != err {
		t.Fatalf("error %T %v is not a *tool.Error", err, err)
	}
	if te.MaybeApplied {
		t.Errorf("%v: MaybeApplied set on a GET", err)
	}
	if !te.Code.Known() || te.Message == "" {
		t.Errorf("error %+v has an unknown code or no message", te)
	}
	return te.Code
}

// onList reports whether host matches some entry of l at the entry's port.
func onList(l hostlist.List, host string) bool {
	for _, e := range l {
		port := "80"
		if e.Port != 0 {
			port = strconv.Itoa(e.Port)
		}
		if _, ok := (hostlist.List{e}).Match("http", host, port); ok {
			return true
		}
	}
	return false
}

func jsonHandler(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}
}
