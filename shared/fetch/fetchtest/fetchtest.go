// Package fetchtest holds the test support that package fetch's tests and
// package httptool's tests share: a fake DNS resolver, a local upstream
// behind an injected Dial, the SSRF cases of testdata/fetch/ssrf.jsonl
// and a check of a tool's output against its catalog output schema.
//
// It does not import package fetch, whose internal tests import it: what
// it needs from fetch (the address check) is passed in.
package fetchtest

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/testkit"
)

// Resolver is a hand-written fake, because no local stand-in for DNS can
// answer any name with addresses a test chooses. It gives the same
// answers for every name (Answers), or, when Seq is set, the answers of
// the n-th look-up (DNS rebinding; the last entry answers every later
// look-up). No answers is a not-found DNS error. It records every
// look-up, and it is safe for concurrent use.
type Resolver struct {
	// Answers are the addresses of every name, when Seq is nil.
	Answers []netip.Addr
	// Seq[n] are the addresses of the n-th look-up, from 0.
	Seq [][]netip.Addr

	mu      sync.Mutex
	lookups []string
}

// LookupNetIP answers host with the Resolver's addresses; network must be
// "ip" (what package fetch asks for), else it is an error.
func (f *Resolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.lookups)
	f.lookups = append(f.lookups, host)
	if network != "ip" {
		return nil, errors.New("fake resolver: network " + network)
	}
	ans := f.Answers
	if f.Seq != nil {
		ans = f.Seq[min(n, len(f.Seq)-1)]
	}
	if len(ans) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return append([]netip.Addr(nil), ans...), nil
}

// Hosts returns the names looked up so far, in order.
func (f *Resolver) Hosts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.lookups...)
}

// Addrs parses IP address literals (netip.ParseAddr), failing the test on
// any that does not parse.
func Addrs(t testing.TB, ss ...string) []netip.Addr {
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

// AddrCheck reports whether a connection to an address is allowed, and if
// not why: package fetch's CheckAddr with no exemptions.
type AddrCheck func(netip.Addr) (ok bool, reason string)

// Upstream is a local HTTP server and HTTPS server (httptest, with its
// certificate for example.com and *.example.com) behind an injected Dial
// that carries connections for public addresses to them: port 443 and
// 8443 to the HTTPS one, any other port to the HTTP one. Dialling an
// address the AddrCheck refuses is a test failure.
type Upstream struct {
	t     testing.TB
	check AddrCheck
	plain *httptest.Server
	tls   *httptest.Server

	mu       sync.Mutex
	requests []string // "method host path" of every request served
	dials    []string
}

// NewUpstream starts an Upstream serving h; the test's cleanup closes it.
func NewUpstream(t testing.TB, check AddrCheck, h http.HandlerFunc) *Upstream {
	u := &Upstream{t: t, check: check}
	serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.requests = append(u.requests, r.Method+" "+r.Host+" "+r.URL.RequestURI())
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

// Dial is the injected Dial: addr must be an "ip:port" the AddrCheck
// allows; it is recorded and connected to one of the two servers.
func (u *Upstream) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		u.t.Errorf("dial %s %q: not an address", network, addr)
		return nil, err
	}
	if ok, why := u.check(ap.Addr()); !ok {
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

// RootCAs is a pool holding only the HTTPS server's certificate.
func (u *Upstream) RootCAs() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(u.tls.Certificate())
	return pool
}

// Served returns "method host path" of every request served so far.
func (u *Upstream) Served() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.requests...)
}

// Dialled returns the "ip:port" of every allowed dial so far.
func (u *Upstream) Dialled() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.dials...)
}

// Case is one line of testdata/fetch/ssrf.jsonl, a copy of
// shared/cases/ssrf.jsonl (see shared/cases/README.md for the fields).
type Case struct {
	URL         string     `json:"url"`
	Allow       []string   `json:"allow"`
	ResolvesTo  []string   `json:"resolves_to"`
	RedirectsTo []string   `json:"redirects_to"`
	DNSSequence [][]string `json:"dns_sequence"`
	Expect      string     `json:"expect"`
	Why         string     `json:"why"`
	Source      string     `json:"source"`
}

// LoadCases reads the cases of the JSON Lines file at path, failing the
// test on a case with no source or an expect other than "allow" or
// "refuse".
func LoadCases(t testing.TB, path string) []Case {
	t.Helper()
	cases := testkit.LoadJSONL[Case](t, path)
	for _, c := range cases {
		if c.Source == "" || (c.Expect != "allow" && c.Expect != "refuse") {
			t.Fatalf("case %+v: no source or bad expect", c)
		}
	}
	return cases
}

// List parses the case's allow-list entry by entry. Entries hostlist
// refuses (odd IPv4 forms such as 0x7f.1) are left out, and the case must
// then be a refusal.
func (c Case) List(t testing.TB) hostlist.List {
	t.Helper()
	var l hostlist.List
	for _, s := range c.Allow {
		e, err := hostlist.ParseEntry(s)
		if err != nil {
			if c.Expect != "refuse" {
				t.Fatalf("allow entry %q is refused by hostlist in an allow case: %v", s, err)
			}
			t.Logf("entry left out: %v", err)
			continue
		}
		l = append(l, e)
	}
	return l
}

// Resolver returns a fresh fake resolver with the case's answers
// (resolves_to, and dns_sequence as Seq).
func (c Case) Resolver(t testing.TB) *Resolver {
	t.Helper()
	res := &Resolver{Answers: Addrs(t, c.ResolvesTo...)}
	for _, step := range c.DNSSequence {
		res.Seq = append(res.Seq, Addrs(t, step...))
	}
	return res
}

// CheckOutput fails the test unless raw is JSON that matches the output
// schema of the catalog entry named tool (shared/catalog).
func CheckOutput(t testing.TB, tool string, raw json.RawMessage) {
	t.Helper()
	entry, ok := catalog.Default().Lookup(tool)
	if !ok {
		t.Fatalf("%s is not in the catalog", tool)
	}
	outSchema, err := schema.Compile(entry.OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if err := outSchema.Validate(v); err != nil {
		t.Fatalf("output %s does not match the schema: %v", raw, err)
	}
}
