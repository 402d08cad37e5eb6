package stepfunctions

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

// Describer is the part of the Step Functions client Executions uses.
type Describer interface {
	DescribeExecution(ctx context.Context, in *sfn.DescribeExecutionInput, opts ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error)
}

// Executions is the review.Executions of Step Functions: review-request
// reads which published version a child run's execution runs
// (DescribeExecution's stateMachineVersionArn, "" for an execution
// started by the unqualified state machine ARN).
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
