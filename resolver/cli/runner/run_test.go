package runner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/tool"
)

// fakeSFN holds one state machine and records the calls Start makes.
type fakeSFN struct {
	SFNAPI
	name, definition string
	calls            []string
	started          *sfn.StartExecutionInput
}

const fakeARN = "arn:aws:states:us-east-1:000000000000:stateMachine:toolgate-dev_weekly-digest"

func (f *fakeSFN) ListStateMachines(context.Context, *sfn.ListStateMachinesInput, ...func(*sfn.Options)) (*sfn.ListStateMachinesOutput, error) {
	f.calls = append(f.calls, "ListStateMachines")
	return &sfn.ListStateMachinesOutput{StateMachines: []sfntypes.StateMachineListItem{{Name: aws.String(f.name), StateMachineArn: aws.String(fakeARN)}}}, nil
}

func (f *fakeSFN) DescribeStateMachine(_ context.Context, in *sfn.DescribeStateMachineInput, _ ...func(*sfn.Options)) (*sfn.DescribeStateMachineOutput, error) {
	f.calls = append(f.calls, "DescribeStateMachine")
	if aws.ToString(in.StateMachineArn) != fakeARN {
		return nil, &sfntypes.StateMachineDoesNotExist{}
	}
	return &sfn.DescribeStateMachineOutput{StateMachineArn: in.StateMachineArn, Definition: aws.String(f.definition)}, nil
}

func (f *fakeSFN) StartExecution(_ context.Context, in *sfn.StartExecutionInput, _ ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error) {
	f.calls = append(f.calls, "StartExecution")
	f.started = in
	return &sfn.StartExecutionOutput{ExecutionArn: aws.String("arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_weekly-digest:" + aws.ToString(in.Name))}, nil
}

func newsletter(t *testing.T) *resolver.Result {
	t.Helper()
	src, err := os.ReadFile("../../../testdata/solutions/newsletter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res := resolver.Compile("newsletter.yaml", src, resolver.Options{})
	if !res.OK() {
		t.Fatal(res.Diagnostics)
	}
	return res
}

// TestStartChecksInput: toolgate run's Start checks the input against the
// definition's record before it records or starts anything.
func TestStartChecksInput(t *testing.T) {
	def := string(newsletter(t).Definition)
	cases := []struct {
		name, definition, input string
		wantErr                 string // "" starts
		inputError              bool
	}{
		{"valid", def, `{"recipient": "team@example.com"}`, "", false},
		{"schema", def, `{"recipient": 42}`, `input/recipient fails "type"`, true},
		{"required", def, `{}`, `want property "recipient"`, true},
		{"size", def, `{"recipient": "` + strings.Repeat("x", 40_000) + `"}`, "over the Solution's policy.input_limit_bytes of 32768", true},
		{"no record", strings.Replace(def, resolver.InputRecordPrefix, "", 1), `{"recipient": "x"}`, "publish the Solution again", false},
	}
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeSFN{name: deployment.StateMachineName("dev", "weekly-digest"), definition: c.definition}
			var recorded []string
			arn, err := Start(t.Context(), f, "dev", "weekly-digest", []byte(c.input), "run-1", Meta{Traceparent: traceparent}, func(_ context.Context, arn, digest string) error {
				recorded = append(recorded, arn, digest)
				return nil
			})
			if c.wantErr == "" {
				if err != nil || f.started == nil || !strings.HasSuffix(arn, ":run-1") {
					t.Fatalf("%v (calls %v)", err, f.calls)
				}
				body := aws.ToString(f.started.Input)
				_, digest, err := tool.InputDigest(json.RawMessage(body))
				if err != nil || len(recorded) != 2 || recorded[0] != arn || recorded[1] != digest {
					t.Fatalf("recorded %v, want the execution %s and the digest %s of the whole input %s (%v)", recorded, arn, digest, body, err)
				}
				if strings.Contains(body, "proof") {
					t.Fatalf("execution input %s carries a proof", body)
				}
				if !strings.Contains(body, `"meta":{"traceparent":"`+traceparent+`"}`) {
					t.Fatalf("execution input %s does not carry the run's traceparent in meta (under the recorded digest)", body)
				}
				return
			}
			var ie *resolver.InputError
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || errors.As(err, &ie) != c.inputError {
				t.Fatalf("%v, want %q (InputError %v)", err, c.wantErr, c.inputError)
			}
			if recorded != nil || f.started != nil || strings.Join(f.calls, ",") != "ListStateMachines,DescribeStateMachine" {
				t.Fatalf("recorded %v, calls %v", recorded, f.calls)
			}
		})
	}
}

