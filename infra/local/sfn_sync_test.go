package local_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/infra/local"
)

const (
	startExecution      = "arn:aws:states:::states:startExecution"
	startExecutionSync  = "arn:aws:states:::states:startExecution.sync"
	startExecutionSync2 = "arn:aws:states:::states:startExecution.sync:2"
	describeExecution   = "arn:aws:states:::aws-sdk:sfn:describeExecution"
)

// executionARN is the ARN of execution name of the state machine machine.
func executionARN(machine, name string) string {
	return "arn:aws:states:us-east-1:000000000000:execution:" + machine + ":" + name
}

// TestSFNNestedExecutions: parent state machines start children through
// arn:aws:states:::states:startExecution[.sync|.sync:2] and read them with
// arn:aws:states:::aws-sdk:sfn:describeExecution, on one endpoint without
// functions, with a faults file.
func TestSFNNestedExecutions(t *testing.T) {
	faults := filepath.Join(t.TempDir(), "faults.json")
	p, err := local.StartSFNWith(t.Context(), local.SFNOptions{FaultsFile: faults})
	if err != nil {
		t.Fatal(err)
	}
	stopAtCleanup(t, p)
	s := &sfnStack{sfn: p, client: newSFNClient(p)}
	echo := s.create(t, "child-echo", definition(t, "child-echo.asl.json", nil))
	runChild := func(name, resource, child string) string {
		return s.create(t, name, definition(t, "parent-run-child.asl.json", map[string]string{"Resource": resource, "Child": child, "TimeoutSeconds": "60"}))
	}
	childOutput := func(child string) map[string]any {
		return map[string]any{"greeting": "hello Ann", "next": 42.0, "execution_id": child}
	}
	parentInput := func(childName string) map[string]any {
		return map[string]any{"who": "Ann", "n": 41, "child_name": childName}
	}

	t.Run("sync:2 answers with the child's input and output as JSON values", func(t *testing.T) {
		t.Parallel()
		parent := runChild("parent-sync2", startExecutionSync2, echo)
		arn := s.start(t, parent, "p", parentInput("by-sync2"))
		d := s.wait(t, arn)
		wantStatus(t, d, sfntypes.ExecutionStatusSucceeded)

		child := executionARN("child-echo", "by-sync2")
		got := at(decode(t, d.Output), "child")
		wantEqual(t, "ExecutionArn", at(got, "ExecutionArn"), child)
		wantEqual(t, "StateMachineArn", at(got, "StateMachineArn"), echo)
		wantEqual(t, "Name", at(got, "Name"), "by-sync2")
		wantEqual(t, "Status", at(got, "Status"), "SUCCEEDED")
		wantEqual(t, "Input", at(got, "Input"), map[string]any{"who": "Ann", "n": 41.0})
		wantEqual(t, "Output ($$.Execution.Id is the child's own ARN)", at(got, "Output"), childOutput(child))
		wantEqual(t, "InputDetails", at(got, "InputDetails"), map[string]any{"Included": true})
		wantEqual(t, "OutputDetails", at(got, "OutputDetails"), map[string]any{"Included": true})
		start, _ := at(got, "StartDate").(float64)
		stop, _ := at(got, "StopDate").(float64)
		if start < 1e12 || stop < start {
			t.Errorf("StartDate %v, StopDate %v: want epoch milliseconds, stop not before start", at(got, "StartDate"), at(got, "StopDate"))
		}

		events := s.history(t, arn)
		wantEqual(t, "parent events", typesOf(events), []string{
			"ExecutionStarted", "TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSubmitted", "TaskSucceeded",
			"TaskStateExited", "ExecutionSucceeded",
		})
		scheduled := eventTypes(events, sfntypes.HistoryEventTypeTaskScheduled)[0].TaskScheduledEventDetails
		wantEqual(t, "TaskScheduled resource", []string{aws.ToString(scheduled.ResourceType), aws.ToString(scheduled.Resource)}, []string{"states", "startExecution.sync:2"})
		submitted := eventTypes(events, sfntypes.HistoryEventTypeTaskSubmitted)[0].TaskSubmittedEventDetails
		wantEqual(t, "TaskSubmitted ExecutionArn", at(decode(t, submitted.Output), "ExecutionArn"), child)
		wantEqual(t, "child events", typesOf(s.history(t, child)), []string{"ExecutionStarted", "PassStateEntered", "PassStateExited", "ExecutionSucceeded"})
	})

	t.Run("sync answers with the child's input and output as JSON text", func(t *testing.T) {
		t.Parallel()
		parent := runChild("parent-sync", startExecutionSync, echo)
		d := s.wait(t, s.start(t, parent, "p", parentInput("by-sync")))
		wantStatus(t, d, sfntypes.ExecutionStatusSucceeded)
		got := at(decode(t, d.Output), "child")
		input, _ := at(got, "Input").(string)
		output, _ := at(got, "Output").(string)
		wantEqual(t, "Input", decode(t, &input), map[string]any{"who": "Ann", "n": 41.0})
		wantEqual(t, "Output", decode(t, &output), childOutput(executionARN("child-echo", "by-sync")))
	})

	t.Run("startExecution answers at once with the child's ARN", func(t *testing.T) {
		t.Parallel()
		parent := runChild("parent-start", startExecution, echo)
		arn := s.start(t, parent, "p", parentInput("by-start"))
		d := s.wait(t, arn)
		wantStatus(t, d, sfntypes.ExecutionStatusSucceeded)
		child := executionARN("child-echo", "by-start")
		got := at(decode(t, d.Output), "child")
		wantEqual(t, "result members", sortedKeys(got), []string{"ExecutionArn", "StartDate"})
		wantEqual(t, "ExecutionArn", at(got, "ExecutionArn"), child)
		if len(eventTypes(s.history(t, arn), sfntypes.HistoryEventTypeTaskSubmitted)) != 0 {
			t.Error("TaskSubmitted in the history of a Task that does not wait")
		}
		c := s.wait(t, child)
		wantStatus(t, c, sfntypes.ExecutionStatusSucceeded)
		wantEqual(t, "child output", decode(t, c.Output), childOutput(child))
	})

	t.Run("a child started by version ARN runs that version and is listed under its state machine", func(t *testing.T) {
		t.Parallel()
		machine := s.create(t, "child-versioned", definition(t, "child-echo.asl.json", nil))
		v, err := s.client.PublishStateMachineVersion(t.Context(), &sfn.PublishStateMachineVersionInput{StateMachineArn: aws.String(machine)})
		if err != nil {
			t.Fatal(err)
		}
		version := aws.ToString(v.StateMachineVersionArn)
		for _, name := range []string{"direct-1", "direct-2", "direct-3"} {
			s.wait(t, s.start(t, machine, name, map[string]any{"who": "Ann", "n": 41}))
		}
		parent := runChild("parent-by-version", startExecutionSync2, version)
		d := s.wait(t, s.start(t, parent, "p", parentInput("by-version")))
		wantStatus(t, d, sfntypes.ExecutionStatusSucceeded)
		child := executionARN("child-versioned", "by-version")
		got := at(decode(t, d.Output), "child")
		wantEqual(t, "Output ($$.Execution.Id without the version)", at(got, "Output"), childOutput(child))
		wantEqual(t, "StateMachineArn", at(got, "StateMachineArn"), machine)
		wantEqual(t, "StateMachineVersionArn", at(got, "StateMachineVersionArn"), version)
		c := s.wait(t, child)
		wantEqual(t, "DescribeExecution stateMachineVersionArn", aws.ToString(c.StateMachineVersionArn), version)

		all := s.executions(t, machine, "", 3)
		wantEqual(t, "executions of the state machine, newest first", namesOf(all), []string{"by-version", "direct-3", "direct-2", "direct-1"})
		wantEqual(t, "stateMachineVersionArn of the listed child", aws.ToString(all[0].StateMachineVersionArn), version)
		wantEqual(t, "executions of the version", namesOf(s.executions(t, version, "", 0)), []string{"by-version"})
		wantEqual(t, "running executions", namesOf(s.executions(t, machine, sfntypes.ExecutionStatusRunning, 0)), []string(nil))
	})

	t.Run("a failed child fails the Task with States.TaskFailed and its Error in the Cause", func(t *testing.T) {
		t.Parallel()
		failing := s.create(t, "child-fail", definition(t, "child-fail.asl.json", nil))
		parent := runChild("parent-of-failure", startExecutionSync2, failing)
		arn := s.start(t, parent, "p", parentInput("fails"))
		d := s.wait(t, arn)
		wantStatus(t, d, sfntypes.ExecutionStatusFailed)
		wantEqual(t, "parent error", aws.ToString(d.Error), "States.TaskFailed")
		cause := decode(t, d.Cause)
		wantEqual(t, "Cause ExecutionArn", at(cause, "ExecutionArn"), executionARN("child-fail", "fails"))
		wantEqual(t, "Cause Status", at(cause, "Status"), "FAILED")
		wantEqual(t, "Cause Error", at(cause, "Error"), "CHILD_BROKE")
		wantEqual(t, "Cause Cause", at(cause, "Cause"), "the child has nothing to do")
		wantEqual(t, "Cause Input", at(cause, "Input"), map[string]any{"who": "Ann", "n": 41.0})
		if _, ok := cause["Output"]; ok {
			t.Errorf("Cause has an Output: %v", cause)
		}
		failed := eventTypes(s.history(t, arn), sfntypes.HistoryEventTypeTaskFailed)
		if len(failed) != 1 || aws.ToString(failed[0].TaskFailedEventDetails.Error) != "States.TaskFailed" {
			t.Errorf("TaskFailed events %v, want one with States.TaskFailed", failed)
		}
	})

	t.Run("a retried child step starts one child and recovers its output", func(t *testing.T) {
		t.Parallel()
		child := s.create(t, "child-recovered", definition(t, "child-echo.asl.json", nil))
		parent := s.create(t, "parent-recover", definition(t, "parent-recover-child.asl.json", map[string]string{"Child": child, "ChildName": "child-recovered"}))
		parentARN := executionARN("parent-recover", "answer-lost")
		// The first wait for the child loses its answer after it closed: the
		// Retry starts it again with the same name and input, which AWS
		// refuses for a closed execution; the Catch reads the child instead.
		if err := local.WriteSFNFaults(faults, local.SFNFaults{SyncAfterClose: map[string]int{parentARN: 1}}); err != nil {
			t.Fatal(err)
		}
		arn := s.start(t, parent, "answer-lost", map[string]any{"who": "Ann", "n": 41})
		d := s.wait(t, arn)
		wantStatus(t, d, sfntypes.ExecutionStatusSucceeded)

		sum := sha256.Sum256([]byte(parentARN))
		name := hex.EncodeToString(sum[:])
		out := decode(t, d.Output)
		wantEqual(t, "child name (States.Hash SHA-256 of the parent's ARN)", at(out, "child", "name"), name)
		wantEqual(t, "retry's error", at(out, "child", "start_error", "Error"), "StepFunctions.ExecutionAlreadyExistsException")
		wantEqual(t, "recovered child", at(out, "child", "result"), map[string]any{
			"status": "SUCCEEDED", "output": childOutput(executionARN("child-recovered", name)),
		})
		children := s.executions(t, child, "", 0)
		wantEqual(t, "child executions", namesOf(children), []string{name})

		events := s.history(t, arn)
		var taskErrors []string
		for _, e := range eventTypes(events, sfntypes.HistoryEventTypeTaskFailed) {
			taskErrors = append(taskErrors, aws.ToString(e.TaskFailedEventDetails.Error))
		}
		wantEqual(t, "TaskFailed errors", taskErrors, []string{"StepFunctions.AWSStepFunctionsException", "StepFunctions.ExecutionAlreadyExistsException"})
		wantEqual(t, "entered states", enteredStates(events), []string{"name_child", "run_child", "recover_child", "child_succeeded", "done"})
	})

	t.Run("starting a running child again with the same name and input returns it", func(t *testing.T) {
		t.Parallel()
		waiting := s.create(t, "child-wait", definition(t, "child-wait.asl.json", nil))
		parent := s.create(t, "parent-start-twice", definition(t, "parent-start-twice.asl.json", map[string]string{"Child": waiting, "ChildName": "child-wait"}))
		// The child waits longer than the test runs; the server ends with it.
		childInput := map[string]any{"ticket": 7}
		d := s.wait(t, s.start(t, parent, "p", map[string]any{"child_name": "long-runner", "child_input": childInput}))
		wantStatus(t, d, sfntypes.ExecutionStatusSucceeded)
		out := decode(t, d.Output)
		child := executionARN("child-wait", "long-runner")
		starts, _ := at(out, "starts").([]any)
		if len(starts) != 2 || !reflect.DeepEqual(starts[0], starts[1]) || at(starts[0], "ExecutionArn") != child {
			t.Errorf("starts = %v, want the same {ExecutionArn: %s, StartDate} twice", starts, child)
		}
		wantEqual(t, "other input", at(out, "other_input", "Error"), "StepFunctions.ExecutionAlreadyExistsException")
		described := at(out, "described")
		wantEqual(t, "describeExecution Status", at(described, "Status"), "RUNNING")
		wantEqual(t, "describeExecution Input (JSON text)", at(described, "Input"), `{"ticket":7}`)
		wantEqual(t, "describeExecution Name", at(described, "Name"), "long-runner")
		if _, ok := described.(map[string]any)["Output"]; ok {
			t.Errorf("describeExecution of a running execution has an Output: %v", described)
		}
		wantEqual(t, "describeExecution of an unknown execution", at(out, "unknown", "Error"), "Sfn.ExecutionDoesNotExistException")

		// The StartExecution API is the same code path.
		b, _ := json.Marshal(childInput)
		again, err := s.client.StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: aws.String(waiting), Name: aws.String("long-runner"), Input: aws.String(string(b))})
		if err != nil {
			t.Errorf("StartExecution with the same name and input: %v", err)
		} else if aws.ToString(again.ExecutionArn) != child {
			t.Errorf("StartExecution with the same name and input: %s, want %s", aws.ToString(again.ExecutionArn), child)
		}
		var exists *sfntypes.ExecutionAlreadyExists
		if _, err := s.client.StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: aws.String(waiting), Name: aws.String("long-runner"), Input: aws.String(`{}`)}); !errors.As(err, &exists) {
			t.Errorf("StartExecution with other input: %v, want ExecutionAlreadyExists", err)
		}
		wantEqual(t, "child executions", namesOf(s.executions(t, waiting, sfntypes.ExecutionStatusRunning, 0)), []string{"long-runner"})
	})

	t.Run("a child whose parent Task timed out is stopped", func(t *testing.T) {
		t.Parallel()
		waiting := s.create(t, "child-stopped", definition(t, "child-wait.asl.json", nil))
		parent := s.create(t, "parent-times-out", definition(t, "parent-run-child.asl.json", map[string]string{
			"Resource": startExecutionSync2, "Child": waiting, "TimeoutSeconds": "1",
		}))
		arn := s.start(t, parent, "p", parentInput("outwaited"))
		d := s.wait(t, arn)
		wantStatus(t, d, sfntypes.ExecutionStatusFailed)
		wantEqual(t, "parent error", aws.ToString(d.Error), "States.Timeout")
		c := s.wait(t, executionARN("child-stopped", "outwaited"))
		wantStatus(t, c, sfntypes.ExecutionStatusAborted)
		if !strings.Contains(aws.ToString(c.Cause), arn) {
			t.Errorf("child cause %q does not name the parent %s", aws.ToString(c.Cause), arn)
		}
		events := s.history(t, aws.ToString(c.ExecutionArn))
		wantEqual(t, "child's last event", string(events[len(events)-1].Type), "ExecutionAborted")
	})

	t.Run("refusals fail the Task with the integration's error names", func(t *testing.T) {
		t.Parallel()
		starter := s.create(t, "refused-start", definition(t, "parent-refused.asl.json", map[string]string{
			"Resource": startExecutionSync2, "Parameters": `{"StateMachineArn.$": "$.arn", "Name.$": "$.name", "Input": {}}`,
		}))
		describer := s.create(t, "refused-describe", definition(t, "parent-refused.asl.json", map[string]string{
			"Resource": describeExecution, "Parameters": `{"ExecutionArn.$": "$.arn"}`,
		}))
		for i, c := range []struct {
			name, machine, arn, execName, want string
		}{
			{"malformed state machine ARN", starter, "not-an-arn", "a", "StepFunctions.InvalidArnException"},
			{"execution ARN as the state machine", starter, executionARN("child-echo", "x"), "a", "StepFunctions.InvalidArnException"},
			{"unknown state machine", starter, "arn:aws:states:us-east-1:000000000000:stateMachine:nosuch", "a", "StepFunctions.StateMachineDoesNotExistException"},
			{"unknown version", starter, echo + ":9", "a", "StepFunctions.StateMachineDoesNotExistException"},
			{"name with white space", starter, echo, "has space", "StepFunctions.InvalidNameException"},
			{"name with a colon", starter, echo, "a:b", "StepFunctions.InvalidNameException"},
			{"name of 81 characters", starter, echo, strings.Repeat("n", 81), "StepFunctions.InvalidNameException"},
			{"malformed execution ARN", describer, "not-an-arn", "", "Sfn.InvalidArnException"},
			{"unknown execution", describer, executionARN("child-echo", "nosuch"), "", "Sfn.ExecutionDoesNotExistException"},
		} {
			d := s.wait(t, s.start(t, c.machine, fmt.Sprintf("case-%d", i), map[string]any{"arn": c.arn, "name": c.execName}))
			wantStatus(t, d, sfntypes.ExecutionStatusSucceeded)
			wantEqual(t, c.name, at(decode(t, d.Output), "error", "Error"), c.want)
		}

		other := runChild("sdk-list-executions", "arn:aws:states:::aws-sdk:sfn:listExecutions", echo)
		d := s.wait(t, s.start(t, other, "p", parentInput("never")))
		wantStatus(t, d, sfntypes.ExecutionStatusFailed)
		wantEqual(t, "another aws-sdk resource", aws.ToString(d.Error), "States.Runtime")
	})
}

