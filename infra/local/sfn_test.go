package local_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
)

const (
	flakyPkg = "./sfn/testdata/flaky"
	sfnRole  = "arn:aws:iam::000000000000:role/toolgate-solution"
)

// sfnStack is one local Step Functions endpoint and the functions its
// definitions call, each under its own RIE:
//
//	echo     infra/local/testdata/echo (returns its input)
//	tool     flaky: fails as the input's behavior asks, logs to tool.log,
//	         answers {"data": {"count": 2, "summary": "two items"}, ...}
//	review   flaky: logs every event (and so its task token) to review.log
//	slow     flaky with a 1 s RIE timeout
//	gone     an invoke URL nothing listens on
type sfnStack struct {
	sfn       *local.Process
	client    *sfn.Client
	functions string // the functions file
	logs      string // directory of tool.log and review.log
}

func startSFNStack(t *testing.T) *sfnStack {
	t.Helper()
	echoBin := localtest.Bootstrap(t, echoPkg)
	flakyBin := localtest.Bootstrap(t, flakyPkg)
	logs := t.TempDir()
	echo := localtest.RIE(t, "echo", echoBin, 10*time.Second, nil)
	tool := localtest.RIE(t, "tool", flakyBin, 10*time.Second, map[string]string{
		"FLAKY_LOG":      filepath.Join(logs, "tool.log"),
		"FLAKY_RESPONSE": `{"data": {"count": 2, "summary": "two items"}}`,
	})
	// The review function also answers compiled Solutions' Starter Task,
	// whose result selector reads "starter", "end_user", "forked_from" and
	// "rerun_reads" (a run with no end user and no parent: null, false).
	review := localtest.RIE(t, "review", flakyBin, 10*time.Second, map[string]string{"FLAKY_LOG": filepath.Join(logs, "review.log"),
		"FLAKY_RESPONSE": `{"starter":"arn:aws:iam::000000000000:user/starter","end_user":null,"forked_from":null,"rerun_reads":false}`})
	slow := localtest.RIE(t, "slow", flakyBin, time.Second, nil)
	free, err := local.FreePort()
	if err != nil {
		t.Fatal(err)
	}

	functions := filepath.Join(t.TempDir(), "functions.json")
	urls := map[string]string{
		"tool": tool.InvokeURL(), "review": review.InvokeURL(), "slow": slow.InvokeURL(),
		"gone": "http://127.0.0.1:" + strconv.Itoa(free) + "/2015-03-31/functions/function/invocations",
	}
	if err := local.WriteSFNFunctions(functions, urls); err != nil {
		t.Fatal(err)
	}
	p, err := local.StartSFN(t.Context(), functions)
	if err != nil {
		t.Fatal(err)
	}
	stopAtCleanup(t, p)

	// Functions added after the start are found: the file is read per invocation.
	urls["echo"] = echo.InvokeURL()
	urls["structured-data-fetch"] = tool.InvokeURL()
	urls["send-email"] = tool.InvokeURL()
	urls["review-request"] = review.InvokeURL()
	if err := local.WriteSFNFunctions(functions, urls); err != nil {
		t.Fatal(err)
	}

	return &sfnStack{sfn: p, client: newSFNClient(p), functions: functions, logs: logs}
}

// stopAtCleanup stops the endpoint when the test ends, and logs its output
// when the test failed.
func stopAtCleanup(t *testing.T, p *local.Process) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sfn (pid %d) output:\n%s\n%s", p.PID, p.Stdout(), p.Stderr())
		}
		if err := p.Stop(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("sfn pid %d on %s ready in %v", p.PID, p.Addr, p.Startup)
}

// newSFNClient is an SDK sfn client of the endpoint p, with fake credentials.
func newSFNClient(p *local.Process) *sfn.Client {
	return sfn.New(sfn.Options{
		Region:       local.Region,
		Credentials:  credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, ""),
		BaseEndpoint: aws.String(p.Endpoint()),
	})
}

// definition reads infra/local/sfn/testdata/<file> and replaces ${key} by value.
func definition(t *testing.T, file string, subst map[string]string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("sfn", "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for k, v := range subst {
		s = strings.ReplaceAll(s, "${"+k+"}", v)
	}
	return s
}

func (s *sfnStack) create(t *testing.T, name, def string) string {
	t.Helper()
	out, err := s.client.CreateStateMachine(t.Context(), &sfn.CreateStateMachineInput{
		Name: aws.String(name), Definition: aws.String(def), RoleArn: aws.String(sfnRole),
		Type: sfntypes.StateMachineTypeStandard,
	})
	if err != nil {
		t.Fatalf("CreateStateMachine %s: %v", name, err)
	}
	if want := "arn:aws:states:us-east-1:000000000000:stateMachine:" + name; aws.ToString(out.StateMachineArn) != want {
		t.Errorf("stateMachineArn = %s, want %s", aws.ToString(out.StateMachineArn), want)
	}
	return aws.ToString(out.StateMachineArn)
}

func (s *sfnStack) start(t *testing.T, arn, name string, input any) string {
	t.Helper()
	b, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.client.StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Name: aws.String(name), Input: aws.String(string(b))})
	if err != nil {
		t.Fatalf("StartExecution: %v", err)
	}
	return aws.ToString(out.ExecutionArn)
}

