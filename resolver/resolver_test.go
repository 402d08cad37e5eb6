package resolver

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func compileString(t *testing.T, src string) *Result {
	t.Helper()
	return Compile("t.yaml", []byte(src), Options{})
}

// rules returns "rule@line" for each error diagnostic.
func errorRules(res *Result) []string {
	var out []string
	for _, d := range res.Diagnostics {
		if d.Severity == SeverityError {
			out = append(out, d.Rule)
		}
	}
	return out
}

func TestCheckRules(t *testing.T) {
	const head = "solution: t\nversion: 1\npolicy: {fetch_hosts: [api.example.com]}\nsteps:\n"
	cases := []struct {
		name  string
		steps string
		want  []string // error rules, in order
	}{
		{"clean pass", "  - id: a\n    pass: {x: 1}\n", nil},
		{"review of a pass step", "  - id: r\n    review: {of: a}\n    on_approve: a\n  - id: a\n    pass: {}\n", []string{RuleTargetKind}},
		{"review timeout to a step", "  - id: r\n    review: {of: s}\n    on_approve: s\n    on_timeout: late\n  - id: s\n    tool: send-email\n    with: {to: [a@example.com], subject: s, text: t}\n  - id: late\n    fail: {error: Late}\n", nil},
		{"review timeout to nowhere", "  - id: r\n    review: {of: s}\n    on_approve: s\n    on_timeout: late\n  - id: s\n    tool: send-email\n    with: {to: [a@example.com], subject: s, text: t}\n", []string{RuleUnknownTarget}},
		{"review timeout to its tool", "  - id: r\n    review: {of: s}\n    on_approve: s\n    on_timeout: s\n  - id: s\n    tool: send-email\n    with: {to: [a@example.com], subject: s, text: t}\n", []string{RuleReviewBefore}},
		{"on_timeout on a tool step", "  - id: f\n    tool: workflow-validator\n    with: {solution: x}\n    on_timeout: end\n", []string{RuleUnknownField}},
		{"review without on_approve", "  - id: r\n    review: {of: s}\n  - id: s\n    tool: send-email\n    with: {to: [a@example.com], subject: s, text: t}\n", []string{RuleMissingField}},
		{"start at a step left out for its kind", "  - id: a\n    pass: {}\n  - id: b\n    delay: {seconds: 1}\n    next: a\nstart: b\n", []string{RuleUnknownField}},
		{"two kinds", "  - id: a\n    pass: {}\n    succeed: {}\n", []string{RuleInvalidValue}},
		{"reserved id", "  - id: end\n    pass: {}\n", []string{RuleInvalidValue}},
		{"bad id", "  - id: Fetch\n    pass: {}\n", []string{RuleInvalidValue}},
		{"binding to unknown step", "  - id: a\n    pass: {x: \"${steps.nope.v}\"}\n", []string{RuleBinding}},
		{"tool result without output", "  - id: f\n    tool: structured-data-fetch\n    with: {url: \"https://api.example.com/\"}\n    next: p\n  - id: p\n    pass: {x: \"${steps.f.data}\"}\n", []string{RuleBinding}},
		{"binding syntax", "  - id: a\n    pass: {x: \"${input.a-b}\"}\n", []string{RuleBinding}},
		{"unclosed binding", "  - id: a\n    pass: {x: \"${input.a\"}\n", []string{RuleBinding}},
		{"key ending in .$", "  - id: a\n    pass: {\"x.$\": \"$.input\"}\n", []string{RuleBinding}},
		{"self binding", "  - id: a\n    pass: {x: \"${steps.a.x}\"}\n", []string{RuleUnsetBinding}},
		{"choice value literal", "  - id: c\n    choice:\n      - when: {value: 3, equals: 3}\n        next: end\n", []string{RuleBinding}},
		{"choice two operators", "  - id: c\n    choice:\n      - when: {value: \"${input.x}\", equals: 3, less_than: 2}\n        next: end\n", []string{RuleInvalidValue}},
		{"tolerate on idempotent tool", "  - id: f\n    tool: structured-data-fetch\n    with: {url: \"https://api.example.com/\"}\n    tolerate_duplicates: true\n", nil},
		{"send retried with consent", "  - id: r\n    review: {of: s}\n    on_approve: s\n  - id: s\n    tool: send-email\n    with: {to: [a@example.com], subject: s, text: t}\n    retry: {max_attempts: 2}\n    tolerate_duplicates: true\n", nil},
		{"backoff below 1", "  - id: f\n    tool: structured-data-fetch\n    with: {url: \"https://api.example.com/\"}\n    retry: {backoff_rate: 0.5}\n", []string{RuleInvalidValue}},
		{"review timeout zero", "  - id: r\n    review: {of: s, timeout_seconds: 0}\n    on_approve: s\n  - id: s\n    tool: send-email\n    with: {to: [a@example.com], subject: s, text: t}\n", []string{RuleQuota}},
		{"reviewer not an ARN", "  - id: r\n    review: {of: s, reviewers: [alice]}\n    on_approve: s\n  - id: s\n    tool: send-email\n    with: {to: [a@example.com], subject: s, text: t}\n", []string{RuleInvalidValue}},
		{"fail with States error", "  - id: f\n    fail: {error: States.Timeout}\n", []string{RuleInvalidValue}},
		{"fail error with spaces", "  - id: f\n    fail: {error: Order rejected by the buyer}\n", nil},
		{"fail error of 256 characters", "  - id: f\n    fail: {error: " + strings.Repeat("é", 256) + "}\n", nil},
		{"fail error of 257 characters", "  - id: f\n    fail: {error: " + strings.Repeat("e", 257) + "}\n", []string{RuleInvalidValue}},
		{"fail error empty", "  - id: f\n    fail: {error: \"\"}\n", []string{RuleInvalidValue}},
		{"fail error with a line break", "  - id: f\n    fail: {error: \"a\\nb\"}\n", []string{RuleInvalidValue}},
		{"fail error with a C1 control", "  - id: f\n    fail: {error: \"a\\u0085b\"}\n", []string{RuleInvalidValue}},
		{"fail error with a placeholder", "  - id: f\n    fail: {error: \"${FunctionSendEmail}\"}\n", []string{RuleInvalidValue}},
		{"fail cause of 32768 characters", "  - id: f\n    fail: {error: E, cause: " + strings.Repeat("é", 32768) + "}\n", nil},
		{"fail cause of 32769 characters", "  - id: f\n    fail: {error: E, cause: " + strings.Repeat("c", 32769) + "}\n", []string{RuleInvalidValue}},
		{"url with binding after host", "  - id: f\n    tool: structured-data-fetch\n    with: {url: \"https://evil.example.net/${input.p}\"}\n", []string{RuleFetchHost}},
		{"url fully bound", "  - id: f\n    tool: structured-data-fetch\n    with: {url: \"${input.url}\"}\n", nil},
		{"review_before adds a tool", "  - id: f\n    tool: workflow-validator\n    with: {solution: x}\n", nil},
		{"anchors", "  - &a {id: a, pass: {}}\n  - *a\n", []string{RuleSyntax}},
		{"empty tool", "  - id: s\n    tool: \"\"\n", []string{RuleUnknownTool}},
		{"binding in a key", "  - id: a\n    pass: {\"${input.x}\": 1}\n", []string{RuleBinding}},
		{"backslash in a template", "  - id: a\n    pass: {x: 'a\\b ${input.x}'}\n", []string{RuleBinding}},
		{"yaml 1.1 octal", "  - id: a\n    pass: {x: 010}\n", []string{RuleSyntax}},
		{"deploy placeholder literal", "  - id: a\n    pass: {x: \"$${FunctionSendEmail}\"}\n", []string{RuleBinding}},
		{"deploy placeholder in a fail cause", "  - id: f\n    fail: {error: E, cause: \"${FunctionStructuredDataFetch}\"}\n", []string{RuleBinding}},
		{"deploy placeholder in a reviewer", "  - id: r\n    review: {of: s, reviewers: [\"arn:aws:iam::123456789012:role/${FunctionSendEmail}\"]}\n    on_approve: s\n  - id: s\n    tool: send-email\n    with: {to: [a@example.com], subject: s, text: t}\n", []string{RuleBinding}},
		{"reviewer with an account wildcard", reviewerStep("arn:aws:sts::*:assumed-role/editors/*"), []string{RuleReviewerPattern}},
		{"reviewer with a wildcard in the account", reviewerStep("arn:aws:iam::12345678901?:user/alice"), []string{RuleReviewerPattern}},
		{"reviewer with a wildcard partition", reviewerStep("arn:*:iam::123456789012:user/alice"), []string{RuleReviewerPattern}},
		{"reviewer matching everything", reviewerStep("arn:*"), []string{RuleReviewerPattern}},
		{"reviewer of an S3 bucket", reviewerStep("arn:aws:s3:::reviewers"), []string{RuleReviewerPattern}},
		{"reviewer naming its account", reviewerStep("arn:aws:sts::123456789012:assumed-role/editors/*"), nil},
		{"reviewer of any user of one account", reviewerStep("arn:aws:iam::123456789012:*"), nil},
		{"deep nesting", "  - id: a\n    pass: {x: " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "}\n", []string{RuleSyntax}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := compileString(t, head+c.steps)
			if got := errorRules(res); !slices.Equal(got, c.want) {
				t.Fatalf("errors %v, want %v\n%v", got, c.want, res.Diagnostics)
			}
		})
	}
}

