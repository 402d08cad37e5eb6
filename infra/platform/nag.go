package platform

import (
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/toolgate/toolgate/infra/toolfunction"
)

// The templates are checked with cdk-nag's AwsSolutions and Serverless
// packs (go test ./infra/platform, nag_test.go): every finding is fixed or
// suppressed here, on the construct it is about, with its reason. A
// suppression of a wildcard (AwsSolutions-IAM5) names the wildcard it
// accepts (appliesTo), so that any other wildcard is still a finding.

// nagSuppression is one accepted cdk-nag finding.
type nagSuppression struct {
	Rule      string   // the rule's id, e.g. AwsSolutions-IAM5
	AppliesTo []string // the finding's own data (a wildcard resource); empty: the whole rule
	Reason    string
}

// Reasons shared by several constructs.
const (
	// Serverless-LambdaDLQ: every function is invoked synchronously.
	reasonSynchronous = "invoked synchronously only (RequestResponse): by Step Functions Tasks (arn:aws:states:::lambda:invoke and " +
		"lambda:invoke.waitForTaskToken, which wait for the answer), by toolgate invoke, and through the Function URL. " +
		"A dead-letter queue receives failed asynchronous invocations only, of which there are none: a failure reaches " +
		"its caller as a contract code, the dispatcher records it in the ledger, and the Task's Retry and Catch handle it"
	// Serverless-LambdaDLQ of webhook-delivery.
	reasonWebhookDelivery = "invoked by its two queues' event source mappings, whose failed messages the queues' own dead-letter " +
		"queues receive, and asynchronously by the relay's schedule only: a failed relay run leaves its events in the unsent " +
		"index, which the next minute's run sends, so a dead-letter queue of the function would hold nothing to act on"
	// Serverless-LambdaDLQ of webhook-receiver and inbound-start.
	reasonWebhookReceiver = "invoked synchronously through its Function URL, and asynchronously by the relay's schedule only: a " +
		"failed relay run leaves its events RECEIVED in the inbound-unqueued index, which the next minute's run queues, so a " +
		"dead-letter queue of the function would hold nothing to act on"
	reasonInboundStart = "invoked by the inbound queue's event source mapping only, whose failed messages the queue's own " +
		"dead-letter queue receives (alarmed; toolgate sources dlq redrive)"
	// AwsSolutions-IAM5 Resource::* of the sources function.
	reasonListSchedules = "; and scheduler:ListSchedules, with which the sources function lists its group's schedules: a list " +
		"action with no resource type (Service Authorization Reference, Amazon EventBridge Scheduler)"
	// AwsSolutions-IAM5 Resource::* of X-Ray.
	reasonXRay = "xray:PutTraceSegments and xray:PutTelemetryRecords, which the Lambda construct adds for active tracing " +
		"(Tracing: ACTIVE): X-Ray defines no resource type for them, so they take Resource * (Service Authorization Reference)"
	// AwsSolutions-IAM5 Resource::* of review-decision.
	reasonSendTask = "; and states:SendTaskSuccess and states:SendTaskFailure: the task token, not an ARN, names the execution, " +
		"and Step Functions defines no resource type for them"
	// AwsSolutions-IAM5 Resource::* of the publish function.
	reasonPublishStar = "; and states:ListStateMachines, with which the publish function finds toolgate-<stage>_<solution> by " +
		"name (a list action with no resource type), and CloudWatch Logs' vended log delivery actions (logs:CreateLogDelivery, " +
		"GetLogDelivery, UpdateLogDelivery, DeleteLogDelivery, ListLogDeliveries, PutResourcePolicy, DescribeResourcePolicies, " +
		"DescribeLogGroups), which the caller of CreateStateMachine and UpdateStateMachine needs to set a state machine's " +
		"logging configuration: none of them has a resource type"
	// AwsSolutions-IAM5 on the state machines of the stage.
	reasonStateMachines = " one state machine per Solution, toolgate-<stage>_<solution>, named when the Solution is " +
		"published: toolgate-<stage>_ is this stage's namespace of state machines (no stage or Solution name holds _), and " +
		"no other stage's state machine is reached"
)

