package resolver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/toolset"
)

// httpToolset registers, in memory, a toolset named api pinning the http
// tool with hosts; the lookup finds it by its id.
func httpToolset(t *testing.T, hosts ...toolset.HTTPHost) (*toolset.Toolset, func(string) (*toolset.Toolset, error)) {
	t.Helper()
	ts, err := toolset.FromCatalog(catalog.Default(), []string{"http"}, nil, nil, hosts...)
	if err != nil {
		t.Fatal(err)
	}
	ts.Name = "api"
	if ts.ID, err = ts.ComputeID(); err != nil {
		t.Fatal(err)
	}
	if err := ts.Verify(catalog.Default()); err != nil {
		t.Fatal(err)
	}
	return ts, func(id string) (*toolset.Toolset, error) {
		if id != ts.ID {
			return nil, fmt.Errorf("%s: %w", id, ErrToolsetNotFound)
		}
		return ts, nil
	}
}

// An http step may catch CALL_PARKED when its toolset has a host entry
// that declares auth (a credential that expired parks the call), and not
// when none does.
func TestCallParkedIsRaisableOnHTTPStepsOfAToolsetWithAuth(t *testing.T) {
	solution := func(id string) string {
		return "solution: t\nversion: 1\ntoolset: " + id + "\nsteps:\n  - id: read\n    tool: http\n    with: {method: GET, url: \"https://api.example.com/items\"}\n" +
			"    on_error:\n      - errors: [CALL_PARKED]\n        next: parked\n      - next: parked\n  - id: parked\n    fail: {error: PARKED}\n"
	}
	withAuth, lookup := httpToolset(t,
		toolset.HTTPHost{Host: "api.example.com", Methods: []string{"GET"}},
		toolset.HTTPHost{Host: "billing.example.com", Methods: []string{"GET"}, Auth: &toolset.Auth{Header: "Authorization", Scheme: "Bearer"}})
	if res := Compile("t.yaml", []byte(solution(withAuth.ID)), Options{Toolsets: lookup}); !res.OK() {
		t.Fatalf("a toolset with an auth host entry: %s", diagText(res))
	}
	without, lookup := httpToolset(t,
		toolset.HTTPHost{Host: "api.example.com", Methods: []string{"GET"}},
		toolset.HTTPHost{Host: "billing.example.com", Methods: []string{"GET"}})
	res := Compile("t.yaml", []byte(solution(without.ID)), Options{Toolsets: lookup})
	if res.OK() || !strings.Contains(diagText(res), `catches "CALL_PARKED", which http's Task never raises`) {
		t.Fatalf("a toolset without auth: diagnostics\n%s\nwant CALL_PARKED refused", diagText(res))
	}
}

// A Solution's own policy.http_hosts declare no auth (no credential is
// stored for a toolset without a name), and a step never sets its host's
// auth header.
func TestSolutionHTTPHostsTakeNoAuth(t *testing.T) {
	res := compileString(t, "solution: t\nversion: 1\npolicy:\n  http_hosts:\n    - {host: api.example.com, methods: [GET], auth: {header: Authorization}}\n"+
		"steps:\n  - id: read\n    tool: http\n    with: {method: GET, url: \"https://api.example.com/\"}\n")
	if res.OK() || !strings.Contains(diagText(res), "policy.http_hosts[0].auth: auth is declared in a toolset file") {
		t.Fatalf("diagnostics\n%s", diagText(res))
	}
	ts, lookup := httpToolset(t, toolset.HTTPHost{Host: "api.example.com", Methods: []string{"GET"}, Auth: &toolset.Auth{Header: "X-Api-Key"}})
	res = Compile("t.yaml", []byte("solution: t\nversion: 1\ntoolset: "+ts.ID+"\nsteps:\n  - id: read\n    tool: http\n    with: {method: GET, url: \"https://api.example.com/\", headers: {x-api-key: k}}\n"), Options{Toolsets: lookup})
	if res.OK() || !strings.Contains(diagText(res), "X-Api-Key is host api.example.com's auth header") {
		t.Fatalf("diagnostics\n%s", diagText(res))
	}
}

