package webhook

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

func mustRules(t testing.TB, allow, addrs, own []string) EndpointRules {
	t.Helper()
	r, err := ParseEndpointRules(allow, addrs, own)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCheck(t *testing.T) {
	r := mustRules(t, []string{"hooks.example.com", "*.example.org", "127.0.0.1:8080", "203.0.113.9", "abc123.lambda-url.eu-west-1.on.aws", "xyz789.lambda-url.us-east-1.on.aws"},
		[]string{"127.0.0.1/32"}, []string{"abc123.lambda-url.eu-west-1.on.aws", "*.toolgate.internal"})
	for _, c := range []struct{ name, url, want, err, class string }{
		{name: "https on the list", url: "https://hooks.example.com/in?x=1", want: "https://hooks.example.com/in?x=1"},
		{name: "host case and default port", url: "HTTPS://Hooks.Example.com:443/in", want: "https://hooks.example.com/in"},
		{name: "wildcard entry", url: "https://a.b.example.org/", want: "https://a.b.example.org/"},
		{name: "plain http to the exempted loopback", url: "http://127.0.0.1:8080/hook", want: "http://127.0.0.1:8080/hook"},
		{name: "another Function URL", url: "https://xyz789.lambda-url.us-east-1.on.aws/", want: "https://xyz789.lambda-url.us-east-1.on.aws/"},
		{name: "plain http to a name, left to Resolve's answers", url: "http://hooks.example.com/in", want: "http://hooks.example.com/in"},
		{name: "plain http to a listed public address", url: "http://203.0.113.9/", err: "plain http"},
		{name: "not on the list", url: "https://evil.example.net/", err: "is not on the webhook allow-list"},
		{name: "other port", url: "https://hooks.example.com:8443/", err: "port 8443"},
		{name: "userinfo", url: "https://user:pw@hooks.example.com/", err: "userinfo"},
		{name: "fragment", url: "https://hooks.example.com/#frag", err: "fragment"},
		{name: "empty fragment", url: "https://hooks.example.com/#", err: "fragment"},
		{name: "scheme", url: "ftp://hooks.example.com/", err: "scheme"},
		{name: "own Function URL", url: "https://abc123.lambda-url.eu-west-1.on.aws/", err: "own Function URL"},
		{name: "own Function URL, trailing dot", url: "https://abc123.lambda-url.eu-west-1.on.aws./", err: "own Function URL"},
		{name: "own Function URL id in another region", url: "https://abc123.lambda-url.us-east-1.on.aws/", err: "Function URL id"},
		{name: "own wildcard", url: "https://x.toolgate.internal/", err: "under *.toolgate.internal"},
		{name: "listed literal in a refused range", url: "https://203.0.113.9/", err: "documentation", class: "refused-address"},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, err := r.Check(c.url)
			if c.err != "" {
				var ref *Refusal
				if err == nil || !strings.Contains(err.Error(), c.err) || !errors.As(err, &ref) {
					t.Fatalf("Check = %v, %v; want a *Refusal saying %q", u, err, c.err)
				}
				if want := c.class; want != "" && ref.Class != want || want == "" && ref.Class != "refused-url" {
					t.Fatalf("class %s", ref.Class)
				}
				return
			}
			if err != nil || u.String() != c.want {
				t.Fatalf("Check = %v, %v; want %s", u, err, c.want)
			}
		})
	}
	if _, err := (EndpointRules{}).Check("https://hooks.example.com/"); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("the zero EndpointRules allowed a URL: %v", err)
	}
	// Without an exempted address (as deployed), plain http to a name is
	// refused before any look-up.
	deployed := mustRules(t, []string{"hooks.example.com:80"}, nil, nil)
	if _, err := deployed.Check("http://hooks.example.com/"); err == nil || !strings.Contains(err.Error(), "plain http") {
		t.Errorf("plain http with nothing exempted: %v", err)
	}
}

