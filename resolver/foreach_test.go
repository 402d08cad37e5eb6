package resolver

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// reviewedLoop is a for_each whose body reviews and sends one e-mail per
// item; after the loop a fetch's on_error ends the run.
const reviewedLoop = `solution: mail-each
version: 1
input:
  type: object
  properties:
    people: {type: array}
steps:
  - id: each
    for_each:
      items: "${input.people}"
      as: person
      max_items: 10
      max_concurrency: 3
      steps:
        - id: approve
          review: {of: send}
          on_approve: send
          on_reject: end
        - id: send
          tool: send-email
          with: {to: ["a@example.com"], subject: "hi", text: "x"}
          on_error: skipped
        - id: skipped
          fail: {error: NotSent}
    on_error:
      - {errors: [FOR_EACH_TOO_MANY_ITEMS, NotSent], next: end}
`

// rules lists the rule ids of res's diagnostics.
func rules(res *Result) []string {
	var out []string
	for _, d := range res.Diagnostics {
		out = append(out, d.Rule)
	}
	return out
}

// A review inside a body approves the body's call: Gate A holds on the
// body's own graph, and the for_each's on_error catches what it raises.
// Until the Map state is emitted, the only refusal is that one.
func TestForEachBodyGateA(t *testing.T) {
	res := Compile("loop.yaml", []byte(reviewedLoop), Options{})
	if got := fmt.Sprint(rules(res)); got != "[]" {
		t.Fatalf("diagnostics %v, want none: %+v", got, res.Diagnostics)
	}
	if len(res.Gate) != 1 || res.Gate[0].Step != "send" || res.Gate[0].Path != nil || fmt.Sprint(res.Gate[0].Last) != "[approve]" {
		t.Fatalf("gate verdicts %+v", res.Gate)
	}
}

// Each body is its own graph starting unapproved: the cases that Gate A,
// the no-fallback check and the scope rules refuse.
func TestForEachRefusals(t *testing.T) {
	cases := []struct {
		name, from, to, rule string
	}{
		// A rejection inside the body leads back to the call.
		{"rejection reaches the call", "on_reject: end", "on_reject: send", RuleReviewBefore},
		// The body's on_error leaves the body.
		{"a target outside", "on_error: skipped", "on_error: each", RuleForEachScope},
		// The review's reject path fails the step, whose on_error loops
		// back into the for_each: a fallback to a tool.
		{"on_error back into the loop", "next: end}", "next: each}", RuleNoFallback},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(reviewedLoop, c.from, c.to, 1)
			if src == reviewedLoop {
				t.Fatalf("%q is not in the Solution", c.from)
			}
			res := Compile("loop.yaml", []byte(src), Options{})
			if !strings.Contains(fmt.Sprint(rules(res)), c.rule) {
				t.Errorf("diagnostics %v do not hold [%s]: %+v", rules(res), c.rule, res.Diagnostics)
			}
		})
	}
}

