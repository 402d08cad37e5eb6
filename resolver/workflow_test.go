package resolver

import (
	"encoding/json"
	"strings"
	"testing"
)

// parentsID is the id of testdata/toolsets/parents.lock.json, whose
// workflows list demo-ticket.
const parentsID = "ts_fe900a203774359299931232fe0abfff"

func parentSolution(steps, output string) string {
	src := "solution: p\nversion: 1\ntoolset: " + parentsID + "\npolicy: {run_timeout_seconds: 86400}\nsteps:\n" + steps
	if output != "" {
		src += "output: " + output + "\n"
	}
	return src
}

// A workflow step starts only a Solution its toolset lists, never the
// Solution itself, and never without a registered toolset.
func TestWorkflowStepAdmission(t *testing.T) {
	for name, c := range map[string]struct{ src, want string }{
		"not listed": {parentSolution("  - id: w\n    workflow: demo-digest\n", ""),
			`[workflow] step "w" starts workflow "demo-digest", which toolset ` + parentsID + ` does not list in its workflows (it lists demo-ticket)`},
		"itself": {strings.Replace(parentSolution("  - id: w\n    workflow: p\n", ""), "solution: p", "solution: p", 1),
			`[workflow] step "w" starts "p", the Solution itself`},
		"no toolset": {"solution: q\nversion: 1\nsteps:\n  - id: w\n    workflow: demo-ticket\n",
			`[workflow] step "w" starts workflow "demo-ticket", but the Solution names no registered toolset`},
		"not a name": {parentSolution("  - id: w\n    workflow: Demo_Ticket\n", ""), `[invalid-value] step "w" workflow "Demo_Ticket" is not a Solution name`},
		"tool keys":  {parentSolution("  - id: w\n    workflow: demo-ticket\n    retry: {max_attempts: 2}\n", ""), `[unknown-field] unknown field "retry" in step "w"`},
	} {
		res := compileOnDemo(t, "p.yaml", c.src)
		if res.OK() || !strings.Contains(diagText(res), c.want) {
			t.Errorf("%s: diagnostics\n%s\nwant %s", name, diagText(res), c.want)
		}
	}
}

// The run's output binds only what every successful end has set, and a
// workflow step's output is bound as a tool step's.
func TestOutputBindsWhatEveryEndHasSet(t *testing.T) {
	ok := parentSolution("  - id: w\n    workflow: demo-ticket\n    output_limit_bytes: 2048\n    next: after\n  - id: after\n    pass: {t: \"${steps.w.output.ticket_id}\"}\n",
		`{ticket: "${steps.w.output.ticket_id}", copy: "${steps.after.t}"}`)
	res := compileOnDemo(t, "p.yaml", ok)
	if !res.OK() {
		t.Fatalf("diagnostics: %s", diagText(res))
	}
	var def struct{ States map[string]map[string]any }
	if err := json.Unmarshal(res.Definition, &def); err != nil {
		t.Fatal(err)
	}
	end := def.States["End"]
	if end["Type"] != "Pass" || end["OutputPath"] != "$.output" || end["End"] != true {
		t.Fatalf("End state %v: want a Pass ending the run with its output", end)
	}
	if w := res.Manifest.Workflows[WorkflowPlaceholder("demo-ticket")]; w.Solution != "demo-ticket" || w.OutputLimitBytes != 2048 || w.InputBoundBytes <= 0 {
		t.Fatalf("manifest workflows %+v", res.Manifest.Workflows)
	}
	// Both members bind the child's output (at most 2048 bytes) once.
	if res.Manifest.OutputBoundBytes < 2*2048 || res.Manifest.OutputBoundBytes > 2*2048+200 {
		t.Fatalf("output bound %d", res.Manifest.OutputBoundBytes)
	}
	for name, src := range map[string]string{
		// on_error ends the run without the child's output
		"after on_error": parentSolution("  - id: w\n    workflow: demo-ticket\n    on_error: end\n", `"${steps.w.output}"`),
		// a branch ends before the step
		"a branch": parentSolution("  - id: c\n    choice:\n      - when: {value: \"${input.x}\", equals: 1}\n        next: end\n    default: w\n  - id: w\n    workflow: demo-ticket\n", `"${steps.w.output}"`),
	} {
		res := compileOnDemo(t, "p.yaml", src)
		if res.OK() || !strings.Contains(diagText(res), `[unset-binding] output binds ${steps.w.output}, but step "w" has not completed on every path that ends the run`) {
			t.Errorf("%s: diagnostics\n%s", name, diagText(res))
		}
	}
}

