package httptool

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/fetch"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// seen is one request a test server received.
type seen struct {
	Method, Host, Path string
	Header             http.Header
	Body               string
}

// server is a local HTTP server on 127.0.0.1 that records what it
// receives, reached by its address (the tests' Config exempts
// 127.0.0.1/32, as the local stack does).
type server struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []seen
}

func newServer(t testing.TB, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got = append(s.got, seen{Method: r.Method, Host: r.Host, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: string(b)})
		s.mu.Unlock()
		h(w, r)
	}))
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.srv.Start()
	t.Cleanup(s.srv.Close)
	return s
}

// host is the server's "127.0.0.1:port", an http_hosts entry and the
// host of url.
func (s *server) host() string { return strings.TrimPrefix(s.srv.URL, "http://") }

func (s *server) url(path string) string { return s.srv.URL + path }

func (s *server) seen() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.got...)
}

// localConfig allows the servers' hosts on the platform list and exempts
// 127.0.0.1/32; its Sleep fails the test (a test that expects a wait sets
// its own).
func localConfig(t testing.TB, servers ...*server) *Config {
	t.Helper()
	var hosts []string
	for _, s := range servers {
		hosts = append(hosts, s.host())
	}
	c, err := ParseConfig(hosts, []string{"127.0.0.1/32"})
	if err != nil {
		t.Fatal(err)
	}
	c.Timeout = 10 * time.Second
	c.Sleep = func(context.Context, time.Duration) error {
		t.Errorf("the tool waited, which this test does not expect")
		return nil
	}
	return &c
}

// entry is an http_hosts entry for s.
func entry(s *server, methods ...string) toolset.HTTPHost {
	return toolset.HTTPHost{Host: s.host(), Methods: methods}
}

func keyed(h toolset.HTTPHost, format string) toolset.HTTPHost {
	h.Idempotency = &toolset.HTTPIdempotency{Header: "Idempotency-Key", Format: format}
	return h
}

// codeOf returns err's tool.Error code and MaybeApplied, failing the test
// for any other error type or a message that is empty.
func codeOf(t *testing.T, err error) (tool.Code, bool) {
	t.Helper()
	if err == nil {
		return "", false
	}
	var te *tool.Error
	if !errors.As(err, &te) || te != err {
		t.Fatalf("error %T %v is not a *tool.Error", err, err)
	}
	if !te.Code.Known() || te.Message == "" {
		t.Errorf("error %+v has an unknown code or no message", te)
	}
	return te.Code, te.MaybeApplied
}

func jsonHandler(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}
}

func statusHandler(code int, retryAfter string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte(`{"error": "x"}`))
	}
}

func mustList(t testing.TB, entries ...string) hostlist.List {
	t.Helper()
	l, err := hostlist.ParseList(entries)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// checkAddr is fetch.CheckAddr with no exemptions, the check of
// fetchtest.Upstream's Dial.
func checkAddr(a netip.Addr) (bool, string) { return fetch.CheckAddr(a, nil) }

// publicDial carries connections for public addresses to s, as package
// fetch's tests do: Decide runs unchanged on public names and addresses,
// and dialling an address CheckAddr refuses fails the test.
func publicDial(t testing.TB, s *server) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			t.Errorf("dial %s %q: not an address", network, addr)
			return nil, err
		}
		if ok, why := checkAddr(ap.Addr()); !ok {
			t.Errorf("dial to a refused address: %s", why)
			return nil, errors.New("refused address dialled")
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", s.host())
	}
}