// nagSuppressions accepts the findings of the platform stack that are
// toolgate's decisions (the ledger stack has none). It adds cdk-nag
// metadata to the resources only: the template's resources and their
// properties are unchanged.
func nagSuppressions(p *PlatformStack, stage string) {
	for _, spec := range functionSpecs {
		f := p.Functions[spec.Name]
		dlqReason := reasonSynchronous
		switch spec.Name {
		case fnWebhookDelivery:
			dlqReason = reasonWebhookDelivery
		case fnWebhookReceiver:
			dlqReason = reasonWebhookReceiver
		case fnInboundStart:
			dlqReason = reasonInboundStart
		}
		suppress(f.Function, false, nagSuppression{Rule: "Serverless-LambdaDLQ", Reason: dlqReason})
		reason := reasonXRay
		switch spec.Name {
		case fnReviewDecision:
			reason += reasonSendTask
		case fnPublish:
			reason += reasonPublishStar
		case fnSources:
			reason += reasonListSchedules
		}
		// The role's default policy, a child of the role.
		suppress(f.Role, true, nagSuppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{"Resource::*"}, Reason: reason})
	}
	suppress(p.Functions[fnPublish].Role, true, nagSuppression{Rule: "AwsSolutions-IAM5",
		AppliesTo: []string{nagARN("states", "stateMachine:"+stateMachinePrefix(stage)+"*")},
		Reason:    "the publish function creates and updates, and publishes versions of," + reasonStateMachines})
	// The platform tools' proxy may invoke, and read the floor tags of, any
	// function of the account and region that carries the tool tag, and
	// reads its stage's tool function parameters; publish reads those
	// parameters and floors too.
	suppress(p.Functions[fnLambdaTool].Role, true,
		nagSuppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{nagARN("lambda", "function:*")},
			Reason: "lambda:InvokeFunction and lambda:ListTags (the function's floor)" + reasonToolFunctions(stage)},
		nagSuppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{nagParamWildcard(stage)}, Reason: reasonToolFunctionParams})
	suppress(p.Functions[fnPublish].Role, true,
		nagSuppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{nagARN("lambda", "function:*")},
			Reason: "lambda:ListTags (the floor of a platform tool function a registered toolset pins)" + reasonToolFunctions(stage)},
		nagSuppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{nagParamWildcard(stage)}, Reason: reasonToolFunctionParams})
	suppress(p.Functions[fnReviewRequest].Role, true,
		nagSuppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{nagARN("states", "execution:"+stateMachinePrefix(stage)+"*:*")},
			Reason: "states:DescribeExecution of this stage's executions: a child run's start is accepted only for the version its parent " +
				"starts, which review-request reads from the child's execution, named by its parent's run id and seq (docs/solutions.md, \"Workflow steps\"); " +
				"states:DescribeStateMachineForExecution of this stage's executions: a review's review.requested event names the Solution version " +
				"the run executes, read from the definition of the revision its execution started on, the execution being the review's run id " +
				"(docs/webhooks.md, \"The version a review names\")"},
		nagSuppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{nagARN("states", "stateMachine:"+stateMachinePrefix(stage)+"*")},
			Reason: "states:DescribeStateMachine of a published version (states:StateMachineQualifier present) of" + reasonStateMachines +
				": review-request checks a child's input against the input record of the version a parent's workflow step starts " +
				"(docs/solutions.md, \"Workflow steps\")"})
	suppress(p.Functions[fnReviewDecision].Role, true,
		nagSuppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{nagARN("states", "execution:"+stateMachinePrefix(stage)+"*:*")},
			Reason: "states:StopExecution of this stage's executions: a person cancelling a parked call stops its run, named by the " +
				"park's run id, which any Solution of the stage may be (docs/parking.md, \"Deciding\"); and run.fork describes and stops " +
				"the run it forks, which any Solution of the stage may be (docs/fork.md)"})
	w := p.Webhooks
	for _, m := range []string{"WebhookEventsMapping", "WebhookDeliveriesMapping"} {
		suppress(p.Functions[fnWebhookDelivery].Function.Node().FindChild(jsii.String(m)), false, nagSuppression{
			Rule: "Serverless-LambdaEventSourceMappingDestination",
			Reason: "an SQS event source mapping takes no on-failure destination (Lambda supports them for stream and Kafka " +
				"sources): a message that fails is received again until the queue's redrive policy moves it to the queue's own " +
				"dead-letter queue, which is alarmed"})
	}
	for _, q := range []constructs.IConstruct{w.EventsDLQ, w.DeliveriesDLQ} {
		suppress(q, false, nagSuppression{Rule: "Serverless-SQSRedrivePolicy",
			Reason: "a dead-letter queue: the end of its source queue's redrive, alarmed on its depth; toolgate webhooks dlq redrive " +
				"sends a delivery back to its source"})
	}
	suppress(w.Relay, false, nagSuppression{Rule: "Serverless-EventBusDLQ",
		Reason: "the relay's schedule: each event is a tick carrying nothing, and a tick not delivered is replaced by the next " +
			"minute's, which sends every event still unsent; a dead-letter queue would hold empty ticks"})
	inboundSuppressions(p, stage)
	suppress(p.LedgerSecrets.Function, false, nagSuppression{Rule: "Serverless-LambdaDLQ",
		Reason: "invoked by CloudFormation only, for the LedgerSecrets custom resource: it answers CloudFormation through the " +
			"event's ResponseURL, FAILED on any error (aws-lambda-go cfn.LambdaWrap), and an invocation that never answers fails " +
			"the deployment, which is retried as a whole; a dead-letter queue would hold nothing to act on"})
	suppress(p.LedgerSecrets.Role, true, nagSuppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{"Resource::*"}, Reason: reasonXRay})
	a := p.Access
	suppress(a.ExecutionRole, true, nagSuppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{"Resource::*"},
		Reason: "CloudWatch Logs' vended log delivery actions (logs:CreateLogDelivery, GetLogDelivery, UpdateLogDelivery, " +
			"DeleteLogDelivery, ListLogDeliveries, PutResourcePolicy, DescribeResourcePolicies, DescribeLogGroups), which a " +
			"state machine's logging configuration needs on its execution role (Step Functions Developer Guide, IAM policies " +
			"for logging to CloudWatch Logs), and X-Ray's PutTraceSegments, PutTelemetryRecords, GetSamplingRules and " +
			"GetSamplingTargets for state machine tracing: none of them has a resource type"},
		nagSuppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{nagARN("states", "stateMachine:"+stateMachinePrefix(stage)+"*")},
			Reason: "a workflow step starts the published version of another Solution of this stage, toolgate-<stage>_<solution>:<version> " +
				"(startExecution.sync:2); which Solutions a run may start is the resolver's guard, the toolset's workflows (docs/solutions.md, \"Workflow steps\")"},
		nagSuppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{nagARN("states", "execution:"+stateMachinePrefix(stage)+"*:*")},
			Reason: "a workflow step follows (DescribeExecution) and may stop the child executions it starts, whose names hash the parent's " +
				"run id and seq, of this stage's state machines only (Step Functions guide, IAM policies for starting a new Step Functions execution)"})
	suppress(a.Publisher, false,
		nagSuppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{nagARN("states", "stateMachine:"+stateMachinePrefix(stage)+"*")},
			Reason: "toolgate run reads the definition (its input record) of, and starts executions of," + reasonStateMachines},
		nagSuppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{nagARN("states", "execution:"+stateMachinePrefix(stage)+"*:*")},
			Reason: "toolgate run --wait describes, and reads the history of, the executions of this stage's state machines " +
				"(toolgate-<stage>_*), whose names each run chooses"},
		nagSuppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{"Resource::*"},
			Reason: "states:ListStateMachines, with which toolgate run finds toolgate-<stage>_<solution> by name: a list action " +
				"with no resource type"},
	)
}