// A child's start record and its start Task carry the same input but for
// meta.traceparent: null in the record's, which review-request fills and
// answers before it records the digest, and that answer in the start's.
func TestWorkflowStepSendsOneInputTwice(t *testing.T) {
	res := compileOnDemo(t, "p.yaml", parentSolution("  - id: w\n    workflow: demo-ticket\n    with: {title: \"${input.t}\", n: 1}\n", ""))
	if !res.OK() {
		t.Fatalf("diagnostics: %s", diagText(res))
	}
	var def struct {
		States map[string]struct {
			Parameters struct {
				Input   map[string]any
				Payload struct{ Input map[string]any }
			}
		}
	}
	if err := json.Unmarshal(res.Definition, &def); err != nil {
		t.Fatal(err)
	}
	start, record := def.States["w"].Parameters.Input, def.States["w-record"].Parameters.Payload.Input
	startMeta, _ := start["meta"].(map[string]any)
	recordMeta, _ := record["meta"].(map[string]any)
	if tp, ok := recordMeta["traceparent"]; !ok || tp != nil {
		t.Fatalf("record input's meta %v: want traceparent null, for review-request to fill", recordMeta)
	}
	if startMeta["traceparent.$"] != "$.steps.w.child.traceparent" {
		t.Fatalf("start input's meta %v: want the traceparent review-request answered", startMeta)
	}
	delete(recordMeta, "traceparent")
	delete(startMeta, "traceparent.$")
	a, _ := json.Marshal(start)
	b, _ := json.Marshal(record)
	if string(a) != string(b) || !strings.Contains(string(a), `"parent_run_id.$":"$.meta.run_id"`) {
		t.Fatalf("start Input %s, record input %s", a, b)
	}
}

func diagText(r *Result) string {
	var b strings.Builder
	for _, d := range r.Diagnostics {
		b.WriteString(d.String() + "\n")
	}
	return b.String()
}

// A workflow step's start record is written beside its result, never
// over it: in a loop, an output an earlier pass left is still there for
// ${steps.<id>.output} after a later pass fails.
func TestWorkflowStepKeepsAnEarlierOutput(t *testing.T) {
	res := compileOnDemo(t, "p.yaml", parentSolution("  - id: w\n    workflow: demo-ticket\n    on_error: done\n    next: w\n  - id: done\n    pass: {}\n", ""))
	if !res.OK() {
		t.Fatalf("diagnostics: %s", diagText(res))
	}
	var def struct{ States map[string]map[string]any }
	if err := json.Unmarshal(res.Definition, &def); err != nil {
		t.Fatal(err)
	}
	for name, st := range def.States {
		if st["Type"] == "Task" && st["ResultPath"] == "$.steps.w" && name != "w" && name != "w-output" {
			t.Errorf("state %s replaces the step's result", name)
		}
	}
	if got := def.States["w-record"]["ResultPath"]; got != "$.steps.w.child" {
		t.Fatalf("the record's ResultPath is %v", got)
	}
}

// A workflow step inside a for_each names each item's child from the
// full seq: its start record sends it, and the child's meta carries it.
func TestWorkflowStepInALoop(t *testing.T) {
	src := "solution: p\nversion: 1\ntoolset: " + parentsID + "\npolicy: {run_timeout_seconds: 86400}\ninput: {type: object, properties: {titles: {type: array}}}\nsteps:\n" +
		"  - id: each\n    for_each:\n      items: \"${input.titles}\"\n      as: title\n      max_items: 3\n" +
		"      collect: {ticket: \"${steps.w.output}\"}\n      steps:\n" +
		"        - id: w\n          workflow: demo-ticket\n          output_limit_bytes: 2048\n          with: {title: \"${title}\"}\n"
	res := compileOnDemo(t, "p.yaml", src)
	if !res.OK() {
		t.Fatalf("diagnostics: %s", diagText(res))
	}
	var def struct {
		States map[string]struct {
			ItemProcessor struct{ States map[string]json.RawMessage }
		}
	}
	if err := json.Unmarshal(res.Definition, &def); err != nil {
		t.Fatal(err)
	}
	body := def.States["each"].ItemProcessor.States
	const loopSeq = `States.Format('{}.{}.{}', $.meta.loop_seq, $.meta.index, $.meta.seq)`
	record := string(body["w-record"])
	if !strings.Contains(record, `"seq.$": "`+loopSeq+`"`) || !strings.Contains(record, `"parent_seq.$": "`+loopSeq+`"`) {
		t.Fatalf("w-record %s: want the loop's seq as seq and parent_seq", record)
	}
	// The step's id, a constant: with the seq's loop index path it places
	// the child among the parent's children for a fork (docs/fork.md).
	if !strings.Contains(record, `"step": "w"`) || !strings.Contains(string(body["w-claim"]), `"step": "w"`) {
		t.Fatalf("w-record %s: want the step's id", record)
	}
}

