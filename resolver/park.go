package resolver

import (
	"fmt"
	"slices"

	"github.com/toolgate/toolgate/resolver/asl"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Parked calls (docs/parking.md, "The compiled states"). A tool step whose
// call can end CALL_PARKED (checker.parks) waits for a person's decision
// inside the run instead of failing, unless an on_error entry of its own
// names CALL_PARKED (the author then routes the park). Such a step
// compiles, besides its counter Pass and its Task:
//
//	<id>-park           Task (lambda:invoke.waitForTaskToken on
//	                    review-request): records the park
//	                    (park.Request) and waits for the decision
//	                    (park.Result) at $.parks.<id>, at most the
//	                    park timeout (policy.park_timeout_seconds)
//	<id>-parked         Choice: approve or resume goes back to the Task
//	                    <id> itself, with the same seq and idempotency
//	                    key; anything else to <id>-park-rejected
//	<id>-park-rejected  Pass states writing the step's error,
//	<id>-park-timed-out {Error: TOOL_PERMISSION_DENIED, Cause}, and going
//	<id>-park-limit     where on_error routes that code, or to the step's
//	                    Fail state
//
// The Task's Catch list starts with CALL_PARKED → <id>-park, and its
// envelope carries park_id ($.parks.<id>.park_id: null until a park was
// decided), which Init (or, in a for_each body, the iteration's
// ItemSelector) sets for every such step, so that every path the Task
// reads exists. A step on a loop of the Solution also compiles
//
//	<id>-unpark         Pass between <id>-seq and the Task: $.parks.<id>
//	                    = {park_id: null}, since the call of a new key
//	                    was never decided

// parkCause is the Cause of the error a parked call's step ends with, per
// way the park ended (docs/parking.md, "The compiled states").
const (
	parkRejectedCause = "parked call rejected: {}"
	parkTimedOutCause = "park timed out"
)

// parkLimitCause is the Cause of a step whose call parked park.MaxParks
// times and was refused one more park (park.ErrorLimit).
var parkLimitCause = fmt.Sprintf("parked %d times", park.MaxParks)

// parkable reports whether tool step st compiles the park states: its call
// can be parked (parks) and no on_error entry of its own names CALL_PARKED
// (that entry keeps routing the error as written, and the step gets no
// park state nor park_id member: the dispatcher then announces the park
// itself, as for a definition compiled before parking).
func (c *checker) parkable(st *Step) bool {
	if st.Kind != KindTool || !c.parks(st) {
		return false
	}
	return !slices.ContainsFunc(st.Catches, func(k Catch) bool {
		return slices.ContainsFunc(k.Errors, func(r Ref) bool { return r.Name == string(tool.CallParked) })
	})
}

// hasParkable reports whether a reachable step, top-level or in a
// for_each body, is parkable.
func (c *checker) hasParkable() bool {
	for i, st := range c.sol.Steps {
		if c.reachable[i] && c.parkable(st) {
			return true
		}
	}
	return false
}

// parkTimeout is the park Task's timeout in seconds:
// policy.park_timeout_seconds when written; else park.DefaultTimeoutSeconds,
// or an explicit policy.run_timeout_seconds when that is shorter (the run
// would end first: a park's deadline never claims more than its run has).
func (c *checker) parkTimeout() int {
	if c.sol.ParkTimeoutSet {
		return c.sol.ParkTimeout
	}
	if c.sol.RunTimeoutSet && c.sol.RunTimeout > 0 {
		return min(park.DefaultTimeoutSeconds, c.sol.RunTimeout)
	}
	return park.DefaultTimeoutSeconds
}

// checkParkTimeout refuses ([run-timeout]) a written
// policy.park_timeout_seconds that is not below an explicit
// policy.run_timeout_seconds, in a Solution with a parkable step: the run
// would end while its park still waits, and a decision would reach no
// Task (as a review's timeout is refused, checkRunTimeout).
func (c *checker) checkParkTimeout() {
	if !c.sol.ParkTimeoutSet || !c.sol.RunTimeoutSet || c.sol.RunTimeout == 0 || !c.hasParkable() {
		return
	}
	if c.sol.ParkTimeout >= c.sol.RunTimeout {
		c.ds.errorf(c.sol.ParkTimeoutPos, RuleRunTimeout, "policy.park_timeout_seconds %d is not below the run's timeout of %d s (policy.run_timeout_seconds): the run would end while a parked call waits, and the decision would reach no Task; lower the park timeout or raise the run timeout",
			c.sol.ParkTimeout, c.sol.RunTimeout)
	}
}

// parksAfterClaim reports whether tool step st's call can park after its
// request was sent: its target presents a credential the server may refuse
// as an invalid token (RFC 6750, section 3.1), an MCP server whose pin
// declares auth, or an http step of a toolset some host entry of which
// does (the host a dynamic URL reaches is not known here).
func (c *checker) parksAfterClaim(st *Step) bool {
	if c.named == nil {
		return false
	}
	if m := c.named.Tools[st.Tool].MCP; m != nil {
		return m.Auth != nil
	}
	return st.Tool == httpTool && slices.ContainsFunc(c.named.HTTPHosts, func(h toolset.HTTPHost) bool { return h.Auth != nil })
}

// maxAttemptsParkingAfterClaim is the most attempts per call a step that
// can park after its request was sent (parksAfterClaim) may make between
// two parks: each such park ends an attempt, and the call keeps its key
// through at most park.MaxParks parks, so (park.MaxParks + 1) calls of
// this many attempts fit the ledger's cap of tool.MaxAttempts per
// idempotency key (docs/parking.md, "The bound"). A catalog or pinned
// default above it is lowered to it (retryOf); a written retry above it is
// refused (checkParkRetries).
const maxAttemptsParkingAfterClaim = tool.MaxAttempts / (park.MaxParks + 1)

// checkParkRetries refuses ([retry]) a written retry.max_attempts above
// maxAttemptsParkingAfterClaim on a parkable step that can park after its
// request was sent (parksAfterClaim). A step whose on_error names
// CALL_PARKED does not park and is not checked.
func (c *checker) checkParkRetries() {
	for i, st := range c.sol.Steps {
		if c.tools[i] == nil || st.Retry == nil || !c.parkable(st) || !c.parksAfterClaim(st) {
			continue
		}
		if n := st.Retry.MaxAttempts; n > maxAttemptsParkingAfterClaim {
			c.ds.errorf(st.Retry.Pos, RuleRetry, "step %q: its call presents a credential its server may refuse after the request was sent, which parks the call and ends an attempt; with retry.max_attempts %d its key could take (%d parks + 1) × %d = %d attempts, over the cap of %d per idempotency key (docs/parking.md, \"The bound\"); set retry.max_attempts to at most %d, or name CALL_PARKED in on_error to route the error instead of parking",
				st.ID, n, park.MaxParks, n, (park.MaxParks+1)*n, tool.MaxAttempts, maxAttemptsParkingAfterClaim)
		}
	}
}

// parkPlan is a parkable tool step's park: the park Task's timeout in
// seconds (parkTimeout), the review a gated step's re-review repeats
// (rereview.go), and reset, set when the step is on a loop of the
// Solution: entered again, its new call must not carry the park id a
// person decided for the last key, so <id>-unpark writes {park_id: null}
// at $.parks.<id> between <id>-seq and the Task.
type parkPlan struct {
	timeoutSeconds int
	reset          bool
	// rereview is the review step a gated step's re-review repeats
	// (checker.rereviewOf); nil for an ungated step, or a step of several
	// review steps (rereviewStates).
	rereview *Step
}

// parkSlot is Init's (or an iteration's ItemSelector's) value of
// $.parks.<id> for a parkable step: no park decided yet.
func parkSlot() map[string]any {
	return map[string]any{"park_id": nil}
}

// parkSlots is $.parks as a scope's first state writes it: {"<id>":
// {"park_id": null}} for each parkable step of steps; nil when there is
// none (the state data then has no parks member).
func parkSlots(steps []*planStep) map[string]any {
	var out map[string]any
	for _, ps := range steps {
		if ps.tool != nil && ps.tool.park != nil {
			if out == nil {
				out = map[string]any{}
			}
			out[ps.ID] = parkSlot()
		}
	}
	return out
}

// parkStates emits the park states of parkable tool step ps, whose Task
// fails to failNext (its on_error target or its Fail state) with its
// error at $.steps.<id>.error; it returns the Catcher that starts the
// Task's Catch list.
func (e *emitter) parkStates(ps *planStep, failNext string) asl.Catcher {
	st, timeout := ps.Step, ps.tool.park.timeoutSeconds
	errPath := "$.steps." + st.ID + ".error"
	slot := "$.parks." + st.ID
	name := st.ID + "-park"
	request := parameters(park.Request{}, map[string]any{
		"run_id":          path("$.meta.run_id"),
		"step":            st.ID,
		"seq":             path(e.seqExpr()),
		"idempotency_key": path(e.keyExpr()),
		"tool":            st.Tool,
		"toolset_id":      e.toolsetID,
		"run_started_at":  path("$$.Execution.StartTime"),
		"timeout_seconds": timeout,
		"gated":           ps.tool.gated,
	})
	e.states[name] = &asl.Task{
		Comment:        "the parked call waits for a person's decision (docs/parking.md): approve or resume sends it again, reject ends the step",
		Resource:       lambdaInvokeToken,
		TimeoutSeconds: timeout,
		Parameters: asl.LambdaInvoke{
			FunctionName: e.placeholder(ReviewFunction),
			Payload:      map[string]any{"park": request, "task_token.$": "$$.Task.Token"},
		},
		ResultSelector: map[string]any{"park_id.$": "$.park_id", "decision.$": "$.decision", "reason.$": "$.reason"},
		ResultPath:     slot,
		// A retried park Task records the same park (its id derives from
		// the PARKED row) and replaces its task token while it is PARKED,
		// so review-request's REVIEW_UNAVAILABLE is retried too, unlike a
		// review Task's.
		Retry: []asl.Retrier{{
			ErrorEquals: append([]string{tool.ReviewUnavailable}, lambdaTransient...), MaxAttempts: 3, IntervalSeconds: 2, BackoffRate: 2.0,
		}},
		Catch: []asl.Catcher{
			{ErrorEquals: []string{statesTimeout}, ResultPath: errPath, Next: st.ID + "-park-timed-out"},
			{ErrorEquals: []string{park.ErrorLimit}, ResultPath: errPath, Next: st.ID + "-park-limit"},
			{ErrorEquals: []string{statesAll}, ResultPath: errPath, Next: failNext},
		},
		Next: st.ID + "-parked",
	}
	approve, resume := string(park.Approve), string(park.Resume)
	again := asl.ChoiceRule{Or: []asl.ChoiceRule{
		asl.Compare(slot+".decision", asl.Equals, asl.Operand{String: &approve}),
		asl.Compare(slot+".decision", asl.Equals, asl.Operand{String: &resume}),
	}, Next: st.ID}
	e.states[st.ID+"-parked"] = &asl.Choice{
		Comment: "approve or resume sends the call again: the same seq and idempotency key, the decided park_id",
		Choices: []asl.ChoiceRule{again},
		Default: st.ID + "-park-rejected",
	}
	// Where the step's TOOL_PERMISSION_DENIED goes: an on_error entry
	// that catches it, else failNext.
	denied := e.caughtAs(st, string(tool.PermissionDenied), failNext)
	ended := func(comment string, cause map[string]any) *asl.Pass {
		params := map[string]any{"Error": string(tool.PermissionDenied)}
		for k, v := range cause {
			params[k] = v
		}
		return &asl.Pass{Comment: comment, Parameters: params, ResultPath: errPath, Next: denied}
	}
	e.states[st.ID+"-park-rejected"] = ended("a rejected park ends the step as the tool's permission denial, with the reason",
		map[string]any{"Cause.$": "States.Format('" + parkRejectedCause + "', " + slot + ".reason)"})
	e.states[st.ID+"-park-timed-out"] = ended("no decision within the park timeout (policy.park_timeout_seconds)",
		map[string]any{"Cause": parkTimedOutCause})
	e.states[st.ID+"-park-limit"] = ended(fmt.Sprintf("the call parked %d times, the most one call may (park.MaxParks)", park.MaxParks),
		map[string]any{"Cause": parkLimitCause})
	return asl.Catcher{ErrorEquals: []string{string(tool.CallParked)}, ResultPath: errPath, Next: name}
}
