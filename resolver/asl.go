package resolver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/toolgate/toolgate/resolver/asl"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/inputrecord"
	"github.com/toolgate/toolgate/shared/solutioncomment"
	"github.com/toolgate/toolgate/shared/tool"
)

// Names of the states the resolver adds. Step ids are lower-case, so none
// of these can collide with a step's state.
const (
	stateStart        = "Start"
	stateStartRefused = "StartRefused"
	stateInit         = "Init"
	stateInitChild    = "InitChild"
	// The Init states of a run given a trace context: a string
	// meta.traceparent (docs/solutions.md, "The execution input").
	stateInitTraced      = "InitTraced"
	stateInitChildTraced = "InitChildTraced"
	stateStarter         = StarterState
	stateStarterChild    = "StarterChild"
	stateEnd             = "End"
	stateRejected        = "Rejected"
	// ReviewFunction is the Lambda function review Tasks invoke.
	ReviewFunction = "review-request"
	// StarterState is the state a Solution with gated tools or workflow
	// steps starts its runs with (after Init): it checks toolgate run's
	// start record (tool.RunStartCheck). toolgate run records a start
	// only for a definition that has it (resolver/cli/runner.Start).
	StarterState = inputrecord.StarterState
)

// Quotas of Step Functions the output must fit (AWS Step Functions service
// quotas: "Maximum definition size" 1 MiB, state name length 80 characters).
const (
	MaxDefinitionBytes = 1 << 20
	MaxStateNameLength = 80
)

// Errors matched by the generated Retriers and Catchers.
var (
	// retryableTool are the tool contract's retryable codes (docs/design.md, "The tool contract").
	retryableTool = tool.RetryableCodes()
	// lambdaTransient are Lambda's transient service errors, raised before
	// the function ran; a crash (Lambda.Unknown) is not among them.
	lambdaTransient = []string{"Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException", "Lambda.TooManyRequestsException"}
)

// StartInvalid is the error of an execution whose input is not an
// object with the members input and meta, which the Start Choice refuses
// before anything runs (docs/solutions.md, "The execution input"). Who
// started a run is the Starter's check of its start record, not the
// input's: runs carry no proof.
const StartInvalid = "TOOLGATE_START_INVALID"

// ReviewRejected is the error review-decision sends with SendTaskFailure.
const ReviewRejected = tool.ReviewRejected

// emitter builds the definition of a plan as typed ASL (resolver/asl),
// reading the plan alone (docs/design.md, "The compiler"), and collects
// the placeholders and workflow pins the manifest lists.
type emitter struct {
	p         *plan
	toolsetID string
	states    map[string]asl.State
	funcs     map[string]string // placeholder -> function
	toolFuncs map[string]string // platform tool function placeholder -> tool
	workflows map[string]*WorkflowPin
	// loop is the for_each whose body is being emitted (its states go to
	// its Map's ItemProcessor); nil at the top level.
	loop *planStep
}

// placeholders returns every placeholder key of the definition: the
// functions' and the platform tools' (DeployedSize).
func (e *emitter) placeholders() map[string]string {
	all := maps.Clone(e.funcs)
	maps.Copy(all, e.toolFuncs)
	for key, w := range e.workflows {
		all[key] = w.Solution
	}
	return all
}

// next resolves a target to a state name; end becomes endState, or in a
// for_each body the iteration's end, "<for_each id>-end" (state names
// are unique definition-wide, ItemProcessors included).
func (e *emitter) next(r Ref, endState string) string {
	if !r.Set || r.Name == EndTarget {
		if e.loop != nil {
			name := e.loop.ID + "-end"
			e.states[name] = e.iterationEnd()
			return name
		}
		e.states[endState] = e.succeed()
		return endState
	}
	return e.p.first[r.Name]
}

// succeed is a state that ends the run successfully with its result, the
// Solution's output (docs/solutions.md, "The run's output"): a Pass that
// builds {"output": value} and keeps the member, since a Succeed state
// takes no Parameters.
func (e *emitter) succeed() *asl.Pass {
	params := e.p.output
	if params == nil {
		params = map[string]any{"output": map[string]any{}}
	}
	return &asl.Pass{Comment: "the run's output", Parameters: params, OutputPath: "$.output", End: true}
}

func (e *emitter) placeholder(function string) string {
	key := catalog.FunctionPlaceholder(function)
	e.funcs[key] = function
	return "${" + key + "}"
}