// A toolset file declares auth on an MCP server and on exact http host
// entries; it is pinned in its canonical form, and every rule is a
// diagnostic at the value that breaks it.
func TestToolsetFileAuth(t *testing.T) {
	res := CompileToolset("api.yaml", []byte(`toolset: api
tools:
  crm:
    mcp: https://mcp.crm.example.com/s/{secret}/mcp
    admit: [lookup_customer]
    auth: {path_segment: 2}
  http:
    hosts:
      - {host: api.example.com, methods: [GET], auth: {header: authorization, scheme: Bearer}}
      - {host: "127.0.0.1:18081", methods: [POST], auth: {header: x-api-key, origin_scheme: http}}
      - {host: hooks.example.com, methods: [POST], auth: {header: x-hook-key, origin_scheme: https}}
`), ToolsetOptions{})
	if !res.OK() || !res.Draft {
		t.Fatalf("diagnostics: %v", res.Diagnostics)
	}
	if a := res.Toolset.MCPServers["crm"].Auth; a == nil || *a != (toolset.Auth{PathSegment: 2}) {
		t.Errorf("crm auth %+v", a)
	}
	want := map[string]toolset.Auth{
		"127.0.0.1:18081":   {Header: "X-Api-Key", OriginScheme: "http"},
		"api.example.com":   {Header: "Authorization", Scheme: "Bearer"},
		"hooks.example.com": {Header: "X-Hook-Key"},
	}
	for _, h := range res.Toolset.HTTPHosts {
		if h.Auth == nil || *h.Auth != want[h.Host] {
			t.Errorf("%s auth %+v, want %+v", h.Host, h.Auth, want[h.Host])
		}
	}
	doc, err := res.Toolset.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := toolset.ParseDraft(doc); err != nil {
		t.Fatalf("the draft does not parse: %v", err)
	}

	for name, c := range map[string]struct{ src, says string }{
		"a wildcard entry": {"  http:\n    hosts:\n      - {host: \"*.example.com\", methods: [GET], auth: {header: X-Api-Key}}\n",
			`5:55: error: [http-host] tool "http" hosts[0]: host *.example.com: auth on a wildcard entry`},
		"its own header in headers": {"  http:\n    hosts:\n      - {host: api.example.com, methods: [GET], headers: [x-api-key], auth: {header: X-Api-Key}}\n",
			`[http-host] tool "http" hosts[0]: host api.example.com: headers names X-Api-Key, the auth header`},
		"both ways": {"  http:\n    hosts:\n      - {host: api.example.com, methods: [GET], auth: {header: X-Api-Key, path_segment: 1}}\n",
			`[http-host] tool "http" hosts[0].auth: auth names both header and path_segment`},
		"an unknown member": {"  http:\n    hosts:\n      - {host: api.example.com, methods: [GET], auth: {header: X-Api-Key, prefix: Bearer}}\n",
			`[unknown-field] unknown field "prefix" in tool "http" hosts[0].auth (allowed: header, scheme, path_segment, origin_scheme)`},
		"a forbidden header": {"  http:\n    hosts:\n      - {host: api.example.com, methods: [GET], auth: {header: Cookie}}\n",
			`[http-host] tool "http" hosts[0].auth: auth header Cookie may not be set`},
		"an origin scheme on a server": {"  crm:\n    mcp: https://mcp.crm.example.com/mcp\n    admit: [lookup_customer]\n    auth: {header: Authorization, origin_scheme: http}\n",
			`[mcp-server] MCP server "crm" auth: auth origin_scheme is for http host entries only`},
		"{secret} not declared": {"  crm:\n    mcp: https://mcp.crm.example.com/s/{secret}/mcp\n    admit: [lookup_customer]\n    auth: {header: Authorization}\n",
			`[mcp-server] MCP server "crm" mcp "https://mcp.crm.example.com/s/{secret}/mcp" is not a URL toolgate can call: path segment 2 is {secret}, where a credential goes, but the server's auth declares no path_segment 2`},
		"{secret} elsewhere": {"  crm:\n    mcp: https://mcp.crm.example.com/s/{secret}/mcp\n    admit: [lookup_customer]\n    auth: {path_segment: 3}\n",
			`path segment 3 of the URL is not {secret}`},
		"path segment zero": {"  crm:\n    mcp: https://mcp.crm.example.com/mcp\n    admit: [lookup_customer]\n    auth: {path_segment: 0}\n",
			`[invalid-value] MCP server "crm" auth.path_segment 0 is outside 1..4096`},
	} {
		t.Run(name, func(t *testing.T) {
			res := CompileToolset("api.yaml", []byte("toolset: api\ntools:\n"+c.src), ToolsetOptions{})
			if res.OK() || !strings.Contains(diagsOf(res.Diagnostics), c.says) {
				t.Fatalf("diagnostics\n%s\nwant %q", diagsOf(res.Diagnostics), c.says)
			}
		})
	}
}

