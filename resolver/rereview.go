package resolver

import (
	"fmt"

	"github.com/toolgate/toolgate/resolver/asl"
	"github.com/toolgate/toolgate/shared/tool"
)

// Re-reviews (docs/parking.md, "A re-review"). A gated call that parked
// may be decided after its approval's time ended: sent again, the
// dispatcher refuses it APPROVAL_EXPIRED (tool.ApprovalExpired). Gate A is
// unchanged, so the call needs a new approval of the same input. A
// parkable gated tool step compiles, besides its park states:
//
//	<id>-rereview           Task (lambda:invoke.waitForTaskToken on
//	                        review-request): a review Task built as the
//	                        step's review's (the same review step, tool,
//	                        reviewers, timeout and input, so the same input
//	                        digest; a new task token, so a new review id;
//	                        kind "call", without the review's ask, editable
//	                        or notify), whose approval replaces
//	                        $.reviews.<id>
//	<id>-rereviewed         Choice: an approval goes back to the Task <id>
//	                        itself (the same seq and key); anything else to
//	                        <id>-rereview-rejected
//	<id>-rereview-rejected  Pass states writing the step's error,
//	<id>-rereview-timed-out {Error: TOOL_PERMISSION_DENIED, Cause}, and
//	                        going where on_error routes that code, or to
//	                        the step's Fail state, as a rejected park
//	<id>-rereview-failed    Fail: the re-review could not be requested
//
// The Task catches APPROVAL_EXPIRED second, after CALL_PARKED and before
// its on_error entries. A step reviewed by more than one review step (the
// re-review could not tell whose reviewers approved the call) compiles no
// re-review: APPROVAL_EXPIRED goes to <id>-approval-expired, a Pass
// ending the step with TOOL_PERMISSION_DENIED as before.

// Causes of the error a gated step ends with when its call's approval
// expired while it was parked and no new one came.
const (
	rereviewRejectedCause = "the approval expired while the call was parked, and the re-review was not approved"
	rereviewTimedOutCause = "the approval expired while the call was parked, and the re-review timed out"
	approvalExpiredCause  = "the approval expired while the call was parked (the step has more than one review step, so no re-review is compiled)"
)

// rereviewOf returns the review step whose request a re-review of gated
// tool step i repeats: the one reachable review step of it; nil when
// there are several (or none: then the step is not gated).
func (c *checker) rereviewOf(i int) *Step {
	var found *Step
	for r, rs := range c.sol.Steps {
		if rs.Kind != KindReview || !c.reachable[r] || c.index[rs.Of.Name] != i {
			continue
		}
		if found != nil {
			return nil
		}
		found = rs
	}
	return found
}

// rereviewed returns the review step call's re-review repeats: nil for
// a call that is not a tool's, cannot park, or has no re-review.
func rereviewed(call *toolCall) *Step {
	if call == nil || call.park == nil {
		return nil
	}
	return call.park.rereview
}

// rereviewSeconds is what a re-review may add to a run: the longest
// timeout of the review steps a parkable gated step's re-review repeats,
// with a review Task's retries (reviewRetrySeconds); 0 when no step has
// one. The parks of a run add one park timeout in total, and so one
// re-review (checkRunTimeout's derivation).
func (c *checker) rereviewSeconds() int {
	secs := 0
	for i, st := range c.sol.Steps {
		if !c.reachable[i] || st.Kind != KindTool || !c.stepGated(i) || !c.parkable(st) {
			continue
		}
		if rv := c.rereviewOf(i); rv != nil {
			secs = max(secs, rv.ReviewTimeout+reviewRetrySeconds)
		}
	}
	return secs
}