// policy.review_before puts a tool on the review list: the toolset pins it
// as review_required, and Gate A applies to it.
func TestReviewBeforeAddsToGate(t *testing.T) {
	src := "solution: t\nversion: 1\npolicy: {review_before: [workflow-validator]}\nsteps:\n  - id: v\n    tool: workflow-validator\n    with: {solution: x}\n"
	res := compileString(t, src)
	if got := errorRules(res); !slices.Equal(got, []string{RuleReviewBefore}) {
		t.Fatalf("errors %v", res.Diagnostics)
	}
	ok := compileString(t, strings.Replace(src, "steps:\n", "steps:\n  - id: r\n    review: {of: v}\n    on_approve: v\n", 1))
	if !ok.OK() {
		t.Fatal(ok.Diagnostics)
	}
	if !ok.Toolset.Tools["workflow-validator"].ReviewRequired {
		t.Fatal("toolset does not pin review_required")
	}
	var def map[string]any
	json.Unmarshal(ok.Definition, &def)
	payload := def["States"].(map[string]any)["v"].(map[string]any)["Parameters"].(map[string]any)["Payload"].(map[string]any)
	if payload["approval.$"] != "$.reviews.v" {
		t.Fatalf("gated tool payload has no approval: %v", payload)
	}
}

// A review of T uses every binding of T: what T sends must be known when
// the reviewer looks at it.
func TestReviewUsesBindingsOfItsTool(t *testing.T) {
	src := `solution: t
version: 1
policy: {fetch_hosts: [api.example.com]}
steps:
  - id: approve
    review: {of: send}
    on_approve: fetch
  - id: fetch
    tool: structured-data-fetch
    with: {url: "https://api.example.com/"}
    next: send
  - id: send
    tool: send-email
    with: {to: [a@example.com], subject: s, text: "${steps.fetch.output.data}"}
`
	res := compileString(t, src)
	if got := errorRules(res); !slices.Equal(got, []string{RuleUnsetBinding}) {
		t.Fatalf("errors %v", res.Diagnostics)
	}
	if d := res.Diagnostics[0]; d.Line != 5 || !strings.Contains(d.Message, `review "approve"`) {
		t.Fatalf("diagnostic %v", d)
	}
}