// wait polls DescribeExecution until the execution has ended.
func (s *sfnStack) wait(t *testing.T, arn string) *sfn.DescribeExecutionOutput {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := s.client.DescribeExecution(t.Context(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
		if err != nil {
			t.Fatalf("DescribeExecution: %v", err)
		}
		if d.Status != sfntypes.ExecutionStatusRunning {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still RUNNING after 30 s", arn)
		}
		time.Sleep(50 * time.Millisecond) // a poll with a deadline: the execution runs in Step Functions Local
	}
}

// history reads every event, two per page (to go through nextToken).
func (s *sfnStack) history(t *testing.T, arn string) []sfntypes.HistoryEvent {
	t.Helper()
	var events []sfntypes.HistoryEvent
	var token *string
	for pages := 0; ; pages++ {
		h, err := s.client.GetExecutionHistory(t.Context(), &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(arn), MaxResults: 2, NextToken: token})
		if err != nil {
			t.Fatalf("GetExecutionHistory: %v", err)
		}
		if len(h.Events) > 2 {
			t.Fatalf("a page of %d events, asked for 2", len(h.Events))
		}
		events = append(events, h.Events...)
		if h.NextToken == nil {
			return events
		}
		token = h.NextToken
		if pages > 1000 {
			t.Fatal("nextToken never ends")
		}
	}
}

// enteredStates lists the names of the states an execution entered, in order.
func enteredStates(events []sfntypes.HistoryEvent) []string {
	var names []string
	for _, e := range events {
		if e.StateEnteredEventDetails != nil {
			names = append(names, aws.ToString(e.StateEnteredEventDetails.Name))
		}
	}
	return names
}

func eventTypes(events []sfntypes.HistoryEvent, types ...sfntypes.HistoryEventType) []sfntypes.HistoryEvent {
	var out []sfntypes.HistoryEvent
	for _, e := range events {
		for _, ty := range types {
			if e.Type == ty {
				out = append(out, e)
			}
		}
	}
	return out
}

// calls returns the events a flaky function logged for one execution (its
// run_id), waiting until there are at least n.
func (s *sfnStack) calls(t *testing.T, log, runID string, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var got []map[string]any
		if b, err := os.ReadFile(filepath.Join(s.logs, log)); err == nil {
			sc := bufio.NewScanner(bytes.NewReader(b))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var ev map[string]any
				if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
					t.Fatalf("%s: %v", log, err)
				}
				if ev["run_id"] == runID {
					got = append(got, ev)
				}
			}
		}
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d calls for %s after 20 s, want %d", log, len(got), runID, n)
		}
		time.Sleep(20 * time.Millisecond) // a poll with a deadline: the functions, real processes, write the log
	}
}

func decode(t *testing.T, s *string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(aws.ToString(s)), &v); err != nil {
		t.Fatalf("not a JSON object: %q: %v", aws.ToString(s), err)
	}
	return v
}

// at walks a decoded JSON value along keys.
func at(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func wantEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		t.Errorf("%s = %s, want %s", what, gb, wb)
	}
}

func wantStatus(t *testing.T, d *sfn.DescribeExecutionOutput, want sfntypes.ExecutionStatus) {
	t.Helper()
	if d.Status != want {
		t.Fatalf("status %s (error %q, cause %q), want %s", d.Status, aws.ToString(d.Error), aws.ToString(d.Cause), want)
	}
}

