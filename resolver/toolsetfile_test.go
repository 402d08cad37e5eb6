package resolver

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate/shared/toolset"
)

const toolsetsDir = "../testdata/toolsets"

// draftSuffix ends the golden file of a draft: the document the CLI sends
// to the publish function to register it.
const draftSuffix = ".draft.json"

// compileToolsetFile resolves one file of testdata/toolsets, its bases
// looked up among the locks there.
func compileToolsetFile(t *testing.T, f string) *ToolsetResult {
	t.Helper()
	src, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return CompileToolset(filepath.Base(f), src, ToolsetOptions{Lookup: LockLookup(toolsetsDir), ReadFile: DirReader(filepath.Dir(f))})
}

// TestToolsetGolden resolves every toolset file in testdata/toolsets and
// compares its lock, its draft (a file naming MCP servers), or its
// diagnostics, with the golden files (<stem>.lock.json, <stem>.draft.json,
// <stem>.err). Run with -update to rewrite them.
func TestToolsetGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(toolsetsDir, "*.yaml"))
	if len(files) < 6 {
		t.Fatalf("only %d toolset files in %s", len(files), toolsetsDir)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			res := compileToolsetFile(t, f)
			stem := strings.TrimSuffix(f, ".yaml")
			want := map[string][]byte{}
			switch {
			case res.OK() && res.Draft:
				draft, err := res.Toolset.MarshalIndent()
				if err != nil {
					t.Fatal(err)
				}
				want[stem+draftSuffix] = draft
			case res.OK():
				lock, err := res.Toolset.MarshalIndent()
				if err != nil {
					t.Fatal(err)
				}
				want[stem+LockSuffix] = lock
			default:
				var b bytes.Buffer
				for _, d := range res.Diagnostics {
					b.WriteString(d.String() + "\n")
				}
				want[stem+".err"] = b.Bytes()
			}
			compareGolden(t, want, stem, []string{LockSuffix, draftSuffix, ".err"}, map[bool]string{true: "the toolset file now resolves", false: "the toolset file is now refused"}[res.OK()])
		})
	}
}

// The same content gives the same id whatever the format, key order or
// spacing; any changed schema value gives another id.
func TestToolsetIDIgnoresFormatting(t *testing.T) {
	yamlSrc := `toolset: one
tools:
  send-email: {}
  ping:
    function: ${FunctionPing}
    input_schema: {type: object, properties: {n: {type: integer, maximum: 5}}}
    output_schema: true
    timeout_seconds: 10
`
	jsonSrc := `{"tools": {"ping": {"timeout_seconds": 10, "output_schema": true,
   "input_schema": {"properties": {"n": {"maximum": 5, "type": "integer"}}, "type": "object"},
   "function": "${FunctionPing}"}, "send-email": null}, "toolset": "one"}`
	changed := strings.Replace(yamlSrc, "maximum: 5", "maximum: 6", 1)
	ids := map[string]string{}
	for name, src := range map[string]string{"a.yaml": yamlSrc, "b.json": jsonSrc, "c.yaml": changed} {
		res := CompileToolset(name, []byte(src), ToolsetOptions{})
		if !res.OK() {
			t.Fatalf("%s: %v", name, res.Diagnostics)
		}
		ids[name] = res.Toolset.ID
	}
	if ids["a.yaml"] != ids["b.json"] {
		t.Fatalf("YAML %s and JSON %s of the same content differ", ids["a.yaml"], ids["b.json"])
	}
	if ids["a.yaml"] == ids["c.yaml"] {
		t.Fatalf("a changed schema value kept the id %s", ids["a.yaml"])
	}
}

// A derived toolset has its base's tools with stricter policies, its own
// workflows, and names its base; its lock is the golden demo-reviewed.
func TestDerivedToolset(t *testing.T) {
	base := compileToolsetFile(t, filepath.Join(toolsetsDir, "demo.yaml"))
	derived := compileToolsetFile(t, filepath.Join(toolsetsDir, "demo-reviewed.yaml"))
	if !base.OK() || !derived.OK() {
		t.Fatalf("diagnostics: %v %v", base.Diagnostics, derived.Diagnostics)
	}
	b, d := base.Toolset, derived.Toolset
	if d.Base != b.ID || d.ID == b.ID || len(d.Tools) != len(b.Tools) {
		t.Fatalf("derived %+v from %s", d, b.ID)
	}
	if !d.Tools["create-ticket"].ReviewRequired || b.Tools["create-ticket"].ReviewRequired {
		t.Fatal("the derived toolset does not tighten create-ticket")
	}
	if d.Tools["create-ticket"].Function != b.Tools["create-ticket"].Function {
		t.Fatal("the derived toolset changed the function")
	}
	if strings.Join(d.Workflows, ",") != "fetch-and-notify" {
		t.Fatalf("workflows %v", d.Workflows)
	}
}