// Bindings compile to JSONPath, States.Format and States.Array.
func TestBindingsCompile(t *testing.T) {
	src := `solution: t
version: 1
input: {type: object}
steps:
  - id: a
    pass:
      whole: "${input.list[2].name}"
      text: "Hi ${input.name}, {x} 'q' $${kept}"
      literal: "$${input.x}"
      list: ["${input.a}", 1, true, null, "x-${input.b}", [1, "${input.c}"], {k: v}]
      plain: [1, {k: v}]
      nested: {deep: "${input.d}"}
`
	res := compileString(t, src)
	if !res.OK() {
		t.Fatal(res.Diagnostics)
	}
	var def map[string]any
	json.Unmarshal(res.Definition, &def)
	got := def["States"].(map[string]any)["a"].(map[string]any)["Parameters"].(map[string]any)
	want := map[string]any{
		"whole.$": "$.input.list[2].name",
		"text.$":  `States.Format('Hi {}, \{x\} \'q\' $\{kept\}', $.input.name)`,
		"literal": "${input.x}",
		"list.$":  `States.Array($.input.a, 1, true, null, States.Format('x-{}', $.input.b), States.Array(1, $.input.c), States.StringToJson('\{"k":"v"\}'))`,
		"plain":   []any{float64(1), map[string]any{"k": "v"}},
		"nested":  map[string]any{"deep.$": "$.input.d"},
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Fatalf("Parameters\n got %s\nwant %s", gj, wj)
	}
	validateASL(t, res.Definition)
}

