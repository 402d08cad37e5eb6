package toolset

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
)

func mustHTTP(t *testing.T, hosts ...HTTPHost) *Toolset {
	t.Helper()
	ts, err := FromCatalog(catalog.Default(), []string{"http"}, nil, nil, hosts...)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// FromCatalog pins http_hosts in their canonical form, whatever order and
// letter case they were written in.
func TestFromCatalogCanonicalizesHTTPHosts(t *testing.T) {
	ts := mustHTTP(t,
		HTTPHost{Host: "Hooks.Example.com", Methods: []string{"POST", "GET", "POST"}, Headers: []string{"x-b", "X-A", "x-a"},
			Idempotency: &HTTPIdempotency{Header: "idempotency-key"}},
		HTTPHost{Host: "api.example.com", Methods: []string{"GET"}},
	)
	if err := ts.Verify(catalog.Default()); err != nil {
		t.Fatal(err)
	}
	want := []HTTPHost{
		{Host: "api.example.com", Methods: []string{"GET"}},
		{Host: "hooks.example.com", Methods: []string{"GET", "POST"}, Headers: []string{"X-A", "X-B"}, Idempotency: &HTTPIdempotency{Header: "Idempotency-Key", Format: "raw"}},
	}
	if len(ts.HTTPHosts) != len(want) {
		t.Fatalf("got %+v", ts.HTTPHosts)
	}
	for i := range want {
		if !sameHTTPHost(ts.HTTPHosts[i], want[i]) {
			t.Fatalf("entry %d: got %+v, want %+v", i, ts.HTTPHosts[i], want[i])
		}
	}
}

// A toolset without http_hosts has the content, and so the id, it had
// before they existed: the member is left out.
func TestNoHTTPHostsKeepsTheContent(t *testing.T) {
	ts := mustBuild(t, catalog.Default(), []string{"send-email"}, nil, nil)
	c, err := ts.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(c), "http_hosts") {
		t.Fatalf("the canonical form names http_hosts: %s", c)
	}
}

func TestFromCatalogRefusesInvalidHTTPHosts(t *testing.T) {
	cases := map[string][]HTTPHost{
		"public suffix":          {{Host: "*.co.uk", Methods: []string{"GET"}}},
		"no methods":             {{Host: "a.example.com"}},
		"lower-case method":      {{Host: "a.example.com", Methods: []string{"post"}}},
		"unknown method":         {{Host: "a.example.com", Methods: []string{"TRACE"}}},
		"forbidden header":       {{Host: "a.example.com", Methods: []string{"GET"}, Headers: []string{"Authorization"}}},
		"standard header":        {{Host: "a.example.com", Methods: []string{"GET"}, Headers: []string{"content-type"}}},
		"not a header name":      {{Host: "a.example.com", Methods: []string{"GET"}, Headers: []string{"X A"}}},
		"idempotency forbidden":  {{Host: "a.example.com", Methods: []string{"POST"}, Idempotency: &HTTPIdempotency{Header: "X-Amz-Date"}}},
		"idempotency format":     {{Host: "a.example.com", Methods: []string{"POST"}, Idempotency: &HTTPIdempotency{Header: "Idempotency-Key", Format: "base64"}}},
		"idempotency in headers": {{Host: "a.example.com", Methods: []string{"POST"}, Headers: []string{"Idempotency-Key"}, Idempotency: &HTTPIdempotency{Header: "idempotency-key"}}},
		"host twice":             {{Host: "a.example.com", Methods: []string{"GET"}}, {Host: "A.example.com", Methods: []string{"POST"}}},
	}
	for name, hosts := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := FromCatalog(catalog.Default(), []string{"http"}, nil, nil, hosts...); err == nil {
				t.Fatalf("FromCatalog accepted %+v", hosts)
			}
		})
	}
}

