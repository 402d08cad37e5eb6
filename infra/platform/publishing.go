package platform

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/toolgate/toolgate/infra/toolfunction"
)

// Publishing only through the resolver, in a function: the
// publish function (functions/publish, functions/publish/publish Service) is the
// only way a Solution reaches Step Functions. Its role alone may create
// and update state machines, publish their versions and pass the Solution
// execution role ("state-machine-writers" in go test ./infra/platform), so a
// definition written by hand has no path to a state machine.

// stateMachineWriteActions are the actions that put a definition on a
// state machine or label one as a version: the publish role's alone.
var stateMachineWriteActions = []string{"states:CreateStateMachine", "states:UpdateStateMachine", "states:PublishStateMachineVersion"}

// newPublishURL gives the publish function its Function URL: IAM
// authorised (the Publisher policy), every request with a caller proof
// of who publishes.
func newPublishURL(fn *platformFunction) awslambda.FunctionUrl {
	url := fn.Function.AddFunctionUrl(&awslambda.FunctionUrlOptions{AuthType: awslambda.FunctionUrlAuthType_AWS_IAM})
	overrideLogicalID(url, "PublishUrl")
	return url
}

// grantPublishing adds to the publish function's role what functions/publish/publish
// Publish asks of Step Functions, IAM, SSM and Lambda, and nothing else:
// the parameters it reads, the floor tags of a pinned platform tool
// function, finding the state machine by name, creating or updating it
// with the execution role, its logging and tracing, and publishing a
// version. Its ledger statements are the spec's (items.go).
func grantPublishing(p *PlatformStackProps, fn *platformFunction, a *Access) {
	var params []*string
	for _, name := range publishReadParams(p.Stage) {
		params = append(params, parameterARN(name))
	}
	for _, s := range []awsiam.PolicyStatement{
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("PlatformParameters"),
			Actions:   jsii.Strings("ssm:GetParameter"),
			Resources: &params,
		}),
		// A platform tool's placeholder (manifest tool_functions).
		toolfunction.ParametersStatement(p.Stage),
		// Registering a toolset that pins a platform tool reads the
		// function's floor, its owners' tags.
		toolfunction.FloorsStatement(p.Stage),
		// findStateMachine lists the account's state machines, whose names
		// carry the stage.
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("FindStateMachines"),
			Actions:   jsii.Strings(listStateMachinesActions...),
			Resources: jsii.Strings("*"),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("PublishStateMachines"),
			Actions:   jsii.Strings(stateMachineWriteActions...),
			Resources: &[]*string{sub(stateMachinesARN(p.Stage))},
		}),
		// CreateStateMachine and UpdateStateMachine name the execution role.
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("PassTheExecutionRole"),
			Actions:    jsii.Strings("iam:PassRole"),
			Resources:  &[]*string{a.ExecutionRoleARN},
			Conditions: &map[string]any{"StringEquals": map[string]any{"iam:PassedToService": "states.amazonaws.com"}},
		}),
		// The logging configuration both set (ERROR level, to the Solution
		// executions' log group): CloudWatch Logs' vended delivery.
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("ExecutionLogDelivery"),
			Actions:   jsii.Strings(logDeliveryActions...),
			Resources: jsii.Strings("*"),
		}),
	} {
		fn.Role.AddToPolicy(s)
	}
}