// reasonToolFunctionParams: AwsSolutions-IAM5 on the tool function
// parameters of the stage.
const reasonToolFunctionParams = "ssm:GetParameter on /toolgate/<stage>/tool-function/*: one parameter per platform tool " +
	"function, /toolgate/<stage>/tool-function/<Placeholder>/arn, written by toolfunction.New when a team deploys its tool; " +
	"the namespace holds nothing else, and no other stage's or toolgate's own function parameters are reached"

// reasonToolFunctions: AwsSolutions-IAM5 on function:* under the tool
// tag's condition, after the actions it allows.
func reasonToolFunctions(stage string) string {
	return " under the condition aws:ResourceTag/" + toolfunction.TagKey + " = " + stage + " (its stage): platform teams' tool " +
		"functions, whose names the teams choose; the tag, which toolfunction.New sets, bounds the statement instead of " +
		"a name prefix, and the Service Authorization Reference lists aws:ResourceTag/${TagKey} for lambda:InvokeFunction " +
		"and lambda:ListTags on the function resource type (docs/infra.md, \"Platform tools\")"
}

// nagParamWildcard is the appliesTo form of the tool function parameters'
// wildcard of stage.
func nagParamWildcard(stage string) string {
	return "Resource::arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:parameter" + toolfunction.ParamPrefix(stage) + "*"
}