// The same Solution in JSON and in YAML compiles to the same definition;
// the toolset id depends only on the tools, schemas and hosts.
func TestJSONEqualsYAMLAndToolsetIsContentAddressed(t *testing.T) {
	yamlSrc := "solution: t\nversion: 1\nsteps:\n  - id: r\n    review: {of: s}\n    on_approve: s\n  - id: s\n    tool: send-email\n    with: {to: [a@example.com], subject: s, text: t}\n"
	jsonSrc := `{"solution":"t","version":1,"steps":[{"id":"r","review":{"of":"s"},"on_approve":"s"},{"id":"s","tool":"send-email","with":{"to":["a@example.com"],"subject":"s","text":"t"}}]}`
	a, b := compileString(t, yamlSrc), Compile("t.json", []byte(jsonSrc), Options{})
	if !a.OK() || !b.OK() {
		t.Fatal(a.Diagnostics, b.Diagnostics)
	}
	if string(a.Definition) != string(b.Definition) {
		t.Fatal("YAML and JSON definitions differ")
	}
	// Another Solution, other step order, same tool: same toolset.
	other := compileString(t, "solution: other\nversion: 7\nstart: approve_it\nsteps:\n  - id: mail\n    tool: send-email\n    with: {to: [b@example.com], subject: x, html: y}\n  - id: approve_it\n    review: {of: mail}\n    on_approve: mail\n")
	if !other.OK() {
		t.Fatal(other.Diagnostics)
	}
	if other.Toolset.ID != a.Toolset.ID {
		t.Fatalf("same tools gave toolsets %s and %s", other.Toolset.ID, a.Toolset.ID)
	}
}

// Every retry of one call carries the same key: the counter state is
// outside the retried Task; a re-entered step passes the counter again.
func TestCounterOutsideRetriedTask(t *testing.T) {
	src, _ := os.ReadFile(filepath.Join(solutionsDir, "loop-per-item.yaml"))
	res := Compile("loop.yaml", src, Options{})
	if !res.OK() {
		t.Fatal(res.Diagnostics)
	}
	var def struct {
		States map[string]map[string]any
	}
	json.Unmarshal(res.Definition, &def)
	for name, st := range def.States {
		if st["Type"] != "Task" || st["Resource"] != "arn:aws:states:::lambda:invoke" || name == stateStarter || name == stateStarterChild {
			continue // the Starter Tasks call no tool
		}
		if seq := def.States[name+"-seq"]; seq == nil || seq["Next"] != name {
			t.Fatalf("Task %s has no counter state before it", name)
		}
		for other, o := range def.States {
			if o["Next"] == name && other != name+"-seq" {
				t.Fatalf("state %s enters Task %s without its counter", other, name)
			}
		}
		if _, ok := st["TimeoutSeconds"]; !ok {
			t.Fatalf("Task %s has no TimeoutSeconds", name)
		}
	}
	if def.States["review_item"]["Catch"].([]any)[0].(map[string]any)["Next"] != "next_item-seq" {
		t.Fatal("on_reject does not re-enter the fetch through its counter")
	}
}

