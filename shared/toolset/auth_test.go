package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
)

// CanonicalAuth takes a header (Authorization included, with a scheme) or
// an MCP server's path segment, pins the header in canonical form and
// https as no origin_scheme, and refuses every other shape, naming the rule.
func TestCanonicalAuth(t *testing.T) {
	for _, c := range []struct {
		name string
		in   Auth
		mcp  bool
		want Auth
	}{
		{"a bearer token", Auth{Header: "authorization", Scheme: "Bearer"}, true, Auth{Header: "Authorization", Scheme: "Bearer"}},
		{"an API key header", Auth{Header: "x-api-key"}, false, Auth{Header: "X-Api-Key"}},
		{"a path segment", Auth{PathSegment: 2}, true, Auth{PathSegment: 2}},
		{"https written", Auth{Header: "X-Api-Key", OriginScheme: "https"}, false, Auth{Header: "X-Api-Key"}},
		{"http", Auth{Header: "X-Api-Key", OriginScheme: "http"}, false, Auth{Header: "X-Api-Key", OriginScheme: "http"}},
	} {
		got, err := CanonicalAuth(c.in, c.mcp)
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	for _, c := range []struct {
		name string
		in   Auth
		mcp  bool
		says string
	}{
		{"both", Auth{Header: "X-Api-Key", PathSegment: 1}, true, "both header and path_segment"},
		{"neither", Auth{Scheme: "Bearer"}, true, "neither header nor path_segment"},
		{"a path segment on an http host", Auth{PathSegment: 1}, false, "MCP servers only"},
		{"a negative path segment", Auth{PathSegment: -1}, true, "not a path segment's position"},
		{"a scheme without a header", Auth{PathSegment: 1, Scheme: "Bearer"}, true, "scheme goes with header only"},
		{"an origin scheme on an MCP server", Auth{Header: "X-Api-Key", OriginScheme: "http"}, true, "origin_scheme is for http host entries only"},
		{"an unknown origin scheme", Auth{Header: "X-Api-Key", OriginScheme: "ftp"}, false, "is not https or http"},
		{"a header that is not a token", Auth{Header: "X Api Key"}, false, "not a header name"},
		{"a forbidden header", Auth{Header: "Cookie"}, false, "may not be set"},
		{"a standard header", Auth{Header: "Accept"}, false, "standard header"},
		{"a proxy header", Auth{Header: "Proxy-Authorization"}, false, "may not be set"},
		{"a scheme with a blank", Auth{Header: "Authorization", Scheme: "Bearer x"}, false, "not an authentication scheme"},
		{"a long scheme", Auth{Header: "Authorization", Scheme: strings.Repeat("B", MaxAuthSchemeBytes+1)}, false, "not an authentication scheme"},
	} {
		_, err := CanonicalAuth(c.in, c.mcp)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.says)
		}
	}
}

// An http host entry's auth is pinned in its canonical form, only on an
// exact entry, never on a header a call may set or the idempotency
// header; the error names the entry.
func TestCanonicalHTTPHostAuth(t *testing.T) {
	out, err := CanonicalHTTPHost(HTTPHost{Host: "API.example.com", Methods: []string{"GET"}, Auth: &Auth{Header: "authorization", Scheme: "Bearer", OriginScheme: "https"}})
	if err != nil || out.Auth == nil || *out.Auth != (Auth{Header: "Authorization", Scheme: "Bearer"}) {
		t.Fatalf("%+v %v", out, err)
	}
	for name, c := range map[string]struct {
		h    HTTPHost
		says string
	}{
		"a wildcard entry": {HTTPHost{Host: "*.example.com", Methods: []string{"GET"}, Auth: &Auth{Header: "X-Api-Key"}},
			"host *.example.com: auth on a wildcard entry"},
		"its own header in headers": {HTTPHost{Host: "api.example.com", Methods: []string{"GET"}, Headers: []string{"x-api-key"}, Auth: &Auth{Header: "X-Api-Key"}},
			"host api.example.com: headers names X-Api-Key, the auth header"},
		"its own header, with underscores": {HTTPHost{Host: "api.example.com", Methods: []string{"GET"}, Headers: []string{"x_api_key"}, Auth: &Auth{Header: "X-Api-Key"}},
			"the auth header"},
		"the idempotency header": {HTTPHost{Host: "api.example.com", Methods: []string{"POST"}, Idempotency: &HTTPIdempotency{Header: "X-Key"}, Auth: &Auth{Header: "x-key"}},
			"host api.example.com: the auth header X-Key is the idempotency header"},
		"a path segment": {HTTPHost{Host: "api.example.com", Methods: []string{"GET"}, Auth: &Auth{PathSegment: 1}},
			"host api.example.com: auth path_segment is for MCP servers only"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := CanonicalHTTPHost(c.h)
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("%v, want an error saying %q", err, c.says)
			}
		})
	}
}

