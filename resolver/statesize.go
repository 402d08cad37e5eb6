package resolver

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/resolver/gate"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/inputrecord"
	"github.com/toolgate/toolgate/shared/tool"
)

// The state-size bound (docs/solutions.md, "State size"). Step Functions
// ends an execution whose state data exceeds MaxStateBytes with
// States.DataLimitExceeded, which no Catch catches (AWS Step Functions
// quotas), so on_error would never run: the resolver refuses a Solution
// whose state could reach it on any path. Every bound is in bytes of the
// state's JSON.
const (
	// MaxStateBytes is Step Functions' limit on a state's input or output,
	// and on a Task's payload: 256 KiB (AWS Step Functions quotas).
	MaxStateBytes = 256 << 10
	// metaBytes bounds $.meta: the run id and the parent's run id
	// (execution ARNs; the dispatcher refuses a run id over 1024
	// characters, tool.DecodeEnvelope), the seq counter and the verified
	// start (startBytes), with their keys, and the run's traceparent
	// (traceparentBytes).
	metaBytes = 4<<10 + startBytes + traceparentBytes
	// startBytes bounds a start member ($.meta.start, and a tool Task's
	// start): the verified starter, an IAM ARN of at most
	// tool.MaxStarterLength characters, none of which JSON escapes, the
	// end-user scope (shared/enduser Scope: 73 characters), and a fork's
	// parent run (an execution ARN of at most tool.MaxStarterLength
	// characters) and rerun_reads (docs/fork.md), with the keys.
	startBytes = tool.MaxStarterLength + 73 + len(`,"start":{"starter":"","end_user":""}`) +
		tool.MaxStarterLength + len(`,"forked_from":"","rerun_reads":false`)
	// traceparentBytes bounds a traceparent member of the state data or of
	// a payload, its key included: meta.traceparent is at most
	// tool.MaxTraceparentLength characters (toolgate run writes no longer
	// one; a parent's workflow step writes a formatted one, 55), counted
	// at 6 bytes a character, the most JSON escaping makes of one, since
	// Init copies what the execution input holds (docs/solutions.md,
	// "State size").
	traceparentBytes = 6*tool.MaxTraceparentLength + 2 + len(`,"traceparent":`)
	// workflowBytes bounds what a workflow step's slot holds besides its
	// result or error while it starts and recovers its child: the child's
	// execution name and ARN, its traceparent and the recovered status.
	workflowBytes = 3<<10 + traceparentBytes
	// childInputBytes bounds a child's execution input besides its input:
	// its meta (the parent's run id, twice, seq and the traceparent) and
	// the keys.
	childInputBytes = 5<<10 + traceparentBytes
	// describeBytes bounds a child's DescribeExecution answer besides its
	// input, output, error and cause: its execution and state machine
	// (version) ARNs, name, status, dates and redrive members.
	describeBytes = 3 << 10
	// errorBytes bounds a Catch's error object {Error, Cause}: a
	// function's error message is at most tool.MaxMessageBytes once JSON
	// escapes it (tool.CapMessage), Lambda's Cause wraps it with the error
	// type, and the state escapes that JSON once more, which at most
	// doubles it (a quote or backslash becomes two characters).
	errorBytes = 2*(tool.MaxMessageBytes+512) + 1<<10
	// reviewBytes bounds $.reviews.<tool id>: the decision JSON (a
	// 1000-character reason, at most 4 bytes a character or 2 escaped, a
	// 2048-character approver and fixed members: under 7 KiB) on approval;
	// on rejection the same JSON as an error's Cause, escaped once more;
	// or review-request's error object.
	reviewBytes = 17 << 10
	// reviewTaskBytes bounds a review Task's payload without its reviewers
	// and the reviewed input: the task token (at most 1024 characters,
	// review.MaxTaskTokenLength), the run id and the requester (IAM ARNs,
	// at most 2048 each), the run's traceparent and the fixed members.
	reviewTaskBytes = 8<<10 + traceparentBytes
	// numberBytes is the most characters Step Functions may write a number
	// with once it has parsed it as a double (the shortest round-trip form,
	// sign and exponent included); a literal written shorter counts as
	// this. It is inputrecord.NumberBytes, with which a run's input is
	// measured (InputSize): the bound and the input check count numbers
	// alike.
	numberBytes = inputrecord.NumberBytes
	// envelopeBytes bounds a tool Task's payload without its input, its
	// approval and its keep list: the run id, the idempotency key (the run
	// id again), the parent's run id, the execution's start time, the
	// trace member (the run's traceparent), the run's start (startBytes)
	// and the fixed members.
	envelopeBytes = 12<<10 + traceparentBytes + len(`"trace":{}`) + startBytes
	// decisionBytes bounds $.decisions.<review id>: the decision
	// {decision, reason, approver}, or while a rejection is read, the
	// whole decision JSON parsed from the rejection's Cause
	// (tool.ReviewDecision): a reason of 1000 characters and an approver of
	// 2048, each character at most 6 bytes once JSON escapes it, and 1 KiB
	// of fixed members. reasonBytes and approverBytes bound its members.
	decisionBytes = reasonBytes + approverBytes + 1<<10
	reasonBytes   = 6*1000 + 2
	approverBytes = 6*2048 + 2
	// executionIDBytes, executionNameBytes and startTimeBytes bound the
	// JSON of ${execution.id} (an execution ARN: at most 1024 characters,
	// as the dispatcher accepts a run id, tool.DecodeEnvelope),
	// ${execution.name} (80 characters, each at most 6 bytes escaped;
	// StartExecution's name) and ${execution.start_time} (an ISO 8601
	// time), quotes included.
	executionIDBytes   = 1024 + 2
	executionNameBytes = 6*80 + 2
	startTimeBytes     = 64
	// parkResultBytes bounds $.parks.<tool id>: what a park Task keeps of
	// the result review-decision sends (park.Result): the park id (29
	// characters), the decision and its reason, bounded as a review's
	// (reasonBytes), with the keys.
	parkResultBytes = reasonBytes + 128
	// parkInitBytes bounds what Init (or an iteration's ItemSelector)
	// writes of $.parks per parkable step besides its id:
	// "<id>":{"park_id":null}, and a comma.
	parkInitBytes = len(`"":{"park_id":null},`)
	// parkTaskBytes bounds a park Task's payload (park.Request and the
	// task token) without its step id and tool name: the task token (at
	// most 1024 characters, review.MaxTaskTokenLength), the run id and the
	// idempotency key (execution ARNs of at most 1024 characters, the
	// key with its seq), the seq, the toolset id, the run's start time
	// and the fixed members.
	parkTaskBytes = 6 << 10
	// maxPathSets bounds the sets of written slots tracked per step; past
	// it the step's sets are merged into one (a larger, still safe bound).
	maxPathSets = 64
	// maxExplored bounds the (step, set) pairs explored in all; past it
	// every step's bound is the union of what any path to it writes, a
	// larger, still safe bound computed in linear time.
	maxExplored = 20000
)