// Verify refuses http_hosts that are not in their pinned form, and
// http_hosts without the http tool, under RuleHTTPHosts; the http tool
// without http_hosts passes (the tool then refuses every call).
func TestVerifyHTTPHosts(t *testing.T) {
	c := catalog.Default()
	if err := mustHTTP(t).Verify(c); err != nil {
		t.Fatalf("the http tool without http_hosts: %v", err)
	}
	entry := HTTPHost{Host: "api.example.com", Methods: []string{"GET", "POST"}, Headers: []string{"X-Api-Version"}}
	cases := []struct {
		name   string
		modify func(ts *Toolset)
	}{
		{"host not canonical", func(ts *Toolset) { ts.HTTPHosts[0].Host = "API.example.com" }},
		{"hosts unsorted", func(ts *Toolset) {
			ts.HTTPHosts = append([]HTTPHost{{Host: "b.example.com", Methods: []string{"GET"}}}, ts.HTTPHosts...)
		}},
		{"host twice", func(ts *Toolset) { ts.HTTPHosts = append(ts.HTTPHosts, ts.HTTPHosts[0]) }},
		{"public suffix", func(ts *Toolset) { ts.HTTPHosts[0].Host = "*.github.io" }},
		{"methods unsorted", func(ts *Toolset) { ts.HTTPHosts[0].Methods = []string{"POST", "GET"} }},
		{"methods repeated", func(ts *Toolset) { ts.HTTPHosts[0].Methods = []string{"GET", "GET"} }},
		{"methods empty", func(ts *Toolset) { ts.HTTPHosts[0].Methods = []string{} }},
		{"method unknown", func(ts *Toolset) { ts.HTTPHosts[0].Methods = []string{"CONNECT"} }},
		{"header not canonical", func(ts *Toolset) { ts.HTTPHosts[0].Headers = []string{"x-api-version"} }},
		{"header forbidden", func(ts *Toolset) { ts.HTTPHosts[0].Headers = []string{"X-Http-Method-Override"} }},
		{"headers unsorted", func(ts *Toolset) { ts.HTTPHosts[0].Headers = []string{"X-B", "X-A"} }},
		{"idempotency header invalid", func(ts *Toolset) { ts.HTTPHosts[0].Idempotency = &HTTPIdempotency{Header: "Cookie", Format: "raw"} }},
		{"idempotency header not canonical", func(ts *Toolset) {
			ts.HTTPHosts[0].Idempotency = &HTTPIdempotency{Header: "idempotency-key", Format: "raw"}
		}},
		{"idempotency format missing", func(ts *Toolset) { ts.HTTPHosts[0].Idempotency = &HTTPIdempotency{Header: "Idempotency-Key"} }},
		{"idempotency format unknown", func(ts *Toolset) {
			ts.HTTPHosts[0].Idempotency = &HTTPIdempotency{Header: "Idempotency-Key", Format: "hex"}
		}},
		{"without the http tool", func(ts *Toolset) { delete(ts.Tools, "http") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := mustHTTP(t, entry)
			if err := ts.Verify(c); err != nil {
				t.Fatalf("before the change: %v", err)
			}
			tc.modify(ts)
			var err error
			if ts.ID, err = ts.ComputeID(); err != nil {
				t.Fatal(err)
			}
			err = ts.Verify(c)
			var ref *Refusal
			if !errors.As(err, &ref) || ref.Rule != RuleHTTPHosts {
				t.Fatalf("Verify: %v, want a refusal for %s", err, RuleHTTPHosts)
			}
		})
	}
}

