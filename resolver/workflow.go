package resolver

import (
	"strings"

	"github.com/toolgate/toolgate/resolver/asl"
	"github.com/toolgate/toolgate/shared/tool"
)

// Workflow steps start another published Solution and wait for its output
// (docs/solutions.md, "Workflow steps").

// WorkflowFailed is the error of a workflow step whose child, started
// before, was found closed without success when the step recovered it.
const WorkflowFailed = "TOOLGATE_WORKFLOW_FAILED"

// Step Functions' errors for a child execution's start (AWS Step Functions
// developer guide, "Start a new AWS Step Functions workflow execution";
// integrations name errors "<Service>.<Exception>").
const (
	// childExists is the start's error once an execution of that name has
	// closed (or was started with other input): the step then asks whether
	// its child took the name's record, and recovers the child's result if
	// so, or starts again under the next name if not (<id>-claim).
	childExists = "StepFunctions.ExecutionAlreadyExistsException"
)

var (
	// childTransient are the start's errors a retry may clear: the start
	// names its child, so a retried start never starts a second one.
	childTransient = []string{"StepFunctions.ExecutionLimitExceededException", "StepFunctions.AWSStepFunctionsException", "StepFunctions.SdkClientException"}
	// describeTransient are the AWS SDK integration's errors for
	// DescribeExecution a retry may clear (throttling, a service error).
	describeTransient = []string{"Sfn.SfnException", "Sfn.SdkClientException"}
)

// WorkflowPlaceholder is the placeholder key of Solution name's published
// version ARN in a definition: "Workflow_" and the name with "-" as "_"
// (Solution names hold no "_", so two names never share a key).
func WorkflowPlaceholder(name string) string {
	return "Workflow_" + strings.ReplaceAll(name, "-", "_")
}

// WorkflowPin is what publishing needs to know of the Solutions a
// definition starts: publishing substitutes the child's published version
// ARN and refuses the parent when the child's recorded bounds do not fit
// (docs/solutions.md, "Workflow steps").
type WorkflowPin struct {
	Solution string   `json:"solution"`
	Steps    []string `json:"steps"`
	// OutputLimitBytes is the least output_limit_bytes of the steps: the
	// child's output bound must not exceed it.
	OutputLimitBytes int `json:"output_limit_bytes"`
	// InputBoundBytes is the most the steps' with may hold, in bytes of
	// JSON: the child's policy.input_limit_bytes must hold it.
	InputBoundBytes int `json:"input_bound_bytes"`
}

// childInput is the child execution's input: the step's with as its
// input, and meta naming the parent run, the step's seq and the step's
// span (meta.traceparent); the console links the two executions by
// AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID. traceparent is the value
// of meta.traceparent: in the start-record Task's input, null, which
// review-request fills with the step's span context before it records
// the input's digest and answers it (tool.ChildStartResult); in the
// start's, the path of that answer, so that the child starts with
// exactly the input recorded (docs/solutions.md, "Workflow steps").
func (e *emitter) childInput(ps *planStep, traceparent any) map[string]any {
	meta := map[string]any{"parent_run_id.$": "$.meta.run_id", "parent_seq.$": e.seqExpr(), "traceparent": traceparent}
	if p, ok := traceparent.(path); ok {
		delete(meta, "traceparent")
		meta["traceparent.$"] = string(p)
	}
	return map[string]any{
		"input": ps.value.static,
		"meta":  meta,
		"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$": "$$.Execution.Id",
	}
}