// outputLimit is the bound of a tool step's (kept) result: its
// output_limit_bytes, else tool.DefaultInlineLimit.
func outputLimit(st *Step) int {
	if st.OutputLimitBytes > 0 {
		return st.OutputLimitBytes
	}
	return tool.DefaultInlineLimit
}

// slot is a part of the state data one step writes: "steps.<id>" for tool
// and pass steps, "reviews.<tool id>" for reviews of a call and
// "reviews.<review id>" for reviews that show values.
type slot struct {
	name  string
	bytes int
	// parts explains bytes, largest first, for a diagnostic.
	parts []string
}

// sizer computes slot and value bounds for one Solution.
type sizer struct {
	c *checker
	// p is the plan, whose steps' values and bindings the bounds read;
	// the sizer writes its bounds into it (outputBound, withBound).
	p *plan
	// withBounds memoizes withBound by step index.
	withBounds map[int]int
	g          *gate.Graph
	input      int
	cyclic     []bool
	passMemo   map[int]int
	inPass     map[int]bool

	// The schemas the bounds read, each converted once: the input schema
	// (inputRead: converted; inputObj: nil when it is not an object) and
	// each tool's output schema (by tool; ok false where it is
	// not JSON).
	inputRead bool
	inputObj  map[string]any
	outputs   map[*catalog.Tool]outputSchema
	// items memoizes itemBound by as name and path; loopsByAs lists the
	// for_each steps by as name, in step order.
	items     map[itemKey]int
	loopsByAs map[string][]int
}

// outputSchema is a tool's output schema as encoding/json reads it.
type outputSchema struct {
	schema map[string]any
	ok     bool
}

// itemKey is an item binding: the as name and the path in the item.
type itemKey struct{ as, rest string }

// inputSchema is the Solution's input schema, converted from its value
// tree once; nil without one or when it is not an object.
func (z *sizer) inputSchema() map[string]any {
	if !z.inputRead {
		z.inputRead = true
		if z.c.sol.Input != nil {
			z.inputObj, _ = z.c.sol.Input.plain().(map[string]any)
		}
	}
	return z.inputObj
}

// toolOutputSchema is step j's tool's output schema, decoded once per
// tool (the steps that call one tool share it, read only); ok is false
// where it is not a JSON object (or null), or step j calls no tool.
func (z *sizer) toolOutputSchema(j int) (map[string]any, bool) {
	call := z.p.at[j].tool
	if call == nil {
		return nil, false
	}
	if o, done := z.outputs[call.tool]; done {
		return o.schema, o.ok
	}
	var o outputSchema
	o.ok = json.Unmarshal(call.tool.OutputSchema, &o.schema) == nil
	if z.outputs == nil {
		z.outputs = map[*catalog.Tool]outputSchema{}
	}
	z.outputs[call.tool] = o
	return o.schema, o.ok
}