// A file naming MCP servers resolves to a draft: no id, the servers with
// the tools they admit and the policies written, everything else pinned
// as in any toolset. A tool without a policy has none in the draft: it is
// at_most_once and not idempotent once pinned (toolset.MCPServer.Pin).
func TestMCPDraft(t *testing.T) {
	res := compileToolsetFile(t, filepath.Join(toolsetsDir, "crm.yaml"))
	if !res.OK() || !res.Draft || res.Toolset == nil || res.Toolset.ID != "" {
		t.Fatalf("crm.yaml: draft %v, %+v, %v", res.Draft, res.Toolset, res.Diagnostics)
	}
	srv := res.Toolset.MCPServers["crm"]
	if srv.URL != "https://mcp.crm.example.com/mcp" || strings.Join(srv.Admit, ",") != "create_ticket,lookup_customer" ||
		!srv.Policies["create_ticket"].ReviewRequired || srv.Policies["lookup_customer"].Policy != "at_least_once" || srv.Policies["lookup_customer"].TimeoutSeconds != 10 {
		t.Fatalf("server %+v", srv)
	}
	if _, ok := res.Toolset.Tools["send-email"]; !ok || len(res.Toolset.Tools) != 1 {
		t.Fatalf("tools %v", res.Toolset.Tools)
	}

	res = CompileToolset("mcp.yaml", []byte(`toolset: mcp
tools:
  crm:
    mcp: http://127.0.0.1:8080/mcp
    admit: [create_ticket, send_sms, lookup.customer]
    policy:
      send_sms:
      lookup.customer: {retry: {max_attempts: 3}, idempotent: true}
`), ToolsetOptions{})
	if !res.OK() || !res.Draft {
		t.Fatalf("%v", res.Diagnostics)
	}
	p := res.Toolset.MCPServers["crm"].Policies
	if _, ok := p["create_ticket"]; ok || len(p) != 2 {
		t.Fatalf("policies %+v: create_ticket has none written", p)
	}
	if p["send_sms"].Policy != "at_most_once" || p["send_sms"].Idempotent {
		t.Fatalf("send_sms: %+v, want the defaults", p["send_sms"])
	}
	if r := p["lookup.customer"].Retry; r == nil || r.MaxAttempts != 3 || r.IntervalSeconds != 1 || r.BackoffRate != 2 {
		t.Fatalf("lookup.customer retry %+v", r)
	}
}

// A toolset derived from a registered toolset with MCP tools is no draft:
// its tools are its base's, pinned, and it may make their policies
// stricter by their toolset names, <server>.<tool>.
func TestDerivedFromMCPToolset(t *testing.T) {
	draft := compileToolsetFile(t, filepath.Join(toolsetsDir, "crm.yaml"))
	listed := toolset.Listed{Protocol: "2025-11-25", Tools: []toolset.ListedTool{
		{Name: "create_ticket", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "lookup_customer", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
	}}
	base, err := draft.Toolset.ResolveMCP(t.Context(), func(context.Context, string) (toolset.Listed, error) { return listed, nil })
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(id string) (*toolset.Toolset, error) {
		if id == base.ID {
			return base, nil
		}
		return nil, ErrToolsetNotFound
	}
	res := CompileToolset("crm-reviewed.yaml", []byte("toolset: crm-reviewed\nbase: "+base.ID+`
tools:
  send-email: {}
  crm.create_ticket: {}
  crm.lookup_customer: {review_required: true, policy: at_most_once}
`), ToolsetOptions{Lookup: lookup})
	if !res.OK() || res.Draft {
		t.Fatalf("draft %v: %v", res.Draft, res.Diagnostics)
	}
	got := res.Toolset.Tools["crm.lookup_customer"]
	if !got.ReviewRequired || got.Policy != "at_most_once" || got.MCP == nil || got.MCP.Name != "lookup_customer" {
		t.Fatalf("crm.lookup_customer %+v", got)
	}
	if err := res.Toolset.CheckDerived(base); err != nil {
		t.Fatal(err)
	}
}

// mcpURLLeaks are the MCP server URLs of testdata/toolsets/mcp-url-leaks.json:
// refused for another reason than their path, each with a secret that
// neither a diagnostic nor a refusal may show (shared/toolset's tests
// read the same file).
func mcpURLLeaks(t *testing.T) []struct{ Name, URL, Secret, Says, Shown string } {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(toolsetsDir, "mcp-url-leaks.json"))
	if err != nil {
		t.Fatal(err)
	}
	var leaks []struct{ Name, URL, Secret, Says, Shown string }
	if err := json.Unmarshal(data, &leaks); err != nil || len(leaks) == 0 {
		t.Fatalf("mcp-url-leaks.json: %d cases, %v", len(leaks), err)
	}
	return leaks
}