// rereviewStates emits the re-review states of parkable gated tool step
// ps, whose Task fails to failNext (its on_error target or its Fail
// state) with its error at $.steps.<id>.error; it returns the Catcher
// the Task's Catch list holds second, after CALL_PARKED's.
func (e *emitter) rereviewStates(ps *planStep, failNext string) asl.Catcher {
	st := ps.Step
	errPath := "$.steps." + st.ID + ".error"
	denied := e.caughtAs(st, string(tool.PermissionDenied), failNext)
	ended := func(comment, cause string) *asl.Pass {
		return &asl.Pass{Comment: comment, Parameters: map[string]any{"Error": string(tool.PermissionDenied), "Cause": cause}, ResultPath: errPath, Next: denied}
	}
	catcher := asl.Catcher{ErrorEquals: []string{string(tool.ApprovalExpired)}, ResultPath: errPath}
	rv := ps.tool.park.rereview
	if rv == nil {
		catcher.Next = st.ID + "-approval-expired"
		e.states[catcher.Next] = ended("the approval expired while the call was parked; a step of several review steps has no re-review", approvalExpiredCause)
		return catcher
	}
	name := st.ID + "-rereview"
	catcher.Next = name
	result := "$.reviews." + st.ID
	reviewers := rv.Reviewers
	if reviewers == nil {
		reviewers = []string{}
	}
	e.states[name+"-failed"] = &asl.Fail{
		Comment:   "the re-review could not be requested",
		ErrorPath: result + ".Error",
		CausePath: result + ".Cause",
	}
	e.states[name] = &asl.Task{
		Comment:        fmt.Sprintf("the approval expired while the call was parked: review %s's request again, a new review of the same input", rv.ID),
		Resource:       lambdaInvokeToken,
		TimeoutSeconds: rv.ReviewTimeout,
		Parameters: asl.LambdaInvoke{
			FunctionName: e.placeholder(ReviewFunction),
			Payload: parameters(tool.ReviewTask{}, map[string]any{
				"task_token":      path("$$.Task.Token"),
				"run_id":          path("$.meta.run_id"),
				"step":            rv.ID,
				"of":              st.ID,
				"tool":            st.Tool,
				"toolset_id":      e.toolsetID,
				"input":           ps.value.static,
				"reviewers":       reviewers,
				"timeout_seconds": rv.ReviewTimeout,
				"requester":       path("$.meta.start.starter"),
				"traceparent":     path(metaTraceparent),
				// A re-review asks again for the approval of the call
				// alone: it carries none of the review's ask, editable or
				// notify (docs/parking.md, "A re-review").
				"kind": string(tool.ReviewOfCall),
			}),
		},
		ResultPath: result,
		// As a review Task's: only Lambda's own errors are retried.
		Retry: []asl.Retrier{{
			ErrorEquals: lambdaTransient, MaxAttempts: 3, IntervalSeconds: 2, BackoffRate: 2.0,
		}},
		Catch: []asl.Catcher{
			{ErrorEquals: []string{ReviewRejected}, ResultPath: result, Next: name + "-rejected"},
			{ErrorEquals: []string{statesTimeout}, ResultPath: result, Next: name + "-timed-out"},
			{ErrorEquals: []string{statesAll}, ResultPath: result, Next: name + "-failed"},
		},
		Next: st.ID + "-rereviewed",
	}
	approve := string(tool.Approve)
	e.states[st.ID+"-rereviewed"] = &asl.Choice{
		Comment: "an approval sends the call again: the same seq and idempotency key, the new approval",
		Choices: []asl.ChoiceRule{{And: []asl.ChoiceRule{
			isPresent(result+".decision", true),
			asl.Compare(result+".decision", asl.Equals, asl.Operand{String: &approve}),
		}, Next: st.ID}},
		Default: name + "-rejected",
	}
	e.states[name+"-rejected"] = ended("a re-review not approved ends the step as the tool's permission denial", rereviewRejectedCause)
	e.states[name+"-timed-out"] = ended(fmt.Sprintf("no decision within review %s's timeout", rv.ID), rereviewTimedOutCause)
	return catcher
}