// emit builds the definition (JSONPath query language) of a checked
// Solution; docs/solutions.md describes the state data layout.
func (e *emitter) emit() *asl.Definition {
	e.states = map[string]asl.State{}
	e.funcs = map[string]string{}
	e.toolFuncs = map[string]string{}
	e.workflows = map[string]*WorkflowPin{}
	gated := e.p.starter
	// The execution input is {input, meta} (docs/solutions.md): Start
	// refuses any other shape at once, and Init keeps meta apart from the
	// state data's input. A Solution with gated tools starts with the
	// Starter Task, which finds the start record toolgate run wrote for
	// $$.Execution.Id and checks $$.Execution.Input against it; the
	// verified starter enters the state data, no caller proof ever does.
	present := []asl.ChoiceRule{isPresent("$.input", true), isPresent("$.meta", true)}
	child := append(append([]asl.ChoiceRule{}, present...), isPresent("$.meta.parent_run_id", true))
	// A run given a trace context carries it as a string
	// meta.traceparent, which the Traced Init states copy; anything else
	// there is ignored, as a malformed context is (tool.Traceparent).
	traced := func(rules []asl.ChoiceRule) []asl.ChoiceRule {
		return append(append([]asl.ChoiceRule{}, rules...), isPresent(metaTraceparent, true), isString(metaTraceparent))
	}
	need := "{\"input\": ..., \"meta\": {}}"
	e.states[stateStart] = &asl.Choice{
		// The InputRecord toolgate run checks an input against; a Comment
		// is never evaluated, so it never enters the state data.
		Comment: e.p.inputComment,
		// A child run (started by a parent's workflow step) names its
		// parent in meta; its start is the record its parent wrote.
		Choices: []asl.ChoiceRule{
			{And: traced(child), Next: stateInitChildTraced}, {And: child, Next: stateInitChild},
			{And: traced(present), Next: stateInitTraced}, {And: present, Next: stateInit},
		},
		Default: stateStartRefused,
	}
	e.states[stateStartRefused] = &asl.Fail{
		Error: StartInvalid,
		Cause: "the execution input must be " + need + ": start runs with toolgate run (docs/solutions.md, \"The execution input\")",
	}
	first := e.p.start
	// initState is one of the four Init states: the state data's first
	// members, meta with the run id, seq 0, the parent's run id ("" but
	// in a child run), the start to come ({starter, end_user}, both null
	// until a Starter answers; they stay null in a Solution without one)
	// and the run's traceparent (null when it has none), so that every
	// path a later state reads exists: a missing JSONPath would fail the
	// execution with States.Runtime, which no Catcher catches.
	initState := func(comment string, child, traced bool, next string) *asl.Pass {
		meta := map[string]any{"run_id.$": "$$.Execution.Id", "seq": 0, "parent_run_id": "", "start": map[string]any{"starter": nil, "end_user": nil}, "traceparent": nil}
		if child {
			delete(meta, "parent_run_id")
			meta["parent_run_id.$"] = "$.meta.parent_run_id"
		}
		if traced {
			delete(meta, "traceparent")
			meta["traceparent.$"] = metaTraceparent
		}
		params := map[string]any{
			"input.$": "$.input",
			"steps":   map[string]any{},
			"reviews": map[string]any{},
			"meta":    meta,
		}
		if e.p.decisions {
			params["decisions"] = map[string]any{}
		}
		if parks := parkSlots(e.p.steps); parks != nil {
			params["parks"] = parks
		}
		return &asl.Pass{Comment: comment, Parameters: params, Next: next}
	}
	runNext := first
	if gated {
		runNext = stateStarter
	}
	comment := "state data: {input, steps, reviews, meta}"
	switch hasParks := parkSlots(e.p.steps) != nil; {
	case e.p.decisions && hasParks:
		comment = "state data: {input, steps, reviews, decisions, parks, meta}"
	case e.p.decisions:
		comment = "state data: {input, steps, reviews, decisions, meta}"
	case hasParks:
		comment = "state data: {input, steps, reviews, parks, meta}"
	}
	e.states[stateInit] = initState(comment, false, false, runNext)
	e.states[stateInitTraced] = initState(comment+", meta.traceparent the run's", false, true, runNext)
	childComment := "a child run: state data as Init's, with the parent's run id"
	e.states[stateInitChild] = initState(childComment, true, false, stateStarterChild)
	e.states[stateInitChildTraced] = initState(childComment+" and the workflow step's traceparent", true, true, stateStarterChild)
	e.states[stateStarterChild] = e.starterTask(
		"a child run's start is its parent's record for this execution and input: its starter is the parent's",
		parameters(tool.ChildStartCheck{}, map[string]any{
			"execution_arn":   path("$$.Execution.Id"),
			"execution_input": path("$$.Execution.Input"),
			"start_time":      path("$$.Execution.StartTime"),
		}), first)
	if gated {
		e.states[stateStarter] = e.starterTask(
			"the run's start is the record toolgate run wrote for this execution and input: who started the run, who may then not decide its reviews",
			parameters(tool.RunStartCheck{}, map[string]any{
				"check":           tool.RunStartCheckName,
				"execution_arn":   path("$$.Execution.Id"),
				"execution_input": path("$$.Execution.Input"),
				"start_time":      path("$$.Execution.StartTime"),
			}), first)
	}
	for _, ps := range e.p.steps {
		e.step(ps)
	}
	return &asl.Definition{
		// Which Solution, version and toolset the revision runs: what
		// review-request reads back (shared/solutioncomment).
		Comment: solutioncomment.Format(e.p.name, e.p.version, e.toolsetID),
		StartAt: stateStart,
		// The whole execution is bounded (policy.run_timeout_seconds):
		// Step Functions ends it with States.Timeout.
		TimeoutSeconds: e.p.runTimeout,
		States:         e.states,
	}
}