// nagARN is the appliesTo form of an AwsSolutions-IAM5 finding on an ARN
// of this account and region: cdk-nag writes Fn::Sub's pseudo parameters
// as <AWS::…>.
func nagARN(service, resource string) string {
	return "Resource::arn:<AWS::Partition>:" + service + ":<AWS::Region>:<AWS::AccountId>:" + resource
}

// suppress adds the suppressions to construct c (its CloudFormation
// resource; with children, every resource under it as well).
func suppress(c constructs.IConstruct, children bool, s ...nagSuppression) {
	var l []*cdknag.NagPackSuppression
	for _, x := range s {
		sup := &cdknag.NagPackSuppression{Id: jsii.String(x.Rule), Reason: jsii.String(x.Reason)}
		if len(x.AppliesTo) > 0 {
			var at []any
			for _, a := range x.AppliesTo {
				at = append(at, a)
			}
			sup.AppliesTo = &at
		}
		l = append(l, sup)
	}
	cdknag.NagSuppressions_AddResourceSuppressions(c, &l, jsii.Bool(children))
}

// inboundSuppressions accepts the inbound resources' findings
// (inbound.go): the inbound queue's event source mapping, its dead-letter
// queue, the relay's schedule, the sources function's schedules of its
// group, and inbound-start's state machines and executions of the stage.
func inboundSuppressions(p *PlatformStack, stage string) {
	in := p.Inbound
	suppress(p.Functions[fnInboundStart].Function.Node().FindChild(jsii.String("InboundMapping")), false, nagSuppression{
		Rule: "Serverless-LambdaEventSourceMappingDestination",
		Reason: "an SQS event source mapping takes no on-failure destination (Lambda supports them for stream and Kafka " +
			"sources): a message that fails is received again until the queue's redrive policy moves it to the inbound " +
			"dead-letter queue, which is alarmed"})
	suppress(in.DLQ, false, nagSuppression{Rule: "Serverless-SQSRedrivePolicy",
		Reason: "a dead-letter queue: the end of the inbound queue's redrive and of the schedules' DeadLetterConfig, alarmed on " +
			"its depth; toolgate sources dlq redrive sends a message back to the inbound queue"})
	suppress(in.Relay, false, nagSuppression{Rule: "Serverless-EventBusDLQ",
		Reason: "the inbound relay's schedule: each event is a tick carrying nothing, and a tick not delivered is replaced by " +
			"the next minute's, which queues every event still unqueued; a dead-letter queue would hold empty ticks"})
	suppress(p.Functions[fnSources].Role, true, nagSuppression{Rule: "AwsSolutions-IAM5",
		AppliesTo: []string{nagARN("scheduler", "schedule/"+schedulerGroupName(stage)+"/*")},
		Reason: "scheduler:CreateSchedule, UpdateSchedule, DeleteSchedule and GetSchedule of the schedules of the stage's own " +
			"group, toolgate-<stage>, named after the schedule items people add (toolgate schedules add); no other group's"})
	suppress(p.Functions[fnInboundStart].Role, true,
		nagSuppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{nagARN("states", "stateMachine:"+stateMachinePrefix(stage)+"*")},
			Reason: "states:DescribeStateMachine and states:StartExecution of the latest revision (states:StateMachineQualifier " +
				"absent) of" + reasonStateMachines + ": an inbound source or schedule names the Solution its runs start"},
		nagSuppression{Rule: "AwsSolutions-IAM5", AppliesTo: []string{nagARN("states", "execution:"+stateMachinePrefix(stage)+"*:*")},
			Reason: "states:DescribeExecution of this stage's executions: a start that another attempt of the same event " +
				"recorded is done when its execution, named from the event, exists (docs/webhooks.md, \"Receiving events\")"})
}
