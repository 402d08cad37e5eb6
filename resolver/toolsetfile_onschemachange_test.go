package resolver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/toolset"
)

// on_schema_change pins allow_additive_input as written and park as ""
// (the default: a toolset without it keeps its id); any other value is a
// diagnostic at the value naming the field, and a derived toolset may not
// weaken its base's park.
func TestToolsetFileOnSchemaChange(t *testing.T) {
	file := func(value string) []byte {
		return []byte(`toolset: crm
on_schema_change: ` + value + `
tools:
  crm:
    mcp: https://mcp.crm.example.com/mcp
    admit: [lookup_customer]
`)
	}
	for _, tt := range []struct{ value, want string }{
		{"allow_additive_input", toolset.OnSchemaChangeAllowAdditiveInput},
		{"park", ""},
	} {
		res := CompileToolset("crm.yaml", file(tt.value), ToolsetOptions{})
		if !res.OK() || res.Toolset.OnSchemaChange != tt.want {
			t.Errorf("%s: %q, %v", tt.value, res.Toolset.OnSchemaChange, res.Diagnostics)
		}
	}
	res := CompileToolset("crm.yaml", file("allow_breaking"), ToolsetOptions{})
	if res.OK() || len(res.Diagnostics) != 1 {
		t.Fatalf("allow_breaking: %v", res.Diagnostics)
	}
	if d := res.Diagnostics[0]; d.Line != 2 || d.Rule != RuleInvalidValue || !strings.Contains(d.Message, `on_schema_change "allow_breaking" is not park or allow_additive_input`) {
		t.Errorf("diagnostic %s", d)
	}

	base := &toolset.Toolset{ID: "ts_" + strings.Repeat("ab", 16), Name: "demo", Tools: map[string]toolset.Tool{}, FetchHosts: []string{}}
	lookup := func(b *toolset.Toolset) func(string) (*toolset.Toolset, error) {
		return func(string) (*toolset.Toolset, error) { return b, nil }
	}
	derived := func(value string) []byte {
		src := fmt.Sprintf("toolset: demo-strict\nbase: %s\n", base.ID)
		if value != "" {
			src += "on_schema_change: " + value + "\n"
		}
		return []byte(src)
	}
	res = CompileToolset("demo-strict.yaml", derived("allow_additive_input"), ToolsetOptions{Lookup: lookup(base)})
	if res.OK() || !strings.Contains(fmt.Sprint(res.Diagnostics), "weaker than base") {
		t.Errorf("weakened base: %v", res.Diagnostics)
	}
	allowing := *base
	allowing.OnSchemaChange = toolset.OnSchemaChangeAllowAdditiveInput
	for _, tt := range []struct{ value, want string }{{"", toolset.OnSchemaChangeAllowAdditiveInput}, {"park", ""}} {
		res = CompileToolset("demo-strict.yaml", derived(tt.value), ToolsetOptions{Lookup: lookup(&allowing)})
		if res.Toolset == nil || res.Toolset.OnSchemaChange != tt.want {
			t.Errorf("derived from allow_additive_input, %q written: %+v %v", tt.value, res.Toolset, res.Diagnostics)
		}
	}
}
