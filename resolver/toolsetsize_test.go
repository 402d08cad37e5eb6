package resolver

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/toolset"
)

// schemaOf is an object schema of exactly n bytes in its RFC 8785 form.
func schemaOf(n int) string {
	frame := `{"description":"","type":"object"}`
	return `{"description":"` + strings.Repeat("x", n-len(frame)) + `","type":"object"}`
}

// A toolset file whose tools all pass their own bounds but whose toolset
// is too big to store is refused at compile time, naming its largest
// schemas: eight platform tools with a 64 KiB input schema each.
func TestToolsetFileOverTheSizeBound(t *testing.T) {
	var tools []string
	for i := range 8 {
		size := toolset.MaxSchemaBytes - i // tool-0's is the largest
		tools = append(tools, fmt.Sprintf(`"tool-%d": {"function": "${FunctionTool%d}", "timeout_seconds": 30, "input_schema": %s, "output_schema": {"type": "object"}}`, i, i, schemaOf(size)))
	}
	src := `{"toolset": "big", "tools": {` + strings.Join(tools, ", ") + `}}`
	res := CompileToolset("big.json", []byte(src), ToolsetOptions{})
	if res.Toolset != nil || len(res.Diagnostics) != 1 {
		t.Fatalf("toolset %v, diagnostics %v: want one refusal", res.Toolset != nil, res.Diagnostics)
	}
	got := res.Diagnostics[0].String()
	for _, want := range []string{"[toolset-size] toolset big cannot be registered", "over the 390000-byte bound",
		"largest: tool-0 input_schema (65536 bytes), tool-1 input_schema (65535 bytes), tool-2 input_schema (65534 bytes)"} {
		if !strings.Contains(got, want) {
			t.Errorf("diagnostic %q\ndoes not say %q", got, want)
		}
	}

	// Five of them fit; six do not.
	for n, fits := range map[int]bool{5: true, 6: false} {
		src = `{"toolset": "big", "tools": {` + strings.Join(tools[:n], ", ") + `}}`
		if res := CompileToolset("big.json", []byte(src), ToolsetOptions{}); (res.Toolset != nil) != fits {
			t.Errorf("%d 64 KiB schemas: %v, want fits %v", n, res.Diagnostics, fits)
		}
	}
}

// The toolset a Solution pins is held to the same bound: a Solution whose
// review_before derives a toolset from a registered one just under the
// bound pins one just over it (the derived toolset names its base), and is
// refused at compile time, not when publishing writes it.
func TestSolutionPinOverTheSizeBound(t *testing.T) {
	demo := compileToolsetFile(t, filepath.Join(toolsetsDir, "demo.yaml")).Toolset
	named := *demo
	named.Tools = maps.Clone(demo.Tools)
	body, err := named.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	ct := named.Tools["create-ticket"]
	ct.Description += strings.Repeat("x", toolset.MaxBodyBytes-10-len(body))
	named.Tools["create-ticket"] = ct
	if named.ID, err = named.ComputeID(); err != nil {
		t.Fatal(err)
	}
	if err := named.CheckSize(); err != nil {
		t.Fatalf("the registered toolset: %v", err)
	}
	lookup := func(id string) (*toolset.Toolset, error) {
		if id != named.ID {
			return nil, ErrToolsetNotFound
		}
		return &named, nil
	}
	steps := "steps:\n  - {id: ok, review: {of: t}, on_approve: t}\n  - {id: t, tool: create-ticket, with: {title: x}}\n"
	for _, tc := range []struct {
		name, policy, want string
	}{
		{"the registered toolset itself", "", ""},
		{"a derived toolset over the bound", "policy: {review_before: [create-ticket]}\n",
			"s.yaml:3:10: error: [toolset-size] the toolset the Solution pins (ts_"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "solution: s\nversion: 1\ntoolset: " + named.ID + "\n" + tc.policy + steps
			res := Compile("s.yaml", []byte(src), Options{Toolsets: lookup})
			if tc.want == "" {
				if !res.OK() {
					t.Fatalf("diagnostics: %v", res.Diagnostics)
				}
				return
			}
			if res.OK() || len(res.Diagnostics) != 1 || !strings.HasPrefix(res.Diagnostics[0].String(), tc.want) ||
				!strings.Contains(res.Diagnostics[0].String(), "over the 390000-byte bound") {
				t.Fatalf("diagnostics %v\nwant one starting %q", res.Diagnostics, tc.want)
			}
		})
	}
}
