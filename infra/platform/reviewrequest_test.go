package platform

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/shared/review/stepfunctions"
)

// describeRecorder is a Step Functions client that records each
// DescribeExecution, DescribeStateMachineForExecution and
// DescribeStateMachine request as IAM authorises it: a request on a version ARN against the state machine's ARN, with
// the version in states:StateMachineQualifier (Step Functions Developer
// Guide, "Authorization for versions and aliases").
type describeRecorder struct {
	what string
	reqs []apiRequest
}

func (r *describeRecorder) DescribeExecution(_ context.Context, in *sfn.DescribeExecutionInput, _ ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error) {
	r.reqs = append(r.reqs, apiRequest{What: r.what, Action: "states:DescribeExecution", Resource: aws.ToString(in.ExecutionArn)})
	return &sfn.DescribeExecutionOutput{}, nil
}

func (r *describeRecorder) DescribeStateMachineForExecution(_ context.Context, in *sfn.DescribeStateMachineForExecutionInput, _ ...func(*sfn.Options)) (*sfn.DescribeStateMachineForExecutionOutput, error) {
	r.reqs = append(r.reqs, apiRequest{What: r.what, Action: "states:DescribeStateMachineForExecution", Resource: aws.ToString(in.ExecutionArn)})
	return &sfn.DescribeStateMachineForExecutionOutput{Definition: aws.String(`{}`)}, nil
}

func (r *describeRecorder) DescribeStateMachine(_ context.Context, in *sfn.DescribeStateMachineInput, _ ...func(*sfn.Options)) (*sfn.DescribeStateMachineOutput, error) {
	arn := aws.ToString(in.StateMachineArn)
	req := apiRequest{What: r.what, Action: "states:DescribeStateMachine", Resource: arn}
	if i := strings.LastIndex(arn, ":"); strings.Count(arn, ":") == 7 {
		req.Resource, req.Context = arn[:i], map[string]string{"states:StateMachineQualifier": arn[i+1:]}
	}
	r.reqs = append(r.reqs, req)
	return &sfn.DescribeStateMachineOutput{StateMachineArn: in.StateMachineArn, Definition: aws.String(`{}`)}, nil
}

// TestReviewRequestStepFunctionsRequests: the Step Functions requests of
// review-request's code (shared/review/stepfunctions.Executions: a child
// execution's version, a child version's definition, the Solution version
// a reviewed run executes) are allowed by its
// role, each of its states: statements allows one of them, and reading
// the latest revision, another stage's version, or anything else of Step
// Functions is refused.
func TestReviewRequestStepFunctionsRequests(t *testing.T) {
	ctx := context.Background()
	rec := &describeRecorder{what: "a child's start record (Definition)"}
	exec := stepfunctions.Executions{Client: rec}
	if _, err := exec.Definition(ctx, stateMachineOf+"toolgate-test_demo-ticket:3"); err != nil {
		t.Fatal(err)
	}
	rec.what = "a child run's start (VersionOf)"
	if _, err := exec.VersionOf(ctx, "arn:aws:states:eu-west-1:123456789012:execution:toolgate-test_demo-ticket:tg-0123"); err != nil {
		t.Fatal(err)
	}
	rec.what = "a review's review.requested (SolutionVersionOf)"
	if _, _, err := exec.SolutionVersionOf(ctx, "arn:aws:states:eu-west-1:123456789012:execution:toolgate-test_demo-ticket:tg-0123"); err != nil {
		t.Fatal(err)
	}
	stmts := principalStatements(platformJSON)[fnReviewRequest]
	used := map[string]bool{}
	for _, r := range rec.reqs {
		by := apiAllowedBy(stmts, r)
		if len(by) == 0 {
			t.Errorf("denied: %s", r)
		}
		for _, s := range by {
			used[text(s["Sid"])] = true
		}
	}
	for _, s := range stmts {
		if slices.ContainsFunc(strs(s["Action"]), func(a string) bool { return strings.HasPrefix(a, "states:") }) && !used[text(s["Sid"])] {
			t.Errorf("statement %s allows no request the code makes: %s", text(s["Sid"]), text(s))
		}
	}
	for _, r := range []apiRequest{
		{What: "read the latest revision", Action: "states:DescribeStateMachine", Resource: stateMachineOf + "toolgate-test_demo-ticket"},
		{What: "read another stage's version", Action: "states:DescribeStateMachine", Resource: stateMachineOf + "toolgate-test-2_demo-ticket",
			Context: map[string]string{"states:StateMachineQualifier": "3"}},
		{What: "describe another stage's execution", Action: "states:DescribeExecution", Resource: "arn:aws:states:eu-west-1:123456789012:execution:toolgate-test-2_demo-ticket:tg-0123"},
		{What: "read the revision of another stage's execution", Action: "states:DescribeStateMachineForExecution", Resource: "arn:aws:states:eu-west-1:123456789012:execution:toolgate-test-2_demo-ticket:tg-0123"},
		{What: "start a child", Action: "states:StartExecution", Resource: stateMachineOf + "toolgate-test_demo-ticket",
			Context: map[string]string{"states:StateMachineQualifier": "3"}},
		{What: "read a history", Action: "states:GetExecutionHistory", Resource: "arn:aws:states:eu-west-1:123456789012:execution:toolgate-test_demo-ticket:tg-0123"},
		{What: "list versions", Action: "states:ListStateMachineVersions", Resource: stateMachineOf + "toolgate-test_demo-ticket"},
	} {
		if by := apiAllowedBy(stmts, r); len(by) > 0 {
			t.Errorf("review-request may %s (statement %s)", r, text(by[0]["Sid"]))
		}
	}
}
