package platform

import (
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/table"
)

// Actions AWS authorises on no resource ARN (the Service Authorization
// Reference lists no resource type for them), so their statements take
// Resource "*". infra_test.go lists each with its reason; nothing else may
// have a "*" resource.
var (
	// The task token, not an ARN, names the execution: review-decision
	// sends a decision (shared/review Service). It never sends a
	// heartbeat: no review Task sets HeartbeatSeconds.
	sendTaskActions = []string{"states:SendTaskSuccess", "states:SendTaskFailure"}
	// Finding toolgate-<stage>_<solution> by name (the publish function and
	// toolgate run list them).
	listStateMachinesActions = []string{"states:ListStateMachines"}
	// CloudWatch Logs vended log delivery, which a state machine's logging
	// configuration needs on its execution role (Step Functions guide,
	// "IAM policies for logging to CloudWatch Logs") and on the identity
	// that sets the configuration with CreateStateMachine or
	// UpdateStateMachine (the publish function's role: CloudWatch Logs sets
	// up a vended delivery as its caller).
	logDeliveryActions = []string{
		"logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery", "logs:DeleteLogDelivery",
		"logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies", "logs:DescribeLogGroups",
	}
	// Active tracing of a state machine (the functions' tracing statement
	// is the one awslambda adds for Tracing_ACTIVE: PutTraceSegments and
	// PutTelemetryRecords).
	xrayActions = []string{"xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets"}
)

// ledgerARNs name the ledger table and its indexes in the platform stack.
type ledgerARNs struct {
	Table   *string
	Indexes []*string // in ledgerIndexes order
}

func newLedgerARNs(tableName string) ledgerARNs {
	base := "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/" + tableName
	l := ledgerARNs{Table: sub(base)}
	for _, ix := range ledgerIndexes {
		l.Indexes = append(l.Indexes, sub(base+"/index/"+ix.Name))
	}
	return l
}

// index returns the ARN of the table's index name; it panics for an index
// the table does not have (a grant on it would allow nothing).
func (l ledgerARNs) index(name string) *string {
	for i, ix := range ledgerIndexes {
		if ix.Name == name {
			return l.Indexes[i]
		}
	}
	panic("the ledger table has no index " + name)
}

// ledgerStatement allows item actions on resources (the table or its
// indexes).
func ledgerStatement(sid string, actions []string, resources []*string, conditions map[string]any) awsiam.PolicyStatement {
	props := &awsiam.PolicyStatementProps{
		Sid:       jsii.String(sid),
		Actions:   jsii.Strings(actions...),
		Resources: &resources,
	}
	if conditions != nil {
		props.Conditions = &conditions
	}
	return awsiam.NewPolicyStatement(props)
}

// sub is Fn::Sub of s (pseudo parameters such as ${AWS::Region} only).
func sub(s string) *string { return awscdk.Fn_Sub(jsii.String(s), nil) }

// Resource ARNs of the Step Functions state machines of one stage and of
// their executions. A Solution is published as toolgate-<stage>_<solution>
// (deployment.StateMachineName), and neither a stage nor a Solution
// name holds "_" (deployment.CheckStage, the resolver's names), so the first
// "_" ends the stage: toolgate-dev_* never matches a state machine of stage
// dev-2 (toolgate-dev-2_*). Every policy naming state machines or
// executions names them by these, its own stage's ("stage-arns" in go test
// ./infra/).
func stateMachinesARN(stage string) string {
	return "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:stateMachine:" + stateMachinePrefix(stage) + "*"
}

func executionsARN(stage string) string {
	return "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:execution:" + stateMachinePrefix(stage) + "*:*"
}

// syncEventsRuleARN is the EventBridge rule Step Functions manages to learn
// that a child execution a .sync Task started has ended (Step Functions
// guide, "IAM policies for starting a new Step Functions execution").
const syncEventsRuleARN = "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:rule/StepFunctionsGetEventsForStepFunctionsExecutionRule"

// stateMachinePrefix starts the name of every state machine of stage:
// deployment.StateMachineName with no Solution name.
func stateMachinePrefix(stage string) string { return deployment.StateMachineName(stage, "") }

// parameterARN is the ARN of the SSM parameter name (a name starting with
// "/", as every /toolgate/<stage>/... one does).
func parameterARN(name string) *string {
	return sub("arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter" + name)
}