func TestQuotaStateNameAndSize(t *testing.T) {
	// Six branches of 190 000-byte literals: each path's state fits in
	// 256 KiB, the definition does not fit in 1 MiB.
	var b strings.Builder
	b.WriteString("solution: t\nversion: 1\nsteps:\n  - id: route\n    choice:\n")
	for i := range 6 {
		fmt.Fprintf(&b, "      - when: {value: \"${input.n}\", equals: %d}\n        next: p%d\n", i, i)
	}
	b.WriteString("    default: end\n")
	for i := range 6 {
		fmt.Fprintf(&b, "  - id: p%d\n    pass:\n      big: \"%s\"\n", i, strings.Repeat("x", 190_000))
	}
	res := compileString(t, b.String())
	if got := errorRules(res); !slices.Equal(got, []string{RuleQuota}) {
		t.Fatalf("errors %v, want the definition's quota alone", got)
	}
	// One such literal of 1 MiB could never fit a state.
	res = compileString(t, "solution: t\nversion: 1\nsteps:\n  - id: a\n    pass:\n      big: \""+strings.Repeat("x", MaxDefinitionBytes)+"\"\n")
	if got := errorRules(res); !slices.Equal(got, []string{RuleStateSize}) {
		t.Fatalf("a 1 MiB literal: errors %v, want the state's size", got)
	}
}

// policy.run_timeout_seconds bounds the whole execution (the state
// machine's TimeoutSeconds; without it, derived from the longest path; at
// most a year), and a review must time out before the run does.
func TestRunTimeout(t *testing.T) {
	review := "  - id: r\n    review: {of: s, timeout_seconds: REVIEW}\n    on_approve: s\n  - id: s\n    tool: send-email\n    with: {to: [a@example.com], subject: s, text: t}\n"
	for _, c := range []struct {
		name, policy, review string
		want                 []string
		timeout              float64
	}{
		// 86400 s, the review's retries (2714 s) and the send (40 s), plus
		// a tenth.
		{"derived from a day's review", "", "86400", nil, 89154 + 8916},
		{"derived from a week's review", "", "604800", nil, 607554 + 60756},
		{"a review just below the run", "{run_timeout_seconds: 3601}", "3600", nil, 3601},
		{"a review as long as the run", "{run_timeout_seconds: 3600}", "3600", []string{RuleRunTimeout}, 0},
		{"a review longer than the run", "{run_timeout_seconds: 604800}", "604801", []string{RuleRunTimeout}, 0},
		{"a review of a year, derived", "", "31536000", []string{RuleRunTimeout}, 0},
		{"a run over a year", "{run_timeout_seconds: 31536001}", "60", []string{RuleInvalidValue}, 0},
		{"a run of zero", "{run_timeout_seconds: 0}", "60", []string{RuleInvalidValue}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := "solution: t\nversion: 1\n"
			if c.policy != "" {
				src += "policy: " + c.policy + "\n"
			}
			res := compileString(t, src+"steps:\n"+strings.Replace(review, "REVIEW", c.review, 1))
			if got := errorRules(res); !slices.Equal(got, c.want) {
				t.Fatalf("errors %v, want %v\n%v", got, c.want, res.Diagnostics)
			}
			if c.want != nil {
				return
			}
			var def map[string]any
			if err := json.Unmarshal(res.Definition, &def); err != nil || def["TimeoutSeconds"] != c.timeout {
				t.Fatalf("TimeoutSeconds %v, want %v (%v)", def["TimeoutSeconds"], c.timeout, err)
			}
		})
	}
}

