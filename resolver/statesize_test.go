package resolver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/schema"
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
	if len(errs) != 1 || !strings.Contains(errs[0], `step "copy"`) || !strings.Contains(errs[0], "\n    path: f → copy\n") ||
		!strings.Contains(errs[0], "\n    steps.copy: 262") || !strings.Contains(errs[0], "not even on_error") {
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
// bytes however large the result may be, an integer between a minimum and
// a maximum (structured-data-fetch's status) 24. An integer without both
// ends is never bounded (its digits are not: structured-data-fetch's
// bytes), nor is a string without maxLength.
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
    keep: [status, bytes]
    next: copy
  - id: copy
    pass: {` + strings.Join(fields, ", ") + `}
`
	}
	if errs := stateSizeErrors(t, copies("${steps.v.output.valid}")); len(errs) != 0 {
		t.Fatalf("a boolean copied sixteen times: %q", errs)
	}
	if errs := stateSizeErrors(t, copies("${steps.f.output.status}")); len(errs) != 0 {
		t.Fatalf("an integer between 100 and 599 copied sixteen times: %q", errs)
	}
	if errs := stateSizeErrors(t, copies("${steps.f.output.bytes}")); len(errs) == 0 {
		t.Fatal("an integer without a maximum copied sixteen times at the output limit each: accepted")
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
	if errs := stateSizeErrors(t, src(", input_limit_bytes: 131072")); len(errs) != 1 || !strings.Contains(errs[0], "\n    input: 131072 bytes") {
		t.Fatalf("a 128 KiB input: %q, want the input named at its limit", errs)
	}
}

// A [state-size] error gives its path and its largest parts on lines of
// their own, below the message: nothing is cut.
func TestStateSizeDiagnosticListsThePathAndPartsOnLines(t *testing.T) {
	step := func(id, next string) string {
		return "  - id: " + id + "\n    tool: structured-data-fetch\n    with: {url: \"https://api.example.com/" + id + "\"}\n    output_limit_bytes: 60000\n    next: " + next + "\n"
	}
	res := compileString(t, sizeHead+step("a", "b")+step("b", "c")+step("c", "d")+step("d", "end"))
	if len(res.Diagnostics) != 1 {
		t.Fatalf("diagnostics %v, want one on d", diagText(res))
	}
	d := res.Diagnostics[0]
	want := []string{"path: a → b → c → d", "steps.a: 60016 bytes, output_limit_bytes 60000", "steps.b: 60016 bytes, output_limit_bytes 60000",
		"steps.c: 60016 bytes, output_limit_bytes 60000", "input: 32768 bytes, policy.input_limit_bytes"}
	if !slices.Equal(d.Notes, want) {
		t.Fatalf("notes %q, want %q", d.Notes, want)
	}
	lines := strings.Split(d.String(), "\n")
	if len(lines) != 1+len(want) || lines[0] != d.Head() || strings.Contains(d.String(), "…") {
		t.Fatalf("printed as %q, want the message and a line per note, nothing cut", d.String())
	}
	for k, n := range want {
		if lines[k+1] != "    "+n {
			t.Fatalf("line %d %q, want the note %q indented by four spaces", k+2, lines[k+1], n)
		}
	}
	b, _ := json.Marshal(d)
	if !strings.Contains(string(b), `"notes":["path: a → b → c → d",`) {
		t.Fatalf("JSON %s has no notes", b)
	}
	if s := res.Summary(); strings.Contains(s, "\n") {
		t.Fatalf("summary %q is not one line", s)
	}
}

// A long path's note keeps its first and last steps and says how many
// are left out between them.
func TestStateSizePathNoteLeavesOutTheMiddleOfALongPath(t *testing.T) {
	var b strings.Builder
	b.WriteString(sizeHead)
	for k := range 30 {
		next := fmt.Sprintf("s%d", k+1)
		if k == 29 {
			next = "end"
		}
		fmt.Fprintf(&b, "  - id: s%d\n    tool: structured-data-fetch\n    with: {url: \"https://api.example.com/\"}\n    output_limit_bytes: 9000\n    next: %s\n", k, next)
	}
	res := compileString(t, b.String())
	d := res.Diagnostics[len(res.Diagnostics)-1]
	want := "path: s0 → s1 → s2 → s3 → (14 more) → s18 → s19 → s20 → s21 → s22 → s23 → s24 → s25 → s26 → s27 → s28 → s29"
	if d.Rule != RuleStateSize || len(d.Notes) == 0 || d.Notes[0] != want {
		t.Fatalf("last diagnostic %s, want the path note %q", d, want)
	}
}

// A tool step without output_limit_bytes or keep counts its result at the
// bound its pinned output schema gives it, when that is below the default
// limit: send-email's {message_id} (at most 256 characters) is 1604 bytes,
// each character at the 6 bytes JSON's \u escape takes. Sound because the
// dispatcher validates every result against the pinned output schema
// before it returns it (shared/dispatch, checkOutput).
func TestToolResultCountsAtItsOutputSchemaBound(t *testing.T) {
	send, _ := catalog.Default().Lookup("send-email")
	var out map[string]any
	if err := json.Unmarshal(send.OutputSchema, &out); err != nil {
		t.Fatal(err)
	}
	bound, ok := schemaBound(out)
	if want := 2 + (6*len("message_id") + 4) + (6*256 + 2); !ok || bound != want {
		t.Fatalf("send-email's output schema bounds its result at %d (%v), want %d", bound, ok, want)
	}
	pinned, err := schema.Compile(send.OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		chars int
		valid bool
	}{
		{"maxLength characters of U+0000", 256, true},
		{"one character more", 257, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			result := map[string]any{"message_id": strings.Repeat("\u0000", c.chars)}
			if err := pinned.Validate(result); (err == nil) != c.valid {
				t.Fatalf("the pinned schema's verdict: %v, want valid %v", err, c.valid)
			}
			// A valid result fits the bound written as Go writes it, each
			// U+0000 as \u0000; an invalid one never reaches the state.
			b, _ := json.Marshal(result)
			if c.valid && (len(b) > bound || !strings.Contains(string(b), strings.Repeat(`\u0000`, c.chars))) {
				t.Fatalf("%d bytes of JSON, over the bound %d: %.40s…", len(b), bound, b)
			}
		})
	}

	// Five reviewed e-mails on one path: at the default limit (64 KiB
	// each) they were refused; at the schema's bound they fit.
	var b strings.Builder
	b.WriteString("solution: t\nversion: 1\nsteps:\n")
	for k := range 5 {
		next := fmt.Sprintf("approve%d", k+1)
		if k == 4 {
			next = "end"
		}
		fmt.Fprintf(&b, "  - id: approve%d\n    review: {of: send%d}\n    on_approve: send%d\n  - id: send%d\n    tool: send-email\n    with: {to: [a@example.com], subject: s, text: t}\n    next: %s\n", k, k, k, k, next)
	}
	res := compileString(t, b.String())
	if !res.OK() {
		t.Fatalf("five e-mails at their schema's bound: %s", diagText(res))
	}
	p := &plan{at: make([]*planStep, len(res.Solution.Steps))}
	for i, st := range res.Solution.Steps {
		p.at[i] = &planStep{Step: st}
	}
	p.at[1].tool = &toolCall{tool: send} // send0
	if n, why := (&sizer{c: &checker{sol: res.Solution}, p: p}).resultBound(1); n != bound || why != fmt.Sprintf("the output schema bounds it, %d", bound) {
		t.Fatalf("resultBound %d (%s), want %d from the schema", n, why, bound)
	}
}

// schemaBound bounds a list by maxItems and its one items schema, and an
// integer by a range whose ends a double holds exactly; a list or number
// any other keyword governs, or without those, is unbounded.
func TestSchemaBoundReadsListsAndRanges(t *testing.T) {
	cases := []struct {
		name, schema string
		want         int // -1: unbounded
	}{
		{"an integer between two ends", `{"type": "integer", "minimum": 1, "maximum": 196609}`, numberBytes},
		{"an integer with a minimum only", `{"type": "integer", "minimum": 0}`, -1},
		{"an integer with an exclusive end", `{"type": "integer", "minimum": 0, "exclusiveMaximum": 10}`, -1},
		{"an integer past 2^53", `{"type": "integer", "minimum": 0, "maximum": 1e300}`, -1},
		{"a number between two ends", `{"type": "number", "minimum": 0, "maximum": 1}`, -1},
		{"a list of at most 3 strings of 5", `{"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 5}}`, 2 + 3*(32+1)},
		{"a list without maxItems", `{"type": "array", "items": {"type": "string", "maxLength": 5}}`, -1},
		{"a list of unbounded items", `{"type": "array", "maxItems": 3, "items": {"type": "string"}}`, -1},
		{"a draft-07 list of schemas", `{"type": "array", "maxItems": 3, "items": [{"type": "boolean"}]}`, -1},
		{"prefixItems", `{"type": "array", "maxItems": 3, "prefixItems": [{}], "items": {"type": "boolean"}}`, -1},
		{"contains", `{"type": "array", "maxItems": 3, "contains": {}, "items": {"type": "boolean"}}`, -1},
		{"an enum of strings with maxLength", `{"type": "string", "enum": ["error", "warning"], "maxLength": 7}`, 6*7 + 2},
		{"an enum of strings alone", `{"enum": ["error", "warning"]}`, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s map[string]any
			if err := json.Unmarshal([]byte(c.schema), &s); err != nil {
				t.Fatal(err)
			}
			n, ok := schemaBound(s)
			if !ok {
				n = -1
			}
			if n != c.want {
				t.Fatalf("schemaBound(%s) = %d, want %d", c.schema, n, c.want)
			}
		})
	}
}

// workflow-validator's report counts at its output schema's bound
// (30 319 bytes: ten diagnostics of at most 400-character messages), not
// at the 64 KiB output limit: four reports on one path, which counted
// 256 KiB, fit in the state.
func TestStateSizeCountsTheValidatorsReportAtItsSchemasBound(t *testing.T) {
	v, ok := catalog.Default().Lookup("workflow-validator")
	if !ok {
		t.Fatal("no workflow-validator in the catalog")
	}
	var out map[string]any
	if err := json.Unmarshal(v.OutputSchema, &out); err != nil {
		t.Fatal(err)
	}
	if n, ok := schemaBound(out); !ok || n != 30319 {
		t.Fatalf("the report's schema bound is %d (bounded: %v), want 30319", n, ok)
	}
	var steps []string
	for i := 1; i <= 4; i++ {
		steps = append(steps, fmt.Sprintf("  - id: v%d\n    tool: workflow-validator\n    with: {solution: \"x\"}\n", i))
	}
	if errs := stateSizeErrors(t, sizeHead+strings.Join(steps, "")); len(errs) != 0 {
		t.Fatalf("four validator reports on one path: %q", errs)
	}
}
