package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
)

// draftDoc is a draft as toolgate writes it (MarshalIndent) for a toolset
// file naming the server crm.
const draftDoc = `{
  "id": "",
  "name": "crm",
  "tools": {},
  "fetch_hosts": [],
  "mcp_servers": {
    "crm": {
      "url": "https://mcp.crm.example.com/mcp",
      "admit": ["create_ticket", "lookup_customer"],
      "policies": {"lookup_customer": {"policy": "at_least_once", "idempotent": true}}
    }
  }
}`

// A draft is read only in the form toolgate writes it: a name, no id, no
// base, and members that are exactly its fields, once each, so that the
// bytes a caller proof binds say what is registered.
func TestParseDraft(t *testing.T) {
	ts, err := ParseDraft([]byte(draftDoc))
	if err != nil || ts.Name != "crm" || len(ts.MCPServers["crm"].Admit) != 2 {
		t.Fatalf("%+v %v", ts, err)
	}
	for name, c := range map[string]struct{ doc, says string }{
		"an id":                 {strings.Replace(draftDoc, `"id": ""`, `"id": "ts_00000000000000000000000000000000"`, 1), "has no id"},
		"no name":               {strings.Replace(draftDoc, `"name": "crm",`, ``, 1), "has a name"},
		"a base":                {strings.Replace(draftDoc, `"name": "crm",`, `"name": "crm", "base": "ts_00000000000000000000000000000000",`, 1), "has no base"},
		"no server":             {strings.Replace(draftDoc, `"mcp_servers"`, `"mcp_serverz"`, 1), "unknown field"},
		"a repeated member":     {strings.Replace(draftDoc, `"admit": [`, `"admit": ["delete_customer"], "admit": [`, 1), "Duplicate key"},
		"another case":          {strings.Replace(draftDoc, `"admit"`, `"Admit"`, 1), "exact names, once each"},
		"a default written":     {strings.Replace(draftDoc, `"idempotent": true`, `"idempotent": true, "review_required": false`, 1), "members its form leaves out"},
		"a key with a dot":      {strings.Replace(draftDoc, `"crm": {`, `"crm.v2": {`, 1), "does not match"},
		"an empty admit":        {strings.Replace(draftDoc, `["create_ticket", "lookup_customer"]`, `[]`, 1), "admits 0 tools"},
		"a URL with a user":     {strings.Replace(draftDoc, `https://mcp`, `https://u:p@mcp`, 1), "userinfo"},
		"a URL with a query":    {strings.Replace(draftDoc, `/mcp"`, `/mcp?api_key=sk-live-4f9a"`, 1), "has a query string"},
		"a URL with a fragment": {strings.Replace(draftDoc, `/mcp"`, `/mcp#sk-live-4f9a"`, 1), "has a fragment"},
		"a key in the path":     {strings.Replace(draftDoc, `/mcp"`, `/s/`+fakeToken("zapier", 40)+`/mcp"`, 1), "secret-looking path segment"},
		"an MCP tool pinned by hand": {strings.Replace(draftDoc, `"tools": {}`, `"tools": {"evil.lookup": {"description": "", "input_schema": {}, "output_schema": {}, "idempotent": false, "policy": "at_most_once", "review_required": false, "timeout_seconds": 60,
			"mcp": {"server": "evil", "url": "https://mcp.evil.example.com/mcp", "name": "lookup", "protocol": "2026-07-28"}}}`, 1), "a draft's MCP tools are pinned by registration"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseDraft([]byte(c.doc))
			var ref *Refusal
			if !errors.As(err, &ref) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("%v, want a refusal saying %q", err, c.says)
			}
			if strings.Contains(err.Error(), "sk-live") {
				t.Errorf("the refusal quotes the URL's secret: %v", err)
			}
		})
	}
}

