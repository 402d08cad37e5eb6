package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/toolset"
)

// authToolset is a registered toolset named name with one MCP server, crm
// (auth mcpAuth, URL url), and the http tool with one host entry,
// api.example.com (auth httpAuth); nil auth declares none.
func authToolset(t *testing.T, name, url string, mcpAuth, httpAuth *toolset.Auth) *toolset.Toolset {
	t.Helper()
	draft := &toolset.Toolset{Name: name, Tools: map[string]toolset.Tool{}, FetchHosts: []string{},
		MCPServers: map[string]toolset.MCPServer{"crm": {URL: url, Admit: []string{"lookup_customer"}, Auth: mcpAuth}}}
	listed := toolset.Listed{Protocol: "2026-07-28", Tools: []toolset.ListedTool{{Name: "lookup_customer", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	ts, err := draft.ResolveMCP(context.Background(), func(context.Context, string) (toolset.Listed, error) { return listed, nil })
	if err != nil {
		t.Fatal(err)
	}
	httpTS, err := toolset.FromCatalog(catalog.Default(), []string{"http"}, nil, nil, toolset.HTTPHost{Host: "api.example.com", Methods: []string{"GET"}, Auth: httpAuth})
	if err != nil {
		t.Fatal(err)
	}
	ts.Tools["http"], ts.HTTPHosts = httpTS.Tools["http"], httpTS.HTTPHosts
	if ts.ID, err = ts.ComputeID(); err != nil {
		t.Fatal(err)
	}
	if err := ts.Verify(catalog.Default()); err != nil {
		t.Fatal(err)
	}
	return ts
}

// toolset show prints each target's auth declaration with the lock, and
// diff names a changed declaration, an MCP server's on each of its tools
// and an http host entry's.
func TestToolsetShowAndDiffShowAuth(t *testing.T) {
	t.Parallel()
	bearer := authToolset(t, "crm", "https://mcp.crm.example.com/mcp", &toolset.Auth{Header: "Authorization", Scheme: "Bearer"}, &toolset.Auth{Header: "X-Api-Key"})
	inPath := authToolset(t, "crm", "https://mcp.crm.example.com/s/{secret}/mcp", &toolset.Auth{PathSegment: 2}, &toolset.Auth{Header: "X-Api-Key", OriginScheme: "http"})
	plain := authToolset(t, "crm", "https://mcp.crm.example.com/mcp", nil, nil)
	dir := t.TempDir()
	for _, ts := range []*toolset.Toolset{bearer, inPath, plain} {
		doc, err := ts.MarshalIndent()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ts.ID[:12]+".lock.json"), doc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := localAWS().run("toolset", "show", inPath.ID, "--toolsets", dir)
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errs)
	}
	for _, want := range []string{`"url": "https://mcp.crm.example.com/s/{secret}/mcp"`, `"path_segment": 2`, `"header": "X-Api-Key"`, `"origin_scheme": "http"`} {
		if !strings.Contains(out, want) {
			t.Errorf("show does not print %s:\n%s", want, out)
		}
	}

	code, out, _ = localAWS().run("toolset", "diff", bearer.ID, inPath.ID, "--toolsets", dir)
	want := `~ http host api.example.com: auth {"header":"X-Api-Key"} → {"header":"X-Api-Key","origin_scheme":"http"}
~ tool crm.lookup_customer: mcp.url "https://mcp.crm.example.com/mcp" → "https://mcp.crm.example.com/s/{secret}/mcp"
~ tool crm.lookup_customer: mcp.auth {"header":"Authorization","scheme":"Bearer"} → {"path_segment":2}
`
	if code != ExitErrors || out != want {
		t.Errorf("diff: exit %d\n%s\nwant\n%s", code, out, want)
	}

	var b bytes.Buffer
	if n := diffToolsets(&b, plain, bearer); n != 2 || !strings.Contains(b.String(), `~ http host api.example.com: auth null → {"header":"X-Api-Key"}`) ||
		!strings.Contains(b.String(), `~ tool crm.lookup_customer: mcp.auth null → {"header":"Authorization","scheme":"Bearer"}`) {
		t.Errorf("diff from a toolset without auth: %d lines\n%s", n, b.String())
	}
}
