package resolver

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/resolver/gate"
)

// A parkable gated step's Task catches APPROVAL_EXPIRED second, after
// CALL_PARKED and before its on_error, into <id>-rereview: a review Task
// whose payload is the step's review's in every member but the task
// token (the same review step, tool, reviewers, timeout and input, so the
// same input digest), whose result replaces the approval the Task sends
// ($.reviews.<id>), and whose approval goes back to the Task itself; a
// rejection or a timeout ends the step where TOOL_PERMISSION_DENIED goes.
// An ungated step gets none of it.
func TestAParkableGatedStepIsReReviewedAsItsReviewAsked(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(toolsetsDir, "solutions", "customer-ticket.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, states, _ := compiledStates(t, string(src), nil)
	task := states["ticket"]
	catch := task["Catch"].([]any)
	if got := jsonOf(t, catch[1]); got != `{"ErrorEquals":["APPROVAL_EXPIRED"],"Next":"ticket-rereview","ResultPath":"$.steps.ticket.error"}` {
		t.Errorf("the Task's second Catcher %s", got)
	}
	approval := task["Parameters"].(map[string]any)["Payload"].(map[string]any)["approval.$"]
	rr, review := states["ticket-rereview"], states["approve"]
	if rr["Resource"] != lambdaInvokeToken || rr["ResultPath"] != approval || rr["TimeoutSeconds"] != review["TimeoutSeconds"] || rr["Next"] != "ticket-rereviewed" {
		t.Errorf("ticket-rereview: %s; the Task sends %v", jsonOf(t, rr), approval)
	}
	got, want := rr["Parameters"].(map[string]any), review["Parameters"].(map[string]any)
	if jsonOf(t, got) != jsonOf(t, want) {
		t.Errorf("the re-review asks\n%s\nthe review asked\n%s", jsonOf(t, got), jsonOf(t, want))
	}
	if jsonOf(t, rr["Retry"]) != jsonOf(t, review["Retry"]) {
		t.Errorf("the re-review retries %s, the review %s", jsonOf(t, rr["Retry"]), jsonOf(t, review["Retry"]))
	}
	wantCatch := `[{"ErrorEquals":["REVIEW_REJECTED"],"Next":"ticket-rereview-rejected","ResultPath":"$.reviews.ticket"},` +
		`{"ErrorEquals":["States.Timeout"],"Next":"ticket-rereview-timed-out","ResultPath":"$.reviews.ticket"},` +
		`{"ErrorEquals":["States.ALL"],"Next":"ticket-rereview-failed","ResultPath":"$.reviews.ticket"}]`
	if got := jsonOf(t, rr["Catch"]); got != wantCatch {
		t.Errorf("ticket-rereview's Catch\n%s\nwant\n%s", got, wantCatch)
	}
	rd := states["ticket-rereviewed"]
	if got := jsonOf(t, rd["Choices"]); got != `[{"And":[{"IsPresent":true,"Variable":"$.reviews.ticket.decision"},{"StringEquals":"approve","Variable":"$.reviews.ticket.decision"}],"Next":"ticket"}]` || rd["Default"] != "ticket-rereview-rejected" {
		t.Errorf("ticket-rereviewed: %s", jsonOf(t, rd))
	}
	denied := states["ticket-park-rejected"]["Next"]
	for _, end := range []string{"ticket-rereview-rejected", "ticket-rereview-timed-out"} {
		st := states[end]
		p := st["Parameters"].(map[string]any)
		if p["Error"] != "TOOL_PERMISSION_DENIED" || !strings.Contains(p["Cause"].(string), "expired while the call was parked") || st["ResultPath"] != "$.steps.ticket.error" || st["Next"] != denied {
			t.Errorf("%s: %s; a rejected park goes to %v", end, jsonOf(t, st), denied)
		}
	}
	if f := states["ticket-rereview-failed"]; f["Type"] != "Fail" || f["ErrorPath"] != "$.reviews.ticket.Error" {
		t.Errorf("ticket-rereview-failed: %s", jsonOf(t, f))
	}
	for name := range states {
		if strings.HasPrefix(name, "lookup-rereview") || name == "lookup-approval-expired" {
			t.Errorf("the ungated step has %s", name)
		}
	}
	for _, k := range states["lookup"]["Catch"].([]any) {
		if slices.Contains(k.(map[string]any)["ErrorEquals"].([]any), any("APPROVAL_EXPIRED")) {
			t.Error("the ungated step catches APPROVAL_EXPIRED")
		}
	}
}

// transitions lists the states st may go to: Next, Default, each Choice
// rule's Next and each Catcher's.
func transitions(st map[string]any) []string {
	var out []string
	for _, k := range []string{"Next", "Default"} {
		if n, ok := st[k].(string); ok {
			out = append(out, n)
		}
	}
	for _, k := range []string{"Choices", "Catch"} {
		list, _ := st[k].([]any)
		for _, r := range list {
			if n, ok := r.(map[string]any)["Next"].(string); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

// Gate A is unchanged by the re-review: in the compiled definition the
// gated Task is entered only from its counter (the approved review's way
// in), from a park's approval (a decision of the same reviewers) and from
// the re-review's approval Choice, whose one rule into it is an approval;
// every other re-review state leads away from it.
func TestEveryWayIntoAReReviewedTaskCarriesAnApproval(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(toolsetsDir, "solutions", "customer-ticket.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, states, _ := compiledStates(t, string(src), nil)
	var into []string
	for name, st := range states {
		if slices.Contains(transitions(st), "ticket") {
			into = append(into, name)
		}
	}
	sort.Strings(into)
	if want := []string{"ticket-parked", "ticket-rereviewed", "ticket-seq"}; !slices.Equal(into, want) {
		t.Errorf("states into the gated Task: %v, want %v", into, want)
	}
	rules := states["ticket-rereviewed"]["Choices"].([]any)
	if len(rules) != 1 || !strings.Contains(jsonOf(t, rules[0]), `"StringEquals":"approve"`) {
		t.Errorf("ticket-rereviewed's rules %s", jsonOf(t, rules))
	}
}

// Modelled as a review of the tool whose approval leads back into it, as
// a park's approval is, the re-review keeps every arrival at the gated
// Task approved; the same edge unreviewed would not.
func TestGateASeesAReReviewBackIntoAGatedTaskAsGated(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(toolsetsDir, "solutions", "customer-ticket.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := checkOnly(t, string(src))
	g := c.graph()
	ticket := c.index["ticket"]
	withRereview := func(back gate.EdgeKind) *gate.Graph {
		h := &gate.Graph{Start: g.Start, Nodes: slices.Clone(g.Nodes)}
		p, r := len(h.Nodes), len(h.Nodes)+1
		h.Nodes[ticket].Next = append(slices.Clone(h.Nodes[ticket].Next), gate.Edge{To: p, Kind: gate.Error}, gate.Edge{To: r, Kind: gate.Error})
		h.Nodes = append(h.Nodes,
			gate.Node{Name: "ticket-park", Kind: gate.Review, Of: ticket, Next: []gate.Edge{{To: ticket, Kind: gate.Approve}}},
			gate.Node{Name: "ticket-rereview", Kind: gate.Review, Of: ticket, Next: []gate.Edge{{To: ticket, Kind: back}}})
		return h
	}
	if v := gate.ReviewBeforeTool(withRereview(gate.Approve)); len(v) != 0 {
		t.Errorf("Gate A with the re-review's approval back into ticket: %v", v)
	}
	if v := gate.ReviewBeforeTool(withRereview(gate.Plain)); len(v) != 1 {
		t.Errorf("a plain edge back into ticket must be unreviewed; Gate A found %v", v)
	}
}

// A gated step that two review steps review has no re-review (whose
// reviewers approved the call is not known to the definition): its Task
// catches APPROVAL_EXPIRED into <id>-approval-expired, which ends the step
// with TOOL_PERMISSION_DENIED where on_error routes that code.
func TestAStepOfTwoReviewStepsEndsAnExpiredApprovalAsPermissionDenied(t *testing.T) {
	src := mcpHead + "input: {type: object, properties: {x: {type: integer}}}\nsteps:\n" +
		"  - id: c\n    choice:\n      - when: {value: \"${input.x}\", equals: 1}\n        next: r1\n    default: r2\n" +
		"  - id: r1\n    review: {of: ticket, timeout_seconds: 600}\n    on_approve: ticket\n    on_reject: end\n" +
		"  - id: r2\n    review: {of: ticket, timeout_seconds: 900, reviewers: [\"arn:aws:iam::123456789012:role/lead\"]}\n    on_approve: ticket\n    on_reject: end\n" +
		"  - id: ticket\n    tool: crm.create_ticket\n    with: {title: t, priority: high}\n    on_error:\n      - {errors: [TOOL_PERMISSION_DENIED], next: denied}\n" +
		"  - id: denied\n    fail: {error: DENIED}\n"
	res, states, _ := compiledStates(t, src, nil)
	if got := jsonOf(t, states["ticket"]["Catch"].([]any)[1]); got != `{"ErrorEquals":["APPROVAL_EXPIRED"],"Next":"ticket-approval-expired","ResultPath":"$.steps.ticket.error"}` {
		t.Errorf("the Task's second Catcher %s", got)
	}
	ae := states["ticket-approval-expired"]
	if ae["Next"] != "denied" || ae["Parameters"].(map[string]any)["Error"] != "TOOL_PERMISSION_DENIED" {
		t.Errorf("ticket-approval-expired: %s", jsonOf(t, ae))
	}
	if _, ok := states["ticket-rereview"]; ok {
		t.Error("a step of two review steps has a re-review")
	}
	if res.RunTimeout.RereviewSeconds != 0 {
		t.Errorf("the run timeout counts a re-review: %+v", res.RunTimeout)
	}
}

// A derived run timeout adds one re-review, with the park, when a gated
// step can park: its review's timeout and a review Task's retries; an
// ungated parkable step adds none.
func TestAReReviewAddsItsReviewsTimeoutToTheDerivedRunTimeout(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(toolsetsDir, "solutions", "customer-ticket.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res, _, _ := compiledStates(t, string(src), nil)
	rt := res.RunTimeout
	if want := 600 + reviewRetrySeconds; rt.RereviewSeconds != want || rt.Seconds != rt.LongestSeconds+rt.ParkSeconds+want+rt.MarginSeconds {
		t.Errorf("run timeout %+v, want a re-review of %d s", rt, want)
	}
	if !strings.Contains(rt.String(), "a re-review of") {
		t.Errorf("summary %q does not name the re-review", rt.String())
	}
	ungated := Compile("s.yaml", []byte(mcpHead+"steps:\n  - {id: a, tool: crm.lookup_customer, with: {customer_id: C-1}}\n"), Options{Toolsets: LockLookup(toolsetsDir)})
	if !ungated.OK() || ungated.RunTimeout.RereviewSeconds != 0 || ungated.RunTimeout.ParkSeconds == 0 {
		t.Errorf("an ungated parkable step: %+v %s", ungated.RunTimeout, diagText(ungated))
	}
}

// In a for_each body the re-review states are the iteration's, beside
// its park states, and ask as the body's review asked.
func TestAReReviewInAForEachBodyIsTheIterations(t *testing.T) {
	src := mcpHead + "input: {type: object, properties: {titles: {type: array, items: {type: string}}}}\nsteps:\n" +
		"  - id: each\n    for_each:\n      items: \"${input.titles}\"\n      as: title\n      max_items: 10\n      steps:\n" +
		"        - id: approve\n          review: {of: ticket, timeout_seconds: 600}\n          on_approve: ticket\n          on_reject: end\n" +
		"        - id: ticket\n          tool: crm.create_ticket\n          with: {title: \"${title}\", priority: high}\n"
	_, states, inBody := compiledStates(t, src, nil)
	for _, n := range []string{"ticket-rereview", "ticket-rereviewed", "ticket-rereview-rejected", "ticket-rereview-timed-out", "ticket-rereview-failed"} {
		if !inBody[n] {
			t.Errorf("%s is not in the ItemProcessor", n)
		}
	}
	if got, want := jsonOf(t, states["ticket-rereview"]["Parameters"]), jsonOf(t, states["approve"]["Parameters"]); got != want {
		t.Errorf("the re-review asks\n%s\nthe review asked\n%s", got, want)
	}
}
