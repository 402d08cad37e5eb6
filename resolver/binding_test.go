package resolver

import (
	"encoding/json"
	"strings"
	"testing"
)

// passParameters compiles a Solution and returns the Parameters of its
// pass step p.
func passParameters(t *testing.T, src string) map[string]any {
	t.Helper()
	res := compileString(t, src)
	if !res.OK() {
		t.Fatalf("diagnostics: %s", diagText(res))
	}
	var def struct {
		States map[string]struct{ Parameters map[string]any }
	}
	if err := json.Unmarshal(res.Definition, &def); err != nil {
		t.Fatal(err)
	}
	return def.States["p"].Parameters
}

// ${execution.id|name|start_time} read $$.Execution: as a path of their
// own, in a template, in a list.
func TestExecutionBindings(t *testing.T) {
	got := passParameters(t, "solution: t\nversion: 1\nsteps:\n  - id: p\n    pass: {id: \"${execution.id}\", at: \"${execution.start_time}\", line: \"run ${execution.name}\", list: [\"${execution.name}\", 1]}\n")
	want := map[string]any{
		"id.$":   "$$.Execution.Id",
		"at.$":   "$$.Execution.StartTime",
		"line.$": "States.Format('run {}', $$.Execution.Name)",
		"list.$": "States.Array($$.Execution.Name, 1)",
	}
	if !mapsEqual(got, want) {
		t.Fatalf("Parameters %v, want %v", got, want)
	}
	for _, c := range []struct{ step, want string }{
		{"pass: {x: \"${execution.arn}\"}", "the execution has id, name and start_time"},
		{"pass: {x: \"${execution.id.x}\"}", "the execution has id, name and start_time"},
		{"pass: {x: \"${execution}\"}", "the execution has id, name and start_time"},
		{"choice:\n      - when: {value: \"${execution.name}\", equals: x}\n        next: end", "a choice cannot compare ${execution.name}"},
		{"choice:\n      - when: {value: \"${input.x}\", equals: \"${execution.name}\"}\n        next: end", "a choice cannot compare with $$.Execution.Name"},
		{"wait: {until: \"${execution.start_time}\"}", "wait.until cannot read ${execution.start_time}"},
	} {
		res := compileString(t, "solution: t\nversion: 1\nsteps:\n  - id: p\n    "+c.step+"\n")
		if res.OK() || !strings.Contains(diagText(res), c.want) {
			t.Errorf("%s: diagnostics\n%s\nwant %q", c.step, diagText(res), c.want)
		}
	}
}

// An execution binding counts in the state-size bound at its own bound:
// nine copies of the execution's ARN are a few KiB, not a refusal.
func TestExecutionBindingsAreBounded(t *testing.T) {
	var f []string
	for _, k := range "abcdefghi" {
		f = append(f, string(k)+`: "${execution.id} ${execution.name} ${execution.start_time}"`)
	}
	src := "solution: t\nversion: 1\nsteps:\n  - id: p\n    pass: {" + strings.Join(f, ", ") + "}\n"
	if res := compileString(t, src); !res.OK() {
		t.Fatalf("diagnostics: %s", diagText(res))
	}
	z := &sizer{c: &checker{}}
	for field, min := range map[string]int{"id": 1024, "name": 80, "start_time": len(`"2026-12-01T09:00:00.000Z"`)} {
		if n := z.bindingBound(&binding{root: "execution", step: field}); n < min {
			t.Errorf("${execution.%s} bound %d, under %d", field, n, min)
		}
	}
}