// The registration check refuses http_hosts whose auth is not in its
// pinned form, as any entry not in its pinned form.
func TestVerifyRefusesAuthNotInItsPinnedForm(t *testing.T) {
	for name, a := range map[string]Auth{
		"https written":         {Header: "X-Api-Key", OriginScheme: "https"},
		"a header's lower case": {Header: "x-api-key"},
	} {
		t.Run(name, func(t *testing.T) {
			ts := mustHTTP(t, HTTPHost{Host: "api.example.com", Methods: []string{"GET"}, Auth: &Auth{Header: "X-Api-Key"}})
			a := a
			ts.HTTPHosts[0].Auth = &a
			var err error
			if ts.ID, err = ts.ComputeID(); err != nil {
				t.Fatal(err)
			}
			err = ts.Verify(catalog.Default())
			var ref *Refusal
			if !errors.As(err, &ref) || ref.Rule != RuleHTTPHosts {
				t.Fatalf("%v, want a [%s] refusal", err, RuleHTTPHosts)
			}
		})
	}
}

// A "{secret}" path segment is accepted exactly where the server's auth
// puts it, and refused anywhere else, with no declaration, or with one
// naming another segment; secret-looking segments stay refused beside it.
func TestParseMCPURLAuthTakesSecretOnlyWhereDeclared(t *testing.T) {
	u, err := ParseMCPURLAuth("https://mcp.example.com/s/{secret}/mcp", &Auth{PathSegment: 2})
	if err != nil {
		t.Fatal(err)
	}
	if u.Host != "mcp.example.com" || u.Parsed.Path != "/s/{secret}/mcp" || Origin(u) != "https://mcp.example.com" {
		t.Fatalf("host %s, path %s, origin %s", u.Host, u.Parsed.Path, Origin(u))
	}
	tok := fakeToken("zapier", 40)
	for _, c := range []struct {
		name, url string
		auth      *Auth
		says      string
	}{
		{"no declaration", "https://mcp.example.com/s/{secret}/mcp", nil, "path segment 2 is {secret}, where a credential goes, but the server's auth declares no path_segment 2"},
		{"a header declared", "https://mcp.example.com/s/{secret}/mcp", &Auth{Header: "Authorization"}, "declares no path_segment 2"},
		{"another segment declared", "https://mcp.example.com/s/{secret}/mcp", &Auth{PathSegment: 3}, "path segment 3 of the URL is not {secret}"},
		{"past the path", "https://mcp.example.com/s/{secret}/mcp", &Auth{PathSegment: 9}, "path segment 9 of the URL is not {secret}"},
		{"no path", "https://mcp.example.com", &Auth{PathSegment: 1}, "path segment 1 of the URL is not {secret}"},
		{"twice", "https://mcp.example.com/{secret}/{secret}", &Auth{PathSegment: 1}, "path segment 2 is {secret} too"},
		{"encoded", "https://mcp.example.com/s/%7Bsecret%7D/mcp", &Auth{PathSegment: 2}, "path segment 2 of the URL is not {secret}"},
		{"inside a segment", "https://mcp.example.com/s/x{secret}/mcp", &Auth{PathSegment: 2}, "path segment 2 of the URL is not {secret}"},
		{"a secret beside it", "https://mcp.example.com/{secret}/" + tok + "/mcp", &Auth{PathSegment: 1}, "secret-looking path segment (segment 2"},
		{"a query beside it", "https://mcp.example.com/{secret}/mcp?k=sk-live-4f9a", &Auth{PathSegment: 1}, "has a query string"},
		{"userinfo beside it", "https://u:sk-live-4f9a@mcp.example.com/{secret}/mcp", &Auth{PathSegment: 1}, "userinfo"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseMCPURLAuth(c.url, c.auth)
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("%v, want an error saying %q", err, c.says)
			}
			if strings.Contains(err.Error(), tok) || strings.Contains(err.Error(), "sk-live") {
				t.Errorf("the error quotes the secret: %v", err)
			}
		})
	}
	if _, err := ParseMCPURL("https://mcp.example.com/s/{secret}/mcp"); err == nil || !strings.Contains(err.Error(), "declares no path_segment 2") {
		t.Errorf("ParseMCPURL: %v, want the {secret} segment refused without a declaration", err)
	}
}