// checkStateSize refuses a Solution whose state data could exceed
// MaxStateBytes at some step on some path from the start, and a tool Task
// whose payload could exceed it. A slot written more than once on a path
// (a loop) counts once; the diagnostic names the path and the largest
// contributors.
func (c *checker) checkStateSize(g *gate.Graph, p *plan) {
	z := &sizer{c: c, p: p, withBounds: map[int]int{}, g: g, input: c.inputLimit(), cyclic: cyclicNodes(g), passMemo: map[int]int{}, inPass: map[int]bool{}}
	// The state data from Init on is the input and meta, Init's own:
	// nothing of the execution input's meta enters it but its
	// traceparent, which metaBytes counts. Runs of a
	// definition compiled now carry no start proof; an execution input
	// from an earlier toolgate run still can (meta.start_proof, at most
	// shared/caller.MaxProofBytes, 8 KiB), but only Start and Init read it,
	// whose input is the execution input StartExecution already held to
	// MaxStateBytes, and the Starter, whose payload is that input with
	// the execution's ARN and start time: with the input at most
	// MaxInputLimitBytes (half of MaxStateBytes) that is under 140 KiB, and
	// the Starter refuses the run (it has no start record) before any step
	// runs. So the proof counts nowhere.
	base := z.input + metaBytes
	// Init and each iteration's ItemSelector write {"park_id": null} for
	// each parkable step: counted at every step, in and out of bodies.
	for i, st := range c.sol.Steps {
		if call := p.at[i].tool; c.reachable[i] && call != nil && call.park != nil {
			base += parkInitBytes + len(st.ID)
		}
	}
	for i, st := range c.sol.Steps {
		if c.reachable[i] && st.Kind == KindWorkflow {
			z.withBound(i)
		}
	}
	slots := make([][]*slot, len(c.sol.Steps))
	for i, st := range c.sol.Steps {
		if c.reachable[i] {
			slots[i] = z.slotsOf(i, st)
		}
	}
	toEnd := z.addLoopResults(slots)
	for i, st := range c.sol.Steps {
		call := p.at[i].tool
		if !c.reachable[i] || call == nil {
			continue
		}
		keep, _ := json.Marshal(st.Keep)
		payload := envelopeBytes + len(keep) + z.valueBound(i)
		if call.gated {
			// The approval is the decision JSON, with the answer of a
			// review of it that asks one.
			payload += reviewBytes + c.reviewAnswerBytes(st.ID)
		}
		if payload > MaxStateBytes {
			c.ds.errorf(st.Pos, RuleStateSize, "step %q: its Task's payload (the envelope) could reach %d bytes, over the %d bytes Step Functions allows a Task's input: its inputs bind too much (each bound value counts at its own bound; a value formatted into a string counts twice)",
				st.ID, payload, MaxStateBytes)
		}
		// A re-review Task's payload is its review's, with the call's
		// input (rereview.go).
		if rv := rereviewed(call); rv != nil {
			reviewers, _ := json.Marshal(rv.Reviewers)
			if payload := reviewTaskBytes + len(reviewers) + z.valueBound(i); payload > MaxStateBytes {
				c.ds.errorf(st.Pos, RuleStateSize, "step %q: its re-review Task's payload could reach %d bytes, over the %d bytes Step Functions allows a Task's input: it carries the reviewers of review %q (%d bytes of JSON) and the call's input",
					st.ID, payload, MaxStateBytes, rv.ID, len(reviewers))
			}
		}
		// A park Task's payload carries no value of the step's.
		if park := parkTaskBytes + 2*len(st.ID) + len(st.Tool); call.park != nil && park > MaxStateBytes {
			c.ds.errorf(st.Pos, RuleStateSize, "step %q: its park Task's payload could reach %d bytes, over the %d bytes Step Functions allows a Task's input", st.ID, park, MaxStateBytes)
		}
	}
	for i, st := range c.sol.Steps {
		if !c.reachable[i] || st.Kind != KindReview {
			continue
		}
		// A review of a call carries the call's input; a review that
		// shows values, the values; either, its ask, editable and notify
		// as written.
		shown, what := 0, "the reviewed call's input"
		if j, ok := c.index[st.Of.Name]; ok && st.Show == nil {
			shown = z.valueBound(j)
		} else if st.Show != nil {
			shown, what = z.valueBound(i), "the values it shows"
		} else {
			continue
		}
		reviewers, _ := json.Marshal(st.Reviewers)
		asked := reviewAskedBytes(st)
		if asked > 0 {
			what = fmt.Sprintf("its ask, editable and notify (%d bytes) and %s", asked, what)
		}
		if payload := reviewTaskBytes + len(reviewers) + asked + shown; payload > MaxStateBytes {
			c.ds.errorf(st.Pos, RuleStateSize, "review %q: its Task's payload could reach %d bytes, over the %d bytes Step Functions allows a Task's input: it carries the reviewers (%d bytes of JSON) and %s",
				st.ID, payload, MaxStateBytes, len(reviewers), what)
		}
	}
	for i, st := range c.sol.Steps {
		if !c.reachable[i] || st.Kind != KindWorkflow {
			continue
		}
		// The start Task's and the start-record Task's payloads carry the
		// child's whole input.
		if payload := envelopeBytes + childInputBytes + z.withBound(i); payload > MaxStateBytes {
			c.ds.errorf(st.Pos, RuleStateSize, "step %q: the child's input could reach %d bytes, over the %d bytes Step Functions allows a Task's input: its with binds too much",
				st.ID, payload, MaxStateBytes)
			continue
		}
		// A connector's result is bounded before any ResultSelector picks
		// from it: the start Task's result is the child's DescribeExecution
		// answer, its input and output as JSON; the recovery's
		// (aws-sdk:sfn:describeExecution) holds both as JSON text, which
		// JSON escapes again (at most doubling it).
		child, out := childInputBytes+z.withBound(i), outputLimit(st)
		if result := 2*(child+out) + describeBytes; result > MaxStateBytes {
			c.ds.errorf(st.Pos, RuleStateSize, "step %q: the child's DescribeExecution answer, which its start or its recovery returns, could reach %d bytes (its input %d and output_limit_bytes %d, as JSON text: twice each), over the %d bytes Step Functions allows a Task's result, and States.DataLimitExceeded is caught by no Catch: bind less in with, or lower output_limit_bytes",
				st.ID, result, child, out, MaxStateBytes)
		}
	}
	p.outputBound = z.outputBound()
	if c.sol.Output != nil {
		if n := p.outputBound; n > MaxStateBytes {
			c.ds.errorf(c.sol.Output.pos, RuleStateSize, "output could reach %d bytes, over the %d bytes Step Functions allows an execution's output: it binds too much", n, MaxStateBytes)
		}
	}
	x := newSlotIndex(slots)
	if unionFits(g, c.start, x, base, toEnd) {
		return // no path's sets could pass the limit: nothing to refuse
	}
	worst := worstPaths(g, c.start, x)
	for i, w := range worst {
		if w != nil {
			c.checkPath(i, w, x, base, nil)
		}
	}
	// A for_each that goes to end leaves its result in the state the End
	// state (or its iteration's end) takes, which no step's bound holds.
	for i, s := range toEnd {
		if w := worst[i]; s != nil && w != nil {
			c.checkPath(i, w, x, base, s)
		}
	}
}

// checkPath refuses step i's heaviest path w when base and its slots pass
// MaxStateBytes; with a for_each's result, the state the for_each leaves
// for end: w's slots and the result, once.
func (c *checker) checkPath(i int, w *worstPath, x *slotIndex, base int, result *slot) {
	total := base
	var contributors []*slot
	for _, s := range x.slotsIn(w.written) {
		if result == nil || s.name != result.name {
			total += s.bytes
			contributors = append(contributors, s)
		}
	}
	where := ""
	if result != nil {
		total += result.bytes
		contributors = append(contributors, result)
		where = " with the loop's result, which goes to end,"
	}
	if total <= MaxStateBytes {
		return
	}
	sort.SliceStable(contributors, func(a, b int) bool { return contributors[a].bytes > contributors[b].bytes })
	approx := ""
	if w.merged {
		approx = " (paths merged: the bound may be larger than any one path's)"
	}
	notes := []string{"path: " + c.pathNames(w.path.steps()) + approx}
	for k, s := range contributors {
		if k == 3 {
			break
		}
		notes = append(notes, fmt.Sprintf("%s: %d bytes, %s", s.name, s.bytes, strings.Join(s.parts, ", ")))
	}
	notes = append(notes, fmt.Sprintf("input: %d bytes, policy.input_limit_bytes", c.inputLimit()))
	c.ds.errorNotes(c.sol.Steps[i].Pos, RuleStateSize, notes, "step %q: the state data could reach %d bytes%s on one path, over the %d bytes Step Functions allows, and States.DataLimitExceeded is caught by no Catch, not even on_error; lower output_limit_bytes, keep fewer fields, or copy less. The path and the largest parts:",
		c.sol.Steps[i].ID, total, where, MaxStateBytes)
}

// maxPathNames is how many step ids a path note names: past it, the first
// and last few, and how many are left out between them.
const maxPathNames = 16

// pathNames is a path's step ids joined by arrows, the middle of a long
// one left out so that its note keeps the start and the step it reaches.
func (c *checker) pathNames(path []int) string {
	names := make([]string, len(path))
	for k, n := range path {
		names[k] = c.sol.Steps[n].ID
	}
	if len(names) > maxPathNames {
		head, tail := names[:maxPathNames/4], names[len(names)-(maxPathNames-maxPathNames/4):]
		names = append(append(slices.Clone(head), fmt.Sprintf("(%d more)", len(path)-len(head)-len(tail))), tail...)
	}
	return strings.Join(names, " → ")
}

// inputLimit is the run input's bound (policy.input_limit_bytes).
func (c *checker) inputLimit() int {
	if c.sol.InputLimit > 0 {
		return c.sol.InputLimit
	}
	return DefaultInputLimitBytes
}

