package resolver

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Step durations the cases below add up (shared/catalog/catalog.json):
// send-email's Task waits 30+10 s, once; structured-data-fetch's 35+10 s,
// three times, after 2 and 4 s; workflow-validator's 30+10 s, twice,
// after 1 s. A review counts its timeout and reviewRetrySeconds (2714 s).
const (
	rtSendStep  = "  - id: send\n    tool: send-email\n    with: {to: [a@example.com], subject: s, text: t}\n"
	rtFetchHead = "solution: t\nversion: 1\npolicy: {fetch_hosts: [api.example.com]}\n"
	rtFetchStep = "  - id: f\n    tool: structured-data-fetch\n    with: {url: \"https://api.example.com/\"}\n"
)

// Without policy.run_timeout_seconds the run timeout is the longest path
// from the start, each step at the longest it can keep the run, plus a
// margin of a tenth, at least an hour (docs/solutions.md, "The run
// timeout").
func TestRunTimeoutDerivedFromTheLongestPath(t *testing.T) {
	for _, c := range []struct {
		name, src string
		longest   int
		path      []string
	}{
		{"a tool's Task and its retry", "solution: t\nversion: 1\nsteps:\n  - id: v\n    tool: workflow-validator\n    with: {solution: x}\n",
			2*40 + 1, []string{"v"}},
		{"a fetch's three attempts", rtFetchHead + "steps:\n" + rtFetchStep, 3*45 + 2 + 4, []string{"f"}},
		{"a retry's backoff", rtFetchHead + "steps:\n" + rtFetchStep + "    retry: {max_attempts: 4, interval_seconds: 10, backoff_rate: 3}\n",
			4*45 + 10 + 30 + 90, []string{"f"}},
		{"a review of a week", "solution: t\nversion: 1\nsteps:\n  - id: approve\n    review: {of: send, timeout_seconds: 604800}\n    on_approve: send\n" + rtSendStep,
			604800 + 2714 + 40, []string{"approve", "send"}},
		{"the longer branch of a choice", "solution: t\nversion: 1\nsteps:\n  - id: c\n    choice:\n      - when: {value: \"${input.x}\", equals: 1}\n        next: short\n    default: long\n" +
			"  - id: short\n    wait: {seconds: 100}\n  - id: long\n    wait: {seconds: 500}\n", 500, []string{"c", "long"}},
		{"an error's path", rtFetchHead + "steps:\n" + rtFetchStep + "    on_error: w\n  - id: w\n    wait: {seconds: 1000}\n",
			141 + 1000, []string{"f", "w"}},
		{"a bound wait at its input schema's maximum", "solution: t\nversion: 1\ninput: {type: object, properties: {delay: {type: integer, maximum: 7200}}}\nsteps:\n  - id: w\n    wait: {seconds: \"${input.delay}\"}\n",
			7200, []string{"w"}},
		{"a bound wait below an exclusive maximum", "solution: t\nversion: 1\ninput: {type: object, properties: {delay: {type: integer, exclusiveMaximum: 7200}}}\nsteps:\n  - id: w\n    wait: {seconds: \"${input.delay}\"}\n",
			7199, []string{"w"}},
		{"a bound wait at the tool's output schema's maximum", rtFetchHead + "steps:\n" + rtFetchStep + "    next: w\n  - id: w\n    wait: {seconds: \"${steps.f.output.status}\"}\n",
			141 + 599, []string{"f", "w"}},
		{"a for_each's rounds of max_concurrency items", "solution: t\nversion: 1\nsteps:\n  - id: each\n    for_each:\n      items: \"${input.list}\"\n      as: x\n      max_items: 5\n      max_concurrency: 2\n      steps:\n        - id: w\n          wait: {seconds: 100}\n",
			3 * 100, []string{"each"}},
		{"an item's wait at its items schema's maximum", "solution: t\nversion: 1\ninput: {type: object, properties: {list: {type: array, items: {type: object, properties: {delay: {type: integer, maximum: 60}}}}}}\n" +
			"steps:\n  - id: each\n    for_each:\n      items: \"${input.list}\"\n      as: x\n      max_items: 4\n      steps:\n        - id: w\n          wait: {seconds: \"${x.delay}\"}\n",
			4 * 60, []string{"each"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := compileString(t, c.src)
			if !res.OK() {
				t.Fatal(diagText(res))
			}
			margin := max(3600, (c.longest+9)/10)
			want := RunTimeout{Seconds: c.longest + margin, Derived: true, LongestSeconds: c.longest, MarginSeconds: margin, Path: c.path}
			if got := res.RunTimeout; got.String() != want.String() {
				t.Fatalf("run timeout %s, want %s", got, want)
			}
			var def map[string]any
			if err := json.Unmarshal(res.Definition, &def); err != nil || def["TimeoutSeconds"] != float64(want.Seconds) {
				t.Fatalf("TimeoutSeconds %v, want %d (%v)", def["TimeoutSeconds"], want.Seconds, err)
			}
			if !strings.Contains(res.Summary(), ", run timeout "+want.String()+", gate A") {
				t.Fatalf("summary %q does not give the run timeout %s", res.Summary(), want)
			}
		})
	}
}

