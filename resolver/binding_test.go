package resolver

import (
	"encoding/json"
	"fmt"
	"slices"
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

// ${steps.X.error.Error|Cause} is set where every path left X through an
// on_error entry the last time X ran.
func TestErrorBindingsNeedTheErrorPath(t *testing.T) {
	const head = "solution: t\nversion: 1\npolicy: {fetch_hosts: [api.example.com]}\nsteps:\n  - id: f\n    tool: structured-data-fetch\n    with: {url: \"https://api.example.com/\"}\n"
	for _, c := range []struct {
		name, steps string
		want        []string
	}{
		{"after on_error", "    on_error: p\n  - id: p\n    pass: {e: \"${steps.f.error.Error}\", c: \"${steps.f.error.Cause}\"}\n", nil},
		{"after every entry", "    on_error:\n      - errors: [TOOL_TIMEOUT]\n        next: p\n      - next: q\n  - id: p\n    pass: {e: \"${steps.f.error.Error}\"}\n  - id: q\n    pass: {e: \"${steps.f.error.Error}\"}\n", nil},
		{"after a success too", "    on_error: p\n    next: p\n  - id: p\n    pass: {e: \"${steps.f.error.Error}\"}\n", []string{RuleUnsetBinding}},
		{"a success after the failure", "    on_error: p\n    next: q\n  - id: p\n    pass: {}\n    next: again\n  - id: again\n    review: {of: f}\n    on_approve: f\n    on_reject: q\n" +
			"  - id: q\n    pass: {e: \"${steps.f.error.Error}\"}\n", []string{RuleUnsetBinding}},
		{"a second failure after the first", "    on_error: p\n    next: end\n  - id: p\n    pass: {}\n    next: again\n  - id: again\n    review: {of: f}\n    on_approve: f\n    on_reject: q\n" +
			"  - id: q\n    pass: {e: \"${steps.f.error.Error}\"}\n", nil},
		{"a loop through the success", "    on_error: p\n    next: c\n  - id: c\n    choice:\n      - when: {value: \"${input.again}\", equals: true}\n        next: f\n    default: end\n  - id: p\n    pass: {e: \"${steps.f.error.Error}\"}\n", nil},
		{"no on_error", "    next: p\n  - id: p\n    pass: {e: \"${steps.f.error.Error}\"}\n", []string{RuleBinding}},
		{"the whole error", "    on_error: p\n  - id: p\n    pass: {e: \"${steps.f.error}\"}\n", []string{RuleBinding}},
		{"a review shows it before the failure", "    on_error: approve\n  - id: approve\n    review: {of: s}\n    on_approve: s\n  - id: s\n    tool: send-email\n    with: {to: [a@example.com], subject: s, text: \"${steps.f.error.Cause}\"}\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := compileString(t, head+c.steps)
			if got := errorRules(res); !slices.Equal(got, c.want) {
				t.Fatalf("errors %v, want %v\n%s", got, c.want, diagText(res))
			}
		})
	}
}

// A step's error counts at its own bound, not at the step's output limit:
// twenty copies of a small fetch's Cause are refused.
func TestErrorBindingsCountAtTheErrorsBound(t *testing.T) {
	var f []string
	for k := range 20 {
		f = append(f, fmt.Sprintf(`c%d: "${steps.f.error.Cause}"`, k))
	}
	src := "solution: t\nversion: 1\npolicy: {fetch_hosts: [api.example.com]}\nsteps:\n  - id: f\n    tool: structured-data-fetch\n    with: {url: \"https://api.example.com/\"}\n    output_limit_bytes: 10\n    on_error: p\n  - id: p\n    pass: {" + strings.Join(f, ", ") + "}\n"
	if !hasError(t, src, RuleStateSize) {
		t.Fatal("twenty copies of an error's Cause pass the state-size bound")
	}
	if hasError(t, strings.ReplaceAll(src, "error.Cause", "output.status"), RuleStateSize) {
		t.Fatal("twenty copies of a 10-byte result are refused")
	}
}
