package resolver

import (
	"fmt"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/resolver/asl"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Catching errors by code (docs/solutions.md, "on_error by code"): a tool
// or workflow step's on_error may be a list of {errors, next} entries,
// compiled to Catchers in order; a code the step cannot raise is refused,
// since it would never match. retry.errors narrows the retried errors.

// Names of Step Functions' own errors (Amazon States Language, "Error
// names"; AWS Step Functions developer guide, "Handling errors").
const (
	statesAll     = "States.ALL"
	statesTimeout = "States.Timeout"
	// statesTaskFailed matches any error but States.Timeout: in a Catcher
	// it is "any failure of the Task but its timeout".
	statesTaskFailed = "States.TaskFailed"
)

var (
	// statesCatchable are the States errors a Task of a tool or workflow
	// step can be failed with and a Catcher can catch: States.TaskFailed
	// (any error but a timeout), the execution role lacking a permission,
	// and a binding whose path is missing or whose intrinsic function
	// fails when the Task's Parameters are built.
	statesCatchable = []string{statesTaskFailed, "States.Permissions", "States.ParameterPathFailure", "States.IntrinsicFailure"}
	// statesNever are States errors no on_error entry of a step can
	// catch, with why.
	statesNever = map[string]string{
		"States.DataLimitExceeded":               "Step Functions ends the run with it and no Catcher catches it (docs/solutions.md, \"State size\")",
		"States.Runtime":                         "Step Functions ends the run with it and no Catcher catches it",
		"States.HeartbeatTimeout":                "the step's Tasks send no heartbeats",
		"States.NoChoiceMatched":                 "only a Choice state raises it, and toolgate's always have a Default",
		"States.BranchFailed":                    "only a Parallel state raises it",
		"States.ResultPathMatchFailure":          "the step's ResultPath always applies",
		"States.ExceedToleratedFailureThreshold": "only a Map state raises it",
		"States.ItemReaderFailed":                "only a Map state raises it",
		"States.ResultWriterFailed":              "only a Map state raises it",
		"States.QueryEvaluationError":            "toolgate's definitions use JSONPath, not JSONata",
		"States.Http.Socket":                     "only an HTTP Task raises it",
	}
	// lambdaErrors are the errors of the Lambda integration
	// (arn:aws:states:::lambda:invoke): Lambda's Invoke API errors, named
	// "Lambda.<exception>" (AWS Lambda API reference, Invoke, "Errors"),
	// the SDK's, Lambda.Unknown (the function ended without an answer)
	// and Sandbox.Timedout (the function ran out of time). A tool
	// function's own failures are the contract's codes.
	lambdaErrors = []string{
		"Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException", "Lambda.TooManyRequestsException",
		"Lambda.Unknown", "Sandbox.Timedout",
		"Lambda.EC2AccessDeniedException", "Lambda.EC2ThrottledException", "Lambda.EC2UnexpectedException",
		"Lambda.EFSIOException", "Lambda.EFSMountConnectivityException", "Lambda.EFSMountFailureException", "Lambda.EFSMountTimeoutException",
		"Lambda.ENILimitReachedException", "Lambda.InvalidParameterValueException", "Lambda.InvalidRequestContentException",
		"Lambda.InvalidRuntimeException", "Lambda.InvalidSecurityGroupIDException", "Lambda.InvalidSubnetIDException",
		"Lambda.InvalidZipFileException", "Lambda.KMSAccessDeniedException", "Lambda.KMSDisabledException",
		"Lambda.KMSInvalidStateException", "Lambda.KMSNotFoundException", "Lambda.RecursiveInvocationException",
		"Lambda.RequestTooLargeException", "Lambda.ResourceConflictException", "Lambda.ResourceNotFoundException",
		"Lambda.ResourceNotReadyException", "Lambda.SnapStartException", "Lambda.SnapStartNotReadyException",
		"Lambda.SnapStartTimeoutException", "Lambda.SubnetIPAddressLimitReachedException", "Lambda.UnsupportedMediaTypeException",
	}
	// startErrors are the errors of a workflow step's start Task
	// (arn:aws:states:::states:startExecution.sync:2): StartExecution's
	// (AWS Step Functions API reference, StartExecution, "Errors"), named
	// "StepFunctions.<exception>", and the SDK's. A child that fails,
	// times out or is aborted fails the Task with States.TaskFailed.
	// StepFunctions.ExecutionAlreadyExistsException is caught by the step
	// itself, which then recovers its child (childExists).
	startErrors = []string{
		"StepFunctions.ExecutionLimitExceededException", "StepFunctions.InvalidArnException",
		"StepFunctions.InvalidExecutionInputException", "StepFunctions.InvalidNameException",
		"StepFunctions.KmsAccessDeniedException", "StepFunctions.KmsInvalidStateException", "StepFunctions.KmsThrottlingException",
		"StepFunctions.StateMachineDeletingException", "StepFunctions.StateMachineDoesNotExistException",
		"StepFunctions.ValidationException", "StepFunctions.AWSStepFunctionsException", "StepFunctions.SdkClientException",
	}
	// describeErrors are the errors of a workflow step's recovery Tasks
	// (arn:aws:states:::aws-sdk:sfn:describeExecution): DescribeExecution's,
	// named "Sfn.<exception>" by the AWS SDK integration, and the SDK's.
	describeErrors = []string{"Sfn.ExecutionDoesNotExistException", "Sfn.InvalidArnException", "Sfn.SfnException", "Sfn.SdkClientException"}
	// recordErrors are review-request's errors for a workflow step's
	// start record (functions/review-request: a parent without a verified
	// start, or a record for another starter, input or parent, is
	// REVIEW_FORBIDDEN; a child's input its version's input record
	// refuses is REVIEW_INVALID_REQUEST; shared/review's codes).
	recordErrors = []string{"REVIEW_FORBIDDEN", "REVIEW_INVALID_REQUEST", tool.ReviewUnavailable, "REVIEW_INTERNAL"}
)

// raisable returns the error names step i's Tasks can fail with, which
// its on_error entries may catch: a tool step's, the tool contract's codes
// (and CALL_PARKED where parks says), its Task's timeout and Lambda's
// errors; a workflow step's, the failed child (States.TaskFailed),
// TOOLGATE_WORKFLOW_FAILED, and its start, recovery and record Tasks'
// errors. Both may catch statesCatchable.
func (c *checker) raisable(i int, st *Step) []string {
	names := slices.Clone(statesCatchable)
	switch st.Kind {
	case KindTool:
		for _, code := range tool.Codes() {
			names = append(names, string(code))
		}
		if c.parks(st) {
			names = append(names, string(tool.CallParked))
		}
		// A call a person reconciled as applied without its result
		// (docs/fork.md, "Reconciling").
		names = append(names, string(tool.CallReconciledNoResult))
		names = append(names, statesTimeout)
		names = append(names, lambdaErrors...)
	case KindForEach:
		// A list longer than max_items, a body's fail step, whatever a
		// body step raises that the body does not catch, and a body
		// review's failure to be requested.
		names = append(names, ForEachTooManyItems)
		for _, b := range st.ForEach.Body {
			switch b.Kind {
			case KindFail:
				names = append(names, b.Error)
			case KindTool, KindWorkflow:
				if k, ok := c.index[b.ID]; ok {
					names = append(names, c.raisable(k, b)...)
				}
			case KindReview:
				// A review that cannot be requested fails the iteration
				// (<id>-failed) with review-request's error or Lambda's.
				names = append(names, recordErrors...)
				names = append(names, lambdaErrors...)
			}
		}
		slices.Sort(names)
		names = slices.Compact(names)
	case KindWorkflow:
		names = append(names, WorkflowFailed)
		names = append(names, startErrors...)
		names = append(names, describeErrors...)
		names = append(names, recordErrors...)
		names = append(names, lambdaErrors...)
	}
	return names
}

// parks reports whether tool step st's call can end CALL_PARKED, not sent
// (docs/tools.md): an MCP tool's (its server's definition changed, or its
// credential expired), and an http call of a named toolset some host entry
// of which declares auth (its credential expired, docs/credentials.md),
// whichever entry the call's URL turns out to match.
func (c *checker) parks(st *Step) bool {
	if c.named == nil {
		return false
	}
	if c.named.Tools[st.Tool].MCP != nil {
		return true
	}
	return st.Tool == httpTool && slices.ContainsFunc(c.named.HTTPHosts, func(h toolset.HTTPHost) bool { return h.Auth != nil })
}

// checkCatches refuses an on_error entry's code that the step cannot
// raise (it would never match), that an earlier entry already catches
// (it would never be taken), or that is listed twice.
func (c *checker) checkCatches() {
	for i, st := range c.sol.Steps {
		if len(st.Catches) == 0 || st.Kind != KindTool && st.Kind != KindWorkflow && st.Kind != KindForEach {
			continue
		}
		if st.Kind == KindTool && c.tools[i] == nil {
			continue // not admitted: reported already
		}
		names := c.raisable(i, st)
		caught := map[string]int{} // name -> entry, 1-based
		for k, entry := range st.Catches {
			for _, code := range entry.Errors {
				if msg := c.cannotRaise(st, code.Name, names); msg != "" {
					c.ds.errorf(code.Pos, RuleErrorCode, "step %q on_error entry %d catches %q, %s", st.ID, k+1, excerpt.BytesWithin(code.Name, maxQuotedBytes, "..."), msg)
					continue
				}
				if j, ok := caught[code.Name]; ok {
					what := fmt.Sprintf("entry %d catches it first", j)
					if j == k+1 {
						what = "it is listed twice"
					}
					c.ds.errorf(code.Pos, RuleErrorCode, "step %q on_error entry %d catches %q, but %s: it would never be taken", st.ID, k+1, code.Name, what)
					continue
				}
				if j, ok := caught[statesTaskFailed]; ok && code.Name != statesTimeout && j <= k {
					c.ds.errorf(code.Pos, RuleErrorCode, "step %q on_error entry %d catches %q, but entry %d catches States.TaskFailed, which matches every error but States.Timeout: it would never be taken", st.ID, k+1, code.Name, j)
					continue
				}
				caught[code.Name] = k + 1
			}
		}
	}
}

// cannotRaise says why a step cannot raise the error name, or "" when it
// can.
func (c *checker) cannotRaise(st *Step, name string, names []string) string {
	if slices.Contains(names, name) {
		return ""
	}
	if name == statesAll {
		return "which is what the last entry, written without errors, catches: {next: STEP}"
	}
	if why, ok := statesNever[name]; ok {
		return "which no entry can catch: " + why
	}
	raiser := "a workflow step"
	switch st.Kind {
	case KindTool:
		raiser = st.Tool + "'s Task"
	case KindForEach:
		raiser = "this for_each (FOR_EACH_TOO_MANY_ITEMS, its body's fail errors, what its body's steps raise and its body's reviews' request errors)"
	}
	switch {
	case name == string(tool.CallParked):
		return fmt.Sprintf("which %s never raises: only an MCP tool's call, or an http call of a toolset whose host entries declare auth, is parked", raiser)
	case name == statesTimeout && st.Kind == KindWorkflow:
		return "which a workflow step never raises: a child that times out fails the step with States.TaskFailed"
	case name == childExists:
		return "which never reaches on_error: the step recovers the child it started before"
	}
	msg := fmt.Sprintf("which %s never raises, so the entry would never match", raiser)
	if near := nearest(name, names); near != "" {
		msg += fmt.Sprintf("; did you mean %q?", near)
	}
	return msg + ` (docs/solutions.md, "on_error by code", lists what it raises)`
}

// nearest returns the name closest to s by edit distance, when it is
// close enough to be a misspelling: at most a third of s's length, or the
// same letters in another case.
func nearest(s string, names []string) string {
	best, dist := "", len(s)/3+1
	for _, n := range names {
		if strings.EqualFold(n, s) {
			return n
		}
		if d := editDistance(s, n); d < dist {
			best, dist = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of two strings, by bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// retryable returns the errors a tool step's Retrier retries by default:
// the contract's retryable codes, the Task's timeout and Lambda's
// transient errors, in that order.
func retryable() []string {
	return append(append(append([]string{}, retryableTool...), statesTimeout), lambdaTransient...)
}

// checkRetryErrors refuses a retry.errors entry that is not one of the
// errors the step retries by default: retry.errors narrows them, never
// widens (a code that is not retryable could repeat an effect, or could
// never be raised).
func (c *checker) checkRetryErrors() {
	all := retryable()
	for i, st := range c.sol.Steps {
		if st.Retry == nil || len(st.Retry.Errors) == 0 || c.tools[i] == nil {
			continue
		}
		seen := map[string]bool{}
		for _, code := range st.Retry.Errors {
			switch {
			case seen[code.Name]:
				c.ds.errorf(code.Pos, RuleErrorCode, "step %q retry.errors lists %q twice", st.ID, code.Name)
			case !slices.Contains(all, code.Name):
				msg := "retry.errors narrows the errors a step retries, never widens them"
				if near := nearest(code.Name, all); near != "" {
					msg += fmt.Sprintf("; did you mean %q?", near)
				}
				c.ds.errorf(code.Pos, RuleErrorCode, "step %q retry.errors names %q, which is not retried: only %s are; %s", st.ID, excerpt.BytesWithin(code.Name, maxQuotedBytes, "..."), strings.Join(all, ", "), msg)
			}
			seen[code.Name] = true
		}
	}
}

// retryErrors is a tool step's Retrier's ErrorEquals: retryable(), or
// those of them retry.errors names, in the same order.
func retryErrors(st *Step) []string {
	all := retryable()
	if st.Retry == nil || len(st.Retry.Errors) == 0 {
		return all
	}
	var out []string
	for _, name := range all {
		if slices.ContainsFunc(st.Retry.Errors, func(r Ref) bool { return r.Name == name }) {
			out = append(out, name)
		}
	}
	return out
}

// catchers returns a step's Catchers: one per on_error entry with errors,
// in order, and States.ALL to next (the on_error target, or the step's
// Fail state), each writing the error to resultPath.
func (e *emitter) catchers(st *Step, resultPath, next string) []asl.Catcher {
	var out []asl.Catcher
	for _, k := range st.Catches {
		names := make([]string, len(k.Errors))
		for j, r := range k.Errors {
			names[j] = r.Name
		}
		out = append(out, asl.Catcher{ErrorEquals: names, ResultPath: resultPath, Next: e.next(k.Next, stateEnd)})
	}
	return append(out, asl.Catcher{ErrorEquals: []string{statesAll}, ResultPath: resultPath, Next: next})
}

// caughtAs returns the state a step's error of the given name goes to,
// as its Catchers would route it: the first entry catching it (by name,
// or by States.TaskFailed, which matches any name but States.Timeout), or
// next. A workflow step routes TOOLGATE_WORKFLOW_FAILED, which its Pass
// state writes rather than a Task raises, this way.
func (e *emitter) caughtAs(st *Step, name, next string) string {
	for _, k := range st.Catches {
		for _, r := range k.Errors {
			if r.Name == name || r.Name == statesTaskFailed && name != statesTimeout {
				return e.next(k.Next, stateEnd)
			}
		}
	}
	return next
}

// hasOnError reports whether some failure of the step goes to a target
// of its own rather than failing the run.
func (st *Step) hasOnError() bool {
	return st.OnError.Set || len(st.Catches) > 0
}