func (e *emitter) workflow(ps *planStep) {
	st := ps.Step
	key := WorkflowPlaceholder(st.Workflow)
	pin := e.workflows[key]
	if pin == nil {
		pin = &WorkflowPin{Solution: st.Workflow, OutputLimitBytes: outputLimit(st)}
		e.workflows[key] = pin
	}
	pin.Steps = append(pin.Steps, st.ID)
	pin.OutputLimitBytes = min(pin.OutputLimitBytes, outputLimit(st))
	pin.InputBoundBytes = max(pin.InputBoundBytes, ps.workflow.withBound)
	arn := "${" + key + "}"
	result := "$.steps." + st.ID
	catchNext := e.failTarget(st, "the child's error, or why it could not be started")
	catch := func(next string) []asl.Catcher { return e.catchers(st, result+".error", next) }
	next := e.next(st.Next, stateEnd)
	e.states[st.ID+"-seq"] = e.seqPass("one child per step and seq: the counter is outside the retried Tasks", st.ID+"-record")
	// record asks review-request to record a child start: attempt 0 at
	// first; after a start found its name in use (conflict), the name's
	// record is followed when this step's child took it, and otherwise
	// released and the next attempt's name recorded.
	record := func(comment string, attempt any, conflict bool, selector map[string]any, then string) *asl.Task {
		return &asl.Task{
			Comment:  comment,
			Resource: lambdaInvoke,
			Parameters: asl.LambdaInvoke{
				FunctionName: e.placeholder(ReviewFunction),
				Payload: parameters(tool.ChildStart{}, map[string]any{
					"parent_run_id":     path("$.meta.run_id"),
					"step":              st.ID,
					"seq":               path(e.seqExpr()),
					"state_machine_arn": arn,
					"input":             e.childInput(ps, nil),
					"attempt":           attempt,
					"conflict":          conflict,
					"traceparent":       path(metaTraceparent),
				}),
			},
			ResultSelector: selector,
			// Beside the step's result, never over it: an output a loop's
			// earlier pass left stays for ${steps.<id>.output} after a failure.
			ResultPath: result + ".child",
			Retry: []asl.Retrier{{
				ErrorEquals: append([]string{tool.ReviewUnavailable}, lambdaTransient...), MaxAttempts: 3, IntervalSeconds: 1, BackoffRate: 2.0,
			}},
			Catch: catch(catchNext),
			Next:  then,
		}
	}
	named := map[string]any{"execution_name.$": "$.Payload.execution_name", "execution_arn.$": "$.Payload.execution_arn", "attempt.$": "$.Payload.attempt",
		"traceparent.$": "$.Payload.traceparent"}
	e.states[st.ID+"-record"] = record("name the child and record this run's starter and the child's input for it", 0, false, named, st.ID)
	e.states[st.ID+"-claim"] = record("the child's name is in use: follow it if this step's child took its record, or release the record and record the next name",
		path(result+".child.attempt"), true, map[string]any{
			"execution_name.$": "$.Payload.execution_name", "execution_arn.$": "$.Payload.execution_arn", "attempt.$": "$.Payload.attempt", "taken.$": "$.Payload.taken",
			"traceparent.$": "$.Payload.traceparent",
		}, st.ID+"-claimed")
	taken := true
	e.states[st.ID+"-claimed"] = &asl.Choice{
		Choices: []asl.ChoiceRule{rule(result+".child.taken", asl.Operand{Bool: &taken}, st.ID+"-recover")},
		Default: st.ID,
	}
	e.states[st.ID] = &asl.Task{
		Comment:  "start the child's published version and wait for its output",
		Resource: startExecutionSync,
		Parameters: map[string]any{
			"StateMachineArn": arn,
			"Name.$":          result + ".child.execution_name",
			"Input":           e.childInput(ps, path(result+".child.traceparent")),
		},
		ResultSelector: map[string]any{"output.$": "$.Output"},
		ResultPath:     result,
		Retry: []asl.Retrier{{
			ErrorEquals: childTransient, MaxAttempts: 3, IntervalSeconds: 2, BackoffRate: 2.0,
		}},
		Catch: append([]asl.Catcher{{ErrorEquals: []string{childExists}, ResultPath: result + ".conflict", Next: st.ID + "-claim"}},
			catch(catchNext)...),
		Next: next,
	}
	describe := func(selector map[string]any, resultPath, then string) *asl.Task {
		return &asl.Task{
			Resource:       describeExecutionSDK,
			Parameters:     map[string]any{"ExecutionArn.$": result + ".child.execution_arn"},
			ResultSelector: selector,
			ResultPath:     resultPath,
			Retry: []asl.Retrier{{
				ErrorEquals: describeTransient, MaxAttempts: 3, IntervalSeconds: 2, BackoffRate: 2.0,
			}},
			Catch: catch(catchNext),
			Next:  then,
		}
	}
	recover := describe(map[string]any{"status.$": "$.Status"}, result+".recovered", st.ID+"-recovered")
	recover.Comment = "this step's child took its record before (a retried or redriven start): read its status"
	e.states[st.ID+"-recover"] = recover
	succeeded, running := "SUCCEEDED", "RUNNING"
	e.states[st.ID+"-recovered"] = &asl.Choice{
		Choices: []asl.ChoiceRule{
			rule(result+".recovered.status", asl.Operand{String: &succeeded}, st.ID+"-output"),
			rule(result+".recovered.status", asl.Operand{String: &running}, st.ID+"-wait"),
		},
		Default: st.ID + "-child-failed",
	}
	poll := 10
	e.states[st.ID+"-wait"] = &asl.Wait{Seconds: &poll, Next: st.ID + "-recover"}
	e.states[st.ID+"-output"] = describe(map[string]any{"output.$": "States.StringToJson($.Output)"}, result, next)
	e.states[st.ID+"-child-failed"] = &asl.Pass{
		Parameters: map[string]any{
			"Error":   WorkflowFailed,
			"Cause.$": "States.Format('child execution {} ended {}', " + result + ".child.execution_arn, " + result + ".recovered.status)",
		},
		ResultPath: result + ".error",
		Next:       e.caughtAs(st, WorkflowFailed, catchNext),
	}
}

// rule is the Choice rule "variable equals operand", going to next.
func rule(variable string, operand asl.Operand, next string) asl.ChoiceRule {
	r := asl.Compare(variable, asl.Equals, operand)
	r.Next = next
	return r
}