// What the longest path cannot bound refuses the derivation, each at the
// step that causes it with what to write; the policy then bounds the run,
// and is kept as written.
func TestRunTimeoutNotDerivable(t *testing.T) {
	const loop = "solution: t\nversion: 1\nPOLICYsteps:\n  - id: poll\n    wait: {seconds: 60}\n    next: done\n  - id: done\n    choice:\n      - when: {value: \"${input.done}\", equals: true}\n        next: end\n    default: poll\n"
	for _, c := range []struct {
		name, src string
		at        int // line
		says      string
	}{
		{"a loop through next", strings.Replace(loop, "POLICY", "", 1), 4, "the loop poll → done → poll repeats as often as the run makes it"},
		{"a step that leads to itself", "solution: t\nversion: 1\nsteps:\n  - id: w\n    wait: {seconds: 1}\n    next: w\n", 4, "the loop w → w repeats"},
		{"a loop in a for_each's body", "solution: t\nversion: 1\nsteps:\n  - id: each\n    for_each:\n      items: \"${input.list}\"\n      as: x\n      max_items: 5\n      steps:\n" +
			"        - id: a\n          wait: {seconds: 1}\n          next: b\n        - id: b\n          choice:\n            - when: {value: \"${x.again}\", equals: true}\n              next: a\n          default: end\n",
			10, `the loop a → b → a in for_each "each"'s body`},
		{"a bound wait no schema bounds", "solution: t\nversion: 1\ninput: {type: object, properties: {delay: {type: integer}}}\nsteps:\n  - id: w\n    wait: {seconds: \"${input.delay}\"}\n",
			6, `wait "w" waits ${input.delay} s, which no schema bounds with a maximum`},
		{"a wait until a time", "solution: t\nversion: 1\nsteps:\n  - id: w\n    wait: {until: \"${input.at}\"}\n", 5, `wait "w" waits until ${input.at}, a time only the run knows`},
		// Under draft-07 a keyword beside $ref is ignored: the validator
		// admits {"delay": 100000}, so the maximum bounds nothing.
		{"a maximum beside $ref under draft-07", "solution: t\nversion: 1\ninput: {$schema: \"http://json-schema.org/draft-07/schema#\", type: object, definitions: {n: {type: integer}}, properties: {delay: {$ref: \"#/definitions/n\", maximum: 60}}}\nsteps:\n  - id: w\n    wait: {seconds: \"${input.delay}\"}\n",
			6, `wait "w" waits ${input.delay} s, which no schema bounds with a maximum`},
		// prefixItems holds the first items: items bounds only the others.
		{"an item's maximum under prefixItems", "solution: t\nversion: 1\ninput: {type: object, properties: {ds: {type: array, prefixItems: [{type: integer}], items: {maximum: 60}}}}\nsteps:\n  - id: each\n    for_each:\n      items: \"${input.ds}\"\n      as: d\n      max_items: 5\n      steps:\n        - id: w\n          wait: {seconds: \"${d}\"}\n",
			12, `wait "w" waits ${d} s, which no schema bounds with a maximum`},
		{"a path over a year", "solution: t\nversion: 1\nsteps:\n  - id: first\n    review: {of: send, timeout_seconds: 17280000}\n    on_approve: second\n" +
			"  - id: second\n    review: {of: send, timeout_seconds: 17280001}\n    on_approve: send\n" + rtSendStep, 7, "is over 31536000 s"},
		{"a review of a year", "solution: t\nversion: 1\nsteps:\n  - id: approve\n    review: {of: send, timeout_seconds: 31536000}\n    on_approve: send\n" + rtSendStep, 4,
			"the longest path approve → send (31538754 s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := compileString(t, c.src)
			if got := errorRules(res); !slices.Equal(got, []string{RuleRunTimeout}) {
				t.Fatalf("errors %v, want [run-timeout]\n%s", got, diagText(res))
			}
			d := res.Diagnostics[0]
			if d.Line != c.at || !strings.Contains(d.Message, c.says) || !strings.Contains(d.Message, "policy.run_timeout_seconds") {
				t.Fatalf("diagnostic %s, want line %d saying %q and naming the policy", d, c.at, c.says)
			}
		})
	}
	res := compileString(t, strings.Replace(loop, "POLICY", "policy: {run_timeout_seconds: 7200}\n", 1))
	if !res.OK() || res.RunTimeout.Seconds != 7200 || res.RunTimeout.Derived || !strings.Contains(res.Summary(), "run timeout 7200 s (policy.run_timeout_seconds)") {
		t.Fatalf("with the policy: %+v %s\n%s", res.RunTimeout, res.Summary(), diagText(res))
	}
}

