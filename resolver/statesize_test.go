package resolver

import (
	"strings"
	"testing"
)

// stateSizeErrors returns the [state-size] diagnostics of a Solution.
func stateSizeErrors(t *testing.T, src string) []string {
	t.Helper()
	var out []string
	for _, d := range compileString(t, src).Diagnostics {
		if d.Rule == RuleStateSize {
			out = append(out, d.String())
		}
	}
	return out
}

const sizeHead = "solution: t\nversion: 1\npolicy: {fetch_hosts: [api.example.com]}\nsteps:\n"

// The input: four copies of a 64 KiB result in one pass step.
// Refused, naming the path and the largest contributors; keeping the
// fields the copies need, under a small limit, makes it fit.
func TestStateSizeRefusesCopiesOfAResultAndKeepMakesThemFit(t *testing.T) {
	src := sizeHead + `  - id: f
    tool: structured-data-fetch
    with: {url: "https://api.example.com/items"}
    on_error: end
    next: copy
  - id: copy
    pass: {a: "${steps.f.output}", b: "${steps.f.output}", c: "${steps.f.output}", d: "${steps.f.output}"}
`
	errs := stateSizeErrors(t, src)
	if len(errs) != 1 || !strings.Contains(errs[0], `step "copy"`) || !strings.Contains(errs[0], "f → copy") ||
		!strings.Contains(errs[0], "steps.copy 262") || !strings.Contains(errs[0], "not even on_error") {
		t.Fatalf("state-size diagnostics %q, want one on copy naming the path f → copy and steps.copy", errs)
	}
	fixed := strings.Replace(src, "    on_error: end\n", "    on_error: end\n    keep: [data.title]\n    output_limit_bytes: 2048\n", 1)
	if errs := stateSizeErrors(t, fixed); len(errs) != 0 {
		t.Fatalf("with keep and a 2 KiB limit: %q", errs)
	}
}

// Results that each fit add up on one path.
func TestStateSizeAddsResultsAlongAPath(t *testing.T) {
	step := func(id, next string) string {
		return "  - id: " + id + "\n    tool: structured-data-fetch\n    with: {url: \"https://api.example.com/" + id + "\"}\n    output_limit_bytes: 60000\n    next: " + next + "\n"
	}
	three := sizeHead + step("a", "b") + step("b", "c") + step("c", "end")
	if errs := stateSizeErrors(t, three); len(errs) != 0 {
		t.Fatalf("three 60 000-byte results: %q", errs)
	}
	four := sizeHead + step("a", "b") + step("b", "c") + step("c", "d") + step("d", "end")
	if errs := stateSizeErrors(t, four); len(errs) != 1 || !strings.Contains(errs[0], "a → b → c → d") {
		t.Fatalf("four 60 000-byte results: %q, want one on d", errs)
	}
}

// A slot written again in a loop counts once, and two branches that never
// both run are not added up: the bound is the worst single path's.
func TestStateSizeCountsALoopOnceAndBranchesApart(t *testing.T) {
	loop := sizeHead + `  - id: poll
    tool: structured-data-fetch
    with: {url: "https://api.example.com/status"}
    output_limit_bytes: 150000
    next: done
  - id: done
    choice:
      - when: {value: "${steps.poll.output.status}", equals: 200}
        next: end
    default: poll
`
	if errs := stateSizeErrors(t, loop); len(errs) != 0 {
		t.Fatalf("a 150 000-byte result in a loop: %q", errs)
	}
	branches := sizeHead + `  - id: which
    choice:
      - when: {value: "${input.left}", equals: true}
        next: left
    default: right
  - id: left
    tool: structured-data-fetch
    with: {url: "https://api.example.com/left"}
    output_limit_bytes: 150000
    next: join
  - id: right
    tool: structured-data-fetch
    with: {url: "https://api.example.com/right"}
    output_limit_bytes: 150000
    next: join
  - id: join
    pass: {done: true}
`
	if errs := stateSizeErrors(t, branches); len(errs) != 0 {
		t.Fatalf("two 150 000-byte branches: %q", errs)
	}
}