func TestParseEndpointRulesRefusals(t *testing.T) {
	for _, c := range []struct {
		name              string
		allow, addrs, own []string
		want              string
	}{
		{"bad host", []string{"https://x"}, nil, nil, "webhook allow-list"},
		{"metadata exemption", nil, []string{"169.254.0.0/16"}, nil, "169.254.169.254"},
		{"bad own host", nil, nil, []string{"a b"}, "own host 0"},
	} {
		if _, err := ParseEndpointRules(c.allow, c.addrs, c.own); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// ParseOwnHost keeps a port when one is written, in canonical form, and
// refuses what no URL host can match.
func TestParseOwnHost(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{in: "abc.lambda-url.eu-west-1.on.aws", want: "abc.lambda-url.eu-west-1.on.aws"},
		{in: "ABC.Lambda-URL.eu-west-1.on.aws.", want: "abc.lambda-url.eu-west-1.on.aws"},
		{in: "*.toolgate.internal", want: "*.toolgate.internal"},
		{in: "*.toolgate.internal:8443", want: "*.toolgate.internal:8443"},
		{in: "127.0.0.1:8081", want: "127.0.0.1:8081"},
		{in: "127.0.0.1", want: "127.0.0.1"},
		{in: "[::1]:8081", want: "[::1]:8081"},
		{in: "[::1]", want: "::1"},
		{in: "::1", want: "::1"},
		{in: "127.0.0.1:0", err: "port"},
		{in: "127.0.0.1:65536", err: "port"},
		{in: "127.0.0.1:080", err: "leading zero"},
		{in: "127.0.0.1:", err: "port"},
		{in: "[::1:8081", err: "own host"},
		{in: "*.127.0.0.1", err: "wildcard"},
		{in: "a b", err: "own host"},
		{in: "https://x.example.org", err: "own host"},
	} {
		got, err := ParseOwnHost(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), c.in)):
			t.Errorf("ParseOwnHost(%q) = %q, %v; want an error naming it and %q", c.in, got, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseOwnHost(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// An own host with a port refuses that origin only: the local stack's
// functions and receivers share 127.0.0.1 on ports of their own. Without
// a port, the host is refused on every port, as on AWS; the scheme's
// default port counts as written.
func TestOwnHostWithAPortRefusesThatOriginOnly(t *testing.T) {
	r := mustRules(t, []string{"127.0.0.1:8081", "127.0.0.1:9000", "hooks.example.com", "hooks.example.com:8443", "own.example.com:8443"},
		[]string{"127.0.0.1/32"}, []string{"127.0.0.1:8081", "hooks.example.com:443", "own.example.com"})
	for _, c := range []struct{ url, err string }{
		{url: "http://127.0.0.1:8081/hook", err: "127.0.0.1:8081 is this deployment's own Function URL origin"},
		{url: "http://127.0.0.1:9000/hook"},
		{url: "https://hooks.example.com/", err: "own Function URL origin"},
		{url: "https://hooks.example.com:443/", err: "own Function URL origin"},
		{url: "https://hooks.example.com:8443/"},
		{url: "https://own.example.com:8443/", err: "own Function URL"},
	} {
		_, err := r.Check(c.url)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v; want it allowed", c.url, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "TOOLGATE_WEBHOOK_OWN_HOSTS")):
			t.Errorf("%s: %v; want a refusal saying %q and naming TOOLGATE_WEBHOOK_OWN_HOSTS", c.url, err, c.err)
		}
	}
}

// fakeResolver is a hand-written fake: no local stand-in for DNS answers
// any name with the addresses a test chooses. It records each look-up.
type fakeResolver struct {
	answers map[string][]netip.Addr
	mu      sync.Mutex
	lookups int
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups++
	if a, ok := f.answers[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestResolve(t *testing.T) {
	res := &fakeResolver{answers: map[string][]netip.Addr{
		"public.example.com":   addrs("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "93.184.215.14"),
		"metadata.example.com": addrs("93.184.215.14", "169.254.169.254"),
		"private.example.com":  addrs("10.0.0.7"),
		"mapped.example.com":   addrs("::ffff:127.0.0.1"),
		"local.example.com":    addrs("127.0.0.1"),
	}}
	r := mustRules(t, []string{"*.example.com", "*.example.com:8080"}, []string{"127.0.0.1/32"}, nil)
	r.Resolver = res
	ctx := context.Background()
	for _, c := range []struct{ host, class, why string }{
		{"metadata.example.com", "refused-address", "169.254.169.254"},
		{"private.example.com", "refused-address", "RFC 1918"},
		{"mapped.example.com", "refused-address", "IPv4-mapped"},
		{"nowhere.example.com", "lookup", "no such host"},
	} {
		_, _, err := r.CheckResolved(ctx, "https://"+c.host+"/hook")
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Class != c.class || !strings.Contains(ref.Reason, c.why) {
			t.Errorf("%s: %v, want class %s naming %s", c.host, err, c.class, c.why)
		}
	}
	// Plain http to a name: only when every answer is exempted.
	if _, got, err := r.CheckResolved(ctx, "http://local.example.com:8080/"); err != nil || len(got) != 1 {
		t.Errorf("plain http to a name answering only the exempted loopback: %v, %v", got, err)
	}
	for _, host := range []string{"public.example.com", "metadata.example.com"} {
		_, _, err := r.CheckResolved(ctx, "http://"+host+":8080/")
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Class != "refused-address" {
			t.Errorf("plain http to %s: %v, want a refused-address", host, err)
		}
	}
	_, got, err := r.CheckResolved(ctx, "https://public.example.com/hook")
	if err != nil || len(got) != 2 {
		t.Errorf("public: %v, %v; want two distinct addresses", got, err)
	}
	if _, got, err := r.CheckResolved(ctx, "https://local.example.com/"); err != nil || len(got) != 1 {
		t.Errorf("an exempted answer: %v, %v", got, err)
	}
	before := res.lookups
	if _, got, err := r.CheckResolved(ctx, "http://127.0.0.1:8080/"); err == nil {
		t.Errorf("127.0.0.1:8080 is not listed, yet allowed: %v", got)
	}
	if res.lookups != before {
		t.Error("an IP literal was looked up")
	}
}
