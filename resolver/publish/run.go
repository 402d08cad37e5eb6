package publish

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
)

// Start starts an execution of a published Solution. name may be empty
// (Step Functions then generates one).
func Start(ctx context.Context, sf SFNAPI, solution string, input []byte, name string) (string, error) {
	sm := StateMachineName(solution)
	arn, err := findStateMachine(ctx, sf, sm)
	if err != nil {
		return "", err
	}
	if arn == "" {
		return "", fmt.Errorf("state machine %s does not exist: publish the Solution first (toolgate publish)", sm)
	}
	in := &sfn.StartExecutionInput{StateMachineArn: aws.String(arn), Input: aws.String(string(input))}
	if name != "" {
		in.Name = aws.String(name)
	}
	out, err := sf.StartExecution(ctx, in)
	if err != nil {
		return "", fmt.Errorf("start execution of %s: %w", sm, err)
	}
	return aws.ToString(out.ExecutionArn), nil
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