// A toolset derived from one with MCP tools keeps their pins: a tool the
// server listed without annotations is the same tool in both.
func TestDerivedFromMCPTools(t *testing.T) {
	draft, err := ParseDraft([]byte(draftDoc))
	if err != nil {
		t.Fatal(err)
	}
	listed := Listed{Protocol: "2026-07-28", Tools: []ListedTool{
		{Name: "create_ticket", InputSchema: json.RawMessage(`{"type": "object"}`)},
		{Name: "lookup_customer", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: json.RawMessage(`{"readOnlyHint": true, "idempotentHint": true}`)},
	}}
	base, err := draft.ResolveMCP(context.Background(), func(context.Context, string) (Listed, error) { return listed, nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := base.Verify(catalog.Default()); err != nil {
		t.Fatal(err)
	}
	// Annotations say read-only and idempotent; the pin keeps the safe
	// defaults for the tool without a policy.
	if ct := base.Tools["crm.create_ticket"]; ct.Policy != catalog.AtMostOnce || ct.Idempotent || ct.MCP.Annotations != nil {
		t.Fatalf("crm.create_ticket %+v", ct)
	}
	if lc := base.Tools["crm.lookup_customer"]; lc.Policy != catalog.AtLeastOnce || !lc.Idempotent || string(lc.MCP.Annotations) != `{"readOnlyHint":true,"idempotentHint":true}` {
		t.Fatalf("crm.lookup_customer %+v %s", lc, lc.MCP.Annotations)
	}
	derived := &Toolset{Name: "crm-reviewed", Base: base.ID, Tools: map[string]Tool{}, FetchHosts: []string{}}
	for name, tool := range base.Tools {
		tool.ReviewRequired = true
		derived.Tools[name] = tool
	}
	if derived.ID, err = derived.ComputeID(); err != nil {
		t.Fatal(err)
	}
	if err := derived.CheckDerived(base); err != nil {
		t.Fatal(err)
	}
}

// The names a server lists are its own text: a refusal naming them quotes
// each (so that no control character, such as a terminal escape or a
// line break, reaches the publisher's terminal through the CLI, which
// prints the publish function's message) and names at most a few, however
// many tools the server lists.
func TestPinQuotesAndBoundsTheNamesAServerLists(t *testing.T) {
	listed := Listed{Protocol: "2026-07-28", Tools: []ListedTool{
		{Name: "x\x1b[2J\nregistered ts_00000000000000000000000000000000 (crm.yaml)", InputSchema: json.RawMessage(`{}`)},
	}}
	for i := range 5000 {
		listed.Tools = append(listed.Tools, ListedTool{Name: strings.Repeat("t", 100) + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("y", i/26), InputSchema: json.RawMessage(`{}`)})
	}
	_, err := MCPServer{URL: "https://mcp.crm.example.com/mcp", Admit: []string{"create_ticket"}}.Pin("crm", listed)
	if err == nil {
		t.Fatal("pinned a tool the server does not list")
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\x1b\n") {
		t.Errorf("the refusal holds a server's control characters: %q", msg)
	}
	if len(msg) > 2000 {
		t.Errorf("the refusal is %d bytes: it names every tool the server lists", len(msg))
	}
	if !strings.Contains(msg, `server crm does not list tool "create_ticket"`) {
		t.Errorf("the refusal %q does not name the tool", msg)
	}
}

// An MCP server URL holds no secret: it is pinned in locks and the table,
// shown and logged. ParseMCPURL, every check of such a URL, refuses a
// query string and a fragment (where an API key or a token would go) as
// fetchurl refuses userinfo, without quoting them.
func TestParseMCPURL(t *testing.T) {
	for _, ok := range []string{"https://mcp.crm.example.com/mcp", "http://127.0.0.1:40647/mcp", "https://mcp.crm.example.com"} {
		if _, err := ParseMCPURL(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for raw, says := range map[string]string{
		"https://mcp.crm.example.com/mcp?api_key=sk-live-4f9a": "has a query string",
		"https://mcp.crm.example.com/mcp?":                     "has a query string",
		"https://mcp.crm.example.com?sk-live-4f9a":             "has a query string",
		"https://mcp.crm.example.com/mcp?a=1#sk-live-4f9a":     "has a query string",
		"https://mcp.crm.example.com/mcp#token=sk-live-4f9a":   "has a fragment",
		"https://mcp.crm.example.com/mcp#":                     "has a fragment",
		"https://mcp.crm.example.com/mcp#a?sk-live-4f9a":       "has a fragment",
		"https://mcp.crm.example.com/m cp?sk-live-4f9a":        "has a query string",
		"https://u:sk-live-4f9a@mcp.crm.example.com/mcp":       "userinfo",
		"ftp://mcp.crm.example.com/mcp":                        "scheme",
		"https://mcp.crm.example.com/a/../mcp":                 "dot segment",
	} {
		_, err := ParseMCPURL(raw)
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v, want an error saying %q", raw, err, says)
			continue
		}
		if strings.Contains(err.Error(), "sk-live") {
			t.Errorf("%s: the error quotes the secret: %v", raw, err)
		}
		if strings.Contains(says, "query") && !strings.Contains(err.Error(), "declare the server's auth") {
			t.Errorf("%s: %v does not say to declare the server's auth", raw, err)
		}
	}
}

// A URL with a query or a fragment is shown cut before it; a malformed
// one (userinfo, no scheme) only as its scheme and host.
func TestMCPURLShown(t *testing.T) {
	for raw, want := range map[string]string{
		"https://mcp.crm.example.com/mcp":                     "https://mcp.crm.example.com/mcp",
		"https://mcp.crm.example.com/mcp?api_key=sk-live":     "https://mcp.crm.example.com/mcp?…",
		"https://mcp.crm.example.com/mcp#sk-live":             "https://mcp.crm.example.com/mcp#…",
		"https://mcp.crm.example.com?sk-live#x":               "https://mcp.crm.example.com?…",
		"https://u:sk-live@mcp.crm.example.com/mcp":           "https://…@mcp.crm.example.com/…",
		"https://u:sk-live@mcp.crm.example.com":               "https://…@mcp.crm.example.com/…",
		"https://u@x:sk-live@mcp.crm.example.com/mcp?sk-live": "https://…@mcp.crm.example.com/…",
		"mcp.crm.example.com/mcp?sk-live":                     "…",
	} {
		if got := MCPURLShown(raw); got != want {
			t.Errorf("MCPURLShown(%q) = %q, want %q", raw, got, want)
		}
	}
}

// A draft or a pin built otherwise than by toolgate's CLI and registration
// is refused too: ResolveMCP lists no server of a draft with such a URL,
// and Verify refuses a pin with one; neither shows the secret.
func TestAnMCPURLWithASecretIsRefusedEverywhere(t *testing.T) {
	tok := fakeToken("zapier", 40)
	for _, c := range []struct {
		name, secret, says string
		// bad makes a server's URL (https://mcp.<host>.example.com/mcp)
		// one with a secret; shown is how a message shows it for host zz.
		bad   func(string) string
		shown string
	}{
		{"in the query", "sk-live", "the URL has a query string",
			func(u string) string { return u + "?api_key=sk-live-4f9a" }, "https://mcp.zz.example.com/mcp?…"},
		{"in the path", tok, "has a secret-looking path segment (segment 2, 40 characters",
			func(u string) string { return strings.TrimSuffix(u, "/mcp") + "/s/" + tok + "/mcp" }, "https://mcp.zz.example.com/s/…/mcp"},
	} {
		t.Run(c.name, func(t *testing.T) {
			draft, err := ParseDraft([]byte(draftDoc))
			if err != nil {
				t.Fatal(err)
			}
			listed := Listed{Protocol: "2026-07-28", Tools: []ListedTool{
				{Name: "create_ticket", InputSchema: json.RawMessage(`{"type":"object"}`)},
				{Name: "lookup_customer", InputSchema: json.RawMessage(`{"type":"object"}`)},
			}}
			lists := 0
			list := func(context.Context, string) (Listed, error) { lists++; return listed, nil }

			bad := *draft
			bad.MCPServers = map[string]MCPServer{"crm": draft.MCPServers["crm"], "zz": {URL: c.bad("https://mcp.zz.example.com/mcp"), Admit: []string{"create_ticket"}}}
			_, err = bad.ResolveMCP(context.Background(), list)
			if err == nil || !strings.Contains(err.Error(), "MCP server zz ("+c.shown+"): ") || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), c.secret) {
				t.Errorf("ResolveMCP: %v", err)
			}
			if lists != 0 {
				t.Errorf("ResolveMCP listed %d servers before refusing", lists)
			}

			ts, err := draft.ResolveMCP(context.Background(), list)
			if err != nil {
				t.Fatal(err)
			}
			ct := ts.Tools["crm.create_ticket"]
			m := *ct.MCP
			m.URL = c.bad(m.URL)
			ct.MCP = &m
			ts.Tools["crm.create_ticket"] = ct
			if ts.ID, err = ts.ComputeID(); err != nil {
				t.Fatal(err)
			}
			err = ts.Verify(catalog.Default())
			var ref *Refusal
			if !errors.As(err, &ref) || ref.Rule != RuleMCPTool || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), c.secret) {
				t.Errorf("Verify: %v, want a [%s] refusal saying %q, without the secret", err, RuleMCPTool, c.says)
			}
		})
	}
}
