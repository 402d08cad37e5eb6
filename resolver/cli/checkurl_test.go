package cli

import (
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"allowed", []string{"--allow", "api.example.com", "--resolve", "api.example.com=93.184.216.34", "https://api.example.com/x"}, ExitOK, "allow"},
		{"resolve keys are normalised", []string{"--allow", "API.example.com", "--resolve", "Api.Example.com.=93.184.216.34", "https://api.example.com/x"}, ExitOK, "allow"},
		{"private address", []string{"--allow", "api.example.com", "--resolve", "api.example.com=10.0.0.1", "https://api.example.com/x"}, ExitErrors, "refuse: "},
		{"one bad answer refuses", []string{"--allow", "api.example.com", "--resolve", "api.example.com=93.184.216.34,169.254.169.254", "https://api.example.com/x"}, ExitErrors, "refuse: "},
		{"exempted address", []string{"--allow", "127.0.0.1:18080", "--allow-address", "127.0.0.1/32", "http://127.0.0.1:18080/data.json"}, ExitOK, "allow"},
		{"not on the list", []string{"--allow", "api.example.com", "https://evil.example.net/"}, ExitErrors, "refuse: "},
		{"no list", []string{"https://api.example.com/"}, ExitErrors, "refuse: "},
		{"userinfo", []string{"--allow", "api.example.com", "http://api.example.com@evil.test/"}, ExitErrors, "refuse: "},
		{"bad allow entry", []string{"--allow", "*.com", "https://a.com/"}, ExitMisuse, ""},
		{"bad resolve", []string{"--allow", "a.example.com", "--resolve", "a.example.com", "https://a.example.com/"}, ExitMisuse, ""},
		{"no url", []string{"--allow", "a.example.com"}, ExitMisuse, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := run(append([]string{"check-url"}, c.args...)...)
			if code != c.code || !strings.HasPrefix(out, c.out) {
				t.Fatalf("exit %d, out %q, err %q", code, out, errs)
			}
		})
	}
}

// TestCheckURLPublicSuffix: --allow entries go through the same
// public-suffix rule as policy.fetch_hosts and the platform's list
// (package hostlist, Public Suffix List), and a refusal names it.
func TestCheckURLPublicSuffix(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		code int
		out  string // stdout prefix
		errs string // in stderr
	}{
		{"wildcard over co.uk", []string{"--allow", "*.co.uk", "https://example.co.uk/"}, ExitMisuse, "",
			`entry 0 "*.co.uk": a wildcard over the public suffix co.uk would allow every site under it (Public Suffix List, ICANN section)`},
		{"wildcard over github.io", []string{"--allow", "api.example.com", "--allow", "*.github.io", "https://octocat.github.io/"}, ExitMisuse, "",
			`entry 1 "*.github.io": a wildcard over the public suffix github.io would allow every site under it (Public Suffix List, private section)`},
		{"s3 bucket under amazonaws.com", []string{"--allow", "*.amazonaws.com", "https://bucket.s3.amazonaws.com/key"}, ExitErrors,
			"refuse: host bucket.s3.amazonaws.com is not on the platform allow-list: *.amazonaws.com does not cover bucket.s3.amazonaws.com: its registrable domain is bucket.s3.amazonaws.com, not amazonaws.com (s3.amazonaws.com is a public suffix, Public Suffix List, private section)", ""},
		{"global endpoint under amazonaws.com", []string{"--allow", "*.amazonaws.com", "--resolve", "ec2.amazonaws.com=93.184.216.34", "https://ec2.amazonaws.com/"}, ExitOK, "allow", ""},
		{"subdomain at depth", []string{"--allow", "*.example.com", "--resolve", "a.b.example.com=93.184.216.34", "https://a.b.example.com/"}, ExitOK, "allow", ""},
		{"exact public suffix host", []string{"--allow", "s3.amazonaws.com", "--resolve", "s3.amazonaws.com=93.184.216.34", "https://s3.amazonaws.com/bucket/key"}, ExitOK, "allow", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := run(append([]string{"check-url"}, c.args...)...)
			if code != c.code || !strings.HasPrefix(out, c.out) || !strings.Contains(errs, c.errs) {
				t.Fatalf("exit %d, out %q, err %q", code, out, errs)
			}
		})
	}
}

// TestCatalogToolsetFetchHosts: --fetch-host (toolgate invoke and toolset
// register --tool) refuses a wildcard over a public suffix.
func TestCatalogToolsetFetchHosts(t *testing.T) {
	t.Parallel()
	if _, err := catalogToolset("structured-data-fetch", []string{"*.s3.amazonaws.com"}); err == nil || !strings.Contains(err.Error(), "public suffix s3.amazonaws.com") {
		t.Fatalf("*.s3.amazonaws.com: %v", err)
	}
	ts, err := catalogToolset("structured-data-fetch", []string{"*.bucket.s3.amazonaws.com"})
	if err != nil || len(ts.FetchHosts) != 1 || ts.FetchHosts[0] != "*.bucket.s3.amazonaws.com" {
		t.Fatalf("*.bucket.s3.amazonaws.com: %+v, %v", ts, err)
	}
}
