package stepfunctions

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/review"
)

// ParkClient is the part of the Step Functions client Parks uses.
type ParkClient interface {
	SendTaskSuccess(ctx context.Context, in *sfn.SendTaskSuccessInput, opts ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error)
	StopExecution(ctx context.Context, in *sfn.StopExecutionInput, opts ...func(*sfn.Options)) (*sfn.StopExecutionOutput, error)
}

// Parks is review-decision's way to the park Tasks (docs/parking.md,
// "Deciding"): a decision is the park Task's output, a cancel stops the
// run.
type Parks struct {
	Client ParkClient
}

// SendResult sends res to the park Task of taskToken with SendTaskSuccess,
// once (no SDK retry: a retried send whose answer was lost would find the
// token spent). A token Step Functions no longer accepts (TaskTimedOut,
// TaskDoesNotExist, InvalidToken) is a *review.TaskEndedError; anything
// else is returned as it is.
func (p Parks) SendResult(ctx context.Context, taskToken string, res park.Result) error {
	out, err := json.Marshal(res)
	if err != nil {
		return err
	}
	_, err = p.Client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(taskToken), Output: aws.String(string(out))},
		func(o *sfn.Options) { o.RetryMaxAttempts = 1 })
	if name := taskEnded(err); name != "" {
		return &review.TaskEndedError{Name: name}
	}
	return err
}

// Stop stops the execution executionARN with StopExecution, error
// park.CancelError and cause (at most 32768 characters, AWS Step
// Functions API reference, "StopExecution"). Stopping an execution that
// has already ended changes nothing and is not an error; an execution
// that does not exist is review.ErrNotFound.
func (p Parks) Stop(ctx context.Context, executionARN, cause string) error {
	if len(cause) > 32768 {
		cause = cause[:32768]
	}
	_, err := p.Client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(executionARN), Error: aws.String(park.CancelError), Cause: aws.String(cause)})
	var missing *sfntypes.ExecutionDoesNotExist
	if errors.As(err, &missing) {
		return errors.Join(review.ErrNotFound, err)
	}
	return err
}
