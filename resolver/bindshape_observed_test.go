package resolver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/observed"
	"github.com/toolgate/toolgate/shared/toolset"
)

// smsShapes is what the dispatcher would have learned from three of
// crm.send_sms's results (observed.Observe, Merge); mcp-demo's crm.send_sms
// declares no output schema ({}).
func smsShapes(t *testing.T, toolset string) *observed.File {
	t.Helper()
	var s *observed.Shape
	for _, r := range []string{
		`{"message_id":"m-1","segments":1,"carrier":{"name":"x"}}`,
		`{"message_id":"m-2","segments":2}`,
		`{"message_id":"m-3","segments":1,"parts":[{"n":1}]}`,
	} {
		o, err := observed.Observe(json.RawMessage(r))
		if err != nil {
			t.Fatal(err)
		}
		if s == nil {
			s = o
		} else {
			s.Merge(o)
		}
	}
	return &observed.File{Toolset: toolset, Tools: map[string]observed.ToolShapes{"crm.send_sms": {LearnedFrom: 3, Shape: s}}}
}

// A binding into the result of a tool without an output schema is
// checked against the shape learned from its results: a path never
// observed is a warning naming how many results it was learned from,
// never an error, and a type never observed is not held against the
// place it is bound to.
func TestBindingIntoObservedShapeWarnsOfPathsNeverObserved(t *testing.T) {
	const head = "solution: t\nversion: 1\ntoolset: " + mcpDemoID + "\nsteps:\n" +
		"  - id: sms\n    tool: crm.send_sms\n    with: {to: \"+4911\", text: hi}\n    next: p\n"
	cases := []struct {
		name, pass string
		want       []string
		in         string
	}{
		{"a member observed", `{a: "${steps.sms.output.message_id}", b: "${steps.sms.output.carrier.name}", c: "${steps.sms.output.parts[0].n}"}`, nil, ""},
		{"a member never observed", `{a: "${steps.sms.output.mesage_id}"}`, []string{"warning binding-shape"},
			`step "p" binds ${steps.sms.output.mesage_id}, a path never observed in the results of tool crm.send_sms (observed from 3 results): no object at ${steps.sms.output} had a member "mesage_id"; did you mean ${steps.sms.output.message_id}`},
		{"a member of a string", `{a: "${steps.sms.output.message_id.x}"}`, []string{"warning binding-shape"},
			"${steps.sms.output.message_id} was only ever string, never an object"},
		{"an index into an object", `{a: "${steps.sms.output.carrier[0]}"}`, []string{"warning binding-shape"},
			"${steps.sms.output.carrier} was only ever object, never a list"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := head + "  - id: p\n    pass: " + c.pass + "\n"
			res := Compile("t.yaml", []byte(src), Options{Toolsets: LockLookup(toolsetsDir), Observed: smsShapes(t, mcpDemoID)})
			if !res.OK() {
				t.Fatalf("an observed shape made an error:\n%s", diagText(res))
			}
			got := bindingDiags(res)
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Fatalf("diagnostics %v, want %v:\n%s", got, c.want, diagText(res))
			}
			if c.in != "" && !strings.Contains(diagText(res), c.in) {
				t.Errorf("the message lacks %q:\n%s", c.in, diagText(res))
			}
		})
	}
}

// A number observed bound where the tool wants a string is no
// [binding-type] error: the shape says what was seen, not what may come.
func TestObservedTypesAreNotHeldAgainstInputs(t *testing.T) {
	src := "solution: t\nversion: 1\ntoolset: " + mcpDemoID + "\nsteps:\n" +
		"  - id: sms\n    tool: crm.send_sms\n    with: {to: \"+4911\", text: hi}\n    next: again\n" +
		"  - id: again\n    tool: crm.send_sms\n    with: {to: \"+4911\", text: \"${steps.sms.output.segments}\"}\n"
	res := Compile("t.yaml", []byte(src), Options{Toolsets: LockLookup(toolsetsDir), Observed: smsShapes(t, mcpDemoID)})
	if got := bindingDiags(res); len(got) != 0 || !res.OK() {
		t.Fatalf("diagnostics %v:\n%s", got, diagText(res))
	}
}

// Without shapes, or with shapes of another toolset (a warning saying
// they are unused), a tool without an output schema is not checked.
func TestObservedShapesOfAnotherToolsetAreUnused(t *testing.T) {
	src := "solution: t\nversion: 1\ntoolset: " + mcpDemoID + "\nsteps:\n" +
		"  - id: sms\n    tool: crm.send_sms\n    with: {to: \"+4911\", text: hi}\n    next: p\n" +
		"  - id: p\n    pass: {a: \"${steps.sms.output.mesage_id}\"}\n"
	res := Compile("t.yaml", []byte(src), Options{Toolsets: LockLookup(toolsetsDir)})
	if got := bindingDiags(res); len(got) != 0 {
		t.Fatalf("without shapes: diagnostics %v", got)
	}
	other := "ts_00000000000000000000000000000009"
	res = Compile("t.yaml", []byte(src), Options{Toolsets: LockLookup(toolsetsDir), Observed: smsShapes(t, other)})
	text := diagText(res)
	if got := bindingDiags(res); len(got) != 1 || !strings.Contains(text, "t.yaml:3:") || !strings.Contains(text, "the observed shapes are of toolset "+other+", and the Solution names toolset "+mcpDemoID+": they are not used") {
		t.Fatalf("diagnostics %v:\n%s", got, text)
	}
}

// The shapes a lock carries (its observed member, read by LockLookup)
// are used without Options.Observed.
func TestBindingChecksUseTheLocksObservedShapes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(toolsetsDir, "mcp-demo.lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := toolset.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	ts.Observed = smsShapes(t, mcpDemoID)
	lock, err := ts.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mcp-demo.lock.json"), lock, 0o644); err != nil {
		t.Fatal(err)
	}
	src := "solution: t\nversion: 1\ntoolset: " + mcpDemoID + "\nsteps:\n" +
		"  - id: sms\n    tool: crm.send_sms\n    with: {to: \"+4911\", text: hi}\n    next: p\n" +
		"  - id: p\n    pass: {a: \"${steps.sms.output.mesage_id}\"}\n"
	res := Compile("t.yaml", []byte(src), Options{Toolsets: LockLookup(dir)})
	if got := bindingDiags(res); len(got) != 1 || got[0] != "warning binding-shape" || !strings.Contains(diagText(res), "(observed from 3 results)") {
		t.Fatalf("diagnostics %v:\n%s", got, diagText(res))
	}
}
