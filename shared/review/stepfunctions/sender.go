package stepfunctions

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/shared/review"
)

// TaskSender is the part of the Step Functions client a Sender uses.
type TaskSender interface {
	SendTaskSuccess(ctx context.Context, in *sfn.SendTaskSuccessInput, opts ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error)
	SendTaskFailure(ctx context.Context, in *sfn.SendTaskFailureInput, opts ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error)
}

// Sender is the review.TaskDelivery of Step Functions.
type Sender struct {
	Client TaskSender
}

// Deliver sends d to the Task of taskToken: an approval with
// SendTaskSuccess, the decision JSON its output; a rejection with
// SendTaskFailure, error review.ErrorRejected and the decision JSON its
// cause. One attempt per call: an SDK retry of a send whose answer was
// lost would be told TaskTimedOut (the token is spent) although the
// decision was delivered. A token Step Functions no longer accepts is a
// *review.TaskEndedError; any other failure is returned as it is.
func (s Sender) Deliver(ctx context.Context, taskToken string, d review.Decision) error {
	out, err := json.Marshal(d)
	if err != nil {
		return err
	}
	once := func(o *sfn.Options) { o.RetryMaxAttempts = 1 }
	if d.Decision == review.Approve {
		_, err = s.Client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(taskToken), Output: aws.String(string(out))}, once)
	} else {
		_, err = s.Client.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String(taskToken),
			Error: aws.String(review.ErrorRejected), Cause: aws.String(string(out))}, once)
	}
	if name := taskEnded(err); name != "" {
		return &review.TaskEndedError{Name: name}
	}
	return err
}

// taskEnded returns the Step Functions error name when err says the task
// token can no longer be used: its Task timed out, its execution ended, or
// the token is not one.
func taskEnded(err error) string {
	var timedOut *sfntypes.TaskTimedOut
	var gone *sfntypes.TaskDoesNotExist
	var invalid *sfntypes.InvalidToken
	switch {
	case err == nil:
		return ""
	case errors.As(err, &timedOut):
		return "TaskTimedOut"
	case errors.As(err, &gone):
		return "TaskDoesNotExist"
	case errors.As(err, &invalid):
		return "InvalidToken"
	}
	return ""
}
