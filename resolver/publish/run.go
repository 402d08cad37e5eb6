package publish

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/resolver"
)

// StartProver signs the start proof of an execution, bound to its ARN
// (shared/caller, caller.ActionStart).
type StartProver func(ctx context.Context, executionARN string) (string, error)

// Meta is the execution input's meta (docs/solutions.md, "The execution
// input"): StartProof is consumed by the Starter state of a Solution with
// gated tools; traceparent and end_user are named for later use.
type Meta struct {
	StartProof  string `json:"start_proof,omitempty"`
	Traceparent string `json:"traceparent,omitempty"`
	EndUser     string `json:"end_user,omitempty"`
}

// ExecutionInput is a run's execution input: the user's input and meta,
// apart.
type ExecutionInput struct {
	Input json.RawMessage `json:"input"`
	Meta  Meta            `json:"meta"`
}

// executionName matches what Step Functions accepts as an execution name
// (1 to 80 characters; no whitespace, brackets, wildcards or the
// characters " # % \ ^ | ~ ` $ & , ; : /, per StartExecution's name
// parameter), restricted here to letters, digits, "-" and "_".
var executionName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// Start starts an execution of a Solution published in stage with input as the
// user's input and a start proof from prove bound to the execution's ARN,
// which Start fixes by choosing its name (generated when name is empty).
//
// Before anything is signed or started, Start reads the state machine's
// definition (DescribeStateMachine) and checks input against the
// InputRecord the resolver wrote into it (resolver.ReadInputRecord): its
// size against policy.input_limit_bytes, then the Solution's input
// schema. A refused input is a *resolver.InputError, and nothing is
// started. The check reads the state machine's latest revision, the one
// StartExecution runs; a publish between the two is not noticed.
func Start(ctx context.Context, sf SFNAPI, stage, solution string, input []byte, name string, prove StartProver) (string, error) {
	if err := CheckStage(stage); err != nil {
		return "", err
	}
	sm := StateMachineName(stage, solution)
	arn, err := findStateMachine(ctx, sf, sm)
	if err != nil {
		return "", err
	}
	if arn == "" {
		return "", fmt.Errorf("state machine %s does not exist: publish the Solution first (toolgate publish)", sm)
	}
	if err := CheckInput(ctx, sf, arn, input); err != nil {
		return "", err
	}
	if name == "" {
		var b [8]byte
		rand.Read(b[:])
		name = "run-" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
	}
	if !executionName.MatchString(name) {
		return "", fmt.Errorf("execution name %q must be 1 to 80 letters, digits, - or _", name)
	}
	// arn:PARTITION:states:REGION:ACCOUNT:stateMachine:NAME ->
	// arn:PARTITION:states:REGION:ACCOUNT:execution:NAME:EXECUTION
	parts := strings.Split(arn, ":")
	if len(parts) != 7 || parts[5] != "stateMachine" {
		return "", fmt.Errorf("state machine ARN %q is not arn:...:stateMachine:NAME", arn)
	}
	parts[5] = "execution"
	execARN := strings.Join(parts, ":") + ":" + name
	proof, err := prove(ctx, execARN)
	if err != nil {
		return "", fmt.Errorf("sign the start proof: %w", err)
	}
	body, err := json.Marshal(ExecutionInput{Input: input, Meta: Meta{StartProof: proof}})
	if err != nil {
		return "", fmt.Errorf("the input: %w", err)
	}
	in := &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Input: aws.String(string(body)), Name: aws.String(name)}
	out, err := sf.StartExecution(ctx, in)
	if err != nil {
		return "", fmt.Errorf("start execution of %s: %w", sm, err)
	}
	return aws.ToString(out.ExecutionArn), nil
}

// CheckInput checks a run's input against the InputRecord of the state
// machine arn's definition (Start). It returns a *resolver.InputError for an
// input the record refuses, another error when the definition cannot be
// read or has no record.
func CheckInput(ctx context.Context, sf SFNAPI, arn string, input []byte) error {
	d, err := sf.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(arn)})
	if err != nil {
		return fmt.Errorf("describe state machine %s: %w", arn, err)
	}
	rec, err := resolver.ReadInputRecord([]byte(aws.ToString(d.Definition)))
	if err != nil {
		return fmt.Errorf("state machine %s: %w", arn, err)
	}
	return rec.Check(input)
}

// Event is one line of a run's progress.
type Event struct {
	Type  string // StateEntered, StateExited, TaskFailed, ...
	State string // the state's name, when the event has one
	// Resource is a scheduled Task's resource, such as
	// "invoke.waitForTaskToken" (a review Task).
	Resource string
	Error    string
	Cause    string
}

// Outcome is how an execution ended.
type Outcome struct {
	Status string // SUCCEEDED, FAILED, TIMED_OUT, ABORTED
	Output string
	Error  string
	Cause  string
}

// Follow polls an execution's history every interval, calling onEvent once
// per new event, until the execution ends or ctx is done.
func Follow(ctx context.Context, sf SFNAPI, executionARN string, interval time.Duration, onEvent func(Event)) (*Outcome, error) {
	seen := 0
	for {
		var events []sfntypes.HistoryEvent
		var token *string
		for {
			h, err := sf.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(executionARN), NextToken: token})
			if err != nil {
				return nil, fmt.Errorf("execution history: %w", err)
			}
			events = append(events, h.Events...)
			if h.NextToken == nil {
				break
			}
			token = h.NextToken
		}
		for _, e := range events[min(seen, len(events)):] {
			onEvent(toEvent(e))
		}
		seen = max(seen, len(events))
		d, err := sf.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(executionARN)})
		if err != nil {
			return nil, fmt.Errorf("describe execution: %w", err)
		}
		if d.Status != sfntypes.ExecutionStatusRunning && d.Status != sfntypes.ExecutionStatusPendingRedrive {
			return &Outcome{Status: string(d.Status), Output: aws.ToString(d.Output), Error: aws.ToString(d.Error), Cause: aws.ToString(d.Cause)}, nil
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(errors.New("stopped following the execution"), ctx.Err())
		case <-time.After(interval):
		}
	}
}

func toEvent(e sfntypes.HistoryEvent) Event {
	ev := Event{Type: string(e.Type)}
	switch {
	case e.StateEnteredEventDetails != nil:
		ev.State = aws.ToString(e.StateEnteredEventDetails.Name)
	case e.StateExitedEventDetails != nil:
		ev.State = aws.ToString(e.StateExitedEventDetails.Name)
	case e.TaskScheduledEventDetails != nil:
		ev.Resource = aws.ToString(e.TaskScheduledEventDetails.Resource)
	case e.TaskFailedEventDetails != nil:
		ev.Error, ev.Cause = aws.ToString(e.TaskFailedEventDetails.Error), aws.ToString(e.TaskFailedEventDetails.Cause)
	case e.ExecutionFailedEventDetails != nil:
		ev.Error, ev.Cause = aws.ToString(e.ExecutionFailedEventDetails.Error), aws.ToString(e.ExecutionFailedEventDetails.Cause)
	}
	return ev
}