// A derived toolset may drop hosts, methods, headers and idempotency, and
// may add none of them.
func TestCheckDerivedHTTPHosts(t *testing.T) {
	base := mustHTTP(t,
		HTTPHost{Host: "api.example.com", Methods: []string{"GET", "POST"}, Headers: []string{"X-A", "X-B"}, Idempotency: &HTTPIdempotency{Header: "Idempotency-Key"}},
		HTTPHost{Host: "hooks.example.com", Methods: []string{"POST"}},
	)
	derive := func(hosts ...HTTPHost) *Toolset {
		d := mustHTTP(t, hosts...)
		d.Base = base.ID
		return d
	}
	narrower := []HTTPHost{{Host: "api.example.com", Methods: []string{"GET"}, Headers: []string{"X-B"}}}
	if err := derive(narrower...).CheckDerived(base); err != nil {
		t.Fatalf("a narrower toolset: %v", err)
	}
	if err := derive(base.HTTPHosts...).CheckDerived(base); err != nil {
		t.Fatalf("the same hosts: %v", err)
	}
	wider := map[string][]HTTPHost{
		"a host":                  {{Host: "other.example.com", Methods: []string{"GET"}}},
		"a method":                {{Host: "hooks.example.com", Methods: []string{"POST", "PUT"}}},
		"a header":                {{Host: "hooks.example.com", Methods: []string{"POST"}, Headers: []string{"X-C"}}},
		"an idempotency":          {{Host: "hooks.example.com", Methods: []string{"POST"}, Idempotency: &HTTPIdempotency{Header: "Idempotency-Key"}}},
		"another idempotency key": {{Host: "api.example.com", Methods: []string{"POST"}, Idempotency: &HTTPIdempotency{Header: "Idempotency-Key", Format: "uuid"}}},
	}
	for name, hosts := range wider {
		t.Run(name, func(t *testing.T) {
			err := derive(hosts...).CheckDerived(base)
			var ref *Refusal
			if !errors.As(err, &ref) || ref.Rule != RuleBase {
				t.Fatalf("CheckDerived: %v, want a refusal for %s", err, RuleBase)
			}
		})
	}
}