// A run's start is recorded only for a definition with the Starter state,
// and the execution starts only once it is: a refused record starts
// nothing; a definition whose Starter still reads a start proof (published
// before start records) is refused with the migration, before anything is
// recorded.
func TestStartRecordsTheStartFirst(t *testing.T) {
	gated := string(newsletter(t).Definition)
	// A definition without the Starter state (as one without gated tools
	// or workflow steps compiles).
	ungated := strings.Replace(gated, `"Starter":`, `"NotTheStarter":`, 1)
	if ungated == gated {
		t.Fatal("fixture: newsletter has no Starter state")
	}
	legacy := strings.Replace(gated, `"execution_input.$": "$$.Execution.Input"`, `"start_proof.$": "$$.Execution.Input.meta.start_proof"`, 1)
	legacy = strings.Replace(legacy, `"execution_input.$":"$$.Execution.Input"`, `"start_proof.$":"$$.Execution.Input.meta.start_proof"`, 1)
	if legacy == gated {
		t.Fatal("fixture: no Starter payload to make legacy")
	}
	for name, c := range map[string]struct {
		definition, input string
		refuse            error
		wantRecord        bool
		wantErr           string
	}{
		"gated":               {gated, `{"recipient": "a@example.com"}`, nil, true, ""},
		"refused record":      {gated, `{"recipient": "a@example.com"}`, errors.New("REVIEW_FORBIDDEN: recorded [start-recorded]"), true, "start-recorded"},
		"an earlier Starter":  {legacy, `{"recipient": "a@example.com"}`, nil, false, "publish the Solution again"},
		"no Starter, no gate": {ungated, `{"recipient": "a@example.com"}`, nil, false, ""},
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeSFN{name: deployment.StateMachineName("dev", "weekly-digest"), definition: c.definition}
			recorded := false
			_, err := Start(t.Context(), f, "dev", "weekly-digest", []byte(c.input), "run-1", Meta{}, func(context.Context, string, string) error {
				recorded = true
				return c.refuse
			})
			if recorded != c.wantRecord {
				t.Errorf("recorded %v, want %v", recorded, c.wantRecord)
			}
			if c.wantErr == "" {
				if err != nil || f.started == nil {
					t.Fatalf("%v: not started", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || f.started != nil {
				t.Fatalf("%v (started %v), want %q and nothing started", err, f.started != nil, c.wantErr)
			}
		})
	}
}

// toolgate run refuses an execution name with tool.ChildNamePrefix, the
// names of workflow steps' children, which review-request's start lane
// refuses too: before anything is read, signed (the recorder signs the
// start request) or started.
func TestStartRefusesAChildsNameBeforeAnythingIsSigned(t *testing.T) {
	for _, name := range []string{tool.ChildExecutionName("arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_parent:run-1", "1"), "tg-mine", "tg-"} {
		f := &fakeSFN{name: deployment.StateMachineName("dev", "weekly-digest"), definition: string(newsletter(t).Definition)}
		recorded := false
		_, err := Start(t.Context(), f, "dev", "weekly-digest", []byte(`{"recipient": "a@example.com"}`), name, Meta{}, func(context.Context, string, string) error {
			recorded = true
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), `starts with "tg-"`) || recorded || len(f.calls) != 0 {
			t.Fatalf("%s: %v (recorded %v, calls %v), want refused before anything", name, err, recorded, f.calls)
		}
	}
	// Another letter case is another name to Step Functions, and no child's.
	f := &fakeSFN{name: deployment.StateMachineName("dev", "weekly-digest"), definition: string(newsletter(t).Definition)}
	if _, err := Start(t.Context(), f, "dev", "weekly-digest", []byte(`{"recipient": "a@example.com"}`), "TG-mine", Meta{}, func(context.Context, string, string) error { return nil }); err != nil || f.started == nil {
		t.Fatalf("TG-mine: %v", err)
	}
}

// toolgate run refuses the execution names of inbound and scheduled runs
// (inbound.PrefixInbound, inbound.PrefixSchedule), which review-request's
// start lane refuses without an origin too, before anything is read,
// signed or started: a Solution without the Starter records no start, so
// only this check keeps its runs from reading as a source's or schedule's.
func TestStartRefusesAnInboundRunsNameBeforeAnythingIsSigned(t *testing.T) {
	for _, name := range []string{"in-0123456789abcdef0123456789abcdef", "sc-mine", "in-"} {
		f := &fakeSFN{name: deployment.StateMachineName("dev", "weekly-digest"), definition: string(newsletter(t).Definition)}
		recorded := false
		_, err := Start(t.Context(), f, "dev", "weekly-digest", []byte(`{"recipient": "a@example.com"}`), name, Meta{}, func(context.Context, string, string) error {
			recorded = true
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), "inbound and scheduled runs") || recorded || len(f.calls) != 0 {
			t.Fatalf("%s: %v (recorded %v, calls %v), want refused before anything", name, err, recorded, f.calls)
		}
	}
}

// An end user goes into the execution input's meta (so the recorded
// digest covers it) and to the recorder; one for a definition without the
// Starter, or one that is no end-user id, is refused before anything is
// recorded or started.
func TestStartSendsTheEndUserOnlyToADefinitionThatRecordsStarts(t *testing.T) {
	gated := string(newsletter(t).Definition)
	ungated := strings.Replace(gated, `"Starter":`, `"NotTheStarter":`, 1)
	for name, c := range map[string]struct {
		definition, endUser, wantErr string
	}{
		"with the Starter":    {gated, "customer-42", ""},
		"without the Starter": {ungated, "customer-42", "cannot act for an end user"},
		"not an end-user id":  {gated, "customer 42", "--end-user: end-user id"},
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeSFN{name: deployment.StateMachineName("dev", "weekly-digest"), definition: c.definition}
			recorded := false
			_, err := Start(t.Context(), f, "dev", "weekly-digest", []byte(`{"recipient": "a@example.com"}`), "run-1", Meta{EndUser: c.endUser}, func(context.Context, string, string) error {
				recorded = true
				return nil
			})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || recorded || f.started != nil {
					t.Fatalf("%v (recorded %v, started %v), want %q and nothing recorded or started", err, recorded, f.started != nil, c.wantErr)
				}
				return
			}
			if err != nil || !recorded || f.started == nil || !strings.Contains(aws.ToString(f.started.Input), `"end_user":"customer-42"`) {
				t.Fatalf("%v: recorded %v, started with %v", err, recorded, f.started)
			}
		})
	}
}