// step emits the states of a reachable step into e.states.
func (e *emitter) step(ps *planStep) {
	st := ps.Step
	switch st.Kind {
	case KindForEach:
		e.forEach(ps)
	case KindTool:
		e.tool(ps)
	case KindWorkflow:
		e.workflow(ps)
	case KindPass:
		e.states[st.ID] = &asl.Pass{
			Parameters: ps.value.static,
			ResultPath: "$.steps." + st.ID,
			Next:       e.next(st.Next, stateEnd),
		}
	case KindChoice:
		e.choice(ps)
	case KindReview:
		e.review(ps)
	case KindWait:
		e.wait(ps)
	case KindSucceed:
		e.states[st.ID] = e.succeed()
		if e.loop != nil {
			e.states[st.ID] = e.iterationEnd() // ends the iteration
		}
	case KindFail:
		e.states[st.ID] = &asl.Fail{Error: st.Error, Cause: st.Cause}
	}
}

// failTarget is where a step's caught failure goes: its on_error target,
// or, without one, its own Fail state "<id>-failed" (comment says what
// it ends the run with), which fails with the error at
// $.steps.<id>.error.
func (e *emitter) failTarget(st *Step, comment string) string {
	if st.OnError.Set {
		return e.next(st.OnError, stateEnd)
	}
	result := "$.steps." + st.ID + ".error"
	e.states[st.ID+"-failed"] = &asl.Fail{Comment: comment, ErrorPath: result + ".Error", CausePath: result + ".Cause"}
	return st.ID + "-failed"
}

// seqPass is a step's counter state: a Pass that advances $.meta.seq
// outside the step's retried Tasks (nextMeta), so that every attempt of
// one call carries one key.
func (e *emitter) seqPass(comment, next string) *asl.Pass {
	return &asl.Pass{Comment: comment, Parameters: e.nextMeta(), ResultPath: "$.meta", Next: next}
}

// starterTask is a start Task (Starter, StarterChild): review-request
// answers the payload with the run's verified starter and end-user scope
// and, for a fork, its parent and rerun_reads (tool.StartResult, every
// member always written; docs/fork.md), kept at $.meta.start;
// retried on REVIEW_UNAVAILABLE and Lambda's transient
// errors, with no Catch (a refused start ends the run).
func (e *emitter) starterTask(comment string, payload map[string]any, next string) *asl.Task {
	return &asl.Task{
		Comment:    comment,
		Resource:   lambdaInvoke,
		Parameters: asl.LambdaInvoke{FunctionName: e.placeholder(ReviewFunction), Payload: payload},
		ResultSelector: map[string]any{"starter.$": "$.Payload.starter", "end_user.$": "$.Payload.end_user",
			"forked_from.$": "$.Payload.forked_from", "rerun_reads.$": "$.Payload.rerun_reads"},
		ResultPath: "$.meta.start",
		Retry: []asl.Retrier{{
			ErrorEquals: append([]string{tool.ReviewUnavailable}, lambdaTransient...), MaxAttempts: 3, IntervalSeconds: 1, BackoffRate: 2.0,
		}},
		Next: next,
	}
}

// Resources of the Task states (AWS Step Functions developer guide,
// "Integrating services").
const (
	lambdaInvoke         = "arn:aws:states:::lambda:invoke"
	lambdaInvokeToken    = "arn:aws:states:::lambda:invoke.waitForTaskToken"
	startExecutionSync   = "arn:aws:states:::states:startExecution.sync:2"
	describeExecutionSDK = "arn:aws:states:::aws-sdk:sfn:describeExecution"
)

// isPresent is the Choice rule "variable is (or is not) present".
func isPresent(variable string, present bool) asl.ChoiceRule {
	return asl.ChoiceRule{Variable: variable, IsPresent: &present}
}

// isString is the Choice rule "variable is a string"; variable must be
// present (an And with isPresent before it).
func isString(variable string) asl.ChoiceRule {
	yes := true
	return asl.ChoiceRule{Variable: variable, IsString: &yes}
}

// metaTraceparent is the run's W3C traceparent in the state data: a
// string, or null when the run was given none (every Init state writes
// it; docs/solutions.md, "The execution input").
const metaTraceparent = "$.meta.traceparent"

