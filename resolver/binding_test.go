package resolver

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/tool"
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
	src := "solution: t\nversion: 1\nsteps:\n  - id: p\n    pass: " + copies(9, "${execution.id} ${execution.name} ${execution.start_time}") + "\n"
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
	const head = "solution: t\nversion: 1\npolicy: {fetch_hosts: [api.example.com], run_timeout_seconds: 604800}\nsteps:\n  - id: f\n    tool: structured-data-fetch\n    with: {url: \"https://api.example.com/\"}\n"
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
// twenty-two copies of a small fetch's Cause (10 KiB each) are refused.
func TestErrorBindingsCountAtTheErrorsBound(t *testing.T) {
	src := "solution: t\nversion: 1\npolicy: {fetch_hosts: [api.example.com]}\nsteps:\n  - id: f\n    tool: structured-data-fetch\n    with: {url: \"https://api.example.com/\"}\n    output_limit_bytes: 10\n    on_error: p\n  - id: p\n    pass: " + copies(22, "${steps.f.error.Cause}") + "\n"
	if !hasError(t, src, RuleStateSize) {
		t.Fatal("twenty-two copies of an error's Cause pass the state-size bound")
	}
	if hasError(t, strings.ReplaceAll(src, "error.Cause", "output.status"), RuleStateSize) {
		t.Fatal("twenty-two copies of a 10-byte result are refused")
	}
}

// ${reviews.R.decision|reason|approver} read $.decisions.R, which a Pass
// on each of R's outcome edges writes in one shape; Init starts it empty.
func TestDecisionBindings(t *testing.T) {
	src := "solution: t\nversion: 1\nsteps:\n  - id: r\n    review: {of: s}\n    on_approve: s\n    on_reject: p\n  - id: s\n    tool: send-email\n    with: {to: [a@example.com], subject: x, text: t}\n    next: p\n" +
		"  - id: p\n    pass: {d: \"${reviews.r.decision}\", why: \"${reviews.r.reason}\", who: \"${reviews.r.approver}\"}\n"
	res := compileString(t, src)
	if !res.OK() {
		t.Fatalf("diagnostics: %s", diagText(res))
	}
	var def struct {
		States map[string]struct {
			Next       string
			Parameters map[string]any
			ResultPath string
			Catch      []catcher
		}
	}
	if err := json.Unmarshal(res.Definition, &def); err != nil {
		t.Fatal(err)
	}
	st := def.States
	if st["r"].Next != "r-approved" || st["r-approved"].Next != "s-seq" || st["r-approved"].ResultPath != "$.decisions.r" {
		t.Fatalf("approval: r → %q, r-approved → %q (%s)", st["r"].Next, st["r-approved"].Next, st["r-approved"].ResultPath)
	}
	catch := st["r"].Catch
	if len(catch) != 3 || catch[0].Next != "r-rejected-parse" || catch[1].Next != "r-timed-out" || catch[2].Next != "r-failed" {
		t.Fatalf("Catch %v", catch)
	}
	if st["r-rejected-parse"].Next != "r-rejected" || st["r-rejected"].Next != "p" || st["r-timed-out"].Next != "p" {
		t.Fatalf("rejection and timeout go to %q, %q", st["r-rejected"].Next, st["r-timed-out"].Next)
	}
	for name, want := range map[string]string{"r-approved": "approve", "r-rejected": "reject", "r-timed-out": "timeout"} {
		p := st[name].Parameters
		_, reason := p["reason"]
		_, reasonPath := p["reason.$"]
		_, approver := p["approver"]
		_, approverPath := p["approver.$"]
		if p["decision"] != want || reason == reasonPath || approver == approverPath || len(p) != 3 {
			t.Errorf("%s writes %v, want {decision: %s, reason, approver}", name, p, want)
		}
	}
	if got := st["p"].Parameters; got["d.$"] != "$.decisions.r.decision" || got["why.$"] != "$.decisions.r.reason" || got["who.$"] != "$.decisions.r.approver" {
		t.Fatalf("p reads %v", got)
	}
	if init := st["Init"].Parameters; init["decisions"] == nil {
		t.Fatalf("Init %v starts no decisions", init)
	}
	// Without a decision binding, none of it.
	res = compileString(t, strings.ReplaceAll(src, "{d: \"${reviews.r.decision}\", why: \"${reviews.r.reason}\", who: \"${reviews.r.approver}\"}", "{}"))
	if !res.OK() || strings.Contains(string(res.Definition), "decisions") {
		t.Fatalf("a Solution binding no decision writes decisions:\n%s\n%s", diagText(res), res.Definition)
	}
}