// executionLogGroupName is the Solution executions' log group. The name is
// fixed so that publishing can derive it from the stage; the
// /aws/vendedlogs/ prefix keeps CloudWatch Logs' resource policy small.
func executionLogGroupName(stage string) string { return "/aws/vendedlogs/states/toolgate-" + stage }

// Access is what publishing, reviewing and operating need: the
// Solution execution role and its log group, and the Publisher, Reviewer
// and Operator managed policies (NewAccess).
type Access struct {
	constructs.Construct
	ExecutionRole    awsiam.Role
	ExecutionLogs    awslogs.LogGroup
	Publisher        awsiam.ManagedPolicy
	Reviewer         awsiam.ManagedPolicy
	Operator         awsiam.ManagedPolicy
	ExecutionRoleARN *string
}

// newAccess defines the Solution execution role, the Solution executions'
// log group and the Publisher, Reviewer and Operator managed policies.
func newAccess(scope constructs.Construct, p *PlatformStackProps, fns map[string]*platformFunction, ledger ledgerARNs) *Access {
	a := &Access{}
	a.ExecutionLogs = awslogs.NewLogGroup(scope, jsii.String("SolutionExecutionLogs"), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String(executionLogGroupName(p.Stage)),
		Retention:     p.LogRetention,
		RemovalPolicy: p.LogRemovalPolicy,
	})

	// Step Functions assumes the role only for this stage's state machines
	// (toolgate-<stage>_*) of this account (confused deputy protection).
	principal := awsiam.NewPrincipalWithConditions(
		awsiam.NewServicePrincipal(jsii.String("states.amazonaws.com"), nil),
		&map[string]any{
			"StringEquals": map[string]any{"aws:SourceAccount": awscdk.Aws_ACCOUNT_ID()},
			"ArnLike":      map[string]any{"aws:SourceArn": sub(stateMachinesARN(p.Stage))},
		})
	a.ExecutionRole = awsiam.NewRole(scope, jsii.String("SolutionExecutionRole"), &awsiam.RoleProps{
		RoleName:    jsii.String("toolgate-" + p.Stage + "-solution-execution"),
		AssumedBy:   principal,
		Description: jsii.String("toolgate Solutions (state machines toolgate-" + p.Stage + "_*) run with this role"),
	})
	// The sfn alias only: not the unqualified function (an invocation
	// through no alias is refused anyway), not the direct alias (a
	// Solution must not pass for a person).
	var invocable []*string
	for _, spec := range functionSpecs {
		if spec.ForSolutions {
			invocable = append(invocable, fns[spec.Name].aliasARN(lane.SFN))
		}
	}
	a.ExecutionRole.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("InvokeToolgateFunctions"),
		Actions:   jsii.Strings("lambda:InvokeFunction"),
		Resources: &invocable,
	}))
	a.ExecutionRole.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ExecutionLogging"),
		Actions:   jsii.Strings(logDeliveryActions...),
		Resources: jsii.Strings("*"),
	}))
	a.ExecutionRole.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ExecutionTracing"),
		Actions:   jsii.Strings(xrayActions...),
		Resources: jsii.Strings("*"),
	}))
	// Workflow steps (docs/solutions.md, "Workflow steps") start a child
	// Solution of this stage and wait for it
	// (arn:aws:states:::states:startExecution.sync:2), and read a child
	// they started before (aws-sdk:sfn:describeExecution): exactly what the
	// Step Functions guide lists for that integration ("IAM policies for
	// starting a new Step Functions execution"). Which Solution a run may
	// start is the resolver's guard (the toolset's workflows).
	a.ExecutionRole.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("StartChildExecutions"),
		Actions:   jsii.Strings("states:StartExecution"),
		Resources: &[]*string{sub(stateMachinesARN(p.Stage))},
	}))
	a.ExecutionRole.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("FollowChildExecutions"),
		Actions:   jsii.Strings("states:DescribeExecution", "states:StopExecution"),
		Resources: &[]*string{sub(executionsARN(p.Stage))},
	}))
	a.ExecutionRole.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ChildExecutionEvents"),
		Actions:   jsii.Strings("events:PutTargets", "events:PutRule", "events:DescribeRule"),
		Resources: &[]*string{sub(syncEventsRuleARN)},
	}))
	a.ExecutionRoleARN = a.ExecutionRole.RoleArn()

	// Publishers reach Step Functions through the publish function only
	// (publishing.go): its role alone creates, updates and publishes
	// versions of state machines and passes the execution role, so a
	// state machine definition written by hand has no path to a state
	// machine (docs/identity.md, "Limits"). The Publisher runs what is
	// published (toolgate run) and follows its runs.
	publishFn := fns[fnPublish].Function.FunctionArn()
	a.Publisher = managedPolicy(scope, "PublisherPolicy", p.Stage, "publisher",
		"toolgate publish and toolgate toolset register through the publish function's IAM-authorised Function URL; "+
			"toolgate run of this stage's state machines (its start recorded through review-request's start alias), following their executions",
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("PublishFunctionURL"),
			Actions:    jsii.Strings("lambda:InvokeFunctionUrl"),
			Resources:  &[]*string{publishFn},
			Conditions: &map[string]any{"StringEquals": map[string]any{"lambda:FunctionUrlAuthType": "AWS_IAM"}},
		}),
		// As for the Reviewer's: new Function URLs need InvokeFunction too,
		// and only through the URL.
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("PublishFunction"),
			Actions:    jsii.Strings("lambda:InvokeFunction"),
			Resources:  &[]*string{publishFn},
			Conditions: &map[string]any{"Bool": map[string]any{"lambda:InvokedViaFunctionUrl": "true"}},
		}),
		// toolgate run (runner.Start): the execution is named by the run,
		// on this stage's state machines only, and runs the latest
		// revision (the unqualified ARN), never a published version: Step
		// Functions authorises a version ARN against its state machine's
		// ARN and names the version in states:StateMachineQualifier. A
		// version keeps its definition for ever, and one published before
		// the tool Tasks sent run_started_at would let a reused execution
		// name replay an earlier execution's results (docs/ledger.md,
		// "Execution names must not be reused").
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("StartExecutions"),
			Actions:    jsii.Strings("states:StartExecution"),
			Resources:  &[]*string{sub(stateMachinesARN(p.Stage))},
			Conditions: &map[string]any{"Null": map[string]any{"states:StateMachineQualifier": "true"}},
		}),
		// toolgate run (runner.Start) records a run's start before it
		// starts it, through review-request's start alias only: that alias
		// takes start requests and nothing else, so a Publisher can neither
		// ask for a direct-lane review (the direct alias, the Operator's) nor
		// pass for a Solution's execution (the sfn alias, the execution
		// role's) (docs/identity.md, "Lanes").
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("RecordRunStarts"),
			Actions:   jsii.Strings("lambda:InvokeFunction"),
			Resources: &[]*string{fns[fnReviewRequest].aliasARN(lane.Start)},
		}),
		// toolgate run (runner.CheckInput) reads the definition's input
		// record before it starts a run: the input schema and
		// policy.input_limit_bytes (docs/solutions.md, "The execution
		// input").
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("ReadDefinitions"),
			Actions:   jsii.Strings("states:DescribeStateMachine"),
			Resources: &[]*string{sub(stateMachinesARN(p.Stage))},
		}),
		// toolgate run --wait (runner.Follow): an execution's status, and
		// its history. A history holds every state's input and output: the
		// inputs under review, the tools' inputs and results. A Publisher
		// of a stage may read those of every execution of that stage
		// (docs/infra.md, "What an execution's history shows").
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("DescribeExecutions"),
			Actions:   jsii.Strings("states:DescribeExecution"),
			Resources: &[]*string{sub(executionsARN(p.Stage))},
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("ExecutionHistories"),
			Actions:   jsii.Strings("states:GetExecutionHistory"),
			Resources: &[]*string{sub(executionsARN(p.Stage))},
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("FindStateMachines"),
			Actions:   jsii.Strings(listStateMachinesActions...),
			Resources: jsii.Strings("*"),
		}),
		// The publish function's URL (for --url), the review decision
		// URL toolgate run --wait lists a run's pending reviews with, and
		// the start alias toolgate run records a start through.
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:     jsii.String("PlatformParameters"),
			Actions: jsii.Strings("ssm:GetParameter"),
			Resources: &[]*string{parameterARN(publishURLParam(p.Stage)),
				parameterARN(deployment.ReviewDecisionURLParam(p.Stage)), parameterARN(deployment.StartFunctionParam(p.Stage))},
		}),
	)

	// review-decision has no aliases: reviewers reach it through its URL
	// only, and every request carries a caller proof.
	decision := fns[fnReviewDecision].Function.FunctionArn()
	a.Reviewer = managedPolicy(scope, "ReviewerPolicy", p.Stage, "reviewer",
		"toolgate review: the review decision function through its IAM-authorised Function URL",
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("DecisionFunctionURL"),
			Actions:    jsii.Strings("lambda:InvokeFunctionUrl"),
			Resources:  &[]*string{decision},
			Conditions: &map[string]any{"StringEquals": map[string]any{"lambda:FunctionUrlAuthType": "AWS_IAM"}},
		}),
		// New Function URLs need InvokeFunction too; only through the URL,
		// or a reviewer could invoke the function directly with a made-up
		// Function URL event naming another principal.
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("DecisionFunction"),
			Actions:    jsii.Strings("lambda:InvokeFunction"),
			Resources:  &[]*string{decision},
			Conditions: &map[string]any{"Bool": map[string]any{"lambda:InvokedViaFunctionUrl": "true"}},
		}),
	)

	// The direct lane calls the tool functions, and review-request for a
	// gated tool's review (toolgate invoke send-email), through their
	// direct aliases only: never the sfn alias, on which a function trusts
	// its caller to be a Solution's execution and asks for no caller proof.
	var tools []*string
	for _, spec := range functionSpecs {
		if spec.Tool {
			tools = append(tools, fns[spec.Name].aliasARN(lane.Direct))
		}
	}
	tools = append(tools, fns[fnReviewRequest].aliasARN(lane.Direct))
	a.Operator = managedPolicy(scope, "OperatorPolicy", p.Stage, "operator",
		"toolgate ledger and toolgate invoke: ledger reads and the tool functions' direct lane",
		// toolgate ledger's reads (table.Of(table.Operator)): calls, rows
		// and toolsets, naming only table.ReadAttributes (digests, sizes,
		// states, toolset bodies, never a recorded result), never a review
		// item, whose inputs are for reviewers only; every read the CLI
		// makes sends a ProjectionExpression (docs/ledger.md). And Query on
		// the index, which projects no review inputs, reasons or task tokens.
		slices.Concat(ledgerStatements(table.Operator, ledger, p.IndexLeadingKeys), []awsiam.PolicyStatement{
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("DirectLane"),
				Actions:   jsii.Strings("lambda:InvokeFunction"),
				Resources: &tools,
			}),
		})...,
	)
	return a
}