// seqExpr is a call's seq as the envelope carries it, a string
// (tool.Seq): meta.seq is the number States.MathAdd advances; in a
// for_each body it follows the counter value the loop took
// (meta.loop_seq) and the item's index (meta.index): "4.17.2".
func (e *emitter) seqExpr() string {
	if e.loop != nil {
		return "States.Format('{}.{}.{}', $.meta.loop_seq, $.meta.index, $.meta.seq)"
	}
	return "States.Format('{}', $.meta.seq)"
}

// keyExpr is a call's idempotency key, "<run_id>/<seq>".
func (e *emitter) keyExpr() string {
	if e.loop != nil {
		return "States.Format('{}/{}.{}.{}', $.meta.run_id, $.meta.loop_seq, $.meta.index, $.meta.seq)"
	}
	return "States.Format('{}/{}', $.meta.run_id, $.meta.seq)"
}

// nextMeta is the seq Pass's meta: the run id, the next seq, the parent's
// run id ("" but in a child run), the verified start ({starter, end_user},
// nulls when the Solution has no Starter) and the run's traceparent (null when none).
func (e *emitter) nextMeta() map[string]any {
	m := map[string]any{"run_id.$": "$.meta.run_id", "seq.$": "States.MathAdd($.meta.seq, 1)",
		"parent_run_id.$": "$.meta.parent_run_id", "start.$": "$.meta.start", "traceparent.$": metaTraceparent}
	if e.loop != nil {
		m["loop_seq.$"], m["index.$"] = "$.meta.loop_seq", "$.meta.index"
	}
	return m
}

func (e *emitter) tool(ps *planStep) {
	st, call := ps.Step, ps.tool
	t, r := call.tool, call.retry
	e.states[st.ID+"-seq"] = e.seqPass("one idempotency key per call: the counter is outside the retried Task", st.ID)
	if call.park != nil && call.park.reset {
		e.states[st.ID+"-seq"].(*asl.Pass).Next = st.ID + "-unpark"
		e.states[st.ID+"-unpark"] = &asl.Pass{
			Comment:    "a new key's call: no park of it was decided yet",
			Parameters: parkSlot(),
			ResultPath: "$.parks." + st.ID,
			Next:       st.ID,
		}
	}
	members := map[string]any{
		tool.MemberTool:               st.Tool,
		tool.MemberToolsetID:          e.toolsetID,
		tool.MemberRunID:              path("$.meta.run_id"),
		tool.MemberSeq:                path(e.seqExpr()),
		tool.MemberStep:               st.ID,
		tool.MemberIdempotencyKey:     path(e.keyExpr()),
		tool.MemberAttempt:            path("States.MathAdd($$.State.RetryCount, 1)"),
		tool.MemberTolerateDuplicates: call.tolerates,
		tool.MemberInput:              ps.value.static,
		tool.MemberParentRunID:        path("$.meta.parent_run_id"),
		// The execution's start: the dispatcher refuses a key's record
		// that an earlier execution of the same name left (docs/ledger.md).
		tool.MemberRunStartedAt: path("$$.Execution.StartTime"),
		// The run's trace context; null, the dispatcher derives the
		// run's trace from its run id (tool.TraceContext).
		tool.MemberTrace: map[string]any{"traceparent.$": metaTraceparent},
		// The run's verified start ({starter, end_user}, nulls without a
		// Starter): the dispatcher resolves run and end-user credentials
		// by it, never by the execution input.
		tool.MemberStart: path("$.meta.start"),
	}
	if call.platform != "" {
		// The proxy invokes the pinned function: an ARN as pinned, or
		// the placeholder publishing substitutes from SSM.
		members[tool.MemberFunction] = call.platform
		if key := platformKey(call.platform); key != "" {
			e.toolFuncs[key] = st.Tool
		}
	}
	if call.gated {
		members[tool.MemberApproval] = path("$.reviews." + st.ID)
	}
	if call.park != nil {
		// null until a person decided a park of the call (parkStates).
		members[tool.MemberParkID] = path("$.parks." + st.ID + ".park_id")
	}
	// The result the call returns, and that the state data keeps: its
	// fields and its bound (docs/solutions.md, "State size").
	members[tool.MemberOutputLimitBytes] = outputLimit(st)
	if len(st.Keep) > 0 {
		members[tool.MemberKeep] = st.Keep
	}
	if st.TimeoutSeconds > 0 {
		// The step's timeout bounds the tool's work (the dispatcher ends it
		// with TOOL_TIMEOUT), never the Task: a Task that timed out while
		// its function still ran would leave the run while the tool's
		// effect may still happen.
		members[tool.MemberTimeoutSeconds] = st.TimeoutSeconds
	}
	payload := parameters(tool.Envelope{}, members)
	task := &asl.Task{
		Resource: lambdaInvoke,
		// The function's timeout plus the Init phase's (shared/catalog).
		TimeoutSeconds: t.TaskTimeoutSeconds(),
		Parameters:     asl.LambdaInvoke{FunctionName: e.placeholder(t.Function), Payload: payload},
		ResultSelector: map[string]any{"output.$": "$.Payload"},
		ResultPath:     "$.steps." + st.ID,
	}
	if r.MaxAttempts > 1 {
		task.Retry = []asl.Retrier{{
			ErrorEquals:     retryErrors(st),
			MaxAttempts:     r.MaxAttempts - 1,
			IntervalSeconds: r.IntervalSeconds,
			BackoffRate:     r.BackoffRate,
		}}
	}
	catchNext := e.failTarget(st, "the tool's error code and message")
	task.Catch = e.catchers(st, "$.steps."+st.ID+".error", catchNext)
	if call.park != nil {
		first := []asl.Catcher{e.parkStates(ps, catchNext)}
		if call.gated {
			// A gated call sent again after its park, whose approval
			// expired meanwhile, is reviewed again (rereview.go).
			first = append(first, e.rereviewStates(ps, catchNext))
		}
		task.Catch = append(first, task.Catch...)
	}
	task.Next = e.next(st.Next, stateEnd)
	e.states[st.ID] = task
}