// A message shows a URL with its {secret} segment as written: it holds
// no credential; a secret-looking segment beside it stays hidden.
func TestMCPURLShownShowsTheSecretSegment(t *testing.T) {
	tok := fakeToken("zapier", 40)
	for raw, want := range map[string]string{
		"https://mcp.example.com/s/{secret}/mcp":           "https://mcp.example.com/s/{secret}/mcp",
		"https://mcp.example.com/{secret}/" + tok + "?k=v": "https://mcp.example.com/{secret}/…?…",
		"https://u:p@mcp.example.com/{secret}":             "https://…@mcp.example.com/…",
	} {
		if got := MCPURLShown(raw); got != want {
			t.Errorf("MCPURLShown(%q) = %q, want %q", raw, got, want)
		}
	}
}

// draftWithAuth is draftDoc with the server's auth (JSON) and URL.
func draftWithAuth(auth, url string) string {
	d := strings.Replace(draftDoc, `"https://mcp.crm.example.com/mcp"`, `"`+url+`"`, 1)
	return strings.Replace(d, `"policies":`, `"auth": `+auth+`, "policies":`, 1)
}

// listedCRM is what the crm server of draftDoc lists.
var listedCRM = Listed{Protocol: "2026-07-28", Tools: []ListedTool{
	{Name: "create_ticket", InputSchema: json.RawMessage(`{"type":"object"}`)},
	{Name: "lookup_customer", InputSchema: json.RawMessage(`{"type":"object"}`)},
}}