// Bindings in and around a body: the item by its as name and the index
// inside the body only; a body step's values inside its body only; the
// loop's output after it.
func TestForEachBindings(t *testing.T) {
	body := strings.Replace(reviewedLoop, `text: "x"`, `text: "${person.name} is number ${for_each.index}"`, 1)
	res := Compile("loop.yaml", []byte(body), Options{})
	if got := fmt.Sprint(rules(res)); got != "[]" {
		t.Fatalf("the item and its index in the body: %v", res.Diagnostics)
	}
	cases := map[string]string{
		"the item outside its body": `    on_error:
      - {errors: [FOR_EACH_TOO_MANY_ITEMS, NotSent], next: end}
    next: after
  - id: after
    pass: {who: "${person.name}"}
`,
		"the index outside a body": `    on_error:
      - {errors: [FOR_EACH_TOO_MANY_ITEMS, NotSent], next: end}
    next: after
  - id: after
    pass: {n: "${for_each.index}"}
`,
		"a body step's output after the loop": `    on_error:
      - {errors: [FOR_EACH_TOO_MANY_ITEMS, NotSent], next: end}
    next: after
  - id: after
    pass: {id: "${steps.send.output.message_id}"}
`,
	}
	for name, tail := range cases {
		t.Run(name, func(t *testing.T) {
			src := strings.Replace(reviewedLoop, "    on_error:\n      - {errors: [FOR_EACH_TOO_MANY_ITEMS, NotSent], next: end}\n", tail, 1)
			res := Compile("loop.yaml", []byte(src), Options{})
			if got := fmt.Sprint(rules(res)); got != "[binding]" {
				t.Errorf("diagnostics %v, want [binding]: %+v", got, res.Diagnostics)
			}
		})
	}
	after := strings.Replace(reviewedLoop, "    on_error:\n      - {errors: [FOR_EACH_TOO_MANY_ITEMS, NotSent], next: end}\n",
		"    on_error:\n      - {errors: [FOR_EACH_TOO_MANY_ITEMS, NotSent], next: end}\n    next: after\n  - id: after\n    pass: {all: \"${steps.each.output}\"}\n", 1)
	if res := Compile("loop.yaml", []byte(after), Options{}); fmt.Sprint(rules(res)) != "[]" {
		t.Errorf("the loop's output after it: %+v", res.Diagnostics)
	}
	items := strings.Replace(reviewedLoop, `items: "${input.people}"`, `items: "people: ${input.people}"`, 1)
	if res := Compile("loop.yaml", []byte(items), Options{}); fmt.Sprint(rules(res)) != "[binding]" {
		t.Errorf("items as a template: %+v", res.Diagnostics)
	}
}

// The state-size bound counts collected × max_items outside the loop: a
// whole e-mail result per item, a hundred items, cannot fit 256 KiB.
func TestForEachStateSize(t *testing.T) {
	src, err := os.ReadFile("../testdata/solutions/for-each-mail.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if res := Compile("mail.yaml", src, Options{}); !res.OK() {
		t.Fatalf("the golden Solution: %+v", res.Diagnostics)
	}
	big := strings.Replace(strings.Replace(string(src), "max_items: 20", "max_items: 100", 1),
		`message_id: "${steps.send.output.message_id}"`, `message: "${steps.send.output}"`, 1)
	res := Compile("mail.yaml", []byte(big), Options{})
	if !strings.Contains(fmt.Sprint(rules(res)), RuleStateSize) {
		t.Fatalf("diagnostics %+v, want [%s]", res.Diagnostics, RuleStateSize)
	}
}

// collect is read where an iteration ends: a body step it binds must have
// completed on every path that ends the iteration.
func TestForEachCollectSet(t *testing.T) {
	src, err := os.ReadFile("../testdata/solutions/for-each-mail.yaml")
	if err != nil {
		t.Fatal(err)
	}
	unset := strings.Replace(string(src), "on_reject: skipped", "on_reject: end", 1)
	res := Compile("mail.yaml", []byte(unset), Options{})
	if got := fmt.Sprint(rules(res)); !strings.Contains(got, RuleUnsetBinding) || !strings.Contains(fmt.Sprint(res.Diagnostics), `an iteration can end at step "approve"`) {
		t.Fatalf("diagnostics %+v, want [%s] naming approve", res.Diagnostics, RuleUnsetBinding)
	}
}