// slotsOf is the slots step i writes, with their bounds: slotOf's, a
// review's decision ($.decisions.<review id>) when it is bound, and a
// parkable tool step's park ($.parks.<id>, the park Task's result).
func (z *sizer) slotsOf(i int, st *Step) []*slot {
	var out []*slot
	if s := z.slotOf(i, st); s != nil {
		out = append(out, s)
	}
	if r := z.p.at[i].review; r != nil && r.decision {
		s := &slot{name: "decisions." + st.ID, bytes: decisionBytes, parts: []string{"the review's decision"}}
		if n := askBytes(st); n > 0 {
			s.bytes += n
			s.parts = append(s.parts, fmt.Sprintf("and its answer %d", n))
		}
		out = append(out, s)
	}
	if call := z.p.at[i].tool; call != nil && call.park != nil {
		out = append(out, &slot{name: "parks." + st.ID, bytes: parkResultBytes, parts: []string{"a park's decision and its reason"}})
	}
	if rereviewed(z.p.at[i].tool) != nil {
		// The re-review's decision or error replaces the review's.
		out = append(out, &slot{name: "reviews." + st.ID, bytes: reviewBytes, parts: []string{"a re-review's decision or error"}})
	}
	return out
}

// slotOf is the slot step i writes, with its bound; nil for steps that
// write nothing.
func (z *sizer) slotOf(i int, st *Step) *slot {
	switch st.Kind {
	case KindTool:
		out, why := z.resultBound(i)
		s := &slot{name: "steps." + st.ID, parts: []string{why}}
		parks := z.p.at[i].tool != nil && z.p.at[i].tool.park != nil
		switch {
		case !st.hasOnError() && !parks:
			s.bytes = out + 16 // a failure without on_error ends the run
		case !st.hasOnError():
			// A park leaves CALL_PARKED's error in the slot until the call
			// is sent again and its result replaces it.
			s.bytes = max(out+16, errorBytes)
			if errorBytes > out+16 {
				s.parts = []string{fmt.Sprintf("a park's error %d", errorBytes)}
			}
		case z.cyclic[i]:
			// A loop may leave a result and then a failure's error in it.
			s.bytes = out + 16 + errorBytes
			s.parts = append(s.parts, fmt.Sprintf("and an error %d", errorBytes))
		default:
			s.bytes = max(out+16, errorBytes)
			if errorBytes > out+16 {
				s.parts = []string{fmt.Sprintf("an error %d", errorBytes)}
			}
		}
		return s
	case KindWorkflow:
		// The child's output; or, after a failure, the error with what the
		// step learnt about the child (a conflict's error and its status),
		// or the failed child's DescribeExecution answer as the error's
		// Cause (JSON text, escaped again): its input, and its own error
		// and cause, counted as a tool error's.
		out, why := z.resultBound(i)
		failed := workflowBytes + z.errorBound(i)
		s := &slot{name: "steps." + st.ID, bytes: max(out+16, failed), parts: []string{why}}
		switch {
		case z.cyclic[i]:
			// A loop may leave an output, then the child's execution and
			// a failure beside it.
			s.bytes = out + 16 + failed
			s.parts = append(s.parts, fmt.Sprintf("and the child's execution and a failed child's description %d", failed))
		case failed > out+16:
			s.parts = []string{fmt.Sprintf("the child's execution and a failed child's description with its input %d", failed)}
		}
		return s
	case KindPass:
		return &slot{name: "steps." + st.ID, bytes: z.passBound(i), parts: []string{"its values with their bindings"}}
	case KindReview:
		s := &slot{name: "reviews." + st.reviewSlot(), bytes: reviewBytes, parts: []string{"the decision or the review's error"}}
		if n := askBytes(st); n > 0 {
			// The decision JSON carries the answer on approval.
			s.bytes += n
			s.parts = append(s.parts, fmt.Sprintf("and its answer %d", n))
		}
		if n := editBytes(st); n > 0 {
			// An approval with edits names the edited members.
			s.bytes += n
			s.parts = append(s.parts, fmt.Sprintf("and the edited members' names %d", n))
		}
		return s
	case KindForEach:
		return z.forEachSlot(i, st)
	}
	return nil
}

// errorBound bounds a tool or workflow step's error object {Error, Cause}
// (its slot's "error"): a tool's, errorBytes; a workflow step's, the
// larger of a start's error and a failed child's DescribeExecution answer
// as the Cause (JSON text, escaped again): its members, the child's input
// and its own error and cause.
func (z *sizer) errorBound(i int) int {
	if z.c.sol.Steps[i].Kind == KindForEach {
		return z.forEachErrorBound(i)
	}
	if z.c.sol.Steps[i].Kind == KindWorkflow {
		return max(2*errorBytes, 2*(describeBytes+childInputBytes+z.withBound(i)+errorBytes))
	}
	return errorBytes
}

// withBound bounds workflow step i's with, once, and writes it into the
// plan (childCall.withBound, for the workflow pins); a with that binds,
// through other steps' errors, itself counts at the most a state may hold
// (the unset-binding check refuses such a Solution first).
func (z *sizer) withBound(i int) int {
	if n, ok := z.withBounds[i]; ok {
		return n
	}
	if z.inPass[i] {
		return MaxStateBytes
	}
	z.inPass[i] = true
	n := z.valueBound(i)
	delete(z.inPass, i)
	z.withBounds[i] = n
	if w := z.p.at[i].workflow; w != nil {
		w.withBound = n
	}
	return n
}

// outputBound bounds the run's result (output:), in bytes of JSON: 2 ({})
// without one.
func (z *sizer) outputBound() int {
	if z.p.output == nil {
		return 2
	}
	return z.compiledBound(z.p.output, z.p.outputUses)
}

// resultBound is a tool step's result bound: its output limit, or, when it
// keeps fields the tool's output schema bounds, the smaller sum of those.
func (z *sizer) resultBound(i int) (int, string) {
	st := z.c.sol.Steps[i]
	limit := outputLimit(st)
	why := fmt.Sprintf("output_limit_bytes %d", limit)
	if st.OutputLimitBytes == 0 {
		why = fmt.Sprintf("the default output limit %d", limit)
	}
	call := z.p.at[i].tool
	if call == nil {
		return limit, why
	}
	out, ok := z.toolOutputSchema(i)
	if !ok {
		return limit, why
	}
	if len(st.Keep) == 0 {
		if n, ok := schemaBound(out); ok && n < limit {
			return n, fmt.Sprintf("the output schema bounds it, %d", n)
		}
		return limit, why
	}
	total := 2
	for _, p := range st.Keep {
		n, ok := keptBound(out, strings.Split(p, "."))
		if !ok {
			return limit, why
		}
		total += n + 1
	}
	if total < limit {
		return total, fmt.Sprintf("kept fields the output schema bounds, %d", total)
	}
	return limit, why
}

