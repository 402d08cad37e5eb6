package stepfunctions

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/shared/review"
)

// ForkClient is the part of the Step Functions client Forks uses.
type ForkClient interface {
	DescribeExecution(ctx context.Context, in *sfn.DescribeExecutionInput, opts ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error)
	StopExecution(ctx context.Context, in *sfn.StopExecutionInput, opts ...func(*sfn.Options)) (*sfn.StopExecutionOutput, error)
}

// ForkedError is the error name run.fork stops a parent with
// (StopExecution's error, at most 256 characters: AWS Step Functions API
// reference, "StopExecution"); the cause says as which execution.
const ForkedError = "toolgate.Forked"

// Forks reads and stops a forked run's parent for review-decision's
// run.fork (docs/fork.md).
type Forks struct {
	Client ForkClient
}

// Describe returns executionARN's status (RUNNING, SUCCEEDED, FAILED,
// TIMED_OUT, ABORTED, PENDING_REDRIVE) and start: one DescribeExecution.
// An execution that does not exist is review.ErrNotFound.
func (f Forks) Describe(ctx context.Context, executionARN string) (status string, started time.Time, err error) {
	out, err := f.Client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(executionARN)})
	var missing *sfntypes.ExecutionDoesNotExist
	if errors.As(err, &missing) {
		return "", time.Time{}, errors.Join(review.ErrNotFound, err)
	}
	if err != nil {
		return "", time.Time{}, err
	}
	return string(out.Status), aws.ToTime(out.StartDate), nil
}

// Stop stops executionARN with error ForkedError and cause (at most 32768
// characters). Stopping an execution that has already ended changes
// nothing and is not an error.
func (f Forks) Stop(ctx context.Context, executionARN, cause string) error {
	if len(cause) > 32768 {
		cause = cause[:32768]
	}
	_, err := f.Client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(executionARN), Error: aws.String(ForkedError), Cause: aws.String(cause)})
	return err
}