// resolveDraft parses and resolves doc with listedCRM, and verifies it.
func resolveDraft(t *testing.T, doc string) *Toolset {
	t.Helper()
	draft, err := ParseDraft([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := draft.ResolveMCP(context.Background(), func(context.Context, string) (Listed, error) { return listedCRM, nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Verify(catalog.Default()); err != nil {
		t.Fatal(err)
	}
	return ts
}

// A draft's server auth is pinned on each of its tools, part of the
// content and the id; the draft's URL may hold {secret} where it says.
func TestPinCopiesTheServersAuthOntoEachTool(t *testing.T) {
	plain := resolveDraft(t, draftDoc)
	bearer := resolveDraft(t, draftWithAuth(`{"header": "Authorization", "scheme": "Bearer"}`, "https://mcp.crm.example.com/mcp"))
	path := resolveDraft(t, draftWithAuth(`{"path_segment": 2}`, "https://mcp.crm.example.com/s/{secret}/mcp"))
	for name, tool := range bearer.Tools {
		if tool.MCP.Auth == nil || *tool.MCP.Auth != (Auth{Header: "Authorization", Scheme: "Bearer"}) {
			t.Errorf("%s pins auth %+v", name, tool.MCP.Auth)
		}
	}
	if bearer.ID == plain.ID || path.ID == plain.ID || path.ID == bearer.ID {
		t.Errorf("ids %s %s %s: auth is not part of the content", plain.ID, bearer.ID, path.ID)
	}
	if p := path.Tools["crm.create_ticket"].MCP; p.URL != "https://mcp.crm.example.com/s/{secret}/mcp" || p.Auth.PathSegment != 2 {
		t.Errorf("pinned %+v", p)
	}
	c, err := plain.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(c), "auth") {
		t.Errorf("a toolset without auth names it: %s", c)
	}
}

// A draft's auth must be in its pinned form and agree with its URL.
func TestParseDraftRefusesAuthItCannotPin(t *testing.T) {
	for name, c := range map[string]struct{ doc, rule, says string }{
		"a header in lower case":   {draftWithAuth(`{"header": "authorization"}`, "https://mcp.crm.example.com/mcp"), RuleAuth, "server crm: auth is not in its pinned form"},
		"both ways":                {draftWithAuth(`{"header": "Authorization", "path_segment": 1}`, "https://mcp.crm.example.com/mcp"), RuleAuth, "server crm: auth names both"},
		"an origin scheme":         {draftWithAuth(`{"header": "Authorization", "origin_scheme": "http"}`, "https://mcp.crm.example.com/mcp"), RuleAuth, "origin_scheme is for http host entries only"},
		"an unknown member":        {draftWithAuth(`{"header": "Authorization", "prefix": "Bearer"}`, "https://mcp.crm.example.com/mcp"), RuleFormat, "unknown field"},
		"{secret} elsewhere":       {draftWithAuth(`{"path_segment": 1}`, "https://mcp.crm.example.com/s/{secret}/mcp"), RuleMCPTool, "server crm: URL: path segment 1 of the URL is not {secret}"},
		"{secret} undeclared":      {draftWithAuth(`{"header": "Authorization"}`, "https://mcp.crm.example.com/s/{secret}/mcp"), RuleMCPTool, "declares no path_segment 2"},
		"a path segment, no token": {draftWithAuth(`{"path_segment": 2}`, "https://mcp.crm.example.com/s/mcp"), RuleMCPTool, "path segment 2 of the URL is not {secret}"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseDraft([]byte(c.doc))
			var ref *Refusal
			if !errors.As(err, &ref) || ref.Rule != c.rule || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("%v, want a [%s] refusal saying %q", err, c.rule, c.says)
			}
		})
	}
}

// The registration check refuses a pin whose auth disagrees with its
// URL, is not in its pinned form, or differs between the tools of one
// server; and an MCP server and an http host of one name both declaring
// auth.
func TestVerifyRefusesAuthPinsThatDisagree(t *testing.T) {
	edit := func(f func(ts *Toolset)) error {
		ts := resolveDraft(t, draftWithAuth(`{"path_segment": 2}`, "https://mcp.crm.example.com/s/{secret}/mcp"))
		f(ts)
		var err error
		if ts.ID, err = ts.ComputeID(); err != nil {
			t.Fatal(err)
		}
		return ts.Verify(catalog.Default())
	}
	setAuth := func(ts *Toolset, tool string, a *Auth) {
		tl := ts.Tools[tool]
		m := *tl.MCP
		m.Auth = a
		tl.MCP = &m
		ts.Tools[tool] = tl
	}
	for name, c := range map[string]struct {
		f          func(ts *Toolset)
		rule, says string
	}{
		"one tool without auth": {func(ts *Toolset) { setAuth(ts, "crm.lookup_customer", nil) }, RuleMCPTool, "declares no path_segment 2"},
		"one tool with a header": {func(ts *Toolset) {
			for _, n := range []string{"crm.create_ticket", "crm.lookup_customer"} {
				tl := ts.Tools[n]
				m := *tl.MCP
				m.URL = "https://mcp.crm.example.com/mcp"
				tl.MCP = &m
				ts.Tools[n] = tl
			}
			setAuth(ts, "crm.create_ticket", &Auth{Header: "X-Api-Key"})
			setAuth(ts, "crm.lookup_customer", &Auth{Header: "Authorization"})
		}, RuleAuth, "the tools of MCP server crm pin different auth"},
		"a header in lower case": {func(ts *Toolset) {
			for _, n := range []string{"crm.create_ticket", "crm.lookup_customer"} {
				tl := ts.Tools[n]
				m := *tl.MCP
				m.URL = "https://mcp.crm.example.com/mcp"
				tl.MCP = &m
				ts.Tools[n] = tl
				setAuth(ts, n, &Auth{Header: "x-api-key"})
			}
		}, RuleAuth, "not in its pinned form"},
		"an http host of the server's name": {func(ts *Toolset) {
			ts.Tools["http"] = mustHTTP(t).Tools["http"]
			ts.HTTPHosts = []HTTPHost{{Host: "crm", Methods: []string{"GET"}, Auth: &Auth{Header: "X-Api-Key"}}}
		}, RuleAuth, "MCP server crm and http host crm both declare auth"},
	} {
		t.Run(name, func(t *testing.T) {
			err := edit(c.f)
			var ref *Refusal
			if !errors.As(err, &ref) || ref.Rule != c.rule || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("%v, want a [%s] refusal saying %q", err, c.rule, c.says)
			}
		})
	}
}