// A value the output schema bounds counts at that bound: a boolean is 5
// bytes however large the result may be. Numbers are never bounded (their
// digits are not), nor strings without maxLength.
func TestStateSizeUsesWhatTheOutputSchemaBounds(t *testing.T) {
	copies := func(binding string) string {
		var fields []string
		for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
			fields = append(fields, k+`: "`+binding+` and `+binding+`"`)
		}
		return sizeHead + `  - id: v
    tool: workflow-validator
    with: {solution: "x"}
    next: f
  - id: f
    tool: structured-data-fetch
    with: {url: "https://api.example.com/x"}
    keep: [status]
    next: copy
  - id: copy
    pass: {` + strings.Join(fields, ", ") + `}
`
	}
	if errs := stateSizeErrors(t, copies("${steps.v.output.valid}")); len(errs) != 0 {
		t.Fatalf("a boolean copied sixteen times: %q", errs)
	}
	if errs := stateSizeErrors(t, copies("${steps.f.output.status}")); len(errs) == 0 {
		t.Fatal("an integer copied sixteen times at the output limit each: accepted")
	}
}

// A Task's payload is bounded too: it is built from the state and may be
// no larger than a state.
func TestStateSizeRefusesATaskPayloadThatBindsTooMuch(t *testing.T) {
	src := sizeHead + `  - id: f
    tool: structured-data-fetch
    with: {url: "https://api.example.com/items"}
    output_limit_bytes: 130000
    next: check
  - id: check
    tool: workflow-validator
    with: {solution: "${steps.f.output.data.a} ${steps.f.output.data.b}"}
`
	errs := stateSizeErrors(t, src)
	if len(errs) == 0 || !strings.Contains(strings.Join(errs, "\n"), `step "check": its Task's payload`) {
		t.Fatalf("diagnostics %q, want the check Task's payload refused", errs)
	}
}

// A binding of a field the step does not keep is refused: it would always
// be absent. Fields inside a kept one, and objects on the way to one, are
// read as usual.
func TestBindingOfAFieldNotKeptIsRefused(t *testing.T) {
	src := sizeHead + `  - id: f
    tool: structured-data-fetch
    with: {url: "https://api.example.com/items"}
    keep: [data.title, status]
    next: use
  - id: use
    pass: {a: "${steps.f.output.data.title}", b: "${steps.f.output.data}", c: "${steps.f.output.status}", d: "${steps.f.output.data.title.x}", e: "${steps.f.output.data.body}", g: "${steps.f.output.bytes}"}
`
	var got []string
	for _, d := range compileString(t, src).Diagnostics {
		if d.Rule == RuleBinding {
			got = append(got, d.Message)
		}
	}
	if len(got) != 2 || !strings.Contains(got[0]+got[1], "data.body") || !strings.Contains(got[0]+got[1], "bytes") {
		t.Fatalf("binding diagnostics %q, want data.body and bytes refused", got)
	}
}

// The run input counts at policy.input_limit_bytes.
func TestStateSizeCountsTheInputAtItsLimit(t *testing.T) {
	src := func(limit string) string {
		return "solution: t\nversion: 1\npolicy: {fetch_hosts: [api.example.com]" + limit + "}\nsteps:\n" + `  - id: f
    tool: structured-data-fetch
    with: {url: "https://api.example.com/items"}
    output_limit_bytes: 150000
`
	}
	if errs := stateSizeErrors(t, src("")); len(errs) != 0 {
		t.Fatalf("the default 32 KiB input: %q", errs)
	}
	if errs := stateSizeErrors(t, src(", input_limit_bytes: 131072")); len(errs) != 1 || !strings.Contains(errs[0], "input 131072") {
		t.Fatalf("a 128 KiB input: %q, want the input named at its limit", errs)
	}
}