// keptBound bounds the JSON of the member at names under an object schema,
// its key included; ok is false where the schema leaves it unbounded.
func keptBound(schema map[string]any, names []string) (int, bool) {
	for k := range schema {
		if !boundKeywords[k] && k != "$schema" && k != "$id" {
			return 0, false
		}
	}
	props, _ := schema["properties"].(map[string]any)
	sub, _ := props[names[0]].(map[string]any)
	if sub == nil {
		return 0, false
	}
	key := 6*len(names[0]) + 3
	if len(names) > 1 {
		n, ok := keptBound(sub, names[1:])
		return key + n + 2, ok
	}
	n, ok := schemaBound(sub)
	return key + n, ok
}

// boundKeywords are the keywords schemaBound understands; a schema with
// any other keyword (a $ref, a combinator, patternProperties, prefixItems,
// a condition, an unevaluated- or dependent- keyword, a draft's own, an
// exclusive bound) is taken as unbounded, since what it admits is not read
// here. $schema and $id name the draft and the resource: every draft
// shared/schema compiles (4 to 2020-12) reads the keywords here alike, and
// a meta-schema it would have to load is refused where the schema is
// compiled (schema.Compile). minimum and maximum only narrow a number;
// arrayKeywords, read for a list, narrow nothing else.
var boundKeywords = map[string]bool{
	"type": true, "enum": true, "maxLength": true, "minLength": true, "properties": true,
	"additionalProperties": true, "required": true, "title": true, "description": true,
	"format": true, "pattern": true, "$comment": true, "examples": true, "default": true,
	"$schema": true, "$id": true, "minimum": true, "maximum": true,
}

// maxBoundedInteger is the largest magnitude of a range's ends for which
// an integer counts at numberBytes: 2^53, up to which every integer is a
// double exactly (IEEE 754), so that none is written back longer.
const maxBoundedInteger = 1 << 53

// schemaBound bounds the JSON text of any value a schema admits, as Step
// Functions holds it: a boolean or null, an enum of them, a string with
// maxLength (each character at most 6 bytes escaped, RFC 8259 §7; an
// enum of strings counts so too), an integer between a minimum and a
// maximum within ±maxBoundedInteger (numberBytes), a list of at most
// maxItems items of one items schema, each bounded, or an object that
// admits only its listed properties, each bounded. An integer without
// both ends is never bounded: its digits are not, as a tool may write
// it. Between two ends, the digits of an integer written without a
// fraction or exponent are those of its ends at most, and one written
// with them ("1.000…0", "1e2") is read as the double it is (Step
// Functions' numbers "typically correspond to double-precision IEEE-854
// values", AWS Step Functions Developer Guide, "State machine data"),
// which it writes back in at most numberBytes characters. A schema
// holding any keyword outside boundKeywords and, for a list,
// arrayKeywords is unbounded.
func schemaBound(s map[string]any) (int, bool) {
	for k := range s {
		if !boundKeywords[k] && !arrayKeywords[k] {
			return 0, false
		}
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		longest, scalar := 0, true
		for _, v := range enum {
			switch v.(type) {
			case bool, nil:
				longest = max(longest, 5)
			default:
				scalar = false // strings and numbers have many spellings: their type's bound holds
			}
		}
		if scalar {
			return longest, true
		}
	}
	switch s["type"] {
	case "boolean":
		return 5, true
	case "null":
		return 4, true
	case "string":
		if n, ok := schemaInt(s["maxLength"]); ok {
			return 6*n + 2, true
		}
	case "integer":
		lo, okLo := schemaNumber(s["minimum"])
		hi, okHi := schemaNumber(s["maximum"])
		if okLo && okHi && lo >= -maxBoundedInteger && hi <= maxBoundedInteger {
			return numberBytes, true
		}
	case "array":
		items, _ := s["items"].(map[string]any) // not a draft-07 list of schemas
		n, ok := schemaInt(s["maxItems"])
		if items == nil || !ok {
			return 0, false
		}
		item, ok := schemaBound(items)
		if !ok {
			return 0, false
		}
		return listBound(n, item), true
	case "object":
		props, _ := s["properties"].(map[string]any)
		if s["additionalProperties"] != false || len(props) == 0 {
			return 0, false
		}
		total := 2
		for name, p := range props {
			sub, _ := p.(map[string]any)
			n, ok := schemaBound(sub)
			if !ok {
				return 0, false
			}
			total = min(total+6*len(name)+4+n, maxSchemaBound)
		}
		return total, true
	}
	return 0, false
}

// maxSchemaBound caps a schema's bound (schemaBound, askBound): far
// over every limit a bound is compared with (MaxStateBytes,
// tool.MaxAnswerBytes), and small enough that a list of up to 2^30
// (schemaInt) such items multiplies without passing an int64, so that
// nested lists never wrap around to a small or negative bound.
const maxSchemaBound = 1 << 32

// listBound bounds a list of at most n items of item bytes each, its
// brackets and commas: at most maxSchemaBound.
func listBound(n, item int) int {
	return min(2+n*(min(item, maxSchemaBound)+1), maxSchemaBound)
}

// schemaInt reads a non-negative whole number of a schema: a float64 from
// encoding/json, or a json.Number from a Solution's value tree.
func schemaInt(v any) (int, bool) {
	switch x := v.(type) {
	case float64:
		if x >= 0 && x <= 1<<30 && x == float64(int(x)) {
			return int(x), true
		}
	case json.Number:
		if n, err := x.Int64(); err == nil && n >= 0 && n <= 1<<30 {
			return int(n), true
		}
	}
	return 0, false
}

// passBound bounds a pass step's values.
func (z *sizer) passBound(i int) int {
	if n, ok := z.passMemo[i]; ok {
		return n
	}
	if z.inPass[i] {
		return MaxStateBytes // a pass bound by itself: refused elsewhere
	}
	z.inPass[i] = true
	n := z.valueBound(i)
	delete(z.inPass, i)
	z.passMemo[i] = n
	return n
}

// valueBound bounds step i's compiled value (a tool's input or a pass's
// values): its literal JSON, and its bindings. A binding counts at its
// path's bound, twice over when it is formatted into a string (JSON
// escaping can double it). Bindings of one source at paths none of which
// contains another read disjoint parts of it, so together they count at
// most the source's bound times their largest weight.
func (z *sizer) valueBound(i int) int {
	v := z.p.at[i].value
	return z.compiledBound(v.static, v.uses)
}