func TestSFN(t *testing.T) {
	s := startSFNStack(t)
	checkLoopbackOnly(t, s.sfn)
	toolStep := s.create(t, "tool-step", definition(t, "tool-step.asl.json", map[string]string{"Function": lambdaARN("tool")}))
	echoStep := s.create(t, "echo-step", definition(t, "tool-step.asl.json", map[string]string{"Function": lambdaARN("echo")}))
	oneCall := s.create(t, "one-call", definition(t, "one-call.asl.json", nil))
	taskTimeout := s.create(t, "task-timeout", definition(t, "task-timeout.asl.json", nil))
	review := s.create(t, "review", definition(t, "review.asl.json", map[string]string{"Function": "review", "TimeoutSeconds": "60"}))
	shortReview := s.create(t, "short-review", definition(t, "review.asl.json", map[string]string{"Function": lambdaARN("review"), "TimeoutSeconds": "1"}))

	t.Run("success", func(t *testing.T) {
		t.Parallel()
		arn := s.start(t, echoStep, "ok", map[string]any{"input": map[string]any{"recipient": "ann@example.com", "name": "Ann", "behavior": map[string]any{}}})
		wantEqual(t, "executionArn", arn, "arn:aws:states:us-east-1:000000000000:execution:echo-step:ok")
		d := s.wait(t, arn)
		wantStatus(t, d, sfntypes.ExecutionStatusSucceeded)
		out := decode(t, d.Output)
		// ResultSelector {"output.$": "$.Payload"}: the echo of the Payload, without the wrapper.
		payload := at(out, "steps", "fetch", "output")
		wantEqual(t, "steps.fetch keys", keys(at(out, "steps", "fetch")), []string{"output"})
		wantEqual(t, "run_id", at(payload, "run_id"), arn)
		wantEqual(t, "seq", at(payload, "seq"), 1.0)
		wantEqual(t, "idempotency_key (States.Format)", at(payload, "idempotency_key"), arn+"/1")
		wantEqual(t, "attempt (States.MathAdd on $$.State.RetryCount)", at(payload, "attempt"), 1.0)
		wantEqual(t, "input.to (States.Array)", at(payload, "input", "to"), []any{"ann@example.com"})
		wantEqual(t, "input.subject", at(payload, "input", "subject"), "Hi Ann")

		events := s.history(t, arn)
		wantEqual(t, "entered states", enteredStates(events), []string{"Init", "fetch_seq", "fetch", "done"})
		var types []string
		for _, e := range events {
			types = append(types, string(e.Type))
		}
		wantEqual(t, "event types", types, []string{
			"ExecutionStarted", "PassStateEntered", "PassStateExited", "PassStateEntered", "PassStateExited",
			"TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited",
			"SucceedStateEntered", "SucceedStateExited", "ExecutionSucceeded",
		})
		for i, e := range events {
			if e.Id != int64(i+1) {
				t.Errorf("event %d has id %d", i, e.Id)
			}
		}
		sched := eventTypes(events, sfntypes.HistoryEventTypeTaskScheduled)[0].TaskScheduledEventDetails
		if aws.ToString(sched.ResourceType) != "lambda" || aws.ToString(sched.Resource) != "invoke" || !strings.Contains(aws.ToString(sched.Parameters), `"FunctionName":"arn:aws:lambda:us-east-1:000000000000:function:echo"`) {
			t.Errorf("TaskScheduled details: %+v", *sched)
		}
		wrapped := decode(t, eventTypes(events, sfntypes.HistoryEventTypeTaskSucceeded)[0].TaskSucceededEventDetails.Output)
		wantEqual(t, "Lambda result StatusCode", at(wrapped, "StatusCode"), 200.0)
		wantEqual(t, "Lambda result Payload", at(wrapped, "Payload"), payload)

		// The name is taken now that the execution has ended.
		_, err := s.client.StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: aws.String(echoStep), Name: aws.String("ok"), Input: aws.String("{}")})
		var exists *sfntypes.ExecutionAlreadyExists
		if !errors.As(err, &exists) {
			t.Errorf("StartExecution with a used name: %v, want ExecutionAlreadyExists", err)
		}
	})

	t.Run("retried", func(t *testing.T) {
		t.Parallel()
		arn := s.start(t, toolStep, "retried", map[string]any{"input": map[string]any{
			"recipient": "ann@example.com", "name": "Ann",
			"behavior": map[string]any{"code": "TOOL_RATE_LIMITED", "times": 2},
		}})
		d := s.wait(t, arn)
		wantStatus(t, d, sfntypes.ExecutionStatusSucceeded)
		calls := s.calls(t, "tool.log", arn, 3)
		if len(calls) != 3 {
			t.Fatalf("%d calls, want 3 (two retries)", len(calls))
		}
		for i, c := range calls {
			wantEqual(t, "idempotency_key of attempt "+strconv.Itoa(i+1), c["idempotency_key"], arn+"/1")
			wantEqual(t, "attempt", c["attempt"], float64(i+1))
		}
		out := decode(t, d.Output)
		wantEqual(t, "calls seen by the successful attempt", at(out, "steps", "fetch", "output", "calls"), 3.0)
		failed := eventTypes(s.history(t, arn), sfntypes.HistoryEventTypeTaskFailed, sfntypes.HistoryEventTypeTaskSucceeded)
		if len(failed) != 3 || failed[2].Type != sfntypes.HistoryEventTypeTaskSucceeded {
			t.Fatalf("task outcomes %v, want two TaskFailed then TaskSucceeded", failed)
		}
		for _, e := range failed[:2] {
			wantEqual(t, "TaskFailed error", aws.ToString(e.TaskFailedEventDetails.Error), "TOOL_RATE_LIMITED")
		}
	})

	t.Run("not retried", func(t *testing.T) {
		t.Parallel()
		arn := s.start(t, toolStep, "refused", map[string]any{"input": map[string]any{
			"recipient": "nobody", "name": "Ann",
			"behavior": map[string]any{"code": "TOOL_INVALID_INPUT", "message": "recipient is not an address"},
		}})
		d := s.wait(t, arn)
		wantStatus(t, d, sfntypes.ExecutionStatusFailed)
		// The Fail state's ErrorPath/CausePath: the tool's code, and the
		// function's error payload as JSON text, as on AWS.
		wantEqual(t, "error", aws.ToString(d.Error), "TOOL_INVALID_INPUT")
		wantEqual(t, "cause", aws.ToString(d.Cause), `{"errorMessage":"recipient is not an address","errorType":"TOOL_INVALID_INPUT"}`)
		if calls := s.calls(t, "tool.log", arn, 1); len(calls) != 1 {
			t.Errorf("%d calls, want 1", len(calls))
		}
		events := s.history(t, arn)
		wantEqual(t, "entered states", enteredStates(events), []string{"Init", "fetch_seq", "fetch", "failed"})
		last := events[len(events)-1]
		if last.Type != sfntypes.HistoryEventTypeExecutionFailed || aws.ToString(last.ExecutionFailedEventDetails.Error) != "TOOL_INVALID_INPUT" {
			t.Errorf("last event %s %+v", last.Type, last.ExecutionFailedEventDetails)
		}
	})

	t.Run("lambda errors", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct {
			name, fn    string
			payload     any
			error, like string
		}{
			{"crash", "slow", map[string]any{"behavior": map[string]any{"crash": true}}, "Lambda.Unknown", "Runtime.ExitError"},
			{"rie-timeout", lambdaARN("slow"), map[string]any{"behavior": map[string]any{"sleep_ms": 1500}}, "Sandbox.Timedout", "Task timed out after 1.00 seconds"},
			{"unknown-function", lambdaARN("nosuch"), map[string]any{}, "Lambda.ResourceNotFoundException", "Function not found: arn:aws:lambda:us-east-1:000000000000:function:nosuch"},
			{"refused", "gone", map[string]any{}, "Lambda.ServiceException", "refused"},
			{"typed", "echo", map[string]any{"fail": "echo was asked to fail"}, "EchoError", "echo was asked to fail"},
		} {
			arn := s.start(t, oneCall, c.name, map[string]any{"fn": c.fn, "payload": c.payload})
			d := s.wait(t, arn)
			wantStatus(t, d, sfntypes.ExecutionStatusFailed)
			if aws.ToString(d.Error) != c.error || !strings.Contains(aws.ToString(d.Cause), c.like) {
				t.Errorf("%s: error %q cause %q, want %q and a cause with %q", c.name, aws.ToString(d.Error), aws.ToString(d.Cause), c.error, c.like)
			}
		}
		// The crashed runtime starts again on the next invocation.
		arn := s.start(t, oneCall, "after-crash", map[string]any{"fn": "slow", "payload": map[string]any{"x": 1}})
		wantStatus(t, s.wait(t, arn), sfntypes.ExecutionStatusSucceeded)
	})

	t.Run("task timeout", func(t *testing.T) {
		t.Parallel()
		// The function outlives the Task's TimeoutSeconds 1: the attempt
		// times out (States.Timeout, which States.TaskFailed does not
		// match), the retry waits until the RIE has finished the abandoned
		// invocation (a concurrent one would crash it) and times out too.
		arn := s.start(t, taskTimeout, "hung", map[string]any{"fn": "echo", "payload": map[string]any{"sleep_ms": 2500}})
		d := s.wait(t, arn)
		wantStatus(t, d, sfntypes.ExecutionStatusFailed)
		wantEqual(t, "error", aws.ToString(d.Error), "States.Timeout")
		events := s.history(t, arn)
		if n := len(eventTypes(events, sfntypes.HistoryEventTypeTaskTimedOut)); n != 2 {
			t.Errorf("%d TaskTimedOut events, want 2 (the attempt and its one retry)", n)
		}
		if n := len(eventTypes(events, sfntypes.HistoryEventTypeTaskScheduled)); n != 2 {
			t.Errorf("%d TaskScheduled events, want 2", n)
		}
		// The RIE survived and answers the next call.
		d = s.wait(t, s.start(t, oneCall, "after-timeout", map[string]any{"fn": "echo", "payload": map[string]any{"x": 1}}))
		wantStatus(t, d, sfntypes.ExecutionStatusSucceeded)
		wantEqual(t, "echo", at(decode(t, d.Output), "result", "output"), map[string]any{"x": 1.0})
	})

	t.Run("callback", func(t *testing.T) {
		t.Parallel()
		input := map[string]any{"recipient": "ann@example.com"}

		// SendTaskSuccess: its output lands at the ResultPath.
		arn := s.start(t, review, "approved", input)
		ev := s.calls(t, "review.log", arn, 1)[0]
		token, _ := ev["task_token"].(string)
		if len(token) < 32 || strings.Contains(token, "$") {
			t.Fatalf("the function got task_token %q", token)
		}
		wantEqual(t, "payload input.to", at(ev, "input", "to"), []any{"ann@example.com"})
		if _, err := s.client.SendTaskHeartbeat(t.Context(), &sfn.SendTaskHeartbeatInput{TaskToken: aws.String(token)}); err != nil {
			t.Errorf("SendTaskHeartbeat: %v", err)
		}
		if _, err := s.client.SendTaskSuccess(t.Context(), &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(`{"approved": true, "by": "reviewer-1"}`)}); err != nil {
			t.Fatalf("SendTaskSuccess: %v", err)
		}
		d := s.wait(t, arn)
		wantStatus(t, d, sfntypes.ExecutionStatusSucceeded)
		wantEqual(t, "reviews.send", at(decode(t, d.Output), "reviews", "send"), map[string]any{"approved": true, "by": "reviewer-1"})
		events := s.history(t, arn)
		wantEqual(t, "entered states", enteredStates(events), []string{"Init", "approve", "Approved"})
		if len(eventTypes(events, sfntypes.HistoryEventTypeTaskSubmitted)) != 1 || len(eventTypes(events, sfntypes.HistoryEventTypeTaskSucceeded)) != 1 {
			t.Errorf("want one TaskSubmitted and one TaskSucceeded in %v", events)
		}
		var timedOut *sfntypes.TaskTimedOut
		if _, err := s.client.SendTaskSuccess(t.Context(), &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(`{}`)}); !errors.As(err, &timedOut) {
			t.Errorf("SendTaskSuccess on a finished task: %v, want TaskTimedOut", err)
		}

		// SendTaskFailure REVIEW_REJECTED: caught, to Rejected.
		arn = s.start(t, review, "rejected", input)
		token = s.calls(t, "review.log", arn, 1)[0]["task_token"].(string)
		if _, err := s.client.SendTaskFailure(t.Context(), &sfn.SendTaskFailureInput{TaskToken: aws.String(token), Error: aws.String("REVIEW_REJECTED"), Cause: aws.String("not this week")}); err != nil {
			t.Fatalf("SendTaskFailure: %v", err)
		}
		d = s.wait(t, arn)
		wantStatus(t, d, sfntypes.ExecutionStatusSucceeded)
		wantEqual(t, "reviews.send", at(decode(t, d.Output), "reviews", "send"), map[string]any{"Error": "REVIEW_REJECTED", "Cause": "not this week"})
		wantEqual(t, "entered states", enteredStates(s.history(t, arn)), []string{"Init", "approve", "Rejected"})

		// Nobody answers within TimeoutSeconds: States.Timeout, caught.
		arn = s.start(t, shortReview, "ignored", input)
		token = s.calls(t, "review.log", arn, 1)[0]["task_token"].(string)
		d = s.wait(t, arn)
		wantStatus(t, d, sfntypes.ExecutionStatusSucceeded)
		wantEqual(t, "reviews.send.Error", at(decode(t, d.Output), "reviews", "send", "Error"), "States.Timeout")
		events = s.history(t, arn)
		wantEqual(t, "entered states", enteredStates(events), []string{"Init", "approve", "Rejected"})
		if len(eventTypes(events, sfntypes.HistoryEventTypeTaskTimedOut)) != 1 {
			t.Errorf("no TaskTimedOut event")
		}
		if _, err := s.client.SendTaskSuccess(t.Context(), &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(`{}`)}); !errors.As(err, &timedOut) {
			t.Errorf("SendTaskSuccess after the timeout: %v, want TaskTimedOut", err)
		}

		var invalid *sfntypes.InvalidToken
		if _, err := s.client.SendTaskSuccess(t.Context(), &sfn.SendTaskSuccessInput{TaskToken: aws.String("not-a-token"), Output: aws.String(`{}`)}); !errors.As(err, &invalid) {
			t.Errorf("SendTaskSuccess with a malformed token: %v, want InvalidToken", err)
		}
		unknown := token[:len(token)-4] + "AAAA"
		if unknown == token {
			unknown = token[:len(token)-4] + "BBBB"
		}
		var noTask *sfntypes.TaskDoesNotExist
		if _, err := s.client.SendTaskFailure(t.Context(), &sfn.SendTaskFailureInput{TaskToken: aws.String(unknown)}); !errors.As(err, &noTask) {
			t.Errorf("SendTaskFailure with an unknown token: %v, want TaskDoesNotExist", err)
		}
	})

	// StopExecution ends a waiting execution ABORTED with the error and
	// cause given, closes its task token and answers the stop date; a
	// second stop leaves it as it is.
	t.Run("stop", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		arn := s.start(t, review, "stopped", map[string]any{"recipient": "ann@example.com"})
		token := s.calls(t, "review.log", arn, 1)[0]["task_token"].(string)
		out, err := s.client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(arn), Error: aws.String("PARK_CANCELLED"), Cause: aws.String("cancelled by a person")})
		if err != nil {
			t.Fatalf("StopExecution: %v", err)
		}
		d := s.wait(t, arn)
		wantStatus(t, d, sfntypes.ExecutionStatusAborted)
		wantEqual(t, "error", aws.ToString(d.Error), "PARK_CANCELLED")
		wantEqual(t, "cause", aws.ToString(d.Cause), "cancelled by a person")
		if out.StopDate == nil || d.StopDate == nil || !out.StopDate.Equal(*d.StopDate) {
			t.Errorf("stopDate %v, DescribeExecution's %v", out.StopDate, d.StopDate)
		}
		aborted := eventTypes(s.history(t, arn), sfntypes.HistoryEventTypeExecutionAborted)
		if len(aborted) != 1 || aws.ToString(aborted[0].ExecutionAbortedEventDetails.Error) != "PARK_CANCELLED" {
			t.Errorf("ExecutionAborted events %v, want one with error PARK_CANCELLED", aborted)
		}
		var timedOut *sfntypes.TaskTimedOut
		if _, err := s.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(`{}`)}); !errors.As(err, &timedOut) {
			t.Errorf("SendTaskSuccess after the stop: %v, want TaskTimedOut", err)
		}
		again, err := s.client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(arn), Error: aws.String("OTHER")})
		if err != nil {
			t.Fatalf("StopExecution of a stopped execution: %v", err)
		}
		if !again.StopDate.Equal(*out.StopDate) {
			t.Errorf("a second stop moved the stop date: %v, was %v", again.StopDate, out.StopDate)
		}
		if d := s.wait(t, arn); aws.ToString(d.Error) != "PARK_CANCELLED" {
			t.Errorf("a second stop changed the error to %q", aws.ToString(d.Error))
		}
		var missing *sfntypes.ExecutionDoesNotExist
		if _, err := s.client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(arn + "-none")}); !errors.As(err, &missing) {
			t.Errorf("StopExecution of no execution: %v, want ExecutionDoesNotExist", err)
		}
	})

	t.Run("versions", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		def := func(v int) string {
			return `{"StartAt": "v", "States": {"v": {"Type": "Pass", "Result": {"v": ` + strconv.Itoa(v) + `}, "End": true}}}`
		}
		arn := s.create(t, "versioned", def(1))
		v1, err := s.client.PublishStateMachineVersion(ctx, &sfn.PublishStateMachineVersionInput{StateMachineArn: aws.String(arn), Description: aws.String("solution x version 1")})
		if err != nil {
			t.Fatal(err)
		}
		wantEqual(t, "version 1 ARN", aws.ToString(v1.StateMachineVersionArn), arn+":1")
		again, err := s.client.PublishStateMachineVersion(ctx, &sfn.PublishStateMachineVersionInput{StateMachineArn: aws.String(arn), Description: aws.String("solution x version 1")})
		if err != nil || aws.ToString(again.StateMachineVersionArn) != arn+":1" {
			t.Errorf("publishing an unchanged revision again: %v, %v; want version 1", aws.ToString(again.StateMachineVersionArn), err)
		}
		up, err := s.client.UpdateStateMachine(ctx, &sfn.UpdateStateMachineInput{StateMachineArn: aws.String(arn), Definition: aws.String(def(2)), RoleArn: aws.String(sfnRole)})
		if err != nil {
			t.Fatal(err)
		}
		var conflict *sfntypes.ConflictException
		if _, err := s.client.PublishStateMachineVersion(ctx, &sfn.PublishStateMachineVersionInput{StateMachineArn: aws.String(arn), RevisionId: aws.String("stale")}); !errors.As(err, &conflict) {
			t.Errorf("PublishStateMachineVersion with a stale revisionId: %v, want ConflictException", err)
		}
		v2, err := s.client.PublishStateMachineVersion(ctx, &sfn.PublishStateMachineVersionInput{StateMachineArn: aws.String(arn), RevisionId: up.RevisionId, Description: aws.String("solution x version 2")})
		if err != nil {
			t.Fatal(err)
		}
		wantEqual(t, "version 2 ARN", aws.ToString(v2.StateMachineVersionArn), arn+":2")

		d1, err := s.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: v1.StateMachineVersionArn})
		if err != nil {
			t.Fatal(err)
		}
		wantEqual(t, "version 1 description", aws.ToString(d1.Description), "solution x version 1")
		wantEqual(t, "version 1 definition", aws.ToString(d1.Definition), def(1))
		wantEqual(t, "version 1 ARN", aws.ToString(d1.StateMachineArn), arn+":1")
		latest, err := s.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(arn)})
		if err != nil {
			t.Fatal(err)
		}
		wantEqual(t, "latest definition", aws.ToString(latest.Definition), def(2))
		wantEqual(t, "latest revisionId", aws.ToString(latest.RevisionId), aws.ToString(up.RevisionId))

		// A version runs its own definition.
		e1 := s.start(t, aws.ToString(v1.StateMachineVersionArn), "on-v1", map[string]any{})
		wantEqual(t, "execution ARN", e1, "arn:aws:states:us-east-1:000000000000:execution:versioned:on-v1")
		d := s.wait(t, e1)
		wantStatus(t, d, sfntypes.ExecutionStatusSucceeded)
		wantEqual(t, "output of version 1", aws.ToString(d.Output), `{"v":1}`)
		wantEqual(t, "stateMachineVersionArn", aws.ToString(d.StateMachineVersionArn), arn+":1")
		wantEqual(t, "stateMachineArn", aws.ToString(d.StateMachineArn), arn)
		d = s.wait(t, s.start(t, arn, "on-latest", map[string]any{}))
		wantEqual(t, "output of the latest revision", aws.ToString(d.Output), `{"v":2}`)

		var notFound *sfntypes.StateMachineDoesNotExist
		if _, err := s.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(arn + ":9")}); !errors.As(err, &notFound) {
			t.Errorf("StartExecution on a version that does not exist: %v, want StateMachineDoesNotExist", err)
		}
	})

	// DescribeStateMachineForExecution answers the revision an execution
	// runs, fixed when it started: an update of the state machine while it
	// runs changes neither what it runs nor the answer, as on AWS, whose
	// running executions keep the previous definition and role.
	t.Run("describe state machine for execution", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		def := func(v int) string {
			return `{"StartAt": "w", "States": {"w": {"Type": "Wait", "Seconds": 1, "Next": "v"}, "v": {"Type": "Pass", "Result": {"v": ` + strconv.Itoa(v) + `}, "End": true}}}`
		}
		arn := s.create(t, "described", def(1))
		created, err := s.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(arn)})
		if err != nil {
			t.Fatal(err)
		}
		v1, err := s.client.PublishStateMachineVersion(ctx, &sfn.PublishStateMachineVersionInput{StateMachineArn: aws.String(arn)})
		if err != nil {
			t.Fatal(err)
		}
		before := s.start(t, arn, "before-update", map[string]any{})
		const otherRole = "arn:aws:iam::000000000000:role/toolgate-solution-2"
		up, err := s.client.UpdateStateMachine(ctx, &sfn.UpdateStateMachineInput{StateMachineArn: aws.String(arn), Definition: aws.String(def(2)), RoleArn: aws.String(otherRole), Publish: true})
		if err != nil {
			t.Fatal(err)
		}
		onV1 := s.start(t, aws.ToString(v1.StateMachineVersionArn), "on-v1-after-update", map[string]any{})
		after := s.start(t, arn, "after-update", map[string]any{})
		if _, err := s.client.UpdateStateMachine(ctx, &sfn.UpdateStateMachineInput{StateMachineArn: aws.String(arn), Definition: aws.String(def(3))}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			exec, definition, role, revision, output string
			updated                                  time.Time
		}{
			{before, def(1), sfnRole, "", `{"v":1}`, aws.ToTime(created.CreationDate)},
			{onV1, def(1), sfnRole, "", `{"v":1}`, aws.ToTime(created.CreationDate)},
			{after, def(2), otherRole, aws.ToString(up.RevisionId), `{"v":2}`, aws.ToTime(up.UpdateDate)},
		} {
			d, err := s.client.DescribeStateMachineForExecution(ctx, &sfn.DescribeStateMachineForExecutionInput{ExecutionArn: aws.String(c.exec)})
			if err != nil {
				t.Fatal(err)
			}
			wantEqual(t, c.exec+" stateMachineArn", aws.ToString(d.StateMachineArn), arn)
			wantEqual(t, c.exec+" name", aws.ToString(d.Name), "described")
			wantEqual(t, c.exec+" definition", aws.ToString(d.Definition), c.definition)
			wantEqual(t, c.exec+" roleArn", aws.ToString(d.RoleArn), c.role)
			wantEqual(t, c.exec+" revisionId", aws.ToString(d.RevisionId), c.revision)
			if got := aws.ToTime(d.UpdateDate); !got.Equal(c.updated) {
				t.Errorf("%s updateDate %s, want %s", c.exec, got, c.updated)
			}
			e := s.wait(t, c.exec)
			wantStatus(t, e, sfntypes.ExecutionStatusSucceeded)
			wantEqual(t, c.exec+" output", aws.ToString(e.Output), c.output)
		}
		var noExec *sfntypes.ExecutionDoesNotExist
		if _, err := s.client.DescribeStateMachineForExecution(ctx, &sfn.DescribeStateMachineForExecutionInput{ExecutionArn: aws.String(before + "-nosuch")}); !errors.As(err, &noExec) {
			t.Errorf("DescribeStateMachineForExecution of an execution that does not exist: %v, want ExecutionDoesNotExist", err)
		}
	})

	t.Run("list", func(t *testing.T) {
		names := map[string]bool{}
		var token *string
		for {
			out, err := s.client.ListStateMachines(t.Context(), &sfn.ListStateMachinesInput{MaxResults: 2, NextToken: token})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range out.StateMachines {
				names[aws.ToString(m.Name)] = true
				if aws.ToString(m.StateMachineArn) != "arn:aws:states:us-east-1:000000000000:stateMachine:"+aws.ToString(m.Name) || m.Type != sfntypes.StateMachineTypeStandard {
					t.Errorf("list entry %+v", m)
				}
			}
			if out.NextToken == nil {
				break
			}
			token = out.NextToken
		}
		for _, n := range []string{"tool-step", "echo-step", "one-call", "review", "short-review"} {
			if !names[n] {
				t.Errorf("ListStateMachines lacks %s: %v", n, names)
			}
		}
	})

	t.Run("error shapes", func(t *testing.T) {
		ctx := t.Context()
		var (
			noMachine *sfntypes.StateMachineDoesNotExist
			noExec    *sfntypes.ExecutionDoesNotExist
			badArn    *sfntypes.InvalidArn
			badDef    *sfntypes.InvalidDefinition
			exists    *sfntypes.StateMachineAlreadyExists
			badInput  *sfntypes.InvalidExecutionInput
			badName   *sfntypes.InvalidName
		)
		missing := "arn:aws:states:us-east-1:000000000000:stateMachine:nosuch"
		_, err := s.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(missing)})
		if !errors.As(err, &noMachine) || !strings.Contains(noMachine.ErrorMessage(), missing) {
			t.Errorf("DescribeStateMachine unknown: %v", err)
		}
		if _, err := s.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(missing)}); !errors.As(err, &noMachine) {
			t.Errorf("StartExecution unknown: %v", err)
		}
		if _, err := s.client.UpdateStateMachine(ctx, &sfn.UpdateStateMachineInput{StateMachineArn: aws.String(missing), Definition: aws.String("{}")}); !errors.As(err, &noMachine) {
			t.Errorf("UpdateStateMachine unknown: %v", err)
		}
		if _, err := s.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String("not-an-arn")}); !errors.As(err, &badArn) {
			t.Errorf("DescribeStateMachine malformed: %v", err)
		}
		missingExec := "arn:aws:states:us-east-1:000000000000:execution:tool-step:nosuch"
		if _, err := s.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(missingExec)}); !errors.As(err, &noExec) {
			t.Errorf("DescribeExecution unknown: %v", err)
		}
		if _, err := s.client.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(missingExec)}); !errors.As(err, &noExec) {
			t.Errorf("GetExecutionHistory unknown: %v", err)
		}
		for _, def := range []string{
			`{"StartAt": "x"`,
			`{"StartAt": "nowhere", "States": {"a": {"Type": "Succeed"}}}`,
			`{"QueryLanguage": "JSONata", "StartAt": "a", "States": {"a": {"Type": "Pass", "Output": "{% 1 %}", "End": true}}}`,
		} {
			_, err := s.client.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("bad"), Definition: aws.String(def), RoleArn: aws.String(sfnRole)})
			if !errors.As(err, &badDef) {
				t.Errorf("CreateStateMachine %s: %v, want InvalidDefinition", def, err)
			}
		}
		if _, err := s.client.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("tool-step"), Definition: aws.String(`{"StartAt": "a", "States": {"a": {"Type": "Succeed"}}}`), RoleArn: aws.String(sfnRole)}); !errors.As(err, &exists) {
			t.Errorf("CreateStateMachine with a taken name: %v, want StateMachineAlreadyExists", err)
		}
		if _, err := s.client.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("has space"), Definition: aws.String(`{"StartAt": "a", "States": {"a": {"Type": "Succeed"}}}`), RoleArn: aws.String(sfnRole)}); !errors.As(err, &badName) {
			t.Errorf("CreateStateMachine with a bad name: %v, want InvalidName", err)
		}
		if _, err := s.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(toolStep), Input: aws.String("{not json")}); !errors.As(err, &badInput) {
			t.Errorf("StartExecution with bad input: %v, want InvalidExecutionInput", err)
		}
	})

	t.Run("newsletter", func(t *testing.T) {
		t.Parallel()
		root, err := local.Root()
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(root, "testdata", "solutions", "newsletter.asl.json"))
		if err != nil {
			t.Fatal(err)
		}
		def := string(b)
		for placeholder, fn := range map[string]string{
			"FunctionStructuredDataFetch": "structured-data-fetch",
			"FunctionReviewRequest":       "review-request",
			"FunctionSendEmail":           "send-email",
		} {
			def = strings.ReplaceAll(def, "${"+placeholder+"}", lambdaARN(fn))
		}
		arn := s.start(t, s.create(t, "weekly-digest", def), "week-48", map[string]any{
			"input": map[string]any{"recipient": "team@example.com"}, "meta": map[string]any{}})

		// The review request: the digest to approve and a real task token.
		rev := s.calls(t, "review.log", arn, 1)[0]
		wantEqual(t, "review input", at(rev, "input"), map[string]any{"subject": "Weekly digest", "text": "two items", "to": []any{"team@example.com"}})
		wantEqual(t, "review requester", at(rev, "requester"), "arn:aws:iam::000000000000:user/starter")
		token, _ := rev["task_token"].(string)
		if len(token) < 32 {
			t.Fatalf("task_token %q", token)
		}
		if _, err := s.client.SendTaskSuccess(t.Context(), &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(`{"approved": true, "reviewer": "editor-1"}`)}); err != nil {
			t.Fatal(err)
		}
		d := s.wait(t, arn)
		wantStatus(t, d, sfntypes.ExecutionStatusSucceeded)

		calls := s.calls(t, "tool.log", arn, 2)
		if len(calls) != 2 {
			t.Fatalf("%d tool calls, want fetch and send", len(calls))
		}
		fetch, send := calls[0], calls[1]
		wantEqual(t, "fetch step", fetch["step"], "fetch")
		wantEqual(t, "fetch idempotency_key", fetch["idempotency_key"], arn+"/1")
		wantEqual(t, "fetch attempt", fetch["attempt"], 1.0)
		wantEqual(t, "send step", send["step"], "send")
		wantEqual(t, "send idempotency_key", send["idempotency_key"], arn+"/2")
		wantEqual(t, "send seq", send["seq"], "2")
		wantEqual(t, "send attempt", send["attempt"], 1.0)
		wantEqual(t, "send approval", send["approval"], map[string]any{"approved": true, "reviewer": "editor-1"})
		wantEqual(t, "send input", send["input"], map[string]any{"subject": "Weekly digest", "text": "two items", "to": []any{"team@example.com"}})

		wantEqual(t, "send parent_run_id", send["parent_run_id"], "")
		// The run's result is the Solution's output, {} for newsletter,
		// never the state data.
		wantEqual(t, "output", decode(t, d.Output), map[string]any{})
		wantEqual(t, "entered states", enteredStates(s.history(t, arn)),
			[]string{"Start", "Init", "Starter", "fetch-seq", "fetch", "digest", "any_items", "approve", "send-seq", "send", "End"})

		// A run of a Solution with gated tools started without a start
		// proof (or with the user's input alone) fails at once: no tool
		// runs, no review is asked for.
		machine := s.create(t, "weekly-digest-bare", def)
		for name, input := range map[string]any{
			"bare-input": map[string]any{"recipient": "team@example.com"},
		} {
			bare := s.start(t, machine, name, input)
			d := s.wait(t, bare)
			wantStatus(t, d, sfntypes.ExecutionStatusFailed)
			wantEqual(t, name+" error", aws.ToString(d.Error), "TOOLGATE_START_INVALID")
			wantEqual(t, name+" entered states", enteredStates(s.history(t, bare)), []string{"Start", "StartRefused"})
		}
	})
}

// lambdaARN is the ARN the local endpoint binds to a function name.
func lambdaARN(name string) string {
	return "arn:aws:lambda:" + local.Region + ":000000000000:function:" + name
}

func keys(v any) []string {
	m, _ := v.(map[string]any)
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestSFNStartStop: the endpoint starts without a functions file, serves
// on loopback only and stops by PID.
func TestSFNStartStop(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	p, err := local.StartSFN(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	checkLoopbackOnly(t, p)
	if !strings.Contains(p.Stdout(), "listening on http://"+p.Addr) {
		t.Errorf("no readiness line in %q", p.Stdout())
	}
	cancel() // stops it, as Stop does
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("still running 10 s after its context ended")
	}
	if err := p.Stop(); err != nil {
		t.Error(err)
	}
}
