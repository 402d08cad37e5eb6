package stepfunctions

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"

	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/solutioncomment"
)

// Describer is the part of the Step Functions client Executions uses.
type Describer interface {
	DescribeExecution(ctx context.Context, in *sfn.DescribeExecutionInput, opts ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error)
	DescribeStateMachine(ctx context.Context, in *sfn.DescribeStateMachineInput, opts ...func(*sfn.Options)) (*sfn.DescribeStateMachineOutput, error)
	DescribeStateMachineForExecution(ctx context.Context, in *sfn.DescribeStateMachineForExecutionInput, opts ...func(*sfn.Options)) (*sfn.DescribeStateMachineForExecutionOutput, error)
}

// Executions is the review.Executions of Step Functions: review-request
// reads which published version a child run's execution runs
// (DescribeExecution's stateMachineVersionArn, "" for an execution
// started by the unqualified state machine ARN), the definition of the
// version a parent's workflow step starts (DescribeStateMachine), and the
// Solution version a run executes (DescribeStateMachineForExecution).
type Executions struct {
	Client Describer
}

// VersionOf returns the state machine version ARN executionARN was started
// with.
func (e Executions) VersionOf(ctx context.Context, executionARN string) (string, error) {
	out, err := e.Client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(executionARN)})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.StateMachineVersionArn), nil
}

// SolutionVersionOf returns the Solution and its version that execution
// executionARN runs, as the top-level Comment of the definition it runs
// says them (shared/solutioncomment): one DescribeStateMachineForExecution,
// which answers the state machine the execution is associated with, its
// definition and revisionId among it (AWS Step Functions API reference,
// "DescribeStateMachineForExecution"). That is the revision the execution
// started on, whether it was started on a version or on the unqualified
// state machine ARN: a running execution keeps the definition and role it
// started with when the state machine is updated (API reference,
// "UpdateStateMachine"), and a version is an immutable snapshot of a
// revision (Developer Guide, "State machine versions"). So a run started
// before its Solution was published again names the version it runs, not
// the newer one.
//
// The definition is decoded up to its top-level Comment and no further:
// its states are not parsed (the answer itself is read whole by the SDK,
// as every answer is). A definition without one, with another, or that is not a JSON object
// (none the publish function writes) names no Solution: "", 0 and no
// error. An error is Step Functions' (throttling, a 5xx, the network, an
// execution that does not exist or may not be described).
func (e Executions) SolutionVersionOf(ctx context.Context, executionARN string) (solution string, version int, err error) {
	out, err := e.Client.DescribeStateMachineForExecution(ctx, &sfn.DescribeStateMachineForExecutionInput{ExecutionArn: aws.String(executionARN)})
	if err != nil {
		return "", 0, err
	}
	c, ok, err := solutioncomment.Read(strings.NewReader(aws.ToString(out.Definition)))
	if err != nil || !ok {
		return "", 0, nil
	}
	return c.Solution, c.Version, nil
}

// Definition returns the definition (Amazon States Language JSON) of the
// state machine version versionARN: DescribeStateMachine of a version ARN
// answers that version's, which never changes, and names the version
// ARN as its stateMachineArn (AWS Step Functions API reference,
// "DescribeStateMachine"); an answer naming another is an error.
func (e Executions) Definition(ctx context.Context, versionARN string) (string, error) {
	out, err := e.Client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(versionARN)})
	if err != nil {
		return "", definitionError(err)
	}
	if got := aws.ToString(out.StateMachineArn); got != versionARN {
		return "", fmt.Errorf("DescribeStateMachine of %s answered for %s", versionARN, got)
	}
	return aws.ToString(out.Definition), nil
}

// definitionError marks the DescribeStateMachine answers no retry changes:
// a version that does not exist or an ARN Step Functions refuses is
// review.ErrNotFound, and a version the role may not read (another stage's,
// the latest revision) is review.ErrDenied; anything else (throttling, a
// 5xx, the network) is returned as it is.
func definitionError(err error) error {
	var missing *types.StateMachineDoesNotExist
	var invalid *types.InvalidArn
	var api smithy.APIError
	switch {
	case errors.As(err, &missing), errors.As(err, &invalid):
		return fmt.Errorf("%w: %w", review.ErrNotFound, err)
	case errors.As(err, &api) && api.ErrorCode() == "AccessDeniedException":
		return fmt.Errorf("%w: %w", review.ErrDenied, err)
	}
	return err
}