// managedPolicy defines toolgate-<stage>-<role>, for platform teams to
// attach to people.
func managedPolicy(scope constructs.Construct, id, stage, role, description string, statements ...awsiam.PolicyStatement) awsiam.ManagedPolicy {
	return awsiam.NewManagedPolicy(scope, jsii.String(id), &awsiam.ManagedPolicyProps{
		ManagedPolicyName: jsii.String("toolgate-" + stage + "-" + role),
		Description:       jsii.String(description),
		Statements:        &statements,
	})
}

// grantReviewerAccounts adds to review-decision's resource policy, for each
// of the organisation's reviewer accounts (PlatformStackProps.ReviewerAccounts)
// and no other, the two permissions a caller of another account needs to
// reach an IAM-authorised Function URL: lambda:InvokeFunctionUrl with
// lambda:FunctionUrlAuthType AWS_IAM, and lambda:InvokeFunction with
// lambda:InvokedViaFunctionUrl true, so that the account may not invoke the
// function directly with a made-up URL event (AWS Lambda Developer Guide,
// "Control access to Lambda function URLs"). The account's own IAM
// policies must still allow its reviewers the same two actions, and
// review-decision's verifier admits the same accounts (TOOLGATE_REVIEWER_ACCOUNTS).
func grantReviewerAccounts(fn *platformFunction, accounts []string) {
	for _, account := range accounts {
		principal := awsiam.NewAccountPrincipal(jsii.String(account))
		fn.Function.AddPermission(jsii.String("ReviewerAccountUrl"+account), &awslambda.Permission{
			Principal:           principal,
			Action:              jsii.String("lambda:InvokeFunctionUrl"),
			FunctionUrlAuthType: awslambda.FunctionUrlAuthType_AWS_IAM,
		})
		fn.Function.AddPermission(jsii.String("ReviewerAccountInvoke"+account), &awslambda.Permission{
			Principal:             principal,
			Action:                jsii.String("lambda:InvokeFunction"),
			InvokedViaFunctionUrl: jsii.Bool(true),
		})
	}
}