// Bindings that depend on how a step was left, around a loop: the loop's
// error after its on_error, and a body review's decision in its body.
func TestForEachFlowBindings(t *testing.T) {
	src, err := os.ReadFile("../testdata/solutions/for-each-mail.yaml")
	if err != nil {
		t.Fatal(err)
	}
	errorBound := strings.Replace(string(src), "  - id: failed\n    fail: {error: NotAllSent}\n",
		"  - id: failed\n    pass: {why: \"${steps.each.error.Cause}\"}\n    next: too_many\n", 1)
	if res := Compile("mail.yaml", []byte(errorBound), Options{}); !res.OK() {
		t.Errorf("the loop's error after its on_error: %+v", res.Diagnostics)
	}
	decision := strings.Replace(string(src), `text: "You are number ${for_each.index}."`, `text: "${reviews.approve.reason}"`, 1)
	if res := Compile("mail.yaml", []byte(decision), Options{}); fmt.Sprint(rules(res)) != "["+RuleUnsetBinding+"]" {
		t.Errorf("the decision of the review that approves the call: %+v", res.Diagnostics)
	}
	collected := strings.Replace(string(src), `name: "${person.name}"`, `reason: "${reviews.approve.reason}"`, 1)
	res := Compile("mail.yaml", []byte(collected), Options{})
	if !res.OK() {
		t.Fatalf("a body review's decision collected: %+v", res.Diagnostics)
	}
	// Bound by collect alone, the decision is written on each outcome
	// edge of the review, in the body.
	var def struct {
		States map[string]struct {
			ItemProcessor struct{ States map[string]json.RawMessage }
		}
	}
	if err := json.Unmarshal(res.Definition, &def); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"approve-approved", "approve-rejected-parse", "approve-rejected"} {
		if _, ok := def.States["each"].ItemProcessor.States[name]; !ok {
			t.Errorf("a body review's decision collected: the body has no %s state to write it", name)
		}
	}
	skip := strings.Replace(collected, "on_approve: send", "on_approve: send\n          on_timeout: skip", 1)
	skip = strings.Replace(skip, "        - id: skipped\n", "        - id: skip\n          pass: {}\n        - id: skipped\n", 1)
	if res := Compile("mail.yaml", []byte(skip), Options{}); res.OK() {
		t.Errorf("collect binds send's output though an iteration can end at skip")
	}
}

// The Map state's own output holds the list the loop collected (or its
// error): when the loop ends the run (next or on_error end), no step after
// it counts that list, and the Map's output alone must fit 256 KiB.
func TestForEachResultCountsWhenTheLoopEndsTheRun(t *testing.T) {
	const loop = `solution: big-end
version: 1
policy:
  fetch_hosts: [api.example.com]
input:
  type: object
  properties: {urls: {type: array}}
steps:
  - id: each
    for_each:
      items: "${input.urls}"
      as: u
      max_items: 100
      collect: {body: "${steps.fetch.output}"}
      steps:
        - id: fetch
          tool: structured-data-fetch
          with: {url: "https://api.example.com/x"}
          output_limit_bytes: 100000
`
	small := strings.Replace(loop, "output_limit_bytes: 100000", "output_limit_bytes: 1000", 1)
	for _, c := range []struct {
		name, src string
		refused   bool
	}{
		{"next end (default)", loop, true},
		{"next end", loop + "    next: end\n", true},
		{"on_error end, the list counted at next", loop + "    next: done\n    on_error: end\n  - id: done\n    pass: {}\n", true},
		{"a small collect, next end", small + "    next: end\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := Compile("big.yaml", []byte(c.src), Options{})
			if got := strings.Contains(fmt.Sprint(rules(res)), RuleStateSize); got != c.refused {
				t.Fatalf("diagnostics %+v, want [%s]: %v", res.Diagnostics, RuleStateSize, c.refused)
			}
		})
	}
}