// A workflow step waits for its child, whose run timeout is known where
// the child is published: offline, the derived run timeout counts only
// the child's start and warns that publishing adds the child's; with the
// publish function's lookup, it counts the child's run timeout; a child
// whose run timeout cannot be read refuses the derivation.
func TestRunTimeoutCountsTheChildsWherePublished(t *testing.T) {
	src := "solution: p\nversion: 1\ntoolset: " + parentsID + "\nsteps:\n  - id: w\n    workflow: demo-ticket\n"
	res := compileOnDemo(t, "p.yaml", src)
	if !res.OK() || !slices.Equal(res.RunTimeout.Pending, []string{"w"}) || res.RunTimeout.LongestSeconds != ChildStartSeconds ||
		len(res.Diagnostics) != 1 || res.Diagnostics[0].Rule != RuleRunTimeout || res.Diagnostics[0].Severity != SeverityWarning ||
		!strings.Contains(res.Summary(), "publishing adds the run timeouts of the children started by w") {
		t.Fatalf("offline: %+v %s\n%s", res.RunTimeout, res.Summary(), diagText(res))
	}

	const child = 86400
	var asked []string
	opts := Options{Toolsets: LockLookup(toolsetsDir)}
	opts.ChildRunTimeout = func(name string) (int, error) { asked = append(asked, name); return child, nil }
	res = Compile("p.yaml", []byte(src), opts)
	longest := ChildStartSeconds + child
	if !res.OK() || len(res.Diagnostics) != 0 || !slices.Equal(asked, []string{"demo-ticket"}) ||
		res.RunTimeout.LongestSeconds != longest || res.RunTimeout.Seconds != longest+runTimeoutMargin(longest) || res.RunTimeout.Pending != nil {
		t.Fatalf("with the child's %d s: %+v asked %v\n%s", child, res.RunTimeout, asked, diagText(res))
	}
	if !strings.Contains(string(res.Definition), fmt.Sprintf(`"TimeoutSeconds": %d`, res.RunTimeout.Seconds)) {
		t.Fatalf("the definition's TimeoutSeconds is not the derived %d s", res.RunTimeout.Seconds)
	}

	opts.ChildRunTimeout = func(string) (int, error) { return MaxRunTimeout, nil }
	if res = Compile("p.yaml", []byte(src), opts); !slices.Equal(errorRules(res), []string{RuleRunTimeout}) || !strings.Contains(res.Diagnostics[0].Message, `workflow "w" up to 31539621 s, its child's run timeout`) {
		t.Fatalf("a child of a year: %s", diagText(res))
	}
	opts.ChildRunTimeout = func(string) (int, error) {
		return 0, errors.New("its version 3 was published before run timeouts were recorded")
	}
	res = Compile("p.yaml", []byte(src), opts)
	if got := errorRules(res); !slices.Equal(got, []string{RuleRunTimeout}) || !strings.Contains(res.Diagnostics[0].Message, `step "w" starts workflow "demo-ticket", whose run timeout cannot be read (its version 3 was published before`) {
		t.Fatalf("errors %v, want [run-timeout] naming the unreadable child\n%s", got, diagText(res))
	}
	opts.ChildRunTimeout = func(string) (int, error) { return child, nil }
	res = Compile("p.yaml", []byte(strings.Replace(src, "steps:", "policy: {run_timeout_seconds: 86400}\nsteps:", 1)), opts)
	if !res.OK() || res.RunTimeout.Seconds != 86400 || len(res.Diagnostics) != 1 || res.Diagnostics[0].Severity != SeverityWarning ||
		!strings.Contains(res.Diagnostics[0].Message, "a run that times out leaves its child running") {
		t.Fatalf("with a policy its child may outlast: %+v\n%s", res.RunTimeout, diagText(res))
	}
	opts.ChildRunTimeout = func(string) (int, error) { return 3600, nil }
	res = Compile("p.yaml", []byte(strings.Replace(src, "steps:", "policy: {run_timeout_seconds: 86400}\nsteps:", 1)), opts)
	if !res.OK() || res.RunTimeout.Seconds != 86400 || len(res.Diagnostics) != 0 {
		t.Fatalf("with a policy over its child's: %+v\n%s", res.RunTimeout, diagText(res))
	}
}

