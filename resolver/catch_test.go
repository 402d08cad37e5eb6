package resolver

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// catcher is one Catcher or Retrier of a compiled state.
type catcher struct {
	ErrorEquals []string
	Next        string
}

func statesOf(t *testing.T, res *Result) map[string]struct {
	Catch []catcher
	Retry []catcher
	Next  string
} {
	t.Helper()
	if !res.OK() {
		t.Fatalf("diagnostics: %s", diagText(res))
	}
	var def struct {
		States map[string]struct {
			Catch []catcher
			Retry []catcher
			Next  string
		}
	}
	if err := json.Unmarshal(res.Definition, &def); err != nil {
		t.Fatal(err)
	}
	return def.States
}

const fetchHead = "solution: t\nversion: 1\npolicy: {fetch_hosts: [api.example.com]}\nsteps:\n  - id: f\n    tool: structured-data-fetch\n    with: {url: \"https://api.example.com/\"}\n"

// on_error entries compile to Catchers in order, the last States.ALL to
// the default entry, or to the step's Fail state without one.
func TestCatchByCodeCompilesInOrder(t *testing.T) {
	for _, c := range []struct {
		name, onError string
		want          []catcher
	}{
		{"a step id", "    on_error: a\n", []catcher{{[]string{"States.ALL"}, "a"}}},
		{"entries and a default", "    on_error:\n      - errors: [TOOL_TIMEOUT, States.Timeout]\n        next: a\n      - errors: [States.TaskFailed]\n        next: b\n      - next: end\n",
			[]catcher{{[]string{"TOOL_TIMEOUT", "States.Timeout"}, "a"}, {[]string{"States.TaskFailed"}, "b"}, {[]string{"States.ALL"}, "End"}}},
		{"entries without a default", "    on_error:\n      - errors: [Lambda.Unknown]\n        next: a\n",
			[]catcher{{[]string{"Lambda.Unknown"}, "a"}, {[]string{"States.ALL"}, "f-failed"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := fetchHead + c.onError + "  - id: a\n    fail: {error: A}\n  - id: b\n    fail: {error: B}\n"
			got := statesOf(t, compileString(t, src))["f"].Catch
			if !slices.EqualFunc(got, c.want, func(a, b catcher) bool { return slices.Equal(a.ErrorEquals, b.ErrorEquals) && a.Next == b.Next }) {
				t.Fatalf("Catch %v, want %v", got, c.want)
			}
		})
	}
}

// retry.errors narrows the Retrier's errors, in the default order.
func TestRetryErrorsNarrow(t *testing.T) {
	src := fetchHead + "    retry: {max_attempts: 3, errors: [Lambda.ServiceException, TOOL_RATE_LIMITED]}\n"
	got := statesOf(t, compileString(t, src))["f"].Retry
	if len(got) != 1 || !slices.Equal(got[0].ErrorEquals, []string{"TOOL_RATE_LIMITED", "Lambda.ServiceException"}) {
		t.Fatalf("Retry %v", got)
	}
	for _, c := range []struct{ errors, want string }{
		{"[TOOL_INPUT_INVALID]", "which is not retried"},
		{"[States.ALL]", "which is not retried"},
		{"[TOOL_RATE_LIMITD]", `did you mean "TOOL_RATE_LIMITED"?`},
		{"[TOOL_TIMEOUT, TOOL_TIMEOUT]", "twice"},
		{"[]", "retry.errors is empty"},
	} {
		res := compileString(t, fetchHead+"    retry: {max_attempts: 3, errors: "+c.errors+"}\n")
		if res.OK() || !strings.Contains(diagText(res), c.want) {
			t.Errorf("retry.errors %s: diagnostics\n%s\nwant %q", c.errors, diagText(res), c.want)
		}
	}
}

// A code the step cannot raise never matches: it is refused, with the
// nearest name when it looks misspelled, as is a code an earlier entry
// takes.
func TestCatchCodesTheStepCannotRaise(t *testing.T) {
	entry := func(codes string) string {
		return "    on_error:\n      - errors: " + codes + "\n        next: a\n      - next: a\n  - id: a\n    fail: {error: A}\n"
	}
	for _, c := range []struct{ codes, want string }{
		{"[TOOL_TIMEOUTS]", `did you mean "TOOL_TIMEOUT"?`},
		{"[tool_timeout]", `did you mean "TOOL_TIMEOUT"?`},
		{"[CALL_PARKED]", "only an MCP tool's call, or an http call of a toolset whose host entries declare auth, is parked"},
		{"[States.ALL]", "the last entry, written without errors"},
		{"[States.DataLimitExceeded]", "no Catcher catches it"},
		{"[States.HeartbeatTimeout]", "no heartbeats"},
		{"[TOOLGATE_WORKFLOW_FAILED]", "never raises"},
		{"[StepFunctions.ExecutionLimitExceededException]", "never raises"},
		{"[Lambda.Unknown, Lambda.Unknown]", "listed twice"},
		{"[States.TaskFailed]\n        next: a\n      - errors: [TOOL_TIMEOUT]", "catches States.TaskFailed"},
		{"[]", "errors is empty"},
		{"TOOL_TIMEOUT", "must be a list of strings"},
	} {
		res := compileString(t, fetchHead+entry(c.codes))
		if res.OK() || !strings.Contains(diagText(res), c.want) {
			t.Errorf("errors %s: diagnostics\n%s\nwant %q", c.codes, diagText(res), c.want)
		}
	}
	for _, ok := range []string{"[States.TaskFailed, States.Timeout]", "[TOOL_INTERNAL, Lambda.TooManyRequestsException, Sandbox.Timedout]", "[States.Permissions, States.ParameterPathFailure]",
		// A call reconciled as applied without its result (docs/fork.md,
		// "Reconciling"): any tool step may raise it.
		"[CALL_RECONCILED_NO_RESULT]"} {
		if res := compileString(t, fetchHead+entry(ok)); !res.OK() {
			t.Errorf("errors %s: diagnostics\n%s", ok, diagText(res))
		}
	}
}

// Each entry is an error edge: Gate A and the no-fallback check see them
// all, and the no-fallback diagnostic points at the entry's target.
func TestCatchEntriesAreErrorEdges(t *testing.T) {
	src := fetchHead + "    on_error:\n      - errors: [TOOL_TIMEOUT]\n        next: stop\n      - errors: [TOOL_INTERNAL]\n        next: mail\n" +
		"  - id: stop\n    fail: {error: S}\n  - id: mail\n    tool: workflow-validator\n    with: {solution: x}\n"
	res := compileString(t, src)
	var found bool
	for _, d := range res.Diagnostics {
		if d.Rule == RuleNoFallback {
			found = true
			if d.Line != 12 || !strings.Contains(d.Message, "f → mail") {
				t.Fatalf("no-fallback at %d:%d: %s", d.Line, d.Column, d.Message)
			}
		}
	}
	if !found {
		t.Fatalf("no [no-fallback]: %s", diagText(res))
	}
}

// A workflow step's entries apply to every Task of the step, and the
// failed child found on recovery (TOOLGATE_WORKFLOW_FAILED, written by a
// Pass state) goes where its Catchers would send it.
func TestWorkflowCatchByCode(t *testing.T) {
	for _, c := range []struct{ entries, childFailed string }{
		{"      - errors: [TOOLGATE_WORKFLOW_FAILED]\n        next: a\n      - next: b\n", "a"},
		{"      - errors: [States.TaskFailed]\n        next: a\n      - next: b\n", "a"},
		{"      - errors: [StepFunctions.ExecutionLimitExceededException]\n        next: a\n      - next: b\n", "b"},
		{"      - errors: [REVIEW_FORBIDDEN]\n        next: a\n", "w-failed"},
	} {
		src := parentSolution("  - id: w\n    workflow: demo-ticket\n    on_error:\n"+c.entries+"  - id: a\n    fail: {error: A}\n  - id: b\n    fail: {error: B}\n", "")
		res := compileOnDemo(t, "p.yaml", src)
		states := statesOf(t, res)
		for _, name := range []string{"w-record", "w", "w-recover", "w-output"} {
			catch := states[name].Catch
			if len(catch) < 2 || !slices.Equal(catch[len(catch)-1].ErrorEquals, []string{"States.ALL"}) {
				t.Errorf("%s: Catch %v", name, catch)
			}
		}
		if got := states["w-child-failed"].Next; got != c.childFailed {
			t.Errorf("entries %q: w-child-failed goes to %q, want %q", c.entries, got, c.childFailed)
		}
	}
	for _, c := range []struct{ codes, want string }{
		{"[States.Timeout]", "fails the step with States.TaskFailed"},
		{"[StepFunctions.ExecutionAlreadyExistsException]", "recovers the child"},
		{"[TOOL_TIMEOUT]", "a workflow step never raises"},
	} {
		src := parentSolution("  - id: w\n    workflow: demo-ticket\n    on_error:\n      - errors: "+c.codes+"\n        next: end\n", "")
		res := compileOnDemo(t, "p.yaml", src)
		if res.OK() || !strings.Contains(diagText(res), c.want) {
			t.Errorf("errors %s: diagnostics\n%s\nwant %q", c.codes, diagText(res), c.want)
		}
	}
}

// A review in a for_each body that cannot be requested fails its
// iteration (its <id>-failed state) with review-request's error, which
// fails the for_each step: its on_error may catch that error by name.
func TestForEachCatchesItsBodyReviewsErrors(t *testing.T) {
	src := strings.Replace(reviewedLoop, "      - {errors: [FOR_EACH_TOO_MANY_ITEMS, NotSent], next: end}\n",
		"      - {errors: [REVIEW_UNAVAILABLE, REVIEW_FORBIDDEN], next: end}\n      - {errors: [FOR_EACH_TOO_MANY_ITEMS, NotSent], next: end}\n", 1)
	if res := compileString(t, src); !res.OK() {
		t.Fatalf("diagnostics\n%s", diagText(res))
	}
	noReview := strings.Replace(strings.Replace(src, "        - id: approve\n          review: {of: send}\n          on_approve: send\n          on_reject: end\n", "", 1),
		"send-email", "workflow-validator", 1)
	noReview = strings.Replace(noReview, `with: {to: ["a@example.com"], subject: "hi", text: "x"}`, "with: {solution: x}", 1)
	if res := compileString(t, noReview); res.OK() || !strings.Contains(diagText(res), `catches "REVIEW_UNAVAILABLE"`) {
		t.Fatalf("a body without a review: diagnostics\n%s", diagText(res))
	}
}