// endingExecution is an execution that ends right after its history is
// read while it runs: the moment between Follow's two reads that no stand-in
// can be made to hit on demand, so this fake stands in for Step Functions
// here, for DescribeExecution and GetExecutionHistory of one execution
// only (another ARN is an error).
type endingExecution struct {
	SFNAPI
	arn    string
	events []sfntypes.HistoryEvent
	ended  bool
}

func entered(name string) sfntypes.HistoryEvent {
	return sfntypes.HistoryEvent{Type: sfntypes.HistoryEventTypePassStateEntered, StateEnteredEventDetails: &sfntypes.StateEnteredEventDetails{Name: aws.String(name)}}
}

func (f *endingExecution) DescribeExecution(_ context.Context, in *sfn.DescribeExecutionInput, _ ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error) {
	if aws.ToString(in.ExecutionArn) != f.arn {
		return nil, errors.New("ExecutionDoesNotExist")
	}
	if f.ended {
		return &sfn.DescribeExecutionOutput{Status: sfntypes.ExecutionStatusSucceeded}, nil
	}
	return &sfn.DescribeExecutionOutput{Status: sfntypes.ExecutionStatusRunning}, nil
}

func (f *endingExecution) GetExecutionHistory(_ context.Context, in *sfn.GetExecutionHistoryInput, _ ...func(*sfn.Options)) (*sfn.GetExecutionHistoryOutput, error) {
	if aws.ToString(in.ExecutionArn) != f.arn || in.NextToken != nil {
		return nil, errors.New("unexpected history request")
	}
	out := &sfn.GetExecutionHistoryOutput{Events: append([]sfntypes.HistoryEvent(nil), f.events...)}
	if !f.ended {
		// The execution ends as soon as this read is answered.
		f.events, f.ended = append(f.events, entered("denied"), entered("End")), true
	}
	return out, nil
}

// Following an execution that ends between a read of its history and the
// check of its status still delivers every event to the end: the status
// is read first, so a terminal status is followed by a history read that
// holds the last events.
func TestFollowDeliversTheLastEventsOfAnExecutionThatEndsBetweenItsReads(t *testing.T) {
	const arn = "arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_x:run-1"
	f := &endingExecution{arn: arn, events: []sfntypes.HistoryEvent{entered("Start"), entered("lookup-park")}}
	var got []string
	out, err := Follow(context.Background(), f, arn, 0, func(e Event) { got = append(got, e.State) })
	if err != nil || out.Status != "SUCCEEDED" {
		t.Fatalf("Follow: %+v, %v", out, err)
	}
	if want := "Start lookup-park denied End"; strings.Join(got, " ") != want {
		t.Fatalf("events %v, want %s", got, want)
	}
}

// A fork is started only on a state machine whose runs record their
// start (the Starter state), which is where its parent is recorded and
// whence its calls learn it: one without is refused before anything is
// recorded or started, and Forkable refuses its compiled definition.
func TestStartForkRefusesADefinitionWithoutTheStarter(t *testing.T) {
	gated := string(newsletter(t).Definition)
	ungated := strings.Replace(gated, `"Starter":`, `"NotTheStarter":`, 1)
	for name, c := range map[string]struct {
		definition string
		wantErr    error
	}{
		"with the Starter":    {gated, nil},
		"without the Starter": {ungated, ErrNoStartForFork},
	} {
		t.Run(name, func(t *testing.T) {
			if err := Forkable([]byte(c.definition)); !errors.Is(err, c.wantErr) {
				t.Fatalf("Forkable: %v, want %v", err, c.wantErr)
			}
			f := &fakeSFN{name: deployment.StateMachineName("dev", "weekly-digest"), definition: c.definition}
			recorded := false
			_, err := StartFork(t.Context(), f, "dev", "weekly-digest", []byte(`{"recipient": "a@example.com"}`), "run-1", Meta{}, func(context.Context, string, string) error {
				recorded = true
				return nil
			})
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) || recorded || f.started != nil {
					t.Fatalf("%v (recorded %v, started %v), want %v and nothing recorded or started", err, recorded, f.started != nil, c.wantErr)
				}
				return
			}
			if err != nil || !recorded || f.started == nil {
				t.Fatalf("%v: recorded %v, started %v", err, recorded, f.started != nil)
			}
		})
	}
}