// `toolgate toolset FILE` refuses an MCP server URL that is malformed
// with a diagnostic that shows it only as its scheme and valid host
// (toolset.MCPURLShown) and quotes no secret it carries: not in a port,
// after a backslash or a bad escape, nor in a host that is not one.
func TestToolsetFileShowsNoSecretOfAnMCPURL(t *testing.T) {
	for _, c := range mcpURLLeaks(t) {
		t.Run(c.Name, func(t *testing.T) {
			u, _ := json.Marshal(c.URL) // a JSON string is a YAML double-quoted scalar
			res := CompileToolset("leak.yaml", []byte("toolset: crm\ntools:\n  crm:\n    mcp: "+string(u)+"\n    admit: [create_ticket]\n"), ToolsetOptions{})
			if res.OK() || len(res.Diagnostics) != 1 {
				t.Fatalf("%q: %v", c.URL, res.Diagnostics)
			}
			d := res.Diagnostics[0].String()
			shown, _ := json.Marshal(c.Shown)
			if !strings.Contains(d, "[mcp-server] MCP server \"crm\" mcp "+string(shown)+" is not a URL toolgate can call: ") || !strings.Contains(d, c.Says) {
				t.Errorf("%q: %s, want it shown as %s, saying %q", c.URL, d, shown, c.Says)
			}
			if strings.Contains(strings.ToLower(d), strings.ToLower(c.Secret)) {
				t.Errorf("%q: the diagnostic shows the secret: %s", c.URL, d)
			}
		})
	}
}

// A long MCP server URL is cut in a diagnostic before a whole character,
// never inside the "…" that hides a secret.
func TestToolsetFileCutsALongURLBeforeAWholeCharacter(t *testing.T) {
	url := "https://mcp.crm.example.com/" + strings.Repeat("a/", 24) + "123e4567-e89b-12d3-a456-426614174000/mcp"
	res := CompileToolset("long.yaml", []byte("toolset: crm\ntools:\n  crm:\n    mcp: "+url+"\n    admit: [create_ticket]\n"), ToolsetOptions{})
	if len(res.Diagnostics) != 1 {
		t.Fatalf("%v", res.Diagnostics)
	}
	d := res.Diagnostics[0].Message
	if !utf8.ValidString(d) || !strings.Contains(d, `mcp "https://mcp.crm.example.com/a/a/`) || !strings.Contains(d, `/a/..." is not a URL`) || strings.Contains(d, "123e4567") {
		t.Fatalf("%q", d)
	}
}

// A schema past the registration check's bounds is reported at the line
// that names it, naming its file: a file over 64 KiB (read whole: a
// schema file may be 1 MiB), a YAML file under
// 64 KiB whose compact JSON is over, and a schema written inline.
func TestSchemaOverItsBoundIsReportedWhereItIsNamed(t *testing.T) {
	enum := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("a") // 3 bytes of YAML, 4 of JSON: "a",
		}
		return "type: object\nproperties:\n  k:\n    enum: [" + b.String() + "]\n"
	}
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "schemas"), 0o755)
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(enum(20000)) > int(toolset.MaxSchemaBytes) || len(enum(25000)) <= int(toolset.MaxSchemaBytes) {
		t.Fatalf("the schema files are %d and %d bytes", len(enum(20000)), len(enum(25000)))
	}
	write("schemas/big.yaml", enum(25000))
	write("schemas/wide.yaml", enum(20000)) // under 64 KiB as YAML, over as JSON
	tool := func(schema string) string {
		return "toolset: tsa\ntools:\n  t:\n    function: ${FunctionT}\n    timeout_seconds: 5\n    output_schema: {type: object}\n    input_schema: " + schema + "\n"
	}
	for _, c := range []struct {
		name, src string
		line      int // of the file's name, or where the schema starts
		says      string
	}{
		{"a file over 64 KiB", tool("schemas/big.yaml"), 7, `tool "t" input_schema (file schemas/big.yaml) is 100047 bytes, over 65536`},
		{"a file over 64 KiB as compact JSON", tool("schemas/wide.yaml"), 7, `tool "t" input_schema (file schemas/wide.yaml) is `},
		{"an inline schema over 64 KiB", tool("\n" + indent(enum(20000), "      ")), 8, `tool "t" input_schema is `},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := CompileToolset("tsa.yaml", []byte(c.src), ToolsetOptions{ReadFile: DirReader(dir)})
			if len(res.Diagnostics) != 1 {
				t.Fatalf("%d diagnostics, want 1: %v", len(res.Diagnostics), res.Diagnostics)
			}
			d := res.Diagnostics[0]
			if d.Line != c.line || d.Rule != RuleToolSchema || !strings.Contains(d.Message, c.says) {
				t.Fatalf("got  %s\nwant tsa.yaml:%d:…: error: [tool-schema] …%s…", d, c.line, c.says)
			}
		})
	}
}

// indent is src with every line indented by prefix.
func indent(src, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSuffix(src, "\n"), "\n", "\n"+prefix) + "\n"
}