// A workflow step's child run calls tools no review of the parent
// approves, so the no-fallback check takes it as a tool (docs/solutions.md
// §4.2): its on_error may not reach a tool unapproved, a failure's
// on_error may not reach it, and a for_each whose body starts one counts
// as a tool too.
func TestNoFallbackTakesAWorkflowStepAsATool(t *testing.T) {
	const send = "  - id: send\n    tool: send-email\n    with: {to: [a@example.com], subject: s, text: t}\n"
	const fetch = "  - id: f\n    tool: workflow-validator\n    with: {solution: x}\n"
	for name, c := range map[string]struct{ steps, want string }{
		"from the child's failure": {"  - id: w\n    workflow: demo-ticket\n    on_error: send\n" + send,
			`[no-fallback] on_error of step "w" reaches tool step "send" (send-email) without an approved review of it: w → send`},
		"to a child run": {strings.Replace(fetch, "x}\n", "x}\n    on_error: w\n", 1) + "  - id: w\n    workflow: demo-ticket\n",
			`[no-fallback] on_error of step "f" reaches workflow step "w", whose child run (demo-ticket) calls tools: f → w`},
		"to a loop of child runs": {strings.Replace(fetch, "x}\n", "x}\n    on_error: each\n", 1) +
			"  - id: each\n    for_each:\n      items: \"${input.list}\"\n      as: it\n      max_items: 3\n      steps:\n        - id: w\n          workflow: demo-ticket\n",
			`[no-fallback] on_error of step "f" reaches for_each "each", whose body calls a tool: f → each`},
	} {
		src := strings.Replace(parentSolution(c.steps, ""), "steps:\n", "input: {type: object, properties: {list: {type: array}}}\nsteps:\n", 1)
		res := compileOnDemo(t, "p.yaml", src)
		if res.OK() || !strings.Contains(diagText(res), c.want) {
			t.Errorf("%s: diagnostics\n%s\nwant %s", name, diagText(res), c.want)
		}
	}
	ok := "  - id: w\n    workflow: demo-ticket\n    on_error: done\n  - id: done\n    pass: {}\n"
	if res := compileOnDemo(t, "p.yaml", parentSolution(ok, "")); !res.OK() {
		t.Errorf("a child's failure that goes to a pass step: %s", diagText(res))
	}
}

// A start that finds its child's name in use asks review-request whose
// the name is (<id>-claim, with the attempt it started and conflict):
// the step follows its own child (<id>-recover) or starts again under
// the next name review-request recorded (<id>).
func TestWorkflowStepClaimsANameInUse(t *testing.T) {
	res := compileOnDemo(t, "p.yaml", parentSolution("  - id: w\n    workflow: demo-ticket\n", ""))
	if !res.OK() {
		t.Fatalf("diagnostics: %s", diagText(res))
	}
	var def struct{ States map[string]map[string]any }
	if err := json.Unmarshal(res.Definition, &def); err != nil {
		t.Fatal(err)
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	catch := def.States["w"]["Catch"].([]any)[0].(map[string]any)
	if js(catch["ErrorEquals"]) != `["StepFunctions.ExecutionAlreadyExistsException"]` || catch["Next"] != "w-claim" {
		t.Fatalf("the start's first Catch %s", js(catch))
	}
	for name, want := range map[string]string{
		"w-record": `"attempt":0,"conflict":false,`,
		"w-claim":  `"attempt.$":"$.steps.w.child.attempt","conflict":true,`,
	} {
		st := def.States[name]
		payload := js(st["Parameters"].(map[string]any)["Payload"])
		if !strings.Contains(payload, want) || st["ResultPath"] != "$.steps.w.child" {
			t.Errorf("%s: payload %s, ResultPath %v", name, payload, st["ResultPath"])
		}
		if sel := js(st["ResultSelector"]); !strings.Contains(sel, `"attempt.$":"$.Payload.attempt"`) {
			t.Errorf("%s: ResultSelector %s", name, sel)
		}
	}
	a, _ := json.Marshal(def.States["w-record"]["Parameters"].(map[string]any)["Payload"].(map[string]any)["input"])
	b, _ := json.Marshal(def.States["w-claim"]["Parameters"].(map[string]any)["Payload"].(map[string]any)["input"])
	if string(a) != string(b) {
		t.Fatalf("record input %s, claim input %s", a, b)
	}
	if got := js(def.States["w-claim"]["ResultSelector"]); !strings.Contains(got, `"taken.$":"$.Payload.taken"`) || def.States["w-claim"]["Next"] != "w-claimed" {
		t.Fatalf("w-claim: ResultSelector %s, Next %v", got, def.States["w-claim"]["Next"])
	}
	claimed := def.States["w-claimed"]
	if got := js(claimed); claimed["Type"] != "Choice" || claimed["Default"] != "w" ||
		!strings.Contains(got, `{"BooleanEquals":true,"Next":"w-recover","Variable":"$.steps.w.child.taken"}`) {
		t.Fatalf("w-claimed %s", got)
	}
}