// compiledBound is valueBound of a compiled value and its bindings.
func (z *sizer) compiledBound(static any, uses []use) int {
	lit, _ := json.Marshal(static)
	n := len(lit) + numberSlack(static)
	type path struct {
		b      *binding
		weight int
	}
	type source struct {
		paths map[string]*path
		whole *binding // the source itself: the path ""
	}
	sources := map[string]*source{}
	var order []string
	for _, u := range uses {
		key := u.b.root + "." + u.b.step
		whole := &binding{root: u.b.root, step: u.b.step}
		if z.isStepError(u.b) {
			// A step's error is a source apart from its result: a
			// failure writes it next to the result of an earlier run.
			key, whole.rest = key+".error", ".error"
		}
		src := sources[key]
		if src == nil {
			src = &source{paths: map[string]*path{}, whole: whole}
			sources[key] = src
			order = append(order, key)
		}
		p := src.paths[u.b.rest]
		if p == nil {
			p = &path{b: u.b}
			src.paths[u.b.rest] = p
		}
		if u.whole {
			p.weight++
		} else {
			p.weight += 2
		}
	}
	for _, key := range order {
		src := sources[key]
		sum, most := 0, 0
		var rests []string
		for rest, p := range src.paths {
			sum += p.weight * z.bindingBound(p.b)
			most = max(most, p.weight)
			rests = append(rests, rest)
		}
		if disjointPaths(rests) {
			sum = min(sum, most*z.sourceBound(src.whole))
		}
		n += sum
	}
	return n
}

// sourceBound bounds a binding's whole source: the run input, a tool
// step's result, all of a pass step's values, or a for_each body's item or
// index.
func (z *sizer) sourceBound(b *binding) int {
	switch b.root {
	case "input":
		return z.input
	case "execution":
		return executionBound(b.step)
	case "reviews":
		if j, ok := z.c.index[b.step]; ok {
			return decisionBytes + askBytes(z.c.sol.Steps[j])
		}
		return decisionBytes
	case "item", "for_each":
		return z.bindingBound(b)
	}
	j, ok := z.c.index[b.step]
	if !ok {
		return 0
	}
	if z.isStepError(b) {
		return z.errorBound(j)
	}
	switch z.c.sol.Steps[j].Kind {
	case KindTool, KindWorkflow:
		n, _ := z.resultBound(j)
		return n
	case KindPass:
		return z.passBound(j)
	case KindForEach:
		return z.forEachOutputBound(j)
	}
	return 0
}

// numberSlack is what the literal numbers of a compiled value may grow by
// once Step Functions writes them: each to at most numberBytes.
func numberSlack(v any) int {
	switch x := v.(type) {
	case json.Number:
		return max(0, numberBytes-len(x))
	case map[string]any:
		n := 0
		for _, e := range x {
			n += numberSlack(e)
		}
		return n
	case []any:
		n := 0
		for _, e := range x {
			n += numberSlack(e)
		}
		return n
	}
	return 0
}

// disjointPaths reports whether no binding path is another's prefix (as a
// sequence of accessors: .a is a prefix of .a.b and .a[0], not of .ab).
func disjointPaths(paths []string) bool {
	for a, p := range paths {
		for b, q := range paths {
			if a != b && (p == "" || strings.HasPrefix(q, p+".") || strings.HasPrefix(q, p+"[")) {
				return false
			}
		}
	}
	return true
}

// bindingBound bounds a bound value: the run input, a tool step's result,
// or a pass step's values; a path the input schema or the tool's output
// schema bounds (a boolean, a number, an enum, a string with maxLength)
// counts at that bound.
func (z *sizer) bindingBound(b *binding) int {
	switch b.root {
	case "for_each":
		return numberBytes
	case "item":
		return z.itemBound(b.step, b.rest)
	case "execution":
		return executionBound(b.step)
	case "reviews":
		switch {
		case b.rest == ".reason":
			return reasonBytes
		case b.rest == ".approver":
			return approverBytes
		case b.isAnswer():
			if j, ok := z.c.index[b.step]; ok {
				return max(askBytes(z.c.sol.Steps[j]), 4) // null but on approval
			}
			return tool.MaxAnswerBytes
		}
		return len(`"timeout"`)
	}
	if b.root == "input" {
		if schema := z.inputSchema(); schema != nil {
			if n, ok := pathBound(schema, b.rest); ok {
				return min(n, z.input)
			}
		}
		return z.input
	}
	j, ok := z.c.index[b.step]
	if !ok {
		return 0 // reported by the binding checks
	}
	if z.isStepError(b) {
		return z.errorBound(j)
	}
	switch z.c.sol.Steps[j].Kind {
	case KindTool:
		n, _ := z.resultBound(j)
		if call := z.p.at[j].tool; call != nil && strings.HasPrefix(b.rest, ".output.") {
			if schema, ok := z.toolOutputSchema(j); ok {
				if m, ok := pathBound(schema, strings.TrimPrefix(b.rest, ".output")); ok {
					return min(m, n)
				}
			}
		}
		return n
	case KindWorkflow:
		n, _ := z.resultBound(j)
		return n
	case KindPass:
		return z.passFieldBound(j, b.rest)
	case KindForEach:
		return z.forEachOutputBound(j)
	}
	return 0
}

// isStepError reports whether b reads a tool or workflow step's error.
func (z *sizer) isStepError(b *binding) bool {
	j, ok := z.c.index[b.step]
	return ok && b.isError() && (z.c.sol.Steps[j].Kind == KindTool || z.c.sol.Steps[j].Kind == KindWorkflow || z.c.sol.Steps[j].Kind == KindForEach)
}

// executionBound bounds the JSON of ${execution.<field>}.
func executionBound(field string) int {
	switch field {
	case "id":
		return executionIDBytes
	case "name":
		return executionNameBytes
	}
	return startTimeBytes
}

// passFieldBound bounds the value at path in pass step j's values: the
// bound of the top-level field it is in, or of all the values.
func (z *sizer) passFieldBound(j int, path string) int {
	st := z.c.sol.Steps[j]
	name, _, _ := strings.Cut(strings.TrimPrefix(path, "."), ".")
	name, _, _ = strings.Cut(name, "[")
	if st.Pass == nil || path == "" || z.inPass[j] {
		return z.passBound(j)
	}
	for _, f := range st.Pass.fields {
		if f.key != name {
			continue
		}
		var uses []use
		c, errs := compileParams(f.val, false, &uses)
		if len(errs) > 0 {
			return z.passBound(j)
		}
		z.inPass[j] = true
		n := z.compiledBound(c.static, uses)
		delete(z.inPass, j)
		return n
	}
	return z.passBound(j)
}

