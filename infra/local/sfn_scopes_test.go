package local_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
)

// TestSFNTimedOutCallbackInMapClosesOnlyItsOwnToken: two iterations of a
// Map (INLINE, MaxConcurrency 2) wait for a review in the same
// .waitForTaskToken Task state at the same time. One is left to time out,
// which its Catch takes; the other's token, issued before that timeout, is
// answered after it and still counts, so the run ends as the definition
// says (not States.Runtime); the timed-out token answers TaskTimedOut.
func TestSFNTimedOutCallbackInMapClosesOnlyItsOwnToken(t *testing.T) {
	t.Parallel()
	logs := t.TempDir()
	review := localtest.RIE(t, "review", localtest.Bootstrap(t, flakyPkg), 10*time.Second, map[string]string{"FLAKY_LOG": filepath.Join(logs, "review.log")})
	functions := filepath.Join(t.TempDir(), "functions.json")
	if err := local.WriteSFNFunctions(functions, map[string]string{"review": review.InvokeURL()}); err != nil {
		t.Fatal(err)
	}
	p, err := local.StartSFN(t.Context(), functions)
	if err != nil {
		t.Fatal(err)
	}
	stopAtCleanup(t, p)
	s := &sfnStack{sfn: p, client: newSFNClient(p), functions: functions, logs: logs}

	// Both Tasks time out after 4 s. "ignored" asks at once; "answered"
	// asks 3 s later, so its token is open when "ignored" times out (at
	// 4 s) and stays open until 7 s: it is answered in between.
	machine := s.create(t, "map-review", definition(t, "map-review.asl.json", map[string]string{"Function": lambdaARN("review"), "TimeoutSeconds": "4"}))
	arn := s.start(t, machine, "two-reviews", map[string]any{"items": []any{
		map[string]any{"id": "answered", "delay": 3},
		map[string]any{"id": "ignored", "delay": 0},
	}})
	tokens := map[string]string{}
	for _, ev := range s.calls(t, "review.log", arn, 2) {
		item, _ := ev["item"].(string)
		token, _ := ev["task_token"].(string)
		if token == "" || tokens[item] != "" {
			t.Fatalf("review requests %v: want one token for each of answered and ignored", ev)
		}
		tokens[item] = token
	}
	if tokens["answered"] == "" || tokens["ignored"] == "" || tokens["answered"] == tokens["ignored"] {
		t.Fatalf("tokens %v: want two distinct tokens, for answered and ignored", tokens)
	}

	// "ignored" has timed out and its Catch has been taken.
	s.historyUntil(t, arn, "the ignored iteration in timed-out", func(events []sfntypes.HistoryEvent) bool {
		return slices.Contains(enteredStates(events), "timed-out")
	})
	if _, err := s.client.SendTaskSuccess(t.Context(), &sfn.SendTaskSuccessInput{TaskToken: aws.String(tokens["answered"]), Output: aws.String(`{"approved": true}`)}); err != nil {
		t.Fatalf("SendTaskSuccess on the open token after the other iteration timed out: %v", err)
	}
	var timedOut *sfntypes.TaskTimedOut
	if _, err := s.client.SendTaskSuccess(t.Context(), &sfn.SendTaskSuccessInput{TaskToken: aws.String(tokens["ignored"]), Output: aws.String(`{}`)}); !errors.As(err, &timedOut) {
		t.Errorf("SendTaskSuccess on the timed-out token: %v, want TaskTimedOut", err)
	}

	d := s.wait(t, arn)
	wantStatus(t, d, sfntypes.ExecutionStatusSucceeded)
	var out []any
	if err := json.Unmarshal([]byte(aws.ToString(d.Output)), &out); err != nil {
		t.Fatalf("output %q: %v", aws.ToString(d.Output), err)
	}
	wantEqual(t, "output (the Map's, in item order)", out, []any{
		map[string]any{"item": "answered", "review": map[string]any{"approved": true}},
		map[string]any{"item": "ignored", "error": "States.Timeout"},
	})
	events := s.history(t, arn)
	wantEqual(t, "TaskTimedOut events", len(eventTypes(events, sfntypes.HistoryEventTypeTaskTimedOut)), 1)
	wantEqual(t, "TaskSucceeded events", len(eventTypes(events, sfntypes.HistoryEventTypeTaskSucceeded)), 1)
}