// executions lists the executions of a state machine or version, pageSize a
// page (0: the default), following nextToken.
func (s *sfnStack) executions(t *testing.T, arn string, status sfntypes.ExecutionStatus, pageSize int32) []sfntypes.ExecutionListItem {
	t.Helper()
	var all []sfntypes.ExecutionListItem
	var token *string
	for pages := 0; ; pages++ {
		out, err := s.client.ListExecutions(t.Context(), &sfn.ListExecutionsInput{StateMachineArn: aws.String(arn), StatusFilter: status, MaxResults: pageSize, NextToken: token})
		if err != nil {
			t.Fatalf("ListExecutions %s: %v", arn, err)
		}
		if pageSize > 0 && int32(len(out.Executions)) > pageSize {
			t.Fatalf("a page of %d executions, asked for %d", len(out.Executions), pageSize)
		}
		all = append(all, out.Executions...)
		if out.NextToken == nil {
			return all
		}
		token = out.NextToken
		if pages > 100 {
			t.Fatal("nextToken never ends")
		}
	}
}

func namesOf(items []sfntypes.ExecutionListItem) []string {
	var names []string
	for _, e := range items {
		names = append(names, aws.ToString(e.Name))
	}
	return names
}

func typesOf(events []sfntypes.HistoryEvent) []string {
	var types []string
	for _, e := range events {
		types = append(types, string(e.Type))
	}
	return types
}

func sortedKeys(v any) []string {
	k := keys(v)
	slices.Sort(k)
	return k
}