func (e *emitter) review(ps *planStep) {
	st := ps.Step
	reviewers := st.Reviewers
	if reviewers == nil {
		reviewers = []string{}
	}
	result := "$.reviews." + st.reviewSlot()
	members := map[string]any{
		"task_token":      path("$$.Task.Token"),
		"run_id":          path("$.meta.run_id"),
		"step":            st.ID,
		"of":              "",
		"tool":            "",
		"toolset_id":      e.toolsetID,
		"input":           ps.review.input,
		"reviewers":       reviewers,
		"timeout_seconds": st.ReviewTimeout,
		"requester":       path("$.meta.start.starter"),
		"traceparent":     path(metaTraceparent),
		"kind":            string(tool.ReviewShow),
	}
	if of := ps.review.of; of != nil {
		members["of"], members["tool"], members["kind"] = of.ID, of.Tool, string(tool.ReviewOfCall)
	}
	// ask, editable and notify are written only when the review has them
	// (tool.ReviewTask): a review without them compiles as before, but for
	// its kind.
	if st.Ask != nil {
		members["ask"] = st.Ask.plain()
	}
	if len(st.Editable) > 0 {
		names := make([]string, len(st.Editable))
		for k, r := range st.Editable {
			names[k] = r.Name
		}
		members["editable"] = names
	}
	if len(st.Notify) > 0 {
		members["notify"] = slices.Clone(st.Notify)
	}
	e.states[st.ID+"-failed"] = &asl.Fail{
		Comment:   "the review could not be requested",
		ErrorPath: result + ".Error",
		CausePath: result + ".Cause",
	}
	e.states[st.ID] = &asl.Task{
		Resource:       lambdaInvokeToken,
		TimeoutSeconds: st.ReviewTimeout,
		Parameters: asl.LambdaInvoke{
			FunctionName: e.placeholder(ReviewFunction),
			Payload:      parameters(tool.ReviewTask{}, members),
		},
		ResultPath: result,
		// Only Lambda's own errors are retried: a retried review Task gets a
		// new task token, so retrying REVIEW_UNAVAILABLE (a review stored
		// but its answer lost) would leave a second review of the call.
		Retry: []asl.Retrier{{
			ErrorEquals: lambdaTransient, MaxAttempts: 3, IntervalSeconds: 2, BackoffRate: 2.0,
		}},
		Catch: e.reviewCatch(ps, result),
		Next:  e.approved(ps, result),
	}
}

// reviewCatch routes a review's outcomes other than approval: a rejection
// (REVIEW_REJECTED) to on_reject, its timeout (States.Timeout) to
// on_timeout, which is on_reject's target when not written (one Catcher
// for both then), and any other failure to <id>-failed.
func (e *emitter) reviewCatch(ps *planStep, result string) []asl.Catcher {
	st := ps.Step
	rejected := e.next(st.OnReject, stateRejected)
	timedOut := rejected
	if st.OnTimeout.Set {
		timedOut = e.next(st.OnTimeout, stateRejected)
	}
	if ps.review.decision {
		rejected, timedOut = e.rejected(st, result, rejected), e.timedOut(st, timedOut)
	}
	catch := []asl.Catcher{{ErrorEquals: []string{ReviewRejected, "States.Timeout"}, ResultPath: result, Next: rejected}}
	if timedOut != rejected {
		catch = []asl.Catcher{
			{ErrorEquals: []string{ReviewRejected}, ResultPath: result, Next: rejected},
			{ErrorEquals: []string{"States.Timeout"}, ResultPath: result, Next: timedOut},
		}
	}
	return append(catch, asl.Catcher{ErrorEquals: []string{"States.ALL"}, ResultPath: result, Next: st.ID + "-failed"})
}