// The ItemSelector passes the outer values the body binds; a body step no
// path reaches never runs, and the value it binds may be unset where the
// loop starts (an outer tool on one branch only): passing it would fail
// the run with States.Runtime on the other branch, which the resolver
// accepted.
func TestForEachPassesOnlyWhatReachableBodyStepsBind(t *testing.T) {
	const src = `solution: b
version: 1
input:
  type: object
  properties: {people: {type: array}, x: {type: integer}}
steps:
  - id: c
    choice:
      - when: {value: "${input.x}", equals: 1}
        next: r
    default: each
  - id: r
    review: {of: t}
    on_approve: t
    on_reject: each
  - id: t
    tool: send-email
    with: {to: [a@example.com], subject: "hi", text: "x"}
    next: each
  - id: each
    for_each:
      items: "${input.people}"
      as: p
      max_items: 5
      steps:
        - id: p1
          pass: {}
        - id: p2
          pass: {a: "${steps.t.output}"}
`
	res := Compile("b.yaml", []byte(src), Options{})
	if !res.OK() {
		t.Fatalf("diagnostics %+v", res.Diagnostics)
	}
	var def struct {
		States map[string]struct{ ItemSelector map[string]any }
	}
	if err := json.Unmarshal(res.Definition, &def); err != nil {
		t.Fatal(err)
	}
	if steps := def.States["each"].ItemSelector["steps"]; fmt.Sprint(steps) != "map[]" {
		t.Fatalf("the ItemSelector passes %v, which an unreachable body step binds: unset when the loop is reached from c", steps)
	}
}

// collect's bindings are checked set on every path that ends an
// iteration whether or not the Solution has an output: the check ran
// only beside the output's, and a Solution without output left a collect
// Pass reading a step that a rejection skipped (States.Runtime).
func TestForEachCollectSetWithoutOutput(t *testing.T) {
	src, err := os.ReadFile("../testdata/solutions/for-each-mail.yaml")
	if err != nil {
		t.Fatal(err)
	}
	unset := strings.Replace(string(src), "on_reject: skipped", "on_reject: end", 1)
	unset = strings.Replace(unset, "output:\n  sent: \"${steps.each.output}\"\n", "", 1)
	if strings.Contains(unset, "output:\n") {
		t.Fatal("the golden Solution's output is not where the test expects it")
	}
	res := Compile("mail.yaml", []byte(unset), Options{})
	if got := fmt.Sprint(rules(res)); !strings.Contains(got, RuleUnsetBinding) || !strings.Contains(fmt.Sprint(res.Diagnostics), `an iteration can end at step "approve"`) {
		t.Fatalf("diagnostics %+v, want [%s] naming approve", res.Diagnostics, RuleUnsetBinding)
	}
}

// collect may bind a body step's error (${steps.X.error.*}) only when every
// path that ends an iteration leaves X through its on_error, as output
// may: on any other end the error is unset and the collect Pass fails the
// run (States.Runtime).
func TestForEachCollectErrorNeedsTheErrorPath(t *testing.T) {
	const loop = `solution: e
version: 1
input:
  type: object
  properties: {people: {type: array}}
steps:
  - id: each
    for_each:
      items: "${input.people}"
      as: p
      max_items: 5
      collect: {why: "${steps.send.error.Cause}"}
      steps:
        - id: approve
          review: {of: send}
          on_approve: send
          on_reject: REJECT
        - id: send
          tool: send-email
          with: {to: [a@example.com], subject: "hi", text: "x"}
          next: NEXT
          on_error: end
        - id: stop
          fail: {error: Stopped}
`
	for _, c := range []struct {
		name, reject, next string
		ok                 bool
	}{
		{"the success ends the iteration", "stop", "end", false},
		{"a rejection ends the iteration", "end", "stop", false},
		{"only the error ends the iteration", "stop", "stop", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(strings.Replace(loop, "REJECT", c.reject, 1), "NEXT", c.next, 1)
			res := Compile("e.yaml", []byte(src), Options{})
			if res.OK() != c.ok {
				t.Fatalf("diagnostics %+v, want OK %v", res.Diagnostics, c.ok)
			}
			if !c.ok && fmt.Sprint(rules(res)) != "["+RuleUnsetBinding+"]" {
				t.Fatalf("diagnostics %+v, want [%s]", res.Diagnostics, RuleUnsetBinding)
			}
		})
	}
}
