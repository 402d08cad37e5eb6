package stack_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/ledger"
)

// caughtByCode waits, fetches a page that is not there, and catches the
// fetch's TOOL_PERMANENT_FAILURE by its code: a person then approves an
// e-mail that names the error. A review nobody decides in time ends the
// run Failed through on_timeout (docs/solutions.md: wait, on_timeout,
// on_error by code, error, decision and execution bindings).
const caughtByCode = `solution: SOLUTION
version: 1
policy: {fetch_hosts: ["DATA"]}
input: {type: object, required: [recipient]}
output:
  decision: "${reviews.approve.decision}"
  reason: "${reviews.approve.reason}"
  approver: "${reviews.approve.approver}"
  error: "${steps.fetch.error.Error}"
steps:
  - id: pause
    wait: {seconds: 1}
    next: fetch
  - id: fetch
    tool: structured-data-fetch
    with: {url: "http://DATA/missing.json"}
    on_error:
      - errors: [TOOL_PERMANENT_FAILURE]
        next: approve
      - next: unexpected
    next: unexpected
  - id: unexpected
    fail: {error: Unexpected fetch outcome}
  - id: approve
    review: {of: send, timeout_seconds: TIMEOUT}
    on_approve: send
    on_timeout: timed_out
  - id: timed_out
    fail: {error: Review timed out, cause: nobody decided the review in time}
  - id: send
    tool: send-email
    with:
      to: ["${input.recipient}"]
      subject: "Run ${execution.name}: ${steps.fetch.error.Error}"
      text: "${steps.fetch.error.Cause}"
`

// The for_each, wait and catch grammar on the local stack: a Wait state, a Catcher by
// error code, a review's own timeout path to a fail step, and the bindings
// of a step's error, a review's decision and the execution.
func TestWaitTimeoutAndCatchByCode(t *testing.T) {
	e := sharedEnv(t)
	e.route(t, "/missing.json", http.NotFoundHandler())
	solution := func(name, timeout string) string {
		return strings.NewReplacer("SOLUTION", name, "TIMEOUT", timeout).Replace(caughtByCode)
	}
	e.publish(t, "e2e-caught", solution("e2e-caught", "600"))
	e.publish(t, "e2e-caught-late", solution("e2e-caught-late", "2"))
	input := map[string]string{"recipient": "team@example.com"}

	t.Run("a review nobody decides ends the run Failed through on_timeout", func(t *testing.T) {
		e.clearMails(t)
		run := e.start(t, "e2e-caught-late", input)
		out, events := e.follow(t, run)
		if out.Status != "FAILED" || out.Error != "Review timed out" || out.Cause != "nobody decided the review in time" {
			t.Fatalf("run %s: %q %q, want FAILED through timed_out", out.Status, out.Error, out.Cause)
		}
		states := entered(events)
		for _, want := range []string{"pause", "fetch", "approve", "timed_out"} {
			if !slices.Contains(states, want) {
				t.Fatalf("the run did not enter %s: %v", want, states)
			}
		}
		if slices.Contains(states, "unexpected") || slices.Contains(states, "send-seq") {
			t.Fatalf("the run took another path: %v", states)
		}
		if !hasEvent(events, "WaitStateEntered", "pause") {
			t.Fatalf("no Wait state entered: %v", states)
		}
		if m := e.mails(t); len(m) != 0 {
			t.Fatalf("%d mails after a timed-out review", len(m))
		}
	})

	t.Run("the error caught by its code reaches the approved e-mail and the output", func(t *testing.T) {
		e.clearMails(t)
		run := e.start(t, "e2e-caught", input)
		e.decide(t, "approve", e.pending(t, run, nil))
		out, events := e.follow(t, run)
		if out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
		}
		if states := entered(events); slices.Contains(states, "unexpected") || !slices.Contains(states, "approve-approved") {
			t.Fatalf("states %v: want the Catcher by code and the decision's Pass", states)
		}
		var output struct{ Decision, Error string }
		if err := json.Unmarshal([]byte(out.Output), &output); err != nil || output.Decision != "approve" || output.Error != "TOOL_PERMANENT_FAILURE" {
			t.Fatalf("output %s: %v", out.Output, err)
		}
		name := run[strings.LastIndex(run, ":")+1:]
		if m := e.mails(t); len(m) != 1 || m[0].Subject != "Run "+name+": TOOL_PERMANENT_FAILURE" {
			t.Fatalf("mails %+v", m)
		}
		if !strings.Contains(out.Output, `"reason":"e2e approve"`) || !strings.Contains(out.Output, `"approver":"`) {
			t.Fatalf("output %s: want the decision's reason and approver", out.Output)
		}
		var fetches []ledger.Row
		for _, r := range e.rows(t, run) {
			if r.Tool == "structured-data-fetch" {
				fetches = append(fetches, r)
			}
		}
		if len(fetches) != 1 || fetches[0].ErrorCode != "TOOL_PERMANENT_FAILURE" {
			t.Fatalf("fetch rows %+v", fetches)
		}
	})

	t.Run("a rejection's decision is read from its cause", func(t *testing.T) {
		e.clearMails(t)
		run := e.start(t, "e2e-caught", input)
		e.decide(t, "reject", e.pending(t, run, nil))
		out, events := e.follow(t, run)
		if out.Status != "SUCCEEDED" || !slices.Contains(entered(events), "Rejected") {
			t.Fatalf("run %s via %v: %s %s", out.Status, entered(events), out.Error, out.Cause)
		}
		var output struct{ Decision, Reason, Approver, Error string }
		if err := json.Unmarshal([]byte(out.Output), &output); err != nil || output.Decision != "reject" || output.Reason != "e2e reject" || output.Approver == "" || output.Error != "TOOL_PERMANENT_FAILURE" {
			t.Fatalf("output %s: %v", out.Output, err)
		}
		if m := e.mails(t); len(m) != 0 {
			t.Fatalf("%d mails after a rejection", len(m))
		}
	})
}

// hasEvent reports whether the history has an event of the type for the
// state.
func hasEvent(events []runner.Event, typ, state string) bool {
	for _, ev := range events {
		if ev.Type == typ && ev.State == state {
			return true
		}
	}
	return false
}