// DecisionTimeout is the decision ${reviews.ID.decision} reads when the
// review timed out; the other two are tool.Approve and tool.Reject.
const DecisionTimeout = "timeout"

// A review whose decision is bound (${reviews.ID...}) writes it at
// $.decisions.<review id> on each outcome edge, in one shape:
// {decision: approve|reject|timeout, reason, approver}, and answer when
// the review asks one (review.ask; null but on approval), with a Pass
// state between the review and the outcome's target. The approval's task
// result ($.reviews.<tool id>, or $.reviews.<review id> for a review that
// shows values) is the decision JSON (tool.ReviewDecision); a
// rejection's Cause holds that JSON as text; a timeout has neither reason
// nor approver (null).

// approved returns the state the review's approval goes to: the
// on_approve target, or its decision Pass first.
func (e *emitter) approved(ps *planStep, result string) string {
	st := ps.Step
	next := e.next(st.OnApprove, stateEnd)
	if !ps.review.decision {
		return next
	}
	name := st.ID + "-approved"
	params := map[string]any{"decision": string(tool.Approve), "reason.$": result + ".reason", "approver.$": result + ".approver"}
	if st.Ask != nil {
		params["answer.$"] = result + ".answer"
	}
	e.states[name] = &asl.Pass{
		Comment:    "the review's decision, for the bindings of reviews." + st.ID,
		Parameters: params,
		ResultPath: "$.decisions." + st.ID,
		Next:       next,
	}
	return name
}

// rejected writes a rejection's decision, read from the decision JSON in
// the rejection's Cause in two Pass states (an intrinsic function's result
// cannot be indexed in the same state), and goes on to next.
func (e *emitter) rejected(st *Step, result, next string) string {
	decision := "$.decisions." + st.ID
	e.states[st.ID+"-rejected-parse"] = &asl.Pass{
		Comment:    "the rejection's decision JSON, from its Cause",
		Parameters: map[string]any{"decision.$": "States.StringToJson(" + result + ".Cause)"},
		ResultPath: decision,
		Next:       st.ID + "-rejected",
	}
	params := map[string]any{"decision": string(tool.Reject), "reason.$": decision + ".decision.reason", "approver.$": decision + ".decision.approver"}
	if st.Ask != nil {
		// review-decision writes answer into every decision JSON (null
		// with a rejection), so the path always exists.
		params["answer.$"] = decision + ".decision.answer"
	}
	e.states[st.ID+"-rejected"] = &asl.Pass{
		Comment:    "the review's decision, for the bindings of reviews." + st.ID,
		Parameters: params,
		ResultPath: decision,
		Next:       next,
	}
	return st.ID + "-rejected-parse"
}

// timedOut writes a timeout's decision and goes on to next.
func (e *emitter) timedOut(st *Step, next string) string {
	name := st.ID + "-timed-out"
	params := map[string]any{"decision": DecisionTimeout, "reason": nil, "approver": nil}
	if st.Ask != nil {
		params["answer"] = nil
	}
	e.states[name] = &asl.Pass{
		Comment:    "the review's decision, for the bindings of reviews." + st.ID,
		Parameters: params,
		ResultPath: "$.decisions." + st.ID,
		Next:       next,
	}
	return name
}

// comparisons are the ASL comparison per ordered choice operator; equals
// and not_equals compare by asl.Equals.
var comparisons = map[string]asl.Operator{
	"greater_than":           asl.GreaterThan,
	"greater_than_or_equals": asl.GreaterThanEquals,
	"less_than":              asl.LessThan,
	"less_than_or_equals":    asl.LessThanEquals,
}

func (e *emitter) choice(ps *planStep) {
	st := ps.Step
	var rules []asl.ChoiceRule
	for k, r := range st.Rules {
		cr := ps.choice[k]
		rule := comparison(cr, r)
		if r.Operator != "is_present" {
			// A Choice rule on a path that is absent fails the execution
			// (States.Runtime); toolgate's comparisons are false instead.
			guards := []asl.ChoiceRule{isPresent(cr.variable, true)}
			if cr.operand.expr != "" {
				guards = append(guards, isPresent(cr.operand.expr, true))
			}
			rule = asl.ChoiceRule{And: append(guards, rule)}
		}
		if r.Operator == "not_equals" {
			inner := rule
			rule = asl.ChoiceRule{Not: &inner}
		}
		rule.Next = e.next(r.Next, stateEnd)
		rules = append(rules, rule)
	}
	e.states[st.ID] = &asl.Choice{
		Choices: rules,
		Default: e.next(st.Default, stateEnd),
	}
}