// pathBound bounds the value at a binding path (".a.b"; no indexes) under
// an object schema, when the schema bounds it (schemaBound).
func pathBound(schema map[string]any, path string) (int, bool) {
	if path == "" {
		return 0, false
	}
	if schema = schemaAt(schema, path); schema == nil {
		return 0, false
	}
	return schemaBound(schema)
}

// schemaAt is the schema of the value at a binding path (".a.b"; no
// indexes; "" for the value itself) under an object schema, when every
// object schema on the way has only boundKeywords; nil otherwise.
func schemaAt(schema map[string]any, path string) map[string]any {
	if strings.Contains(path, "[") {
		return nil
	}
	if path == "" {
		return schema
	}
	for _, name := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		for k := range schema {
			if !boundKeywords[k] && k != "$schema" && k != "$id" {
				return nil // e.g. a $ref or allOf could admit other members
			}
		}
		props, _ := schema["properties"].(map[string]any)
		if schema, _ = props[name].(map[string]any); schema == nil {
			return nil
		}
	}
	return schema
}

// cyclicNodes reports the steps on a cycle of the graph: those in a
// strongly connected component of more than one step, or with an edge to
// themselves.
func cyclicNodes(g *gate.Graph) []bool {
	comp, _ := stronglyConnected(g)
	size := make([]int, len(g.Nodes))
	for _, k := range comp {
		size[k]++
	}
	out := make([]bool, len(g.Nodes))
	for v := range g.Nodes {
		out[v] = size[comp[v]] > 1
		for _, e := range g.Nodes[v].Next {
			out[v] = out[v] || e.To == v
		}
	}
	return out
}

// stronglyConnected numbers the graph's strongly connected components (Tarjan's
// algorithm, iterative): comp[v] is v's, and they are numbered in reverse
// topological order, so that an edge between two components goes from a
// higher number to a lower one. count is how many there are. Time and
// memory are O(steps + edges).
func stronglyConnected(g *gate.Graph) (comp []int, count int) {
	n := len(g.Nodes)
	comp = make([]int, n)
	index := make([]int, n) // order of discovery, from 1; 0: not yet
	low := make([]int, n)
	onStack := make([]bool, n)
	edge := make([]int, n) // next out-edge to look at, per node on the call stack
	var stack, calls []int
	next := 1
	for root := range n {
		if index[root] != 0 {
			continue
		}
		calls = append(calls, root)
		index[root], low[root], next = next, next, next+1
		stack = append(stack, root)
		onStack[root] = true
		for len(calls) > 0 {
			v := calls[len(calls)-1]
			if k := edge[v]; k < len(g.Nodes[v].Next) {
				edge[v]++
				w := g.Nodes[v].Next[k].To
				switch {
				case index[w] == 0:
					index[w], low[w], next = next, next, next+1
					stack = append(stack, w)
					onStack[w] = true
					calls = append(calls, w)
				case onStack[w]:
					low[v] = min(low[v], index[w])
				}
				continue
			}
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				u := calls[len(calls)-1]
				low[u] = min(low[u], low[v])
			}
			if low[v] == index[v] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = count
					if w == v {
						break
					}
				}
				count++
			}
		}
	}
	return comp, count
}

// slotIndex numbers the distinct slot names, in the order they are first
// written (by step, then by slot): byIndex[k] is the first slot named so,
// and of[v] lists the numbers of step v's slots.
type slotIndex struct {
	byIndex []*slot
	of      [][]int
}

func newSlotIndex(slots [][]*slot) *slotIndex {
	x := &slotIndex{of: make([][]int, len(slots))}
	index := map[string]int{}
	for v, ss := range slots {
		for _, s := range ss {
			k, ok := index[s.name]
			if !ok {
				k = len(x.byIndex)
				index[s.name] = k
				x.byIndex = append(x.byIndex, s)
			}
			x.of[v] = append(x.of[v], k)
		}
	}
	return x
}

// words is how many 64-bit words a set of written slots takes.
func (x *slotIndex) words() int { return (len(x.byIndex) + 63) / 64 }

// weight is the bytes of the slots in a written set, but for the slot
// named except (none when "").
func (x *slotIndex) weight(written []uint64, except string) int {
	w := 0
	for i, word := range written {
		for ; word != 0; word &= word - 1 {
			s := x.byIndex[64*i+bits.TrailingZeros64(word)]
			if s.name != except {
				w += s.bytes
			}
		}
	}
	return w
}

// slotsIn lists the slots of a written set, in index order.
func (x *slotIndex) slotsIn(written []uint64) []*slot {
	var out []*slot
	for i, word := range written {
		for ; word != 0; word &= word - 1 {
			out = append(out, x.byIndex[64*i+bits.TrailingZeros64(word)])
		}
	}
	return out
}

// unionFits reports whether no path could take the state data past
// MaxStateBytes at any step the start reaches, with or without the
// result of a for_each that goes to end (toEnd): whether, per step, base
// and every slot any path from the start writes up to it (the union of
// the path sets, which contains each) fit. When they do, worstPaths'
// exploration could find nothing to refuse, and is skipped. Steps of one
// strongly connected component share their union, so this takes one set
// per component: O(steps + edges + components × slots / 64) time.
func unionFits(g *gate.Graph, start int, x *slotIndex, base int, toEnd []*slot) bool {
	comp, count := stronglyConnected(g)
	n, nw := len(g.Nodes), x.words()
	reached := make([]bool, n)
	reached[start] = true
	queue := []int{start}
	for k := 0; k < len(queue); k++ {
		for _, e := range g.Nodes[queue[k]].Next {
			if !reached[e.To] {
				reached[e.To] = true
				queue = append(queue, e.To)
			}
		}
	}
	members := make([][]int, count)
	for v := range n {
		if reached[v] {
			members[comp[v]] = append(members[comp[v]], v)
		}
	}
	sets := make([]uint64, count*nw)
	set := func(k int) []uint64 { return sets[k*nw : (k+1)*nw] }
	for k := count - 1; k >= 0; k-- { // topological order
		u := set(k)
		for _, v := range members[k] {
			for _, i := range x.of[v] {
				u[i/64] |= 1 << (i % 64)
			}
		}
		for _, v := range members[k] {
			if base+x.weight(u, "") > MaxStateBytes {
				return false
			}
			if r := toEnd[v]; r != nil && base+x.weight(u, r.name)+r.bytes > MaxStateBytes {
				return false
			}
			for _, e := range g.Nodes[v].Next {
				if d := comp[e.To]; d != k {
					for i, w := range u {
						set(d)[i] |= w
					}
				}
			}
		}
	}
	return true
}