// TestSFNWaitsLongerThanANodeTimerKeepWaiting: Waits of 30 days, written as
// Seconds, SecondsPath, Timestamp and TimestampPath, are longer than a Node
// timer can wait (2^31-1 ms, about 24.8 days; a longer one fires at once).
// They still wait: once a 1 s Wait beside them is over, the execution is
// RUNNING and none of them has exited; the endpoint logs each one.
func TestSFNWaitsLongerThanANodeTimerKeepWaiting(t *testing.T) {
	t.Parallel()
	p, err := local.StartSFN(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	stopAtCleanup(t, p)
	s := &sfnStack{sfn: p, client: newSFNClient(p)}

	const month = 30 * 24 * time.Hour
	until := func() string { return time.Now().Add(month).UTC().Format(time.RFC3339) }
	machine := s.create(t, "long-waits", definition(t, "long-waits.asl.json", map[string]string{"Timestamp": until()}))
	arn := s.start(t, machine, "a-month", map[string]any{"seconds": int(month / time.Second), "until": until()})

	events := s.historyUntil(t, arn, "tick, after the 1 s Wait", func(events []sfntypes.HistoryEvent) bool {
		return slices.Contains(enteredStates(events), "tick")
	})
	long := []string{"seconds", "seconds-path", "timestamp", "timestamp-path"}
	entered := enteredStates(events)
	for _, name := range long {
		if !slices.Contains(entered, name) {
			t.Errorf("%s not entered: %v", name, entered)
		}
	}
	for _, e := range eventTypes(events, sfntypes.HistoryEventTypeWaitStateExited) {
		if name := aws.ToString(e.StateExitedEventDetails.Name); slices.Contains(long, name) {
			t.Errorf("the 30-day Wait %s exited after the 1 s one", name)
		}
	}
	d, err := s.client.DescribeExecution(t.Context(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, d, sfntypes.ExecutionStatusRunning)

	localtest.WaitStdout(t, p, 10*time.Second, func(stdout string) bool {
		for _, name := range long {
			if !strings.Contains(stdout, arn+": state "+name+": a wait of ") {
				return false
			}
		}
		return strings.Contains(stdout, "longer than a Node timer can wait (2147483 s, about 24.8 days)")
	})
}

// TestSFNExecutionContextIsTheExecutionsInEveryScope: $$.Execution.Input and
// $$.Execution.StartTime read at the top level, in a Map's ItemSelector and
// iteration, and in a Parallel branch inside the iteration, all entered
// after a 1 s Wait, are DescribeExecution's input and startDate.
func TestSFNExecutionContextIsTheExecutionsInEveryScope(t *testing.T) {
	t.Parallel()
	p, err := local.StartSFN(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	stopAtCleanup(t, p)
	s := &sfnStack{sfn: p, client: newSFNClient(p)}

	machine := s.create(t, "execution-context", definition(t, "execution-context.asl.json", nil))
	arn := s.start(t, machine, "in-every-scope", map[string]any{"items": []any{"a", "b"}, "who": "Ann"})
	d := s.wait(t, arn)
	wantStatus(t, d, sfntypes.ExecutionStatusSucceeded)
	want := map[string]any{
		"input": decode(t, d.Input),
		"start": startDate(t, p, arn).UTC().Format("2006-01-02T15:04:05.000Z"),
	}
	wantEqual(t, "DescribeExecution input", want["input"], map[string]any{"items": []any{"a", "b"}, "who": "Ann"})

	out := decode(t, d.Output)
	wantEqual(t, "top level", at(out, "seen", "top"), want)
	each, _ := at(out, "seen", "each").([]any)
	if len(each) != 2 {
		t.Fatalf("seen.each = %v, want the two iterations", at(out, "seen", "each"))
	}
	for i, it := range each {
		item, _ := at(it, "item").(string)
		wantEqual(t, "item", item, []string{"a", "b"}[i])
		wantEqual(t, item+": ItemSelector", at(it, "selector"), want)
		wantEqual(t, item+": iteration", at(it, "iteration"), want)
		wantEqual(t, item+": Parallel branch in the iteration", at(it, "branch"), []any{want})
	}
}

// historyUntil polls the history of arn until cond holds, and returns it.
func (s *sfnStack) historyUntil(t *testing.T, arn, what string, cond func([]sfntypes.HistoryEvent) bool) []sfntypes.HistoryEvent {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		events := s.history(t, arn)
		if cond(events) {
			return events
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %s after 30 s; entered %v", arn, what, enteredStates(events))
		}
		time.Sleep(50 * time.Millisecond) // a poll with a deadline: the execution runs in the endpoint
	}
}

// startDate is DescribeExecution's startDate of arn, read from the JSON the
// endpoint answers: epoch seconds with milliseconds. The SDK parses it as a
// float64 times 1000, truncated, which can lose a millisecond.
func startDate(t *testing.T, p *local.Process, arn string) time.Time {
	t.Helper()
	body, err := json.Marshal(map[string]string{"executionArn": arn})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, p.Endpoint()+"/", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AWSStepFunctions.DescribeExecution")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d struct {
		StartDate json.Number `json:"startDate"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatalf("DescribeExecution: %v", err)
	}
	ms, ok := new(big.Rat).SetString(d.StartDate.String())
	if ok {
		ms.Mul(ms, big.NewRat(1000, 1))
	}
	if !ok || !ms.IsInt() {
		t.Fatalf("startDate %q is not epoch seconds with milliseconds", d.StartDate)
	}
	return time.UnixMilli(ms.Num().Int64())
}