// comparison builds one ASL Choice rule (without Next). A bound operand's
// type is unknown at compile time, so it compares as any of the types: a
// rule of mismatched types is simply false in ASL.
func comparison(cr compiledRule, r ChoiceRule) asl.ChoiceRule {
	v := cr.variable
	if r.Operator == "is_present" {
		return isPresent(v, r.Operand.b)
	}
	op, ordered := comparisons[r.Operator]
	if cr.operand.expr != "" {
		alts := []asl.ChoiceRule{
			asl.Compare(v, op, asl.Operand{Path: cr.operand.expr, PathType: "Numeric"}),
			asl.Compare(v, op, asl.Operand{Path: cr.operand.expr, PathType: "String"}),
		}
		if !ordered {
			alts = append(alts, asl.Compare(v, op, asl.Operand{Path: cr.operand.expr, PathType: "Boolean"}))
		}
		return asl.ChoiceRule{Or: alts}
	}
	switch r.Operand.kind {
	case kNumber:
		return asl.Compare(v, op, asl.Operand{Number: json.Number(r.Operand.str)})
	case kString:
		return asl.Compare(v, op, asl.Operand{String: &r.Operand.str})
	case kBool:
		return asl.Compare(v, op, asl.Operand{Bool: &r.Operand.b})
	}
	return asl.ChoiceRule{Variable: v, IsNull: true}
}

// encodeDefinition writes def as json.Encoder with SetIndent("", "  ")
// and no HTML escaping writes it (a newline at the end), and returns the
// length of its compact form (what json.Compact makes of the text, without
// the newline), which DeployedSize would measure.
//
// The definition's own members are written here, in the order
// encoding/json gives them (a struct's fields in order, a map's keys
// sorted), and each state is encoded alone, compact, into a few large
// blocks; the indented text's length is then counted from those
// (indentedLen) and each state indented at its depth into the text, one
// buffer of exactly that size. A definition of 10 000 steps is about 15 MB of text:
// encoding it whole would grow one buffer by doubling, copy it, and
// indent into another that grows again.
func encodeDefinition(def *asl.Definition) (indented []byte, compactLen int, err error) {
	// A segment of the text: raw is written as it is (the compact form is
	// raw without its spaces and newlines); compact is indented after
	// prefix, the indentation of the line it starts on.
	type segment struct {
		raw     string
		compact []byte
		prefix  string
	}
	// Five segments a state (comma, new line, name, colon, state), and
	// the definition's own members.
	segs := make([]segment, 0, 5*len(def.States)+24)
	var blocks compactBlocks
	var scratch bytes.Buffer
	enc := json.NewEncoder(&scratch)
	enc.SetEscapeHTML(false)
	size := 0
	raw := func(text string, compact int) {
		segs = append(segs, segment{raw: text})
		size += len(text)
		compactLen += compact
	}
	// value adds v's compact JSON, indented after prefix.
	value := func(v any, prefix string) error {
		scratch.Reset()
		if err := enc.Encode(v); err != nil {
			return err
		}
		b := blocks.add(bytes.TrimSuffix(scratch.Bytes(), []byte("\n")))
		segs = append(segs, segment{compact: b, prefix: prefix})
		size += indentedLen(b, len(prefix))
		compactLen += len(b)
		return nil
	}
	// member adds `"name": ` (compact `"name":`) on a new line after
	// prefix, after a comma unless it is the first.
	member := func(name string, prefix string, first bool) error {
		if !first {
			raw(",", 1)
		}
		raw("\n"+prefix, 0)
		if err := value(name, prefix); err != nil {
			return err
		}
		raw(": ", 1)
		return nil
	}
	raw("{", 1)
	if err := member("Comment", "  ", true); err != nil {
		return nil, 0, err
	}
	if err := value(def.Comment, "  "); err != nil {
		return nil, 0, err
	}
	if err := member("StartAt", "  ", false); err != nil {
		return nil, 0, err
	}
	if err := value(def.StartAt, "  "); err != nil {
		return nil, 0, err
	}
	if err := member("States", "  ", false); err != nil {
		return nil, 0, err
	}
	switch {
	case def.States == nil:
		raw("null", len("null"))
	case len(def.States) == 0:
		raw("{}", len("{}"))
	default:
		raw("{", 1)
		for i, name := range slices.Sorted(maps.Keys(def.States)) {
			if err := member(name, "    ", i == 0); err != nil {
				return nil, 0, err
			}
			if err := value(def.States[name], "    "); err != nil {
				return nil, 0, err
			}
		}
		raw("\n  }", 1)
	}
	if err := member("TimeoutSeconds", "  ", false); err != nil {
		return nil, 0, err
	}
	if err := value(def.TimeoutSeconds, "  "); err != nil {
		return nil, 0, err
	}
	raw("\n}\n", 1)

	// json.Indent first makes room for twice its input in its buffer, so
	// each state is indented into a small one reused, then copied.
	out := make([]byte, 0, size)
	for _, s := range segs {
		if s.compact == nil {
			out = append(out, s.raw...)
			continue
		}
		scratch.Reset()
		if err := json.Indent(&scratch, s.compact, s.prefix, "  "); err != nil {
			return nil, 0, err
		}
		out = append(out, scratch.Bytes()...)
	}
	return out, compactLen, nil
}