// A Solution's name is at most 50 characters without "_": published as
// "toolgate-<stage>_<solution>" with a stage of up to 20, it fits Step
// Functions' 80-character names, and no stage's names match another's.
func TestSolutionNameFitsTheStateMachineName(t *testing.T) {
	steps := "version: 1\nsteps:\n  - id: a\n    pass: {x: 1}\n"
	for name, ok := range map[string]bool{
		strings.Repeat("a", 50): true,
		strings.Repeat("a", 51): false,
		"a_b":                   false,
	} {
		res := compileString(t, "solution: "+name+"\n"+steps)
		if got := errorRules(res); (len(got) == 0) != ok {
			t.Errorf("solution %q: errors %v, want ok %v", name, got, ok)
		}
	}
}

// A tool step's timeout_seconds bounds the tool (the envelope carries it to
// the dispatcher), never the Task: the Task waits for the function's
// timeout and its Init phase, so it cannot time out while the tool may
// still send the e-mail.
func TestStepTimeoutBoundsTheToolNotTheTask(t *testing.T) {
	res := compileString(t, `solution: short-send
version: 1
steps:
  - id: approve
    review: {of: send}
    on_approve: send
  - id: send
    tool: send-email
    timeout_seconds: 5
    with: {to: [team@example.com], subject: s, text: t}
    on_error: end
`)
	if !res.OK() {
		t.Fatalf("diagnostics: %v", res.Diagnostics)
	}
	var def struct {
		States map[string]struct {
			TimeoutSeconds int
			Parameters     struct{ Payload map[string]any }
		}
	}
	if err := json.Unmarshal(res.Definition, &def); err != nil {
		t.Fatal(err)
	}
	send := def.States["send"]
	if send.TimeoutSeconds != 30+10 {
		t.Errorf("the send Task's TimeoutSeconds is %d, want 40: send-email's function timeout (30 s) plus Init (10 s)", send.TimeoutSeconds)
	}
	if got := send.Parameters.Payload["timeout_seconds"]; got != float64(5) {
		t.Errorf("the envelope's timeout_seconds is %v, want 5", got)
	}
	res = compileString(t, `solution: short-send
version: 1
steps:
  - id: approve
    review: {of: send}
    on_approve: send
  - id: send
    tool: send-email
    with: {to: [team@example.com], subject: s, text: t}
    on_error: end
`)
	if err := json.Unmarshal(res.Definition, &def); err != nil {
		t.Fatal(err)
	}
	if _, ok := def.States["send"].Parameters.Payload["timeout_seconds"]; ok || def.States["send"].TimeoutSeconds != 40 {
		t.Errorf("without timeout_seconds: envelope %v, Task timeout %d; want no member and 40", def.States["send"].Parameters.Payload, def.States["send"].TimeoutSeconds)
	}
}

// reviewerStep is a review step with one reviewer pattern, before the
// send-email step it reviews.
func reviewerStep(pattern string) string {
	return "  - id: r\n    review: {of: s, reviewers: [\"" + pattern + "\"]}\n    on_approve: s\n  - id: s\n    tool: send-email\n    with: {to: [a@example.com], subject: s, text: t}\n"
}