// A derived toolset file keeps its base's auth: an entry written without
// it takes the base's, one written with another is refused.
func TestDerivedToolsetFileKeepsItsBasesAuth(t *testing.T) {
	base, lookup := httpToolset(t, toolset.HTTPHost{Host: "api.example.com", Methods: []string{"GET", "POST"}, Auth: &toolset.Auth{Header: "X-Api-Key"}})
	opts := ToolsetOptions{Lookup: lookup}
	res := CompileToolset("d.yaml", []byte("toolset: api-read\nbase: "+base.ID+"\ntools:\n  http:\n    hosts:\n      - {host: api.example.com, methods: [GET]}\n"), opts)
	if !res.OK() {
		t.Fatalf("diagnostics\n%s", diagsOf(res.Diagnostics))
	}
	if a := res.Toolset.HTTPHosts[0].Auth; a == nil || *a != (toolset.Auth{Header: "X-Api-Key"}) {
		t.Fatalf("the derived entry's auth %+v, want its base's", a)
	}
	res = CompileToolset("d.yaml", []byte("toolset: api-read\nbase: "+base.ID+"\ntools:\n  http:\n    hosts:\n      - {host: api.example.com, methods: [GET], auth: {header: Authorization}}\n"), opts)
	if res.OK() || !strings.Contains(diagsOf(res.Diagnostics), "its auth is not its base's") {
		t.Fatalf("diagnostics\n%s", diagsOf(res.Diagnostics))
	}
}

// diagsOf is diagnostics one a line.
func diagsOf(ds []Diagnostic) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String() + "\n")
	}
	return b.String()
}

// A Solution whose toolset declares auth always starts with the Starter,
// so its runs have a start record (the scopes a credential may come from
// need the verified starter); one without auth and without reviews has
// none.
func TestAToolsetWithAuthGivesEveryRunAStartRecord(t *testing.T) {
	solution := func(id string) string {
		return "solution: t\nversion: 1\ntoolset: " + id + "\nsteps:\n  - id: read\n    tool: http\n    with: {method: GET, url: \"https://api.example.com/items\"}\n"
	}
	for _, c := range []struct {
		name    string
		auth    *toolset.Auth
		starter bool
	}{{"with auth", &toolset.Auth{Header: "X-Api-Key"}, true}, {"without auth", nil, false}} {
		t.Run(c.name, func(t *testing.T) {
			ts, lookup := httpToolset(t, toolset.HTTPHost{Host: "api.example.com", Methods: []string{"GET"}, Auth: c.auth})
			res := Compile("t.yaml", []byte(solution(ts.ID)), Options{Toolsets: lookup})
			if !res.OK() {
				t.Fatalf("diagnostics\n%s", diagText(res))
			}
			var def struct{ States map[string]json.RawMessage }
			if err := json.Unmarshal(res.Definition, &def); err != nil {
				t.Fatal(err)
			}
			if _, ok := def.States[StarterState]; ok != c.starter {
				t.Fatalf("Starter state present: %v, want %v", ok, c.starter)
			}
		})
	}
}