// indentedLen is the length of what json.Indent writes of compact JSON
// src with a prefix of prefixLen bytes and an indent of two spaces: each
// element of a non-empty object or array on a new line, indented by its
// depth, the closing bracket on a line of its own, a space after each
// colon; an empty object or array stays "{}" or "[]".
func indentedLen(src []byte, prefixLen int) int {
	n, depth := len(src), 0
	open, inString, escaped := false, false, false
	newline := func() { n += 1 + prefixLen + 2*depth }
	for _, c := range src {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if open && c != '}' && c != ']' {
			open = false
			depth++
			newline()
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			open = true
		case ',':
			newline()
		case ':':
			n++
		case '}', ']':
			if open {
				open = false
			} else {
				depth--
				newline()
			}
		}
	}
	return n
}

// compactBlocks holds byte strings in a few large blocks, each twice the
// last (at most 1 MiB, or the string's length), instead of one each.
type compactBlocks struct{ cur []byte }

// add copies b into the blocks and returns the copy.
func (cb *compactBlocks) add(b []byte) []byte {
	if cap(cb.cur)-len(cb.cur) < len(b) {
		cb.cur = make([]byte, 0, max(min(2*cap(cb.cur), 1<<20), 4096, len(b)))
	}
	start := len(cb.cur)
	cb.cur = append(cb.cur, b...)
	return cb.cur[start:len(cb.cur):len(cb.cur)]
}

// maxARNLength is the longest ARN publishing substitutes: a state machine
// version ARN (arn:<partition>:states:<region>:<account>:stateMachine:,
// 80 characters of name and ":" and a version number) is under 160; a
// Lambda function ARN is at most 140 characters with a qualifier (the
// Lambda API's FunctionName pattern).
const maxARNLength = 160

// DeployedSize estimates the size of a definition as Step Functions receives
// it: compact JSON (publishing drops the indentation) with every
// "${placeholder}" replaced by an ARN of the maximum length.
func DeployedSize(encoded []byte, placeholders map[string]string) (int, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, encoded); err != nil {
		return 0, err
	}
	return compactSize(compact.Bytes(), placeholders), nil
}

// compactSize is DeployedSize of a definition already compact.
func compactSize(compact []byte, placeholders map[string]string) int {
	return placeholderSize(len(compact), compact, placeholders)
}

// placeholderSize is DeployedSize of a definition whose compact form is
// compactLen bytes long, text its JSON, compact or indented: a
// "${placeholder}" is only ever inside a string, which indentation leaves
// as it is, so the count is the same in either.
func placeholderSize(compactLen int, text []byte, placeholders map[string]string) int {
	size := compactLen
	for key := range placeholders {
		p := "${" + key + "}"
		size += bytes.Count(text, []byte(p)) * (maxARNLength - len(p))
	}
	return size
}

// checkQuotas refuses a definition Step Functions would refuse. encoded
// is the definition's text and compactLen the length of its compact form
// (encodeDefinition).
func (c *checker) checkQuotas(def *asl.Definition, encoded []byte, compactLen int, placeholders map[string]string) {
	// A Map's ItemProcessor states are names of the definition too.
	asl.Walk(def.States, func(name string, _ asl.State) {
		if n := utf8.RuneCountInString(name); n > MaxStateNameLength {
			c.ds.errorf(c.sol.StepsPos, RuleQuota, "state name %q is %d characters; Step Functions allows %d", name, n, MaxStateNameLength)
		}
	})
	if size := placeholderSize(compactLen, encoded, placeholders); size > MaxDefinitionBytes {
		c.ds.errorf(c.sol.StepsPos, RuleQuota, "the definition would be %d bytes once deployed (compact, with function ARNs); Step Functions allows %d (1 MiB): split the Solution or shorten its literal values", size, MaxDefinitionBytes)
	}
}

// path is a JSONPath or intrinsic a Task resolves at run time: its member
// is written "name.$".
type path string

// parameters is a Task's Payload for a contract type of shared/tool
// (tool.Envelope, tool.ReviewTask): members by the type's JSON names, a
// path as "name.$". A name that is not a member of the type, or a
// required member left out, is the resolver's own bug: it panics, and
// every compile test fails (TestTaskPayloadsDecode decodes each payload
// with the runtime decoder).
func parameters(contract any, members map[string]any) map[string]any {
	out := make(map[string]any, len(members))
	for _, name := range tool.FieldNames(contract) {
		v, ok := members[name]
		if !ok {
			continue
		}
		if p, isPath := v.(path); isPath {
			out[name+".$"] = string(p)
		} else {
			out[name] = v
		}
		delete(members, name)
	}
	for name := range members {
		panic(fmt.Sprintf("resolver: %q is not a member of %T", name, contract))
	}
	return out
}