// Offline, a workflow step inside a for_each is said to be counted once
// per round of the for_each where the Solution is published, so that the
// run timeout publishing derives is no surprise.
func TestRunTimeoutWarnsThatAChildInAForEachCountsPerRound(t *testing.T) {
	src := "solution: p\nversion: 1\ntoolset: " + parentsID + "\nsteps:\n  - id: each\n    for_each:\n      items: \"${input.list}\"\n      as: x\n" +
		"      max_items: 5\n      max_concurrency: 2\n      steps:\n        - id: w\n          workflow: demo-ticket\n"
	res := compileOnDemo(t, "p.yaml", src)
	if !res.OK() || len(res.Diagnostics) != 1 || res.Diagnostics[0].Severity != SeverityWarning ||
		!strings.Contains(res.Diagnostics[0].Message, `it counts the child's run timeout of w, in for_each "each", once per round: 3 times (⌈max_items 5 / max_concurrency 2⌉)`) {
		t.Fatalf("offline:\n%s", diagText(res))
	}
	const child = 3600
	res = Compile("p.yaml", []byte(src), Options{Toolsets: LockLookup(toolsetsDir), ChildRunTimeout: func(string) (int, error) { return child, nil }})
	if want := 3 * (ChildStartSeconds + child); !res.OK() || res.RunTimeout.LongestSeconds != want {
		t.Fatalf("published: longest %d s, want %d\n%s", res.RunTimeout.LongestSeconds, want, diagText(res))
	}
}

// A duration past a year that the sums saturate is written "more than a
// year", never as the saturated number, nor its margin.
func TestRunTimeoutWritesASaturatedDurationInWords(t *testing.T) {
	src := "solution: t\nversion: 1\ninput: {type: object, properties: {delay: {type: integer, maximum: 1e15}}}\nsteps:\n  - id: w\n    wait: {seconds: \"${input.delay}\"}\n"
	res := compileString(t, src)
	if got := errorRules(res); !slices.Equal(got, []string{RuleRunTimeout}) {
		t.Fatalf("errors %v\n%s", got, diagText(res))
	}
	msg := res.Diagnostics[0].Message
	if !strings.Contains(msg, `(more than a year; wait "w" up to more than a year), and a margin of more than a year`) || strings.Contains(msg, fmt.Sprint(overYear)) || strings.Contains(msg, fmt.Sprint(overYear/10)) {
		t.Fatalf("message %q", msg)
	}
}