func TestMatchHTTPHostPrefersTheMostSpecificEntry(t *testing.T) {
	hosts, err := CanonicalHTTPHosts([]HTTPHost{
		{Host: "*.example.com", Methods: []string{"GET"}},
		{Host: "*.hooks.example.com", Methods: []string{"POST"}},
		{Host: "api.example.com", Methods: []string{"PUT"}},
		{Host: "api.example.com:8443", Methods: []string{"DELETE"}},
		{Host: "jobs.example.com", Methods: []string{"GET"}},
		{Host: "jobs.example.com:443", Methods: []string{"POST"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ host, port, want string }{
		{"api.example.com", "", "api.example.com"},
		{"api.example.com", "8443", "api.example.com:8443"},
		{"a.hooks.example.com", "", "*.hooks.example.com"},
		{"www.example.com", "", "*.example.com"},
		{"jobs.example.com", "", "jobs.example.com:443"},
		{"example.com", "", ""},
		{"www.example.org", "", ""},
	}
	for _, tc := range cases {
		got, ok := MatchHTTPHost(hosts, "https", tc.host, tc.port)
		if ok != (tc.want != "") || got.Host != tc.want {
			t.Errorf("%s:%s: got %q (%v), want %q", tc.host, tc.port, got.Host, ok, tc.want)
		}
	}
}

// CanonicalHTTPHost is idempotent, and what it returns Verify accepts: the
// pinned form of an entry, its auth included, is one the registration
// check takes.
func FuzzCanonicalHTTPHost(f *testing.F) {
	f.Add("api.example.com", "POST,GET", "x-api-version", "idempotency-key", "", "authorization", "https")
	f.Add("*.hooks.example.com:8443", "PUT", "", "", "", "x-api-key", "")
	f.Add("[::1]:80", "DELETE,DELETE", "X-A,x-a", "Key", "uuid", "x_a", "http")
	f.Add("*.co.uk", "get", "Cookie", "X-Amz-Date", "hex", "", "")
	c := catalog.Default()
	f.Fuzz(func(t *testing.T, host, methods, headers, key, format, authHeader, originScheme string) {
		h := HTTPHost{Host: host, Methods: split(methods), Headers: split(headers)}
		if key != "" || format != "" {
			h.Idempotency = &HTTPIdempotency{Header: key, Format: format}
		}
		if authHeader != "" || originScheme != "" {
			h.Auth = &Auth{Header: authHeader, Scheme: "Bearer", OriginScheme: originScheme}
		}
		out, err := CanonicalHTTPHost(h)
		if err != nil {
			return
		}
		again, err := CanonicalHTTPHost(out)
		if err != nil || !sameHTTPHost(again, out) {
			t.Fatalf("not idempotent: %+v then %+v, %v", out, again, err)
		}
		ts, err := FromCatalog(c, []string{"http"}, nil, nil, out)
		if err != nil {
			t.Fatal(err)
		}
		if err := ts.Verify(c); err != nil {
			t.Fatalf("Verify refuses the pinned form %+v: %v", out, err)
		}
	})
}

// split is s split at commas; nil for "".
func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// A derived toolset that drops an entry its base keeps for a host under a
// wider entry hands that host to the wider entry (MatchHTTPHost), whose
// methods, headers or idempotency the dropped entry did not allow there:
// that widens, and is refused. Dropping an entry no wider entry covers, or
// one a wider entry covers with nothing more, narrows.
func TestCheckDerivedRefusesDroppingAnEntryAWiderOneWouldTakeOver(t *testing.T) {
	base := mustHTTP(t,
		HTTPHost{Host: "*.example.com", Methods: []string{"GET", "POST"}, Headers: []string{"X-A"}, Idempotency: &HTTPIdempotency{Header: "Idempotency-Key"}},
		HTTPHost{Host: "*.api.example.com", Methods: []string{"GET"}},
		HTTPHost{Host: "api.example.com", Methods: []string{"GET"}},
		HTTPHost{Host: "api.example.com:8443", Methods: []string{"GET", "POST"}},
		HTTPHost{Host: "hooks.example.com", Methods: []string{"GET", "POST"}, Headers: []string{"X-A"}, Idempotency: &HTTPIdempotency{Header: "Idempotency-Key"}},
		HTTPHost{Host: "other.example.org", Methods: []string{"POST"}},
	)
	derive := func(hosts ...HTTPHost) *Toolset {
		d := mustHTTP(t, hosts...)
		d.Base = base.ID
		return d
	}
	keep := func(drop ...string) []HTTPHost {
		var out []HTTPHost
		for _, h := range base.HTTPHosts {
			if !slices.Contains(drop, h.Host) {
				out = append(out, h)
			}
		}
		return out
	}
	wider := map[string][]HTTPHost{
		"a read-only host handed to a wildcard that posts": keep("api.example.com"),
		"a read-only wildcard handed to a wider one":       keep("*.api.example.com"),
		"a narrowed wildcard over a dropped host": {
			{Host: "*.example.com", Methods: []string{"GET", "POST"}},
		},
	}
	for name, hosts := range wider {
		t.Run(name, func(t *testing.T) {
			err := derive(hosts...).CheckDerived(base)
			var ref *Refusal
			if !errors.As(err, &ref) || ref.Rule != RuleBase {
				t.Fatalf("CheckDerived: %v, want a refusal for %s", err, RuleBase)
			}
		})
	}
	narrower := map[string][]HTTPHost{
		"a host no wider entry covers":             keep("other.example.org"),
		"a host the wider entry covers no further": keep("hooks.example.com"),
		"a port-named entry no other covers":       keep("api.example.com:8443"),
		"the wide entry itself":                    keep("*.example.com"),
	}
	for name, hosts := range narrower {
		t.Run(name, func(t *testing.T) {
			if err := derive(hosts...).CheckDerived(base); err != nil {
				t.Fatalf("CheckDerived: %v", err)
			}
		})
	}
}

// An entry may not name its idempotency header among its custom headers,
// written with underscores for hyphens either: a CGI-style server reads
// Idempotency_Key as Idempotency-Key, so a call could send a second key.
func TestCanonicalHTTPHostRefusesTheIdempotencyHeaderWithUnderscores(t *testing.T) {
	_, err := CanonicalHTTPHost(HTTPHost{Host: "api.example.com", Methods: []string{"POST"},
		Headers: []string{"Idempotency_Key"}, Idempotency: &HTTPIdempotency{Header: "Idempotency-Key"}})
	if err == nil {
		t.Fatal("CanonicalHTTPHost accepted Idempotency_Key beside the idempotency header Idempotency-Key")
	}
}