// A decision is set where the review has been decided on every path; a
// reviewed tool never binds its own review's decision.
func TestDecisionBindingsNeedTheDecision(t *testing.T) {
	const send = "  - id: s\n    tool: send-email\n    with: {to: [a@example.com], subject: SUBJECT, text: t}\n"
	for _, c := range []struct {
		name, steps string
		want        []string
	}{
		{"after either outcome", "  - id: r\n    review: {of: s}\n    on_approve: s\n    on_reject: p\n" + strings.Replace(send, "SUBJECT", "x", 1) + "    next: p\n  - id: p\n    pass: {d: \"${reviews.r.decision}\"}\n", nil},
		{"on one branch", "  - id: c\n    choice:\n      - when: {value: \"${input.x}\", equals: 1}\n        next: r\n    default: p\n  - id: r\n    review: {of: s}\n    on_approve: s\n" + strings.Replace(send, "SUBJECT", "x", 1) + "  - id: p\n    pass: {d: \"${reviews.r.decision}\"}\n", []string{RuleUnsetBinding}},
		{"the reviewed tool", "  - id: r\n    review: {of: s}\n    on_approve: s\n" + strings.Replace(send, "SUBJECT", "\"${reviews.r.decision}\"", 1), []string{RuleUnsetBinding}},
		{"a second review's tool", "  - id: r\n    review: {of: s}\n    on_approve: s\n    on_reject: r2\n" + strings.Replace(send, "SUBJECT", "x", 1) + "    next: r2\n  - id: r2\n    review: {of: s2}\n    on_approve: s2\n" +
			"  - id: s2\n    tool: send-email\n    with: {to: [a@example.com], subject: \"${reviews.r.decision}\", text: \"${reviews.r.reason}\"}\n", nil},
		{"in the output", "  - id: r\n    review: {of: s}\n    on_approve: s\n" + strings.Replace(send, "SUBJECT", "x", 1) + "output: {d: \"${reviews.r.decision}\"}\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := compileString(t, "solution: t\nversion: 1\nsteps:\n"+c.steps)
			if got := errorRules(res); !slices.Equal(got, c.want) {
				t.Fatalf("errors %v, want %v\n%s", got, c.want, diagText(res))
			}
		})
	}
}

// A decision's slot and its reason count in the state-size bound.
func TestDecisionBindingsAreBounded(t *testing.T) {
	src := "solution: t\nversion: 1\nsteps:\n  - id: r\n    review: {of: s}\n    on_approve: s\n    on_reject: p\n  - id: s\n    tool: send-email\n    with: {to: [a@example.com], subject: x, text: t}\n    next: p\n  - id: p\n    pass: " + copies(40, "${reviews.r.reason}") + "\n"
	if !hasError(t, src, RuleStateSize) {
		t.Fatal("forty copies of a review's reason pass the state-size bound")
	}
	if hasError(t, strings.ReplaceAll(src, "reviews.r.reason", "reviews.r.decision"), RuleStateSize) {
		t.Fatal("forty copies of a review's decision are refused")
	}
}

// The decision Passes read reason and approver from the decision JSON
// (tool.ReviewDecision): a path that is missing fails the run
// (States.Runtime), so the JSON always carries both, empty or not.
func TestDecisionJSONAlwaysHasReasonAndApprover(t *testing.T) {
	b, err := json.Marshal(tool.ReviewDecision{})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"reason", "approver"} {
		if _, ok := m[name]; !ok {
			t.Errorf("an empty decision JSON has no %q: %s", name, b)
		}
	}
}