// A derived toolset keeps its base's auth declarations: on an MCP tool's
// pin and on an http host entry, neither dropped nor changed.
func TestCheckDerivedRefusesAnotherAuth(t *testing.T) {
	base := resolveDraft(t, draftWithAuth(`{"header": "Authorization", "scheme": "Bearer"}`, "https://mcp.crm.example.com/mcp"))
	derive := func(a *Auth) error {
		d := &Toolset{Name: "crm-other", Base: base.ID, Tools: map[string]Tool{}, FetchHosts: []string{}}
		for name, tl := range base.Tools {
			m := *tl.MCP
			m.Auth = a
			tl.MCP = &m
			d.Tools[name] = tl
		}
		return d.CheckDerived(base)
	}
	if err := derive(&Auth{Header: "Authorization", Scheme: "Bearer"}); err != nil {
		t.Fatalf("the same auth: %v", err)
	}
	for name, a := range map[string]*Auth{"none": nil, "another scheme": {Header: "Authorization", Scheme: "Token"}} {
		var ref *Refusal
		if err := derive(a); !errors.As(err, &ref) || ref.Rule != RuleBase {
			t.Errorf("%s: %v, want a [%s] refusal", name, err, RuleBase)
		}
	}

	hbase := mustHTTP(t,
		HTTPHost{Host: "api.example.com", Methods: []string{"GET", "POST"}, Auth: &Auth{Header: "X-Api-Key"}},
		HTTPHost{Host: "api.example.com:8443", Methods: []string{"GET"}},
		HTTPHost{Host: "*.example.com", Methods: []string{"GET"}},
	)
	hderive := func(hosts ...HTTPHost) error {
		d := mustHTTP(t, hosts...)
		d.Base = hbase.ID
		return d.CheckDerived(hbase)
	}
	if err := hderive(HTTPHost{Host: "api.example.com", Methods: []string{"GET"}, Auth: &Auth{Header: "X-Api-Key"}}, HTTPHost{Host: "*.example.com", Methods: []string{"GET"}}); err != nil {
		t.Fatalf("fewer methods, the same auth: %v", err)
	}
	if err := hderive(HTTPHost{Host: "*.example.com", Methods: []string{"GET"}}); err != nil {
		t.Fatalf("the auth entry dropped under a wildcard without auth (no credential sent): %v", err)
	}
	for name, hosts := range map[string][]HTTPHost{
		"auth dropped":   {{Host: "api.example.com", Methods: []string{"GET"}}},
		"auth changed":   {{Host: "api.example.com", Methods: []string{"GET"}, Auth: &Auth{Header: "X-Other-Key"}}},
		"origin changed": {{Host: "api.example.com", Methods: []string{"GET"}, Auth: &Auth{Header: "X-Api-Key", OriginScheme: "http"}}},
	} {
		var ref *Refusal
		if err := hderive(hosts...); !errors.As(err, &ref) || ref.Rule != RuleBase {
			t.Errorf("%s: %v, want a [%s] refusal", name, err, RuleBase)
		}
	}
	kbase := mustHTTP(t,
		HTTPHost{Host: "api.example.com", Methods: []string{"GET"}, Auth: &Auth{Header: "X-Api-Key"}},
		HTTPHost{Host: "api.example.com:443", Methods: []string{"GET"}},
	)
	d := mustHTTP(t, HTTPHost{Host: "api.example.com", Methods: []string{"GET"}, Auth: &Auth{Header: "X-Api-Key"}})
	d.Base = kbase.ID
	var ref *Refusal
	if err := d.CheckDerived(kbase); !errors.As(err, &ref) || !strings.Contains(err.Error(), "its auth is not its base's") {
		t.Errorf("dropping api.example.com:443 hands it to an entry with auth: %v, want a refusal", err)
	}
}