// A file with more errors than MaxDiagnostics lists MaxDiagnostics-1 of
// them, errors before warnings, and a last [too-many] error counting the
// rest, so that the answer stays bounded and the file stays refused.
func TestDiagnosticsCappedErrorsFirst(t *testing.T) {
	var b strings.Builder
	b.WriteString("solution: many\nversion: 1\nsteps:\n")
	const n = MaxDiagnostics + 50
	for i := range n {
		// Each step is unreachable (a warning) but the first, and names an
		// unknown target (an error).
		fmt.Fprintf(&b, "  - id: s%d\n    pass: {}\n    next: nowhere%d\n", i, i)
	}
	res := Compile("many.yaml", []byte(b.String()), Options{})
	if len(res.Diagnostics) != MaxDiagnostics {
		t.Fatalf("%d diagnostics, want %d", len(res.Diagnostics), MaxDiagnostics)
	}
	last := res.Diagnostics[MaxDiagnostics-1]
	if last.Rule != RuleTooMany || last.Severity != SeverityError || res.OK() {
		t.Fatalf("last diagnostic %s, want a [too-many] error", last)
	}
	for _, d := range res.Diagnostics[:MaxDiagnostics-1] {
		if d.Severity != SeverityError {
			t.Fatalf("a warning listed while errors were left out: %s", d)
		}
	}
	if !strings.Contains(last.Message, fmt.Sprintf("%d more error(s)", n-(MaxDiagnostics-1))) {
		t.Fatalf("last diagnostic %s does not count the %d errors left out", last, n-(MaxDiagnostics-1))
	}
	if want := (Counts{Errors: n, Warnings: n - 1}); res.Counts != want {
		t.Fatalf("counts %+v, want %+v: the listed ones and those [too-many] counts", res.Counts, want)
	}
	if want := fmt.Sprintf("many.yaml: refused (%d errors, %d warnings); first: ", n, n-1); !strings.HasPrefix(res.Summary(), want) {
		t.Fatalf("summary %q, want it to start %q", res.Summary(), want)
	}
}

// Warnings past MaxDiagnostics are cut after [invisible] ones: a flood of
// other warnings does not hide a line holding text a reader cannot see.
func TestDiagnosticsCappedKeepInvisibleWarnings(t *testing.T) {
	var b strings.Builder
	b.WriteString("solution: many\nversion: 1\nsteps:\n  - id: s0\n    pass: {}\n")
	const n = MaxDiagnostics + 50
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - id: s%d\n    pass: {}\n", i) // unreachable: a warning
	}
	b.WriteString("  - id: last\n    pass: {note: \"pay \u202etnuocca\"}\n")
	res := Compile("many.yaml", []byte(b.String()), Options{})
	if !res.OK() || len(res.Diagnostics) != MaxDiagnostics {
		t.Fatalf("OK %v, %d diagnostics, want no error and %d", res.OK(), len(res.Diagnostics), MaxDiagnostics)
	}
	listed := false
	for _, d := range res.Diagnostics {
		listed = listed || d.Rule == RuleInvisible
	}
	if !listed {
		t.Fatalf("the [invisible] warning is left out; the last diagnostic: %s", res.Diagnostics[MaxDiagnostics-1])
	}
	if want := (Counts{Warnings: n + 2}); res.Counts != want {
		t.Fatalf("counts %+v, want %+v", res.Counts, want)
	}
}

// The summary of a Solution with warnings and no error says how many
// warnings there are; one with none says nothing of them.
func TestSummaryCountsWarnings(t *testing.T) {
	src := "solution: w\nversion: 1\nsteps:\n  - id: a\n    pass: {}\n    next: end\n  - id: b\n    pass: {}\n  - id: c\n    pass: {}\n"
	res := Compile("w.yaml", []byte(src), Options{})
	if !res.OK() || res.Counts != (Counts{Warnings: 2}) || !strings.HasSuffix(res.Summary(), ", 2 warnings") {
		t.Fatalf("OK %v, counts %+v, summary %q: want it to end \", 2 warnings\"\n%v", res.OK(), res.Counts, res.Summary(), res.Diagnostics)
	}
	res = Compile("w.yaml", []byte(src[:strings.Index(src, "    next: end")]), Options{})
	if !res.OK() || len(res.Diagnostics) != 0 || strings.Contains(res.Summary(), "warning") {
		t.Fatalf("a clean Solution's summary %q", res.Summary())
	}
}