// pathNode is a path from the start, as its last step and the path before
// it; paths that share a beginning share its nodes.
type pathNode struct {
	step int
	prev *pathNode
}

// steps is the path's step indexes, from the start.
func (p *pathNode) steps() []int {
	k := 0
	for q := p; q != nil; q = q.prev {
		k++
	}
	out := make([]int, k)
	for q := p; q != nil; q = q.prev {
		k--
		out[k] = q.step
	}
	return out
}

// pathSet is the slots written on one path up to a step (its own write
// included, a bit per slot index), and the path. dropped is set once a
// set of the step contains it, or it is merged.
type pathSet struct {
	written []uint64
	path    *pathNode
	merged  bool
	dropped bool
}

// worstPath is a step's heaviest path: the slots it writes and the path.
type worstPath struct {
	written []uint64
	path    *pathNode
	merged  bool
}

// arena hands out the explorer's many small objects from a few large
// blocks, so that their number of allocations does not grow with the
// (step, set) pairs explored.
type arena struct {
	words []uint64
	nodes []pathNode
	sets  []pathSet
}

const arenaBlock = 4096

func (a *arena) bitset(n int) []uint64 {
	if len(a.words) < n {
		a.words = make([]uint64, max(n, arenaBlock))
	}
	s := a.words[:n:n]
	a.words = a.words[n:]
	return s
}

func (a *arena) node(step int, prev *pathNode) *pathNode {
	if len(a.nodes) == 0 {
		a.nodes = make([]pathNode, arenaBlock)
	}
	p := &a.nodes[0]
	a.nodes = a.nodes[1:]
	*p = pathNode{step: step, prev: prev}
	return p
}

func (a *arena) set() *pathSet {
	if len(a.sets) == 0 {
		a.sets = make([]pathSet, arenaBlock/4)
	}
	p := &a.sets[0]
	a.sets = a.sets[1:]
	return p
}

// worstPaths returns, per step, the path from the start whose written
// slots weigh most at that step. It explores (step, written set) pairs,
// keeping per step only the sets no other contains; past maxPathSets a
// step's sets are merged into their union, a bound no smaller than any
// path's; past maxExplored pairs, every step's one set is the union of
// what any path to it writes (unionSets).
func worstPaths(g *gate.Graph, start int, x *slotIndex) []*worstPath {
	n, nw := len(g.Nodes), x.words()
	var a arena
	write := func(p *pathSet, v int) *pathSet {
		q := a.set()
		q.written = a.bitset(nw)
		if p != nil {
			copy(q.written, p.written)
			q.path, q.merged = a.node(v, p.path), p.merged
		} else {
			q.path = a.node(v, nil)
		}
		for _, i := range x.of[v] {
			q.written[i/64] |= 1 << (i % 64)
		}
		return q
	}
	sets := make([][]*pathSet, n)
	first := write(nil, start)
	sets[start] = []*pathSet{first}
	queue := []*pathSet{first}
	for explored, head := 0, 0; head < len(queue); explored++ {
		if explored == maxExplored {
			sets = unionSets(g, start, x, &a)
			break
		}
		p := queue[head]
		queue[head] = nil
		head++
		if p.dropped {
			continue // contained in another since it was queued
		}
		for _, e := range g.Nodes[p.path.step].Next {
			if q := addSet(&sets[e.To], write(p, e.To), &a); q != nil {
				queue = append(queue, q)
			}
		}
	}
	worst := make([]*worstPath, n)
	for v, ps := range sets {
		var best *pathSet
		bestW := 0
		for _, p := range ps {
			if w := x.weight(p.written, ""); best == nil || w > bestW {
				best, bestW = p, w
			}
		}
		if best != nil {
			worst[v] = &worstPath{written: best.written, path: best.path, merged: best.merged}
		}
	}
	return worst
}

// unionSets is the fallback of worstPaths: per step, one set holding every
// slot any path from the start writes up to it (a dataflow fixed point),
// with a shortest path to name.
func unionSets(g *gate.Graph, start int, x *slotIndex, a *arena) [][]*pathSet {
	n, nw := len(g.Nodes), x.words()
	written := make([][]uint64, n)
	paths := make([]*pathNode, n)
	mark := func(v int, from []uint64) bool {
		if written[v] == nil {
			written[v] = a.bitset(nw)
		}
		changed := false
		for k, w := range from {
			if w&^written[v][k] != 0 {
				written[v][k] |= w
				changed = true
			}
		}
		for _, i := range x.of[v] {
			if bit := uint64(1) << (i % 64); written[v][i/64]&bit == 0 {
				written[v][i/64] |= bit
				changed = true
			}
		}
		return changed
	}
	mark(start, nil)
	paths[start] = a.node(start, nil)
	queue := []int{start}
	for head := 0; head < len(queue); head++ {
		v := queue[head]
		for _, e := range g.Nodes[v].Next {
			if paths[e.To] == nil {
				paths[e.To] = a.node(e.To, paths[v])
			}
			if mark(e.To, written[v]) {
				queue = append(queue, e.To)
			}
		}
	}
	sets := make([][]*pathSet, n)
	for v := range written {
		if written[v] != nil {
			sets[v] = []*pathSet{{written: written[v], path: paths[v], merged: true}}
		}
	}
	return sets
}

// addSet adds q to a step's sets unless one of them contains it, dropping
// those q contains, and returns the set to explore from there (nil: none).
// Past maxPathSets the step's sets are merged into their union.
func addSet(sets *[]*pathSet, q *pathSet, a *arena) *pathSet {
	for _, p := range *sets {
		if subset(q.written, p.written) {
			return nil
		}
	}
	kept := (*sets)[:0]
	for _, p := range *sets {
		if subset(p.written, q.written) {
			p.dropped = true
		} else {
			kept = append(kept, p)
		}
	}
	*sets = append(kept, q)
	if len(*sets) <= maxPathSets {
		return q
	}
	u := a.set()
	*u = pathSet{written: a.bitset(len(q.written)), path: q.path, merged: true}
	for _, p := range *sets {
		for k, w := range p.written {
			u.written[k] |= w
		}
		p.dropped = true
	}
	*sets = append((*sets)[:0], u)
	return u
}

// subset reports whether every slot of a is in b.
func subset(a, b []uint64) bool {
	for k, w := range a {
		if w&^b[k] != 0 {
			return false
		}
	}
	return true
}