// AuthTargets lists each target that declares auth with its origin,
// sorted by name; MCPAuthTarget and HTTPAuthTarget find one, and nothing
// for a target without auth.
func TestAuthTargets(t *testing.T) {
	ts := resolveDraft(t, draftWithAuth(`{"path_segment": 2}`, "http://127.0.0.1:40647/s/{secret}/mcp"))
	ts.Tools["http"] = mustHTTP(t).Tools["http"]
	ts.HTTPHosts, _ = CanonicalHTTPHosts([]HTTPHost{
		{Host: "api.example.com", Methods: []string{"GET"}, Auth: &Auth{Header: "Authorization", Scheme: "Bearer"}},
		{Host: "127.0.0.1:18081", Methods: []string{"POST"}, Auth: &Auth{Header: "X-Api-Key", OriginScheme: "http"}},
		{Host: "[::1]:8443", Methods: []string{"GET"}, Auth: &Auth{Header: "X-Api-Key"}},
		{Host: "::1", Methods: []string{"GET"}, Auth: &Auth{Header: "X-Api-Key"}},
		{Host: "hooks.example.com", Methods: []string{"POST"}},
		{Host: "*.example.com", Methods: []string{"GET"}},
	})
	var err error
	if ts.ID, err = ts.ComputeID(); err != nil {
		t.Fatal(err)
	}
	if err := ts.Verify(catalog.Default()); err != nil {
		t.Fatal(err)
	}
	want := []AuthTarget{
		{Name: "127.0.0.1:18081", Origin: "http://127.0.0.1:18081", Auth: Auth{Header: "X-Api-Key", OriginScheme: "http"}},
		{Name: "::1", Origin: "https://[::1]", Auth: Auth{Header: "X-Api-Key"}},
		{Name: "[::1]:8443", Origin: "https://[::1]:8443", Auth: Auth{Header: "X-Api-Key"}},
		{Name: "api.example.com", Origin: "https://api.example.com", Auth: Auth{Header: "Authorization", Scheme: "Bearer"}},
		{Name: "crm", Origin: "http://127.0.0.1:40647", Auth: Auth{PathSegment: 2}, MCP: true},
	}
	got := ts.AuthTargets()
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("target %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if m, ok := ts.MCPAuthTarget("crm"); !ok || m != want[4] {
		t.Errorf("MCPAuthTarget(crm) = %+v %v", m, ok)
	}
	if h, ok := ts.HTTPAuthTarget("api.example.com"); !ok || h != want[3] {
		t.Errorf("HTTPAuthTarget(api.example.com) = %+v %v", h, ok)
	}
	for _, host := range []string{"hooks.example.com", "*.example.com", "other.example.com", "API.example.com"} {
		if h, ok := ts.HTTPAuthTarget(host); ok {
			t.Errorf("HTTPAuthTarget(%s) = %+v", host, h)
		}
	}
	if m, ok := ts.MCPAuthTarget("billing"); ok {
		t.Errorf("MCPAuthTarget(billing) = %+v", m)
	}
	if got := resolveDraft(t, draftDoc).AuthTargets(); got != nil {
		t.Errorf("a toolset without auth has targets %+v", got)
	}
	draft, err := ParseDraft([]byte(draftWithAuth(`{"header": "Authorization", "scheme": "Bearer"}`, "https://mcp.crm.example.com:8443/mcp")))
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := draft.MCPAuthTarget("crm"); !ok || d.Origin != "https://mcp.crm.example.com:8443" || !d.MCP {
		t.Errorf("a draft's server: %+v %v", d, ok)
	}
}

// ParseMCPURLAuth accepts a "{secret}" segment only where the declaration
// puts it: whatever it accepts has that segment there and nowhere else,
// and ParseMCPURL (no declaration) refuses it.
func FuzzParseMCPURLAuth(f *testing.F) {
	f.Add("https://mcp.example.com/s/{secret}/mcp", 2)
	f.Add("https://mcp.example.com/{secret}", 1)
	f.Add("http://[::1]:8080/a/{secret}/{secret}", 2)
	f.Add("https://mcp.example.com/s/%7Bsecret%7D/mcp", 2)
	f.Fuzz(func(t *testing.T, raw string, n int) {
		u, err := ParseMCPURLAuth(raw, &Auth{PathSegment: n})
		if err != nil {
			return
		}
		if n < 1 {
			if strings.Contains(raw, SecretSegment) && strings.Contains(u.Parsed.Path, "/"+SecretSegment) {
				t.Fatalf("accepted %q with a {secret} segment and no path_segment", raw)
			}
			return
		}
		_, segs, ok := splitPath(raw)
		if !ok || n > len(segs) || segs[n-1] != SecretSegment {
			t.Fatalf("accepted %q without {secret} at segment %d", raw, n)
		}
		for i, s := range segs {
			if s == SecretSegment && i != n-1 {
				t.Fatalf("accepted %q with {secret} at segment %d too", raw, i+1)
			}
		}
		if _, err := ParseMCPURL(raw); err == nil {
			t.Fatalf("ParseMCPURL accepts %q, whose {secret} no declaration names", raw)
		}
		if shown := MCPURLShown(raw); !strings.Contains(shown, SecretSegment) {
			t.Fatalf("MCPURLShown(%q) = %q, without its {secret} segment", raw, shown)
		}
	})
}
