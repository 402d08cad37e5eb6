package platform

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/reviewer"
	"github.com/toolgate/toolgate/shared/table"
)

// starResource lists every action allowed on Resource "*", with the reason.
// AWS gives these actions no resource-level permission (the Service
// Authorization Reference lists no resource type for them). Any other
// action on "*" fails TestTemplates/no-wildcards.
var starResource = map[string]string{
	"states:SendTaskSuccess":        "the task token names the execution; no resource type (review-decision)",
	"states:SendTaskFailure":        "the task token names the execution; no resource type (review-decision)",
	"states:ListStateMachines":      "list actions take no resource; the publish function and run find toolgate-<stage>_<solution> by name (publish role, Publisher)",
	"xray:PutTraceSegments":         "X-Ray segment upload has no resource type (active tracing of functions and state machines)",
	"xray:PutTelemetryRecords":      "X-Ray telemetry has no resource type (active tracing)",
	"xray:GetSamplingRules":         "X-Ray sampling has no resource type (state machine tracing)",
	"xray:GetSamplingTargets":       "X-Ray sampling has no resource type (state machine tracing)",
	"logs:CreateLogDelivery":        "vended log delivery has no resource type (Step Functions logging: execution role, and the publish role, which sets it)",
	"logs:GetLogDelivery":           "vended log delivery has no resource type (Step Functions logging)",
	"logs:UpdateLogDelivery":        "vended log delivery has no resource type (Step Functions logging)",
	"logs:DeleteLogDelivery":        "vended log delivery has no resource type (Step Functions logging)",
	"logs:ListLogDeliveries":        "vended log delivery has no resource type (Step Functions logging)",
	"logs:PutResourcePolicy":        "account-wide log resource policy, no resource type (Step Functions logging)",
	"logs:DescribeResourcePolicies": "account-wide log resource policies, no resource type (Step Functions logging)",
	"logs:DescribeLogGroups":        "Step Functions checks the destination by listing log groups; the guide grants it on * (Step Functions logging)",
	"scheduler:ListSchedules":       "list actions take no resource; the sources function lists its group's schedules (sources role)",
}

// arn is an ARN in the template's Fn::Sub form.
func arn(service, resource string) string {
	return "arn:${AWS::Partition}:" + service + ":${AWS::Region}:${AWS::AccountId}:" + resource
}

var (
	tableARN       = arn("dynamodb", "table/toolgate-test")
	reviewIndexARN = tableARN + "/index/reviews-by-status"
	identity       = arn("ses", "identity/example.org")
	lambdaXRay     = stmt{Actions: []string{"xray:PutTelemetryRecords", "xray:PutTraceSegments"}, Resources: []string{"*"}}
)

// ownLogs is a function role's statement on its own log group.
func ownLogs(fn string) stmt {
	return stmt{Sid: "OwnLogGroup", Actions: []string{"logs:CreateLogStream", "logs:PutLogEvents"}, Resources: []string{"${" + fn + "Logs.Arn}"}}
}

// wantLedger is principal p's ledger statements as the declaration gives
// them (table.Of), encoded here apart from infra's generator: one per
// access, with dynamodb:LeadingKeys "<prefix>*" for the kinds it reaches,
// dynamodb:Attributes when it names them, dynamodb:ReturnValues and
// dynamodb:Select when it sets them; an index access is a Query on the
// index, bounded by the attributes it names only.
func wantLedger(p table.Principal) []stmt {
	var out []stmt
	for _, a := range table.Of(p) {
		var actions []string
		for _, act := range a.Actions {
			actions = append(actions, string(act))
		}
		all := map[string]any{}
		resource := tableARN
		if a.Index != nil {
			resource = tableARN + "/index/" + a.Index.Name
		} else {
			var keys []string
			for _, prefix := range a.Prefixes() {
				keys = append(keys, prefix+"*")
			}
			all["dynamodb:LeadingKeys"] = keys
		}
		if a.Attributes != nil {
			all["dynamodb:Attributes"] = a.Attributes
		}
		c := map[string]any{}
		if len(all) > 0 {
			c["ForAllValues:StringLike"] = all
		}
		if a.ReturnValues != "" {
			c["StringEquals"] = map[string]any{"dynamodb:ReturnValues": a.ReturnValues}
		}
		if a.SpecificAttributes {
			c["StringEqualsIfExists"] = map[string]any{"dynamodb:Select": "SPECIFIC_ATTRIBUTES"}
		}
		st := stmt{Sid: a.Sid, Actions: sorted(actions...), Resources: []string{resource}}
		if len(c) > 0 {
			b, _ := json.Marshal(c)
			st.Condition = string(b)
		}
		out = append(out, st)
	}
	return out
}

// wantReadFloors: the floor tags of the stage's platform tool functions
// (the proxy's and the publish function's), and of no other function.
var wantReadFloors = stmt{Sid: "ReadToolFunctionFloors", Actions: []string{"lambda:ListTags"}, Resources: []string{arn("lambda", "function:*")},
	Condition: `{"StringEquals":{"aws:ResourceTag/toolgate:tool":"test"}}`}

// wantReadSecrets is a tool function's one statement for its ledger
// secrets: its own MAC parameter, the stage's external key and since.
func wantReadSecrets(function string) stmt {
	return stmt{Sid: "ReadOwnLedgerSecrets", Actions: []string{"ssm:GetParameters"}, Resources: []string{
		arn("ssm", "parameter/toolgate/test/secret/external-key"),
		arn("ssm", "parameter/toolgate/test/secret/ledger-mac/"+function),
		arn("ssm", "parameter/toolgate/test/secret/ledger-since")}}
}

// wantFunctionPolicies is each function role's whole policy.
var wantFunctionPolicies = map[string][]stmt{
	// The provisioning function: PutParameter on exactly the parameters
	// it creates, each tool function's key, the external key, the
	// end-user key and since.
	"LedgerSecretsFunction": {ownLogs("LedgerSecretsFunction"), {Sid: "CreateLedgerSecrets", Actions: []string{"ssm:PutParameter"}, Resources: []string{
		arn("ssm", "parameter/toolgate/test/secret/end-user-key"),
		arn("ssm", "parameter/toolgate/test/secret/external-key"),
		arn("ssm", "parameter/toolgate/test/secret/ledger-mac/http"),
		arn("ssm", "parameter/toolgate/test/secret/ledger-mac/lambda-tool"),
		arn("ssm", "parameter/toolgate/test/secret/ledger-mac/mcp-call"),
		arn("ssm", "parameter/toolgate/test/secret/ledger-mac/send-email"),
		arn("ssm", "parameter/toolgate/test/secret/ledger-mac/structured-data-fetch"),
		arn("ssm", "parameter/toolgate/test/secret/ledger-mac/workflow-validator"),
		arn("ssm", "parameter/toolgate/test/secret/ledger-since")}}, lambdaXRay},
	"SendEmailFunction": append([]stmt{
		ownLogs("SendEmailFunction"), wantReadSecrets("send-email"),
		{Sid: "SendAsTheSenderOnly", Actions: []string{"ses:SendEmail"}, Resources: []string{identity},
			Condition: `{"ForAllValues:StringLike":{"ses:Recipients":` + wantRecipients + `},"StringEquals":{"ses:FromAddress":"noreply@mail.example.org"}}`},
		lambdaXRay,
	}, wantLedger(table.ToolFunctions)...),
	"StructuredDataFetchFunction": slices.Concat([]stmt{ownLogs("StructuredDataFetchFunction"), wantReadSecrets("structured-data-fetch"), lambdaXRay},
		wantLedger(table.ToolFunctions), wantLedger(table.LearningToolFunctions)),
	"WorkflowValidatorFunction": append([]stmt{ownLogs("WorkflowValidatorFunction"), wantReadSecrets("workflow-validator"), lambdaXRay}, wantLedger(table.ToolFunctions)...),
	// http: the dispatcher's items (approvals among them: its writes are
	// reviewed) and nothing else; the hosts are on the internet.
	"HttpFunction": slices.Concat([]stmt{ownLogs("HttpFunction"), wantReadSecrets("http"), lambdaXRay}, wantLedger(table.ToolFunctions), wantLedger(table.ParkingToolFunctions),
		wantLedger(table.LearningToolFunctions)),
	// The proxy: the tagged functions and their floors, and its stage's
	// tool function parameters only.
	"LambdaToolFunction": append([]stmt{
		ownLogs("LambdaToolFunction"), wantReadSecrets("lambda-tool"),
		{Sid: "InvokeTaggedToolFunctions", Actions: []string{"lambda:InvokeFunction"}, Resources: []string{arn("lambda", "function:*")},
			Condition: `{"StringEquals":{"aws:ResourceTag/toolgate:tool":"test"}}`},
		wantReadFloors,
		{Sid: "ToolFunctionParameters", Actions: []string{"ssm:GetParameter"}, Resources: []string{arn("ssm", "parameter/toolgate/test/tool-function/*")}},
		lambdaXRay,
	}, slices.Concat(wantLedger(table.ToolFunctions), wantLedger(table.LearningToolFunctions))...),
	// mcp-call: the dispatcher's items and nothing else; the MCP servers
	// are on the internet.
	"McpCallFunction": slices.Concat([]stmt{ownLogs("McpCallFunction"), wantReadSecrets("mcp-call"), lambdaXRay}, wantLedger(table.ToolFunctions), wantLedger(table.ParkingToolFunctions),
		wantLedger(table.LearningToolFunctions)),
	"ReviewRequestFunction": append([]stmt{
		ownLogs("ReviewRequestFunction"),
		// A child run's start: the version its execution runs.
		{Sid: "DescribeChildExecutions", Actions: []string{"states:DescribeExecution"},
			Resources: []string{"arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:execution:toolgate-test_*:*"}},
		// A review's review.requested: the revision its run's execution
		// started on, of this stage's executions only.
		{Sid: "DescribeReviewedRunsRevisions", Actions: []string{"states:DescribeStateMachineForExecution"},
			Resources: []string{"arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:execution:toolgate-test_*:*"}},
		// A workflow step's start record: the input record of the child
		// version it starts, of this stage's state machines, never of the
		// latest revision (a version ARN names its qualifier).
		{Sid: "ReadChildVersionDefinitions", Actions: []string{"states:DescribeStateMachine"},
			Resources: []string{"arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:stateMachine:toolgate-test_*"},
			Condition: `{"Null":{"states:StateMachineQualifier":"false"}}`},
		// The stage's end-user key, under which an end user's scope is
		// computed.
		{Sid: "ReadEndUserKey", Actions: []string{"ssm:GetParameters"},
			Resources: []string{arn("ssm", "parameter/toolgate/test/secret/end-user-key")}},
		// The stage's external key alone, which a run's trace id is
		// derived under: no MAC key, no since time.
		{Sid: "ReadExternalKey", Actions: []string{"ssm:GetParameters"},
			Resources: []string{arn("ssm", "parameter/toolgate/test/secret/external-key")}},
		// review.requested, handed to the events queue as it is recorded:
		// that queue only, SendMessage only.
		sendWebhookEvents,
		// Review notices: from the sender only, to testConfig's
		// reviewNotices only (canonical IAM patterns).
		{Sid: "SendReviewNoticesAsTheSenderOnly", Actions: []string{"ses:SendEmail"}, Resources: []string{identity},
			Condition: `{"ForAllValues:StringLike":{"ses:Recipients":["ops@example.com","*@reviewers.example.org"]},"StringEquals":{"ses:FromAddress":"noreply@mail.example.org"}}`},
		lambdaXRay,
	}, wantLedger(table.ReviewRequest)...),
	"ReviewDecisionFunction": append([]stmt{
		ownLogs("ReviewDecisionFunction"),
		{Sid: "SendTaskResult", Actions: []string{"states:SendTaskFailure", "states:SendTaskSuccess"}, Resources: []string{"*"}},
		// A cancelled park stops its run: this stage's executions only.
		{Sid: "StopParkedRuns", Actions: []string{"states:StopExecution"}, Resources: []string{arn("states", "execution:toolgate-test_*:*")}},
		{Sid: "ForkRuns", Actions: []string{"states:DescribeExecution", "states:StopExecution"}, Resources: []string{arn("states", "execution:toolgate-test_*:*")}},
		// review.decided, the same way.
		sendWebhookEvents,
		lambdaXRay,
	}, wantLedger(table.ReviewDecision)...),
	"PublishFunction": append([]stmt{
		ownLogs("PublishFunction"),
		// The parameters Publish reads, and nothing else under the path.
		{Sid: "PlatformParameters", Actions: []string{"ssm:GetParameter"}, Resources: []string{
			arn("ssm", "parameter/toolgate/test/function/http/arn"),
			arn("ssm", "parameter/toolgate/test/function/lambda-tool/arn"),
			arn("ssm", "parameter/toolgate/test/function/mcp-call/arn"),
			arn("ssm", "parameter/toolgate/test/function/review-request/arn"),
			arn("ssm", "parameter/toolgate/test/function/send-email/arn"),
			arn("ssm", "parameter/toolgate/test/function/structured-data-fetch/arn"),
			arn("ssm", "parameter/toolgate/test/function/workflow-validator/arn"),
			arn("ssm", "parameter/toolgate/test/role/solution-execution/arn"),
		}},
		// A platform tool's placeholder, and its function's floor when a
		// toolset that pins it is registered.
		{Sid: "ToolFunctionParameters", Actions: []string{"ssm:GetParameter"}, Resources: []string{arn("ssm", "parameter/toolgate/test/tool-function/*")}},
		wantReadFloors,
		{Sid: "FindStateMachines", Actions: []string{"states:ListStateMachines"}, Resources: []string{"*"}},
		// An end user's credentials are scoped under the stage's end-user key.
		{Sid: "ReadEndUserKey", Actions: []string{"ssm:GetParameters"}, Resources: []string{arn("ssm", "parameter/toolgate/test/secret/end-user-key")}},
		// Only this role writes state machines, of its own stage only.
		{Sid: "PublishStateMachines", Actions: []string{"states:CreateStateMachine", "states:PublishStateMachineVersion", "states:UpdateStateMachine"},
			Resources: []string{arn("states", "stateMachine:toolgate-test_*")}},
		{Sid: "PassTheExecutionRole", Actions: []string{"iam:PassRole"}, Resources: []string{"${SolutionExecutionRole.Arn}"},
			Condition: `{"StringEquals":{"iam:PassedToService":"states.amazonaws.com"}}`},
		{Sid: "ExecutionLogDelivery", Actions: sorted("logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery", "logs:DeleteLogDelivery",
			"logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies", "logs:DescribeLogGroups"), Resources: []string{"*"}},
		lambdaXRay,
	}, wantLedger(table.Publish)...),
}

// The webhook functions' queue statements (webhooks.go).
var (
	// sendWebhookEvents is the review functions' one queue statement: the
	// events queue, SendMessage (grantWebhookProducers). No tool function
	// has it.
	sendWebhookEvents = stmt{Sid: "SendWebhookEvents", Actions: []string{"sqs:SendMessage"}, Resources: []string{"${WebhookEventsQueue.Arn}"}}
	webhookQueues     = []string{"${WebhookDeliveriesQueue.Arn}", "${WebhookEventsQueue.Arn}"}
	wantWebhookPolicy = map[string][]stmt{
		// Its event source mappings' and retries' actions on both queues,
		// SendMessage to both (the relay, the fan-out); no KMS statement:
		// the key policy grants its Decrypt (TestCredentialKey).
		"WebhookDeliveryFunction": {
			ownLogs("WebhookDeliveryFunction"),
			{Sid: "ConsumeWebhookQueues", Actions: sorted("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"),
				Resources: webhookQueues},
			{Sid: "SendWebhookMessages", Actions: []string{"sqs:SendMessage"}, Resources: webhookQueues},
			lambdaXRay,
		},
		// dlq list and redrive: both dead-letter queues, and SendMessage
		// to their queues only.
		"WebhooksFunction": {
			ownLogs("WebhooksFunction"),
			{Sid: "RedriveWebhookDeliveries", Actions: sorted("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"),
				Resources: []string{"${WebhookDeliveriesDLQ.Arn}", "${WebhookEventsDLQ.Arn}"}},
			{Sid: "ResendWebhookDeliveries", Actions: []string{"sqs:SendMessage"}, Resources: []string{"${WebhookDeliveriesQueue.Arn}", "${WebhookEventsQueue.Arn}"}},
			lambdaXRay,
		},
	}
)

func init() {
	wantFunctionPolicies["WebhookDeliveryFunction"] = append(wantWebhookPolicy["WebhookDeliveryFunction"], wantLedger(table.WebhookDelivery)...)
	wantFunctionPolicies["WebhooksFunction"] = append(wantWebhookPolicy["WebhooksFunction"], wantLedger(table.Webhooks)...)
}

// wantExecutionRole: Solutions invoke the sfn aliases only.
var wantExecutionRole = []stmt{
	{Sid: "InvokeToolgateFunctions", Actions: []string{"lambda:InvokeFunction"}, Resources: []string{
		"${HttpFunctionSfnAlias}", "${LambdaToolFunctionSfnAlias}", "${McpCallFunctionSfnAlias}", "${ReviewRequestFunctionSfnAlias}", "${SendEmailFunctionSfnAlias}", "${StructuredDataFetchFunctionSfnAlias}", "${WorkflowValidatorFunctionSfnAlias}"}},
	{Sid: "ExecutionLogging", Actions: sorted("logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery", "logs:DeleteLogDelivery",
		"logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies", "logs:DescribeLogGroups"), Resources: []string{"*"}},
	{Sid: "ExecutionTracing", Actions: sorted("xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets"), Resources: []string{"*"}},
	// Workflow steps: exactly startExecution.sync:2's permissions, on this
	// stage's state machines and executions.
	{Sid: "StartChildExecutions", Actions: []string{"states:StartExecution"},
		Resources: []string{"arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:stateMachine:toolgate-test_*"}},
	{Sid: "FollowChildExecutions", Actions: sorted("states:DescribeExecution", "states:StopExecution"),
		Resources: []string{"arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:execution:toolgate-test_*:*"}},
	{Sid: "ChildExecutionEvents", Actions: sorted("events:PutTargets", "events:PutRule", "events:DescribeRule"),
		Resources: []string{"arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:rule/StepFunctionsGetEventsForStepFunctionsExecutionRule"}},
}

const wantExecutionTrust = `{"Action":"sts:AssumeRole","Condition":{"ArnLike":{"aws:SourceArn":"` +
	"arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:stateMachine:toolgate-test_*" +
	`"},"StringEquals":{"aws:SourceAccount":"${AWS::AccountId}"}},"Effect":"Allow","Principal":{"Service":"states.amazonaws.com"}}`

// wantManagedPolicies are the policies for people, by name.
var wantManagedPolicies = map[string][]stmt{
	// Publishing goes through the publish function: no state machine
	// write, no PassRole, no ledger item; this stage's executions only.
	"toolgate-test-publisher": {
		{Sid: "PublishFunctionURL", Actions: []string{"lambda:InvokeFunctionUrl"}, Resources: []string{"${PublishFunction.Arn}"},
			Condition: `{"StringEquals":{"lambda:FunctionUrlAuthType":"AWS_IAM"}}`},
		{Sid: "PublishFunction", Actions: []string{"lambda:InvokeFunction"}, Resources: []string{"${PublishFunction.Arn}"},
			Condition: `{"Bool":{"lambda:InvokedViaFunctionUrl":"true"}}`},
		// The latest revision only, never a published version.
		{Sid: "StartExecutions", Actions: []string{"states:StartExecution"}, Resources: []string{arn("states", "stateMachine:toolgate-test_*")},
			Condition: `{"Null":{"states:StateMachineQualifier":"true"}}`},
		// The input record toolgate run checks an input against.
		{Sid: "ReadDefinitions", Actions: []string{"states:DescribeStateMachine"}, Resources: []string{arn("states", "stateMachine:toolgate-test_*")}},
		{Sid: "DescribeExecutions", Actions: []string{"states:DescribeExecution"}, Resources: []string{arn("states", "execution:toolgate-test_*:*")}},
		// Histories hold the reviewed inputs: this stage's only.
		{Sid: "ExecutionHistories", Actions: []string{"states:GetExecutionHistory"}, Resources: []string{arn("states", "execution:toolgate-test_*:*")}},
		{Sid: "FindStateMachines", Actions: []string{"states:ListStateMachines"}, Resources: []string{"*"}},
		{Sid: "PlatformParameters", Actions: []string{"ssm:GetParameter"}, Resources: []string{
			arn("ssm", "parameter/toolgate/test/publish/url"), arn("ssm", "parameter/toolgate/test/review-decision/url"),
			arn("ssm", "parameter/toolgate/test/run-start/function")}},
		// toolgate run's start record: review-request's start alias, and
		// neither its direct alias (direct-lane reviews) nor its sfn alias.
		{Sid: "RecordRunStarts", Actions: []string{"lambda:InvokeFunction"}, Resources: []string{"${ReviewRequestFunctionStartAlias}"}},
	},
	"toolgate-test-reviewer": {
		{Sid: "DecisionFunctionURL", Actions: []string{"lambda:InvokeFunctionUrl"}, Resources: []string{"${ReviewDecisionFunction.Arn}"},
			Condition: `{"StringEquals":{"lambda:FunctionUrlAuthType":"AWS_IAM"}}`},
		{Sid: "DecisionFunction", Actions: []string{"lambda:InvokeFunction"}, Resources: []string{"${ReviewDecisionFunction.Arn}"},
			Condition: `{"Bool":{"lambda:InvokedViaFunctionUrl":"true"}}`},
	},
	"toolgate-test-operator": append(wantLedger(table.Operator),
		// People invoke the direct aliases only.
		stmt{Sid: "DirectLane", Actions: []string{"lambda:InvokeFunction"}, Resources: []string{
			"${HttpFunctionDirectAlias}", "${LambdaToolFunctionDirectAlias}", "${McpCallFunctionDirectAlias}", "${ReviewRequestFunctionDirectAlias}", "${SendEmailFunctionDirectAlias}", "${StructuredDataFetchFunctionDirectAlias}", "${WorkflowValidatorFunctionDirectAlias}"}},
		// toolgate webhooks: the webhooks function through its URL only,
		// and its URL's parameter; the function decides who is an admin.
		stmt{Sid: "WebhooksFunctionURL", Actions: []string{"lambda:InvokeFunctionUrl"}, Resources: []string{"${WebhooksFunction.Arn}"},
			Condition: `{"StringEquals":{"lambda:FunctionUrlAuthType":"AWS_IAM"}}`},
		stmt{Sid: "WebhooksFunction", Actions: []string{"lambda:InvokeFunction"}, Resources: []string{"${WebhooksFunction.Arn}"},
			Condition: `{"Bool":{"lambda:InvokedViaFunctionUrl":"true"}}`},
		stmt{Sid: "WebhooksParameter", Actions: []string{"ssm:GetParameter"}, Resources: []string{arn("ssm", "parameter/toolgate/test/webhooks/url")}},
		// toolgate sources and schedules: the sources function through its
		// URL only; both inbound URLs' parameters. The function decides who
		// is an inbound operator.
		stmt{Sid: "SourcesFunctionURL", Actions: []string{"lambda:InvokeFunctionUrl"}, Resources: []string{"${SourcesFunction.Arn}"},
			Condition: `{"StringEquals":{"lambda:FunctionUrlAuthType":"AWS_IAM"}}`},
		stmt{Sid: "SourcesFunction", Actions: []string{"lambda:InvokeFunction"}, Resources: []string{"${SourcesFunction.Arn}"},
			Condition: `{"Bool":{"lambda:InvokedViaFunctionUrl":"true"}}`},
		stmt{Sid: "InboundParameters", Actions: []string{"ssm:GetParameter"}, Resources: []string{
			arn("ssm", "parameter/toolgate/test/inbound/url"), arn("ssm", "parameter/toolgate/test/sources/url")}}),
}

// wantParameters are the SSM parameters toolgate publish reads, with
// exactly these names (shared/deployment), and their values: a function's
// is its sfn alias (the ARN of a Ref to an alias), which compiled state
// machines' Tasks invoke.
var wantParameters = map[string]string{
	"/toolgate/test/function/send-email/arn":            "${SendEmailFunctionSfnAlias}",
	"/toolgate/test/function/structured-data-fetch/arn": "${StructuredDataFetchFunctionSfnAlias}",
	"/toolgate/test/function/http/arn":                  "${HttpFunctionSfnAlias}",
	"/toolgate/test/function/workflow-validator/arn":    "${WorkflowValidatorFunctionSfnAlias}",
	"/toolgate/test/function/review-request/arn":        "${ReviewRequestFunctionSfnAlias}",
	"/toolgate/test/function/lambda-tool/arn":           "${LambdaToolFunctionSfnAlias}",
	"/toolgate/test/function/mcp-call/arn":              "${McpCallFunctionSfnAlias}",
	"/toolgate/test/role/solution-execution/arn":        "${SolutionExecutionRole.Arn}",
	"/toolgate/test/table/name":                         "toolgate-test",
	"/toolgate/test/review-decision/url":                "${ReviewDecisionUrl.FunctionUrl}",
	"/toolgate/test/publish/url":                        "${PublishUrl.FunctionUrl}",
	"/toolgate/test/run-start/function":                 "${ReviewRequestFunctionStartAlias}",
	"/toolgate/test/webhooks/url":                       "${WebhooksUrl.FunctionUrl}",
	"/toolgate/test/sources/url":                        "${SourcesUrl.FunctionUrl}",
	"/toolgate/test/inbound/url":                        "${WebhookReceiverUrl.FunctionUrl}",
}

// wantPlatformCounts is the platform stack's resource list.
var wantPlatformCounts = map[string]int{
	"AWS::Lambda::Function":   15, // the fourteen functions, ledger-secrets
	"AWS::Lambda::Version":    7,  // the current version of each function with lanes
	"AWS::Lambda::Alias":      15, // sfn and direct of the four tools, lambda-tool, mcp-call and review-request; review-request's start
	"AWS::Lambda::Url":        5,  // review-decision, publish, webhooks, sources; webhook-receiver's public one
	"AWS::IAM::Role":          18, // one per function, the Solution execution role; the inbound-start and scheduler roles
	"AWS::IAM::Policy":        17, // each role's policy, but the inbound-start role's: it has none
	"AWS::IAM::ManagedPolicy": 3,  // Publisher, Reviewer, Operator
	"AWS::Logs::LogGroup":     16, // one per function, Solution executions
	"AWS::Logs::MetricFilter": 14, // UNKNOWN rows on each tool's log group, refused toolsets on each toolset loader's, failed executions
	"AWS::SSM::Parameter":     15,
	"AWS::KMS::Key":           1,  // the credentials' key (credentials.go)
	"AWS::KMS::Alias":         1,  // alias/toolgate-<stage>-credentials
	"Custom::LedgerSecrets":   1,  // the tool functions' ledger secrets (secrets.go)
	"Custom::LedgerSince":     1,  // the stage's since time, after every tool function (secrets.go)
	"AWS::CloudWatch::Alarm":  37, // errors and throttles per function, UNKNOWN rows, refused toolsets, failed executions; the webhook queues' four; the inbound queues' two
	// Webhooks (webhooks.go): the events and deliveries queues and their
	// dead-letter queues, each with its TLS-only policy; the status-change
	// rule and the relay's schedule, whose permission is the stack's only;
	// webhook-delivery's two event source mappings.
	// Inbound (inbound.go): the inbound queue and its dead-letter queue,
	// each with its policy; the inbound relay's schedule and its
	// permission; webhook-receiver's two public URL permissions;
	// inbound-start's event source mapping; the schedule group.
	"AWS::SQS::Queue":                 6,
	"AWS::SQS::QueuePolicy":           6,
	"AWS::Events::Rule":               3,
	"AWS::Lambda::Permission":         4,
	"AWS::Lambda::EventSourceMapping": 3,
	"AWS::Scheduler::ScheduleGroup":   1,
}

// sessionRoles is TOOLGATE_SESSION_ROLES of testConfig, on every function
// (each verifies caller proofs).
const sessionRoles = "AWSReservedSSO_Reviewer_0123456789abcdef,toolgate-people,toolgate-test-inbound-start"

// wantEnv is each function's whole environment: every one verifies caller
// proofs, has the stack's account and exports spans where testConfig says
// (adotCollector). None has the STS endpoint
// (its default, from AWS_REGION, applies) or a variable of neverSet.
var wantEnv = map[string]map[string]string{
	"LedgerSecretsFunction": {"TOOLGATE_ACCOUNT": "${AWS::AccountId}", "TOOLGATE_TRACING": adotCollector, "TOOLGATE_FUNCTION_TIMEOUT_SECONDS": "60"},
	"SendEmailFunction": {
		"TOOLGATE_TABLE": "toolgate-test", "TOOLGATE_FUNCTION_TIMEOUT_SECONDS": "30", "TOOLGATE_SESSION_ROLES": sessionRoles, "TOOLGATE_ACCOUNT": "${AWS::AccountId}", "TOOLGATE_TRACING": adotCollector, "TOOLGATE_LEDGER_MAC_PARAM": "/toolgate/test/secret/ledger-mac/send-email", "TOOLGATE_EXTERNAL_KEY_PARAM": "/toolgate/test/secret/external-key", "TOOLGATE_LEDGER_SINCE_PARAM": "/toolgate/test/secret/ledger-since",
		"TOOLGATE_SENDER": "noreply@mail.example.org", "TOOLGATE_SENDER_IDENTITY_ARN": identity,
		"TOOLGATE_RECIPIENT_ALLOW": "@example.org,Ops@Example.com,@bücher.example",
	},
	"StructuredDataFetchFunction": {
		"TOOLGATE_TABLE": "toolgate-test", "TOOLGATE_FUNCTION_TIMEOUT_SECONDS": "20", "TOOLGATE_SESSION_ROLES": sessionRoles, "TOOLGATE_ACCOUNT": "${AWS::AccountId}", "TOOLGATE_TRACING": adotCollector, "TOOLGATE_LEDGER_MAC_PARAM": "/toolgate/test/secret/ledger-mac/structured-data-fetch", "TOOLGATE_EXTERNAL_KEY_PARAM": "/toolgate/test/secret/external-key", "TOOLGATE_LEDGER_SINCE_PARAM": "/toolgate/test/secret/ledger-since",
		"TOOLGATE_FETCH_ALLOW": "api.example.org,*.data.example.net", "TOOLGATE_FETCH_TIMEOUT_SECONDS": "15",
	},
	// http: its own allow-list (never fetch's), the request bound from
	// the catalog's 35 s timeout, and testConfig's body bound.
	"HttpFunction": {
		"TOOLGATE_TABLE": "toolgate-test", "TOOLGATE_FUNCTION_TIMEOUT_SECONDS": "35", "TOOLGATE_SESSION_ROLES": sessionRoles, "TOOLGATE_ACCOUNT": "${AWS::AccountId}", "TOOLGATE_TRACING": adotCollector, "TOOLGATE_LEDGER_MAC_PARAM": "/toolgate/test/secret/ledger-mac/http", "TOOLGATE_EXTERNAL_KEY_PARAM": "/toolgate/test/secret/external-key", "TOOLGATE_LEDGER_SINCE_PARAM": "/toolgate/test/secret/ledger-since",
		"TOOLGATE_HTTP_ALLOW": "api.chat.example.org,*.hooks.example.net", "TOOLGATE_HTTP_TIMEOUT_SECONDS": "30", "TOOLGATE_HTTP_MAX_REQUEST_BYTES": "32768",
		"TOOLGATE_CREDENTIAL_KEY": "${CredentialKey.Arn}",
	},
	"WorkflowValidatorFunction": {"TOOLGATE_TABLE": "toolgate-test", "TOOLGATE_FUNCTION_TIMEOUT_SECONDS": "30", "TOOLGATE_SESSION_ROLES": sessionRoles, "TOOLGATE_ACCOUNT": "${AWS::AccountId}", "TOOLGATE_TRACING": adotCollector, "TOOLGATE_LEDGER_MAC_PARAM": "/toolgate/test/secret/ledger-mac/workflow-validator", "TOOLGATE_EXTERNAL_KEY_PARAM": "/toolgate/test/secret/external-key", "TOOLGATE_LEDGER_SINCE_PARAM": "/toolgate/test/secret/ledger-since"},
	"LambdaToolFunction": {"TOOLGATE_TABLE": "toolgate-test", "TOOLGATE_FUNCTION_TIMEOUT_SECONDS": "900", "TOOLGATE_SESSION_ROLES": sessionRoles, "TOOLGATE_ACCOUNT": "${AWS::AccountId}", "TOOLGATE_TRACING": adotCollector, "TOOLGATE_LEDGER_MAC_PARAM": "/toolgate/test/secret/ledger-mac/lambda-tool", "TOOLGATE_EXTERNAL_KEY_PARAM": "/toolgate/test/secret/external-key", "TOOLGATE_LEDGER_SINCE_PARAM": "/toolgate/test/secret/ledger-since",
		"TOOLGATE_STAGE": "test"},
	"McpCallFunction": {"TOOLGATE_TABLE": "toolgate-test", "TOOLGATE_FUNCTION_TIMEOUT_SECONDS": "60", "TOOLGATE_SESSION_ROLES": sessionRoles, "TOOLGATE_ACCOUNT": "${AWS::AccountId}", "TOOLGATE_TRACING": adotCollector, "TOOLGATE_LEDGER_MAC_PARAM": "/toolgate/test/secret/ledger-mac/mcp-call", "TOOLGATE_EXTERNAL_KEY_PARAM": "/toolgate/test/secret/external-key", "TOOLGATE_LEDGER_SINCE_PARAM": "/toolgate/test/secret/ledger-since",
		"TOOLGATE_MCP_ALLOW": "mcp.example.org,*.mcp.example.net", "TOOLGATE_MCP_SCHEMA_TTL_SECONDS": "10", "TOOLGATE_CREDENTIAL_KEY": "${CredentialKey.Arn}"},
	"ReviewRequestFunction": {
		"TOOLGATE_TABLE": "toolgate-test", "TOOLGATE_FUNCTION_TIMEOUT_SECONDS": "15", "TOOLGATE_SESSION_ROLES": sessionRoles, "TOOLGATE_ACCOUNT": "${AWS::AccountId}", "TOOLGATE_TRACING": adotCollector,
		"TOOLGATE_DIRECT_REVIEWERS":          `{"send-email":["arn:aws:iam::123456789012:role/toolgate-reviewer","arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Reviewer_*/*"]}`,
		"TOOLGATE_DIRECT_REVIEW_MAX_SECONDS": "1800", "TOOLGATE_STAGE": "test",
		"TOOLGATE_EXTERNAL_KEY_PARAM": "/toolgate/test/secret/external-key", "TOOLGATE_END_USER_KEY_PARAM": "/toolgate/test/secret/end-user-key",
		"TOOLGATE_WEBHOOK_EVENTS_QUEUE": "${WebhookEventsQueue}",
		// A start's origin is admitted from a session of this role only.
		"TOOLGATE_INBOUND_ROLE":   "${InboundStartRole.Arn}",
		"TOOLGATE_REVIEW_NOTICES": `["Ops@Example.com","@reviewers.example.org"]`, "TOOLGATE_NOTICE_SENDER": "noreply@mail.example.org",
		"TOOLGATE_SENDER_IDENTITY_ARN": "arn:${AWS::Partition}:ses:${AWS::Region}:${AWS::AccountId}:identity/example.org",
	},
	"ReviewDecisionFunction": {"TOOLGATE_TABLE": "toolgate-test", "TOOLGATE_STAGE": "test", "TOOLGATE_FUNCTION_TIMEOUT_SECONDS": "15", "TOOLGATE_SESSION_ROLES": sessionRoles, "TOOLGATE_ACCOUNT": "${AWS::AccountId}", "TOOLGATE_TRACING": adotCollector,
		"TOOLGATE_WEBHOOK_EVENTS_QUEUE": "${WebhookEventsQueue}",
		"TOOLGATE_CREDENTIAL_ADMINS":    `["arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_CredentialAdmin_*/*"]`,
		// send-email's sender and allow-list, whose verdicts a show carries.
		"TOOLGATE_SENDER": "noreply@mail.example.org", "TOOLGATE_RECIPIENT_ALLOW": "@example.org,Ops@Example.com,@bücher.example"},
	"PublishFunction": {"TOOLGATE_TABLE": "toolgate-test", "TOOLGATE_FUNCTION_TIMEOUT_SECONDS": "30", "TOOLGATE_SESSION_ROLES": sessionRoles, "TOOLGATE_ACCOUNT": "${AWS::AccountId}", "TOOLGATE_TRACING": adotCollector,
		"TOOLGATE_STAGE": "test", "TOOLGATE_FETCH_ALLOW": "api.example.org,*.data.example.net", "TOOLGATE_HTTP_ALLOW": "api.chat.example.org,*.hooks.example.net", "TOOLGATE_RECIPIENT_ALLOW": "@example.org,Ops@Example.com,@bücher.example",
		"TOOLGATE_MCP_ALLOW": "mcp.example.org,*.mcp.example.net", "TOOLGATE_CREDENTIAL_KEY": "${CredentialKey.Arn}",
		"TOOLGATE_CREDENTIAL_ADMINS":  `["arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_CredentialAdmin_*/*"]`,
		"TOOLGATE_END_USER_KEY_PARAM": "/toolgate/test/secret/end-user-key"},
	// The webhook functions: testConfig's allow-list on both, the schedule
	// on webhook-delivery, the admins on webhooks; the queues; the hosts of
	// the deployment's Function URLs (webhooks' own would be a cycle).
	"WebhookDeliveryFunction": {"TOOLGATE_TABLE": "toolgate-test", "TOOLGATE_FUNCTION_TIMEOUT_SECONDS": "60", "TOOLGATE_SESSION_ROLES": sessionRoles, "TOOLGATE_ACCOUNT": "${AWS::AccountId}", "TOOLGATE_TRACING": adotCollector,
		"TOOLGATE_WEBHOOK_ALLOW": "hooks.example.org,*.receivers.example.net", "TOOLGATE_WEBHOOK_SCHEDULE": "10s,10m,1h",
		"TOOLGATE_WEBHOOK_EVENTS_QUEUE": "${WebhookEventsQueue}", "TOOLGATE_WEBHOOK_DELIVERIES_QUEUE": "${WebhookDeliveriesQueue}",
		"TOOLGATE_WEBHOOK_OWN_HOSTS": urlHost("ReviewDecisionUrl") + "," + urlHost("PublishUrl") + "," + urlHost("WebhooksUrl")},
	"WebhooksFunction": {"TOOLGATE_TABLE": "toolgate-test", "TOOLGATE_FUNCTION_TIMEOUT_SECONDS": "30", "TOOLGATE_SESSION_ROLES": sessionRoles, "TOOLGATE_ACCOUNT": "${AWS::AccountId}", "TOOLGATE_TRACING": adotCollector,
		"TOOLGATE_STAGE": "test", "TOOLGATE_CREDENTIAL_KEY": "${CredentialKey.Arn}",
		"TOOLGATE_WEBHOOK_ADMINS":           `["arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_WebhookAdmin_*/*"]`,
		"TOOLGATE_WEBHOOK_ALLOW":            "hooks.example.org,*.receivers.example.net",
		"TOOLGATE_WEBHOOK_DELIVERIES_QUEUE": "${WebhookDeliveriesQueue}", "TOOLGATE_WEBHOOK_DELIVERIES_DLQ": "${WebhookDeliveriesDLQ}",
		"TOOLGATE_WEBHOOK_EVENTS_QUEUE": "${WebhookEventsQueue}", "TOOLGATE_WEBHOOK_EVENTS_DLQ": "${WebhookEventsDLQ}",
		"TOOLGATE_WEBHOOK_OWN_HOSTS": urlHost("ReviewDecisionUrl") + "," + urlHost("PublishUrl")},
}

// urlHost is the host of a Function URL, as text renders the template's
// Fn::Select of its Fn::Split.
func urlHost(id string) string { return "select(2, split(/, ${" + id + ".FunctionUrl}))" }

// neverSet are variables the app never sets on any function, in any
// template (TestSAMLocalVariables checks the SAM local one), with the
// reason; checkNeverSet reports each.
var neverSet = map[string]string{
	"TOOLGATE_STS_ALLOW_HTTP":        "the local stack's http STS stand-in only: on AWS a caller proof goes to STS over HTTPS",
	"TOOLGATE_ALLOW_UNAUTHENTICATED": "retired: review-decision refuses to start when it is set; every caller sends a caller proof",
	"TOOLGATE_STS_ENDPOINT":          "left to its default, https://sts.<AWS_REGION>.amazonaws.com",
	"TOOLGATE_LANE":                  "the local stack's fixed lane: on AWS the invoked alias names the lane (declared empty in a SAM local template only)",
	"TOOLGATE_PARAMS_FILE":           "the local stack's parameters file: on AWS the publish function reads SSM Parameter Store",
	"TOOLGATE_MCP_RESOLVE_FILE":      "the local stack's stand-in for DNS (mcp.internal.test): on AWS MCP server names resolve through Lambda's resolver",
	"TOOLGATE_WEBHOOK_RESOLVE_FILE":  "the local stack's stand-in for DNS (hooks.internal.test): on AWS webhook endpoint names resolve through Lambda's resolver",
}

// wantFunctions: memory, timeout and reserved concurrency (0: none):
// send-email's own setting, review-decision's from testConfig's
// reservedConcurrency.
var wantFunctions = map[string][3]int{
	"SendEmailFunction":           {256, 30, 5},
	"StructuredDataFetchFunction": {1024, 20, 0},
	"HttpFunction":                {512, 35, 0},
	"WorkflowValidatorFunction":   {512, 30, 0},
	"LambdaToolFunction":          {256, 900, 0},
	"McpCallFunction":             {512, 60, 0},
	"ReviewRequestFunction":       {256, 15, 0},
	"ReviewDecisionFunction":      {256, 15, 7},
	"PublishFunction":             {512, 30, 0},
	"LedgerSecretsFunction":       {128, 60, 0},
	"WebhookDeliveryFunction":     {256, 60, 0},
	"WebhooksFunction":            {256, 30, 0},
	"SourcesFunction":             {256, 30, 0},
	// Reserved on every stage: inboundReceiverConcurrency's default.
	"WebhookReceiverFunction": {256, 30, DefaultInboundReceiverConcurrency},
	"InboundStartFunction":    {256, 60, 0},
}

// rule is one checked property of the templates, with a test-only
// mutation of the platform template (or nil for the ledger's) that breaks
// it: TestRulesCatchBreakage shows the rule reports the break.
type rule struct {
	name  string
	check func(ledger, platform assertions.Template, lj, pj tmpl) error
	brk   func(lj, pj tmpl)
	says  string // what the rule's report of the break names
}

var rules = []rule{
	{"resource-counts", checkCounts, func(_, pj tmpl) {
		delete(pj["Resources"].(tmpl), firstID(pj, "AWS::SSM::Parameter"))
	}, `Expected 15 resources of type AWS::SSM::Parameter`},
	{"table", checkTable, func(lj, _ tmpl) {
		t := resourceByType(lj, "AWS::DynamoDB::Table")
		t["DeletionPolicy"] = "Delete"
		props(t)["BillingMode"] = "PROVISIONED"
	}, `Expected Retain but received Delete`},
	{"functions", checkFunctions, func(_, pj tmpl) {
		env := props(resources(pj, "AWS::Lambda::Function")["ReviewDecisionFunction"])["Environment"].(tmpl)["Variables"].(tmpl)
		env["TOOLGATE_ALLOW_UNAUTHENTICATED"] = "true"
	}, `TOOLGATE_ALLOW_UNAUTHENTICATED`},
	{"never-set", checkNeverSet, func(_, pj tmpl) {
		env := props(resources(pj, "AWS::Lambda::Function")["ReviewRequestFunction"])["Environment"].(tmpl)["Variables"].(tmpl)
		env["TOOLGATE_STS_ALLOW_HTTP"] = "true"
	}, `ReviewRequestFunction sets TOOLGATE_STS_ALLOW_HTTP`},
	{"aliases", checkAliases, func(_, pj tmpl) {
		pj["Resources"].(tmpl)["ReviewDecisionFunctionDirectAlias"] = tmpl{"Type": "AWS::Lambda::Alias", "Properties": tmpl{
			"FunctionName": tmpl{"Ref": "ReviewDecisionFunction"}, "FunctionVersion": "$LATEST", "Name": "direct"}}
	}, `ReviewDecisionFunction`},
	{"lanes", checkLanes, func(_, pj tmpl) { grant(pj, "InvokeToolgateFunctions", tmpl{"Ref": "SendEmailFunctionDirectAlias"}) },
		`send-email:direct`},
	{"function-roles", checkFunctionRoles, func(_, pj tmpl) {
		addStatement(pj, "SendEmailFunction", tmpl{"Effect": "Allow", "Action": "dynamodb:Scan", "Resource": tableARNValue()})
	}, `dynamodb:Scan`},
	{"ledger-actions", checkLedgerActions, func(_, pj tmpl) {
		addStatement(pj, "StructuredDataFetchFunction", tmpl{"Effect": "Allow", "Action": []any{"dynamodb:Query", "dynamodb:Scan"}, "Resource": tableARNValue()})
	}, `dynamodb:Scan is not a ledger item action`},
	{"ledger-accesses", checkLedgerAccesses, func(_, pj tmpl) {
		addStatement(pj, "StructuredDataFetchFunction", tmpl{"Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": tableARNValue()})
	}, `structured-data-fetch: statement without Sid allows dynamodb:PutItem on every item of the ledger table`},
	{"people-write-no-ledger-items", checkPeopleWriteNoLedgerItems, func(_, pj tmpl) {
		for _, p := range resources(pj, "AWS::IAM::ManagedPolicy") {
			for _, s := range statements(props(p)["PolicyDocument"]) {
				if s["Sid"] == "LedgerReads" {
					s["Action"] = []any{"dynamodb:GetItem", "dynamodb:Put*"}
				}
			}
		}
	}, `toolgate-test-operator: statement LedgerReads allows dynamodb:PutItem on the ledger table`},
	{"state-machine-writers", checkStateMachineWriters, func(_, pj tmpl) {
		// The Publisher regains UpdateStateMachine: a hand-written
		// definition would have a path to a state machine again.
		for _, p := range resources(pj, "AWS::IAM::ManagedPolicy") {
			for _, s := range statements(props(p)["PolicyDocument"]) {
				if s["Sid"] == "StartExecutions" {
					s["Action"] = []any{"states:StartExecution", "states:UpdateStateMachine"}
				}
			}
		}
	}, `toolgate-test-publisher: statement StartExecutions allows states:UpdateStateMachine`},
	{"tag-writers", checkTagWriters, func(_, pj tmpl) {
		// The Operator may tag: it could relax a platform tool's floor.
		for _, p := range resources(pj, "AWS::IAM::ManagedPolicy") {
			for _, s := range statements(props(p)["PolicyDocument"]) {
				if s["Sid"] == "DirectLane" {
					s["Action"] = []any{"lambda:InvokeFunction", "lambda:Tag*"}
				}
			}
		}
	}, `operator: statement DirectLane allows lambda:TagResource`},
	{"stage-arns", checkStageARNs, func(_, pj tmpl) {
		grant(pj, "ExecutionHistories", tmpl{"Fn::Sub": arn("states", "execution:toolgate-*:*")})
	}, `toolgate-test-publisher: statement ExecutionHistories: arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:execution:toolgate-*:* does not name stage test`},
	{"execution-role", checkExecutionRole, func(_, pj tmpl) {
		for _, p := range resources(pj, "AWS::IAM::Policy") {
			for _, s := range statements(props(p)["PolicyDocument"]) {
				if s["Sid"] == "InvokeToolgateFunctions" {
					s["Resource"] = append(s["Resource"].([]any), tmpl{"Fn::GetAtt": []any{"ReviewDecisionFunction", "Arn"}})
				}
			}
		}
	}, `ReviewDecisionFunction.Arn`},
	{"managed-policies", checkManagedPolicies, func(_, pj tmpl) {
		for _, p := range resources(pj, "AWS::IAM::ManagedPolicy") {
			for _, s := range statements(props(p)["PolicyDocument"]) {
				if s["Sid"] == "PlatformParameters" {
					s["Action"] = []any{s["Action"], "ssm:PutParameter"}
				}
			}
		}
	}, `ssm:PutParameter`},
	{"no-wildcards", checkWildcards, func(_, pj tmpl) {
		addStatement(pj, "WorkflowValidatorFunction", tmpl{"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": "*"})
	}, `dynamodb:GetItem on Resource * is not an exception`},
	{"parameters", checkParameters, func(_, pj tmpl) {
		for _, p := range resources(pj, "AWS::SSM::Parameter") {
			if props(p)["Name"] == "/toolgate/test/table/name" {
				props(p)["Name"] = "/toolgate/test/table"
			}
		}
	}, `/toolgate/test/table"`},
	{"ledger-since-after-aliases", checkLedgerSince, func(_, pj tmpl) {
		r := pj["Resources"].(tmpl)["LedgerSince"].(tmpl)
		r["DependsOn"] = slices.DeleteFunc(r["DependsOn"].([]any), func(v any) bool { return v == "McpCallFunctionDirectAlias" })
	}, `LedgerSince does not depend on McpCallFunctionDirectAlias`},
	{"ledger-since-not-before-functions", checkLedgerSince, func(_, pj tmpl) {
		// A tool function depending on it is a cycle CloudFormation refuses;
		// any other resource still must not wait for it.
		f := pj["Resources"].(tmpl)["ReviewDecisionFunction"].(tmpl)
		f["DependsOn"] = append(asList(f["DependsOn"]), "LedgerSince")
	}, `ReviewDecisionFunction refers to LedgerSince`},
	{"ledger-since-only", checkLedgerSince, func(_, pj tmpl) {
		props(pj["Resources"].(tmpl)["LedgerSecrets"].(tmpl))["Since"] = "/toolgate/test/secret/ledger-since"
	}, `LedgerSecrets names the since parameter`},
	{"alarms", checkAlarms, func(_, pj tmpl) {
		for _, a := range resources(pj, "AWS::CloudWatch::Alarm") {
			if props(a)["AlarmName"] == "toolgate-test-ledger-unknown" {
				delete(props(a), "AlarmActions")
			}
		}
	}, `alarm toolgate-test-ledger-unknown notifies null`},
}

// checkLedgerSince: the since time is written only once every tool
// function's new code is live (docs/ledger.md, "The upgrade rule"): the
// one Custom::LedgerSince resource names the since parameter and nothing
// else, and depends on every tool function, each version of it and each
// of its aliases (sfn, direct), so CloudFormation creates it after every
// lane has moved; nothing refers to it, so no function waits for it. The
// secrets' resource (LedgerSecrets), which every tool function depends on,
// names no since parameter.
func checkLedgerSince(_, _ assertions.Template, _, pj tmpl) error {
	var errs []error
	all := pj["Resources"].(tmpl)
	since, ok := all["LedgerSince"].(tmpl)
	if !ok || since["Type"] != "Custom::LedgerSince" {
		return fmt.Errorf("no Custom::LedgerSince resource LedgerSince")
	}
	if d := cmp.Diff(tmpl{"ServiceToken": tmpl{"Fn::GetAtt": []any{"LedgerSecretsFunction", "Arn"}}, "Since": "/toolgate/test/secret/ledger-since"}, props(since)); d != "" {
		errs = append(errs, fmt.Errorf("LedgerSince's properties (-want +got):\n%s", d))
	}
	secretsRes, _ := all["LedgerSecrets"].(tmpl)
	if _, ok := props(secretsRes)["Since"]; ok {
		errs = append(errs, fmt.Errorf("LedgerSecrets names the since parameter: it is created before the functions, so it must not write since"))
	}
	deps := map[string]bool{}
	for _, d := range asList(since["DependsOn"]) {
		deps[text(d)] = true
	}
	var want []string
	tools := 0
	for _, spec := range functionSpecs {
		if !spec.Tool {
			continue
		}
		tools++
		want = append(want, spec.LogicalID)
		for _, typ := range []string{"AWS::Lambda::Version", "AWS::Lambda::Alias"} {
			n := 0
			for _, id := range slices.Sorted(maps.Keys(resources(pj, typ))) {
				if refID(props(resources(pj, typ)[id])["FunctionName"]) == spec.LogicalID {
					want = append(want, id)
					n++
				}
			}
			if n == 0 {
				errs = append(errs, fmt.Errorf("%s has no %s", spec.LogicalID, typ))
			}
		}
		if !slices.Contains(asList(all[spec.LogicalID].(tmpl)["DependsOn"]), any("LedgerSecrets")) {
			errs = append(errs, fmt.Errorf("%s does not depend on LedgerSecrets: its first cold start may find no secrets", spec.LogicalID))
		}
	}
	if tools == 0 {
		errs = append(errs, fmt.Errorf("functionSpecs has no tool function"))
	}
	for _, id := range want {
		if !deps[id] {
			errs = append(errs, fmt.Errorf("LedgerSince does not depend on %s: since could be written while it still runs the previous code", id))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(all)) {
		if id == "LedgerSince" {
			continue
		}
		b, _ := json.Marshal(all[id])
		if strings.Contains(string(b), `"LedgerSince"`) {
			errs = append(errs, fmt.Errorf("%s refers to LedgerSince: it would wait for the since time, which waits for the functions", id))
		}
	}
	return errors.Join(errs...)
}

// asList is a template value that is a list, or nil.
func asList(v any) []any { l, _ := v.([]any); return l }

func TestTemplates(t *testing.T) {
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			if err := r.check(ledgerTemplate, platformTemplate, ledgerJSON, platformJSON); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRulesCatchBreakage breaks each rule on purpose in a copy of the
// synthesized templates and expects the rule to report it.
func TestRulesCatchBreakage(t *testing.T) {
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			lj, pj := clone(ledgerJSON), clone(platformJSON)
			r.brk(lj, pj)
			var lt, pt assertions.Template
			if err := try(func() {
				lt = assertions.Template_FromJSON(&lj, nil)
				pt = assertions.Template_FromJSON(&pj, nil)
			}); err != nil {
				t.Fatal(err)
			}
			err := r.check(lt, pt, lj, pj)
			if err == nil {
				t.Fatal("the broken template passed")
			}
			if !strings.Contains(err.Error(), r.says) {
				t.Fatalf("the report does not name the break (%q):\n%v", r.says, err)
			}
		})
	}
}

// TestLedgerProps: the removal policy and deletion protection come from
// props (default retain and protected, which checkTable requires); a stack
// configured otherwise fails checkTable. Props without throughput maxima
// set none.
func TestLedgerProps(t *testing.T) {
	app := awscdk.NewApp(nil)
	stack := NewLedgerStack(app, "Props", &LedgerStackProps{LedgerProps: LedgerProps{
		TableName: "toolgate-test", RemovalPolicy: awscdk.RemovalPolicy_DESTROY, DeletionProtection: jsii.Bool(false),
	}})
	var tpl assertions.Template
	if err := try(func() { tpl = assertions.Template_FromStack(stack.Stack, nil) }); err != nil {
		t.Fatal(err)
	}
	if err := try(func() {
		tpl.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"DeletionPolicy": "Delete", "UpdateReplacePolicy": "Delete",
			"Properties": map[string]any{"DeletionProtectionEnabled": false, "OnDemandThroughput": assertions.Match_Absent()},
		})
	}); err != nil {
		t.Fatal(err)
	}
	if err := checkTable(tpl, nil, *tpl.ToJSON(), nil); err == nil {
		t.Fatal("checkTable passed a table that is neither retained nor protected")
	}
}

func checkCounts(ledger, platform assertions.Template, _, pj tmpl) error {
	var errs []error
	errs = append(errs, try(func() { ledger.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(1)) }))
	total := 0
	for typ, n := range wantPlatformCounts {
		total += n
		errs = append(errs, try(func() { platform.ResourceCountIs(jsii.String(typ), jsii.Number(n)) }))
	}
	if all := len(pj["Resources"].(tmpl)); all != total {
		errs = append(errs, fmt.Errorf("the platform stack has %d resources, want %d", all, total))
	}
	return errors.Join(errs...)
}

func checkTable(ledger, _ assertions.Template, _, _ tmpl) error {
	var errs []error
	errs = append(errs, try(func() {
		ledger.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"DeletionPolicy":      "Retain",
			"UpdateReplacePolicy": "Retain",
			"Properties": map[string]any{
				"TableName": "toolgate-test",
				"KeySchema": []any{
					map[string]any{"AttributeName": "pk", "KeyType": "HASH"},
					map[string]any{"AttributeName": "sk", "KeyType": "RANGE"},
				},
				"BillingMode": "PAY_PER_REQUEST",
				// No write maximum (-1): left out.
				"OnDemandThroughput":               map[string]any{"MaxReadRequestUnits": 6000, "MaxWriteRequestUnits": assertions.Match_Absent()},
				"TimeToLiveSpecification":          map[string]any{"AttributeName": "expires_at", "Enabled": true},
				"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
				"DeletionProtectionEnabled":        true,
			},
		})
	}))
	// Every key is a string; the reviews-by-status index (shared/ledger
	// CreateTable) projects the listing's attributes only.
	var projected []any
	for _, a := range []string{"review_id", "run_id", "step", "of", "tool", "toolset_id", "reviewers", "input_digest",
		"status", "created_at", "expires_at", "approver", "authenticated", "decided_at", "bound_key"} {
		projected = append(projected, a)
	}
	var parksProjected []any
	for _, a := range []string{"run_id", "step", "seq", "idempotency_key", "tool", "toolset_id", "cause", "gated", "current_digest",
		"park_target", "park_scope", "status", "created_at", "deadline", "expires_at", "decided_by", "decided_at"} {
		parksProjected = append(parksProjected, a)
	}
	want := map[string]any{
		"AttributeDefinitions": assertions.Match_ArrayEquals(&[]any{
			map[string]any{"AttributeName": "pk", "AttributeType": "S"},
			map[string]any{"AttributeName": "sk", "AttributeType": "S"},
			map[string]any{"AttributeName": "review_list_pk", "AttributeType": "S"},
			map[string]any{"AttributeName": "review_list_sk", "AttributeType": "S"},
			// The webhook-unsent index: unsent is the number 1.
			map[string]any{"AttributeName": "unsent", "AttributeType": "N"},
			map[string]any{"AttributeName": "produced_at", "AttributeType": "S"},
			map[string]any{"AttributeName": "park_list_pk", "AttributeType": "S"},
			map[string]any{"AttributeName": "park_list_sk", "AttributeType": "S"},
			// The inbound-unqueued index: unqueued is the number 1.
			map[string]any{"AttributeName": "unqueued", "AttributeType": "N"},
			map[string]any{"AttributeName": "received_at", "AttributeType": "S"},
		}),
		"GlobalSecondaryIndexes": assertions.Match_ArrayEquals(&[]any{map[string]any{
			"IndexName": "reviews-by-status",
			"KeySchema": []any{
				map[string]any{"AttributeName": "review_list_pk", "KeyType": "HASH"},
				map[string]any{"AttributeName": "review_list_sk", "KeyType": "RANGE"},
			},
			"Projection":         map[string]any{"ProjectionType": "INCLUDE", "NonKeyAttributes": projected},
			"OnDemandThroughput": map[string]any{"MaxReadRequestUnits": 500, "MaxWriteRequestUnits": 250},
		}, map[string]any{
			// The relay reads event ids only.
			"IndexName": "webhook-unsent",
			"KeySchema": []any{
				map[string]any{"AttributeName": "unsent", "KeyType": "HASH"},
				map[string]any{"AttributeName": "produced_at", "KeyType": "RANGE"},
			},
			"Projection":         map[string]any{"ProjectionType": "KEYS_ONLY"},
			"OnDemandThroughput": map[string]any{"MaxReadRequestUnits": 500, "MaxWriteRequestUnits": 250},
		}, map[string]any{
			// Parks by status: the listing's attributes, never a task token
			// or a reason.
			"IndexName": "parks-by-status",
			"KeySchema": []any{
				map[string]any{"AttributeName": "park_list_pk", "KeyType": "HASH"},
				map[string]any{"AttributeName": "park_list_sk", "KeyType": "RANGE"},
			},
			"Projection":         map[string]any{"ProjectionType": "INCLUDE", "NonKeyAttributes": parksProjected},
			"OnDemandThroughput": map[string]any{"MaxReadRequestUnits": 500, "MaxWriteRequestUnits": 250},
		}, map[string]any{
			// The inbound relay reads event keys only.
			"IndexName": "inbound-unqueued",
			"KeySchema": []any{
				map[string]any{"AttributeName": "unqueued", "KeyType": "HASH"},
				map[string]any{"AttributeName": "received_at", "KeyType": "RANGE"},
			},
			"Projection":         map[string]any{"ProjectionType": "KEYS_ONLY"},
			"OnDemandThroughput": map[string]any{"MaxReadRequestUnits": 500, "MaxWriteRequestUnits": 250},
		}}),
	}
	errs = append(errs, try(func() { ledger.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), want) }))
	return errors.Join(errs...)
}

func checkFunctions(_, platform assertions.Template, _, pj tmpl) error {
	var errs []error
	fns := resources(pj, "AWS::Lambda::Function")
	if len(fns) != len(wantFunctions) {
		errs = append(errs, fmt.Errorf("%d functions, want %d", len(fns), len(wantFunctions)))
	}
	for id, w := range wantFunctions {
		fn, ok := fns[id]
		if !ok {
			errs = append(errs, fmt.Errorf("no function %s", id))
			continue
		}
		name := specByLogicalID(id).Name
		if id == "LedgerSecretsFunction" { // a custom resource's, not a platform function
			name = fnLedgerSecrets
		}
		want := map[string]any{
			"FunctionName":  "toolgate-test-" + name,
			"Runtime":       "provided.al2023",
			"Architectures": []any{"arm64"},
			"Handler":       "bootstrap",
			"MemorySize":    w[0],
			"Timeout":       w[1],
			"TracingConfig": map[string]any{"Mode": "Active"},
			"LoggingConfig": map[string]any{"LogFormat": "JSON", "LogGroup": assertions.Match_AnyValue()},
		}
		if w[2] > 0 {
			want["ReservedConcurrentExecutions"] = w[2]
		} else {
			want["ReservedConcurrentExecutions"] = assertions.Match_Absent()
		}
		errs = append(errs, wrap(id, try(func() {
			platform.HasResource(jsii.String("AWS::Lambda::Function"), map[string]any{
				"Properties": want,
			})
		})))
		p := props(fn)
		env := map[string]string{}
		if e, ok := p["Environment"].(tmpl); ok {
			for k, v := range e["Variables"].(tmpl) {
				env[k] = text(v)
			}
		}
		// Every function in the test's configuration has at most one
		// vCPU's memory, so one P (functionconfig.GoMaxProcs).
		wantVars := maps.Clone(wantEnv[id])
		if w[0] > functionconfig.OneVCPUMemoryMB {
			errs = append(errs, fmt.Errorf("%s: %d MB: the test configuration keeps every function at one vCPU or less", id, w[0]))
		}
		wantVars["GOMAXPROCS"] = "1"
		if d := cmp.Diff(wantVars, env); d != "" {
			errs = append(errs, fmt.Errorf("%s environment (-want +got):\n%s", id, d))
		}
		// The dispatcher's lease agrees with the function's timeout.
		if got := env[envTimeoutSeconds]; got != strconv.Itoa(int(p["Timeout"].(float64))) {
			errs = append(errs, fmt.Errorf("%s: %s=%s, but the timeout is %v", id, envTimeoutSeconds, got, p["Timeout"]))
		}
		// Its log group keeps logs for the retention period.
		logs := pj["Resources"].(tmpl)[p["LoggingConfig"].(tmpl)["LogGroup"].(tmpl)["Ref"].(string)].(tmpl)
		if logs["Type"] != "AWS::Logs::LogGroup" || props(logs)["RetentionInDays"] != float64(90) {
			errs = append(errs, fmt.Errorf("%s: its log group is not kept 90 days: %s", id, text(logs)))
		}
	}
	// The URLs of review-decision and publish, each IAM-authorised.
	for _, fn := range []string{"ReviewDecisionFunction", "PublishFunction"} {
		errs = append(errs, wrap(fn+" URL", try(func() {
			platform.ResourcePropertiesCountIs(jsii.String("AWS::Lambda::Url"), map[string]any{
				"AuthType":          "AWS_IAM",
				"TargetFunctionArn": map[string]any{"Fn::GetAtt": []any{fn, "Arn"}},
			}, jsii.Number(1))
		})))
	}
	// Nothing opens a URL or a function to the world but webhook-receiver's
	// URL (its two permissions and its relay's: checkReceiverPermissions):
	// the other permission lets the webhook relay's schedule, and nothing
	// else, invoke webhook-delivery.
	errs = append(errs, try(func() { platform.ResourceCountIs(jsii.String("AWS::Lambda::Permission"), jsii.Number(4)) }))
	errs = append(errs, wrap("webhook-receiver", checkReceiverPermissions(pj)))
	errs = append(errs, wrap("relay permission", try(func() {
		platform.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), map[string]any{
			"Action": "lambda:InvokeFunction", "Principal": "events.amazonaws.com",
			"FunctionName": map[string]any{"Fn::GetAtt": []any{"WebhookDeliveryFunction", "Arn"}},
			"SourceArn":    map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^WebhookRelaySchedule")), "Arn"}},
		})
	})))
	return errors.Join(errs...)
}

// specByLogicalID returns the spec of the function with logical ID id.
func specByLogicalID(id string) functionSpec {
	for _, s := range functionSpecs {
		if s.LogicalID == id {
			return s
		}
	}
	return functionSpec{}
}

func checkFunctionRoles(_, _ assertions.Template, _, pj tmpl) error {
	var errs []error
	for id, want := range wantFunctionPolicies {
		role := symbol(roleOf(pj, id))
		errs = append(errs, wrap(id, comparePolicy(policyOf(pj, role), want)))
		errs = append(errs, wrap(id, checkTrust(pj, role,
			`{"Action":"sts:AssumeRole","Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"}}`)))
	}
	// No role has a managed policy: everything is in its own statements.
	for id, r := range resources(pj, "AWS::IAM::Role") {
		if m, ok := props(r)["ManagedPolicyArns"]; ok {
			errs = append(errs, fmt.Errorf("role %s has managed policies %s", id, text(m)))
		}
	}
	return errors.Join(errs...)
}

// ledgerItemActions are the only DynamoDB actions any policy may hold. The
// writes among them (ledgerWriteActions) are the functions' only:
// checkPeopleWriteNoLedgerItems.
var ledgerItemActions = []string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem",
	"dynamodb:DeleteItem", "dynamodb:Query"}

// checkLedgerActions: every DynamoDB statement in any policy holds item
// actions only (no Scan, no DeleteTable, no wildcard), spelt exactly, on
// the table and, for Query, its indexes.
func checkLedgerActions(_, _ assertions.Template, _, pj tmpl) error {
	var errs []error
	for _, s := range allStatements(pj) {
		var ddb bool
		for _, a := range s.Actions {
			// IAM's service prefixes are case-insensitive.
			if strings.HasPrefix(strings.ToLower(a), "dynamodb:") {
				ddb = true
				if !slices.Contains(ledgerItemActions, a) {
					errs = append(errs, fmt.Errorf("%s: %s is not a ledger item action", s.Owner, a))
				}
			}
		}
		if !ddb {
			continue
		}
		for _, r := range s.Resources {
			index := strings.HasPrefix(r, tableARN+"/index/") && !strings.Contains(r, "*")
			if r != tableARN && !(index && slices.Contains(s.Actions, "dynamodb:Query")) {
				errs = append(errs, fmt.Errorf("%s: ledger actions on %s", s.Owner, r))
			}
		}
	}
	return errors.Join(errs...)
}

// ledgerWriteActions are the IAM actions that write ledger items: the item
// writes, and PartiQL's (TransactWriteItems is authorised as the PutItem,
// UpdateItem and DeleteItem it holds).
var ledgerWriteActions = []string{
	"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem",
	"dynamodb:PartiQLInsert", "dynamodb:PartiQLUpdate", "dynamodb:PartiQLDelete",
}

// checkPeopleWriteNoLedgerItems: no managed policy (the policies for
// people) allows an action that writes ledger items on the ledger table,
// whatever its form: a wildcard action (dynamodb:*, dynamodb:Put*, *), a
// NotAction, a wildcard resource. Conditions are ignored: a LeadingKeys
// condition still lets a person write the items it names (a
// Publisher wrote a weakened TOOLSET# item). Only the functions write;
// toolsets are registered by the deployment's operator with the deploy
// role (toolgate toolset register).
func checkPeopleWriteNoLedgerItems(_, _ assertions.Template, _, pj tmpl) error {
	var errs []error
	policies := resources(pj, "AWS::IAM::ManagedPolicy")
	for _, id := range slices.Sorted(maps.Keys(policies)) {
		p := props(policies[id])
		for _, s := range statements(p["PolicyDocument"]) {
			if w := ledgerWrites(s); len(w) > 0 {
				errs = append(errs, fmt.Errorf("%s: statement %v allows %s on the ledger table: no person writes ledger items",
					text(p["ManagedPolicyName"]), text(s["Sid"]), strings.Join(w, ", ")))
			}
		}
	}
	return errors.Join(errs...)
}

// ledgerWrites returns the ledgerWriteActions that policy statement s
// allows on the ledger table. IAM matches actions case-insensitively, with
// * and ? wildcards (IAM User Guide, "IAM JSON policy elements: Action").
func ledgerWrites(s tmpl) []string {
	if s["Effect"] != "Allow" {
		return nil
	}
	onTable := false
	if nr, ok := s["NotResource"]; ok {
		// Allowed everywhere but there: the table unless an entry names it.
		onTable = !slices.ContainsFunc(strs(nr), func(r string) bool { return wildcardMatch(r, tableARN, false) })
	} else {
		onTable = slices.ContainsFunc(strs(s["Resource"]), mayBeTable)
	}
	if !onTable {
		return nil
	}
	var out []string
	for _, w := range ledgerWriteActions {
		match := func(a string) bool { return wildcardMatch(a, w, true) }
		if na, ok := s["NotAction"]; ok {
			if !slices.ContainsFunc(strs(na), match) {
				out = append(out, w)
			}
		} else if slices.ContainsFunc(strs(s["Action"]), match) {
			out = append(out, w)
		}
	}
	return out
}

// placeholder is a ${...} of a rendered value: a pseudo parameter or an
// attribute of another resource, which may be anything.
var placeholder = regexp.MustCompile(`\$\{[^}]*\}`)

// mayBeTable: resource (rendered with text) may name the ledger table of
// the test stack in some partition, account and region. A placeholder
// counts as *, and the partition, region and account fields of an ARN
// match anything: the stack is synthesized for any environment.
func mayBeTable(resource string) bool {
	table := tableARN[strings.LastIndex(tableARN, ":")+1:] // table/toolgate-test
	r := placeholder.ReplaceAllString(resource, "*")
	if f := strings.SplitN(r, ":", 6); len(f) == 6 && f[0] == "arn" {
		return wildcardMatch(f[2], "dynamodb", false) && wildcardMatch(f[5], table, false)
	}
	return wildcardMatch(r, "arn:aws:dynamodb:eu-west-1:123456789012:"+table, false)
}

// wildcardMatch matches IAM's "*" and "?" as reviewer.Match does (the
// same glob), action names in any letter case (IAM compares them so).
func wildcardMatch(pattern, s string, foldCase bool) bool {
	if foldCase {
		pattern, s = strings.ToLower(pattern), strings.ToLower(s)
	}
	return reviewer.Match(pattern, s)
}

// TestLedgerWrites: every form of a statement that lets a person write
// ledger items is caught, and reads, other tables and indexes are not.
func TestLedgerWrites(t *testing.T) {
	table := tmpl{"Fn::Sub": tableARN}
	for name, c := range map[string]struct {
		stmt tmpl
		want string // the write actions reported, comma-separated
	}{
		"PutItem":            {tmpl{"Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": table}, "dynamodb:PutItem"},
		"lower case":         {tmpl{"Effect": "Allow", "Action": "DynamoDB:putitem", "Resource": table}, "dynamodb:PutItem"},
		"UpdateItem in list": {tmpl{"Effect": "Allow", "Action": []any{"dynamodb:GetItem", "dynamodb:UpdateItem"}, "Resource": []any{table}}, "dynamodb:UpdateItem"},
		"DeleteItem":         {tmpl{"Effect": "Allow", "Action": "dynamodb:DeleteItem", "Resource": table}, "dynamodb:DeleteItem"},
		"BatchWriteItem":     {tmpl{"Effect": "Allow", "Action": "dynamodb:BatchWriteItem", "Resource": table}, "dynamodb:BatchWriteItem"},
		"PartiQL":            {tmpl{"Effect": "Allow", "Action": "dynamodb:PartiQL*", "Resource": table}, "dynamodb:PartiQLInsert, dynamodb:PartiQLUpdate, dynamodb:PartiQLDelete"},
		"dynamodb:*":         {tmpl{"Effect": "Allow", "Action": "dynamodb:*", "Resource": table}, strings.Join(ledgerWriteActions, ", ")},
		"*":                  {tmpl{"Effect": "Allow", "Action": "*", "Resource": "*"}, strings.Join(ledgerWriteActions, ", ")},
		"Put*":               {tmpl{"Effect": "Allow", "Action": "dynamodb:Put*", "Resource": table}, "dynamodb:PutItem"},
		"*Item":              {tmpl{"Effect": "Allow", "Action": "dynamodb:*Item", "Resource": table}, "dynamodb:PutItem, dynamodb:UpdateItem, dynamodb:DeleteItem, dynamodb:BatchWriteItem"},
		"?utItem":            {tmpl{"Effect": "Allow", "Action": "dynamodb:?utItem", "Resource": table}, "dynamodb:PutItem"},
		"NotAction":          {tmpl{"Effect": "Allow", "NotAction": []any{"dynamodb:GetItem", "dynamodb:*Item"}, "Resource": table}, "dynamodb:PartiQLInsert, dynamodb:PartiQLUpdate, dynamodb:PartiQLDelete"},
		"tables in any region": {tmpl{"Effect": "Allow", "Action": "dynamodb:PutItem",
			"Resource": tmpl{"Fn::Sub": "arn:${AWS::Partition}:dynamodb:*:${AWS::AccountId}:table/*"}}, "dynamodb:PutItem"},
		"literal account":  {tmpl{"Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": "arn:aws:dynamodb:eu-west-1:111122223333:table/toolgate-test"}, "dynamodb:PutItem"},
		"arn:aws:*":        {tmpl{"Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": "arn:aws:*"}, "dynamodb:PutItem"},
		"another resource": {tmpl{"Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": tmpl{"Fn::GetAtt": []any{"Other", "Arn"}}}, "dynamodb:PutItem"},
		"NotResource elsewhere": {tmpl{"Effect": "Allow", "Action": "dynamodb:PutItem",
			"NotResource": "arn:aws:dynamodb:*:*:table/other"}, "dynamodb:PutItem"},
		"NotResource the table": {tmpl{"Effect": "Allow", "Action": "dynamodb:PutItem", "NotResource": table}, ""},
		"reads":                 {tmpl{"Effect": "Allow", "Action": []any{"dynamodb:GetItem", "dynamodb:Query", "dynamodb:Get*"}, "Resource": table}, ""},
		"Deny":                  {tmpl{"Effect": "Deny", "Action": "dynamodb:*", "Resource": table}, ""},
		"the index":             {tmpl{"Effect": "Allow", "Action": "dynamodb:*", "Resource": tmpl{"Fn::Sub": reviewIndexARN}}, ""},
		"another table":         {tmpl{"Effect": "Allow", "Action": "dynamodb:*", "Resource": tmpl{"Fn::Sub": arn("dynamodb", "table/toolgate-prod")}}, ""},
		"another service":       {tmpl{"Effect": "Allow", "Action": "s3:PutObject", "Resource": "*"}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			if got := strings.Join(ledgerWrites(c.stmt), ", "); got != c.want {
				t.Fatalf("ledgerWrites(%s) = %q, want %q", text(c.stmt), got, c.want)
			}
		})
	}
}

// tagWriteActions change a Lambda function's tags: its stage tag
// (toolfunction.TagKey) and its floor (platformtool.Tag*).
var tagWriteActions = []string{"lambda:TagResource", "lambda:UntagResource"}

// checkTagWriters: no principal of the template (function roles, the
// execution role, the Publisher, Reviewer and Operator policies) may tag
// or untag a Lambda function, in any form (a wildcard action, NotAction),
// on any resource, whatever its conditions. A platform tool's stage tag
// and floor are written by whoever deploys the function (toolfunction.New);
// a principal that could tag could relax the floor or widen what the
// proxy invokes (docs/infra.md, "Platform tools").
func checkTagWriters(_, _ assertions.Template, _, pj tmpl) error {
	var errs []error
	all := principalStatements(pj)
	for _, who := range slices.Sorted(maps.Keys(all)) {
		for _, s := range all[who] {
			if s["Effect"] != "Allow" {
				continue
			}
			for _, a := range tagWriteActions {
				if allowsAction(s, a) {
					errs = append(errs, fmt.Errorf("%s: statement %v allows %s: no toolgate principal tags functions (a platform tool's floor is its deployer's)",
						who, text(s["Sid"]), a))
				}
			}
		}
	}
	return errors.Join(errs...)
}

func checkExecutionRole(_, _ assertions.Template, _, pj tmpl) error {
	return errors.Join(
		comparePolicy(policyOf(pj, "SolutionExecutionRole"), wantExecutionRole),
		checkTrust(pj, "SolutionExecutionRole", wantExecutionTrust),
		func() error {
			for id, r := range resources(pj, "AWS::IAM::Role") {
				if symbol(id) == "SolutionExecutionRole" && props(r)["RoleName"] != "toolgate-test-solution-execution" {
					return fmt.Errorf("execution role name %v", props(r)["RoleName"])
				}
			}
			return nil
		}(),
	)
}

func checkManagedPolicies(_, _ assertions.Template, _, pj tmpl) error {
	var errs []error
	got := map[string][]stmt{}
	for _, p := range resources(pj, "AWS::IAM::ManagedPolicy") {
		name, _ := props(p)["ManagedPolicyName"].(string)
		got[name] = toStmts(name, props(p)["PolicyDocument"])
		for _, k := range []string{"Roles", "Users", "Groups"} {
			if _, ok := props(p)[k]; ok {
				errs = append(errs, fmt.Errorf("%s is attached to %s: platform teams attach it", name, k))
			}
		}
	}
	if len(got) != len(wantManagedPolicies) {
		errs = append(errs, fmt.Errorf("managed policies %v, want %d", slices.Sorted(maps.Keys(got)), len(wantManagedPolicies)))
	}
	for name, want := range wantManagedPolicies {
		errs = append(errs, wrap(name, comparePolicy(got[name], want)))
	}
	return errors.Join(errs...)
}

// checkWildcards: no action has a wildcard, no statement uses NotAction or
// NotResource, and Resource "*" holds only actions of starResource.
func checkWildcards(_, _ assertions.Template, _, pj tmpl) error {
	var errs []error
	used := map[string]bool{}
	for _, s := range allStatements(pj) {
		if s.Not {
			errs = append(errs, fmt.Errorf("%s: NotAction or NotResource", s.Owner))
		}
		if s.Effect != "Allow" {
			errs = append(errs, fmt.Errorf("%s: effect %s", s.Owner, s.Effect))
		}
		for _, a := range s.Actions {
			if strings.Contains(a, "*") {
				errs = append(errs, fmt.Errorf("%s: wildcard action %s", s.Owner, a))
			}
		}
		if !slices.Contains(s.Resources, "*") {
			continue
		}
		for _, a := range s.Actions {
			if _, ok := starResource[a]; !ok {
				errs = append(errs, fmt.Errorf("%s: %s on Resource * is not an exception", s.Owner, a))
			}
			used[a] = true
		}
	}
	for a := range starResource {
		if !used[a] {
			errs = append(errs, fmt.Errorf("exception %s is not used: remove it", a))
		}
	}
	return errors.Join(errs...)
}

func checkParameters(_, platform assertions.Template, _, pj tmpl) error {
	got := map[string]string{}
	for _, p := range resources(pj, "AWS::SSM::Parameter") {
		got[text(props(p)["Name"])] = text(props(p)["Value"])
	}
	var errs []error
	if d := cmp.Diff(wantParameters, got); d != "" {
		errs = append(errs, fmt.Errorf("SSM parameters (-want +got):\n%s", d))
	}
	errs = append(errs, try(func() {
		platform.AllResourcesProperties(jsii.String("AWS::SSM::Parameter"), map[string]any{"Type": "String"})
	}))
	return errors.Join(errs...)
}

func checkAlarms(_, platform assertions.Template, _, pj tmpl) error {
	var errs []error
	names := []string{"toolgate-test-ledger-unknown", "toolgate-test-toolset-refused", "toolgate-test-executions-failed",
		"toolgate-test-webhook-events-dlq", "toolgate-test-webhook-deliveries-dlq", "toolgate-test-webhook-events-age", "toolgate-test-webhook-deliveries-age",
		"toolgate-test-inbound-dlq", "toolgate-test-inbound-age"}
	for _, spec := range functionSpecs {
		names = append(names, "toolgate-test-"+spec.Name+"-errors", "toolgate-test-"+spec.Name+"-throttles")
	}
	got := map[string]tmpl{}
	for _, a := range resources(pj, "AWS::CloudWatch::Alarm") {
		got[text(props(a)["AlarmName"])] = props(a)
	}
	for _, n := range names {
		a, ok := got[n]
		if !ok {
			errs = append(errs, fmt.Errorf("no alarm %s", n))
			continue
		}
		if text(a["AlarmActions"]) != `["`+testTopic+`"]` {
			errs = append(errs, fmt.Errorf("alarm %s notifies %s, want the topic of the props", n, text(a["AlarmActions"])))
		}
	}
	if len(got) != len(names) {
		errs = append(errs, fmt.Errorf("%d alarms, want %d", len(got), len(names)))
	}
	// By log group, its filters as "metric: pattern": the UNKNOWN filter on
	// each tool's log group, the refused toolset filter on the log group
	// of each function that loads toolsets (the tools and review-request),
	// the failed executions filter on the Solution executions' log group.
	filters := map[string][]string{}
	for _, f := range resources(pj, "AWS::Logs::MetricFilter") {
		p := props(f)
		var metrics []string
		for _, m := range p["MetricTransformations"].([]any) {
			m := m.(tmpl)
			metrics = append(metrics, text(m["MetricNamespace"])+"/"+text(m["MetricName"])+" += "+text(m["MetricValue"]))
		}
		group := text(p["LogGroupName"])
		filters[group] = append(filters[group], strings.Join(metrics, ", ")+": "+text(p["FilterPattern"]))
	}
	for _, l := range filters {
		sort.Strings(l)
	}
	const (
		unknown = `toolgate/test/LedgerUnknownRows += 1: { ($.msg = "tool invocation") && ($.ledger_status = "UNKNOWN") }`
		refused = `toolgate/test/ToolsetsRefused += 1: { ($.msg = "toolset refused") }`
	)
	want := map[string][]string{
		"${SolutionExecutionLogs}":           {`toolgate/test/SolutionExecutionsFailed += 1: ` + executionFailedPattern},
		"${SendEmailFunctionLogs}":           {unknown, refused},
		"${StructuredDataFetchFunctionLogs}": {unknown, refused},
		"${WorkflowValidatorFunctionLogs}":   {unknown, refused},
		"${HttpFunctionLogs}":                {unknown, refused},
		"${LambdaToolFunctionLogs}":          {unknown, refused},
		"${McpCallFunctionLogs}":             {unknown, refused},
		"${ReviewRequestFunctionLogs}":       {refused},
	}
	if d := cmp.Diff(want, filters); d != "" {
		errs = append(errs, fmt.Errorf("metric filters by log group (-want +got):\n%s", d))
	}
	for name, metric := range map[string]string{
		"toolgate-test-ledger-unknown":    "LedgerUnknownRows",
		"toolgate-test-toolset-refused":   "ToolsetsRefused",
		"toolgate-test-executions-failed": "SolutionExecutionsFailed",
	} {
		errs = append(errs, wrap(name, try(func() {
			platform.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
				"AlarmName": name, "Namespace": "toolgate/test", "MetricName": metric,
				"Statistic": "Sum", "Period": 300, "Threshold": 1, "EvaluationPeriods": 1,
				"ComparisonOperator": "GreaterThanOrEqualToThreshold", "TreatMissingData": "notBreaching",
			})
		})))
	}
	return errors.Join(errs...)
}

// stmt is an IAM policy statement rendered with text: actions and
// resources sorted, the condition as JSON.
type stmt struct {
	Sid       string
	Actions   []string
	Resources []string
	Condition string
	// Set by toStmts; comparePolicy ignores them.
	Owner  string
	Effect string
	Not    bool
}

func sorted(s ...string) []string { s = slices.Clone(s); sort.Strings(s); return s }

// statements returns a policy document's statements.
func statements(doc any) []tmpl {
	d, _ := doc.(tmpl)
	var out []tmpl
	switch s := d["Statement"].(type) {
	case []any:
		for _, x := range s {
			out = append(out, x.(tmpl))
		}
	case tmpl:
		out = append(out, s)
	}
	return out
}

func toStmts(owner string, doc any) []stmt {
	var out []stmt
	for _, s := range statements(doc) {
		st := stmt{Owner: owner, Actions: strs(s["Action"]), Resources: strs(s["Resource"])}
		st.Sid, _ = s["Sid"].(string)
		st.Effect, _ = s["Effect"].(string)
		if c, ok := s["Condition"]; ok {
			st.Condition = text(c)
		}
		_, na := s["NotAction"]
		_, nr := s["NotResource"]
		st.Not = na || nr
		out = append(out, st)
	}
	return out
}

// policyOf returns every statement of the role whose logical ID without
// its hash is role: its AWS::IAM::Policy resources and inline policies.
func policyOf(pj tmpl, role string) []stmt {
	var out []stmt
	for id, p := range resources(pj, "AWS::IAM::Policy") {
		for _, r := range props(p)["Roles"].([]any) {
			if text(r) == "${"+role+"}" {
				out = append(out, toStmts(symbol(id), props(p)["PolicyDocument"])...)
			}
		}
	}
	for id, r := range resources(pj, "AWS::IAM::Role") {
		if symbol(id) != role {
			continue
		}
		if inline, ok := props(r)["Policies"].([]any); ok {
			for _, p := range inline {
				out = append(out, toStmts(role, p.(tmpl)["PolicyDocument"])...)
			}
		}
	}
	return out
}

// allStatements returns every identity policy statement of the template.
func allStatements(pj tmpl) []stmt {
	var out []stmt
	for id, p := range resources(pj, "AWS::IAM::Policy") {
		out = append(out, toStmts(symbol(id), props(p)["PolicyDocument"])...)
	}
	for id, p := range resources(pj, "AWS::IAM::ManagedPolicy") {
		out = append(out, toStmts(symbol(id), props(p)["PolicyDocument"])...)
	}
	for id, r := range resources(pj, "AWS::IAM::Role") {
		if inline, ok := props(r)["Policies"].([]any); ok {
			for _, p := range inline {
				out = append(out, toStmts(symbol(id), p.(tmpl)["PolicyDocument"])...)
			}
		}
	}
	return out
}

// comparePolicy requires got to be exactly want: the same statements, each
// Allow, in any order.
func comparePolicy(got, want []stmt) error {
	key := func(s stmt) string { return s.Sid + "|" + strings.Join(s.Actions, ",") }
	var errs []error
	var g []stmt
	for _, s := range got {
		if s.Effect != "Allow" || s.Not {
			errs = append(errs, fmt.Errorf("statement %s is not a plain Allow", key(s)))
		}
		s.Owner, s.Effect, s.Not = "", "", false
		g = append(g, s)
	}
	w := slices.Clone(want)
	slices.SortFunc(g, func(a, b stmt) int { return strings.Compare(key(a), key(b)) })
	slices.SortFunc(w, func(a, b stmt) int { return strings.Compare(key(a), key(b)) })
	if d := cmp.Diff(w, g); d != "" {
		errs = append(errs, fmt.Errorf("policy (-want +got):\n%s", d))
	}
	return errors.Join(errs...)
}

// checkTrust requires the role's trust policy to be exactly the statement
// want (JSON rendered with text).
func checkTrust(pj tmpl, role, want string) error {
	for id, r := range resources(pj, "AWS::IAM::Role") {
		if symbol(id) != role {
			continue
		}
		st := statements(props(r)["AssumeRolePolicyDocument"])
		if len(st) != 1 || text(st[0]) != want {
			return fmt.Errorf("trust policy of %s:\n got %s\nwant %s", role, text(props(r)["AssumeRolePolicyDocument"]), want)
		}
		return nil
	}
	return fmt.Errorf("no role %s", role)
}

// Test-only mutations.

func firstID(t tmpl, typ string) string {
	ids := slices.Sorted(maps.Keys(resources(t, typ)))
	return ids[0]
}

func resourceByType(t tmpl, typ string) tmpl {
	return resources(t, typ)[firstID(t, typ)]
}

// roleOf returns the logical ID of the role of the function fn.
func roleOf(pj tmpl, fn string) string {
	return props(resources(pj, "AWS::Lambda::Function")[fn])["Role"].(tmpl)["Fn::GetAtt"].([]any)[0].(string)
}

// addStatement appends s to the policy of the function with logical ID fn.
func addStatement(pj tmpl, fn string, s tmpl) {
	role := roleOf(pj, fn)
	for _, p := range resources(pj, "AWS::IAM::Policy") {
		if text(props(p)["Roles"]) == `["${`+symbol(role)+`}"]` {
			doc := props(p)["PolicyDocument"].(tmpl)
			doc["Statement"] = append(doc["Statement"].([]any), s)
			return
		}
	}
	panic("no policy for " + fn)
}

func tableARNValue() any { return tmpl{"Fn::Sub": tableARN} }

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// checkNeverSet: no function's environment holds a variable of neverSet.
func checkNeverSet(_, _ assertions.Template, _, pj tmpl) error {
	var errs []error
	fns := resources(pj, "AWS::Lambda::Function")
	for _, id := range slices.Sorted(maps.Keys(fns)) {
		e, _ := props(fns[id])["Environment"].(tmpl)
		vars, _ := e["Variables"].(tmpl)
		for _, k := range slices.Sorted(maps.Keys(neverSet)) {
			if v, ok := vars[k]; ok {
				errs = append(errs, fmt.Errorf("%s sets %s=%s: %s", id, k, text(v), neverSet[k]))
			}
		}
	}
	return errors.Join(errs...)
}

// checkAliases: exactly the functions with lanes (the three tools and
// review-request; TestLaneSpecs) have aliases, exactly sfn and direct,
// both on the same version of that function, routing nowhere else;
// review-decision has none (reviewers reach it through its URL). Every
// version is one an alias points at.
func checkAliases(_, _ assertions.Template, _, pj tmpl) error {
	var errs []error
	got := map[string][]string{}         // function logical ID: alias names
	on := map[string]map[string]string{} // function logical ID: alias name: version logical ID
	versions := resources(pj, "AWS::Lambda::Version")
	used := map[string]bool{}
	for id, a := range resources(pj, "AWS::Lambda::Alias") {
		p := props(a)
		fn, name := refID(p["FunctionName"]), text(p["Name"])
		got[fn] = append(got[fn], name)
		ver := getAttID(p["FunctionVersion"], "Version")
		if v, ok := versions[ver]; !ok || refID(props(v)["FunctionName"]) != fn {
			errs = append(errs, fmt.Errorf("alias %s (%s of %s) is on %s, not on a version of %s", id, name, fn, text(p["FunctionVersion"]), fn))
		}
		if on[fn] == nil {
			on[fn] = map[string]string{}
		}
		if ver == "" {
			ver = text(p["FunctionVersion"])
		}
		on[fn][name] = ver
		used[ver] = true
		if r, ok := p["RoutingConfig"]; ok {
			errs = append(errs, fmt.Errorf("alias %s routes to other versions: %s", id, text(r)))
		}
	}
	for _, names := range got {
		sort.Strings(names)
	}
	want := map[string][]string{}
	for _, spec := range functionSpecs {
		if spec.Lanes {
			want[spec.LogicalID] = []string{"direct", "sfn"}
		}
		if spec.StartLane {
			want[spec.LogicalID] = []string{"direct", "sfn", "start"}
		}
	}
	if !slices.Equal(want["ReviewRequestFunction"], []string{"direct", "sfn", "start"}) {
		errs = append(errs, fmt.Errorf("review-request must have the start alias, toolgate run's (docs/identity.md, \"Lanes\")"))
	}
	if d := cmp.Diff(want, got); d != "" {
		errs = append(errs, fmt.Errorf("aliases by function (-want +got):\n%s", d))
	}
	for _, fn := range slices.Sorted(maps.Keys(on)) {
		if v := on[fn]; v["sfn"] != v["direct"] {
			errs = append(errs, fmt.Errorf("%s: its sfn alias is on %s, its direct alias on %s: both lanes run one version", fn, v["sfn"], v["direct"]))
		} else if s, ok := v["start"]; ok && s != v["sfn"] {
			errs = append(errs, fmt.Errorf("%s: its start alias is on %s, its sfn alias on %s: every lane runs one version", fn, s, v["sfn"]))
		}
	}
	for id := range versions {
		if !used[id] {
			errs = append(errs, fmt.Errorf("version %s: no alias points at it", id))
		}
	}
	return errors.Join(errs...)
}

// checkLanes: who may invoke what (lambda:InvokeFunction, in any form).
// The Solution execution role only the sfn alias of each function for
// Solutions, the Operator (the direct lane) only the direct alias of each
// function with lanes, the proxy's role only tagged functions, the
// Reviewer only review-decision and the Publisher only the publish function (each through its URL; checkManagedPolicies
// checks the condition) and review-request's start alias, and no one else anything:
// no unqualified ARN of a function with lanes, no wildcard. And each
// /toolgate/<stage>/function/<name>/arn parameter names <name>'s sfn alias.
func checkLanes(_, _ assertions.Template, _, pj tmpl) error {
	var errs []error
	want := map[string][]string{
		"toolgate-test-reviewer": {fnReviewDecision + " (unqualified)"},
		// The Publisher: toolgate run's start record, through
		// review-request's start alias only.
		"toolgate-test-publisher": {fnPublish + " (unqualified)", fnReviewRequest + ":start"},
		// The proxy: functions tagged toolgate:tool=<its stage> only (the
		// condition: wantFunctionPolicies).
		"LambdaToolFunctionRole": {arn("lambda", "function:*")},
	}
	for _, spec := range functionSpecs {
		if spec.ForSolutions {
			want["SolutionExecutionRole"] = append(want["SolutionExecutionRole"], spec.Name+":sfn")
		}
		if spec.Lanes {
			want["toolgate-test-operator"] = append(want["toolgate-test-operator"], spec.Name+":direct")
		}
	}
	// toolgate webhooks and toolgate sources: through their Function URLs
	// only (the conditions: wantManagedPolicies).
	want["toolgate-test-operator"] = append(want["toolgate-test-operator"], fnWebhooks+" (unqualified)", fnSources+" (unqualified)")
	// inbound-start records an inbound run's start through review-request's
	// start alias only, as toolgate run does.
	want["InboundStartFunctionRole"] = []string{fnReviewRequest + ":start"}
	for _, l := range want {
		sort.Strings(l)
	}
	if d := cmp.Diff(want, invokers(pj)); d != "" {
		errs = append(errs, fmt.Errorf("who may invoke which function (-want +got):\n%s", d))
	}
	for _, p := range resources(pj, "AWS::SSM::Parameter") {
		name := text(props(p)["Name"])
		fn, ok := strings.CutPrefix(name, "/toolgate/test/function/")
		if !ok {
			continue
		}
		fn = strings.TrimSuffix(fn, "/arn")
		if got := invokeTarget(pj, props(p)["Value"]); got != fn+":sfn" {
			errs = append(errs, fmt.Errorf("parameter %s names %s, want %s:sfn (the ARN Solutions' Tasks invoke)", name, got, fn))
		}
	}
	return errors.Join(errs...)
}

// invokers returns, by principal (a role's logical ID without its hash, a
// managed policy's name), what each may invoke (invokeTarget), sorted.
func invokers(pj tmpl) map[string][]string {
	out := map[string][]string{}
	add := func(owner string, doc any) {
		for _, s := range statements(doc) {
			if !allowsInvoke(s) {
				continue
			}
			if nr, ok := s["NotResource"]; ok {
				out[owner] = append(out[owner], "all but "+text(nr))
				continue
			}
			r := s["Resource"]
			if l, ok := r.([]any); ok {
				for _, x := range l {
					out[owner] = append(out[owner], invokeTarget(pj, x))
				}
			} else {
				out[owner] = append(out[owner], invokeTarget(pj, r))
			}
		}
	}
	for _, p := range resources(pj, "AWS::IAM::Policy") {
		for _, r := range props(p)["Roles"].([]any) {
			add(strings.TrimSuffix(strings.TrimPrefix(text(r), "${"), "}"), props(p)["PolicyDocument"])
		}
	}
	for _, p := range resources(pj, "AWS::IAM::ManagedPolicy") {
		add(text(props(p)["ManagedPolicyName"]), props(p)["PolicyDocument"])
	}
	for id, r := range resources(pj, "AWS::IAM::Role") {
		if inline, ok := props(r)["Policies"].([]any); ok {
			for _, p := range inline {
				add(symbol(id), p.(tmpl)["PolicyDocument"])
			}
		}
	}
	for _, l := range out {
		sort.Strings(l)
	}
	return out
}

// allowsInvoke: statement s allows lambda:InvokeFunction, whatever the
// form of its actions (IAM's wildcards and letter case, NotAction).
func allowsInvoke(s tmpl) bool {
	if s["Effect"] != "Allow" {
		return false
	}
	match := func(a string) bool { return wildcardMatch(a, "lambda:InvokeFunction", true) }
	if na, ok := s["NotAction"]; ok {
		return !slices.ContainsFunc(strs(na), match)
	}
	return slices.ContainsFunc(strs(s["Action"]), match)
}

// invokeTarget names a Lambda resource of the template: <function>:<alias
// name> for a Ref to an alias (by its Name property, not its logical ID),
// "<function> (unqualified)" for a function's Arn; anything else as text.
func invokeTarget(pj tmpl, v any) string {
	all := pj["Resources"].(tmpl)
	if id := refID(v); id != "" {
		if a, ok := all[id].(tmpl); ok && a["Type"] == "AWS::Lambda::Alias" {
			fn := specByLogicalID(refID(props(a)["FunctionName"])).Name
			return fn + ":" + text(props(a)["Name"])
		}
	}
	if id := getAttID(v, "Arn"); id != "" {
		if f, ok := all[id].(tmpl); ok && f["Type"] == "AWS::Lambda::Function" {
			return specByLogicalID(id).Name + " (unqualified)"
		}
	}
	return text(v)
}

// refID is the logical ID of {"Ref": ID}; "" for anything else.
func refID(v any) string {
	if m, ok := v.(tmpl); ok && len(m) == 1 {
		id, _ := m["Ref"].(string)
		return id
	}
	return ""
}

// getAttID is the logical ID of {"Fn::GetAtt": [ID, attr]}; "" for
// anything else.
func getAttID(v any, attr string) string {
	if m, ok := v.(tmpl); ok && len(m) == 1 {
		if a, ok := m["Fn::GetAtt"].([]any); ok && len(a) == 2 && a[1] == attr {
			id, _ := a[0].(string)
			return id
		}
	}
	return ""
}

// grant adds resource to the statement with Sid sid, wherever it is
// (test-only mutation).
func grant(pj tmpl, sid string, resource any) {
	docs := []any{}
	for _, p := range resources(pj, "AWS::IAM::Policy") {
		docs = append(docs, props(p)["PolicyDocument"])
	}
	for _, p := range resources(pj, "AWS::IAM::ManagedPolicy") {
		docs = append(docs, props(p)["PolicyDocument"])
	}
	for _, d := range docs {
		for _, s := range statements(d) {
			if s["Sid"] == sid {
				l, ok := s["Resource"].([]any)
				if !ok {
					l = []any{s["Resource"]}
				}
				s["Resource"] = append(l, resource)
				return
			}
		}
	}
	panic("no statement " + sid)
}

// TestLaneBreaks breaks the lanes in more ways than TestRulesCatchBreakage's
// one each, and expects checkLanes or checkAliases to name the break.
func TestLaneBreaks(t *testing.T) {
	setParam := func(pj tmpl, name string, v any) {
		for _, p := range resources(pj, "AWS::SSM::Parameter") {
			if props(p)["Name"] == name {
				props(p)["Value"] = v
			}
		}
	}
	alias := func(pj tmpl, id string) tmpl { return props(pj["Resources"].(tmpl)[id].(tmpl)) }
	for _, c := range []struct {
		name  string
		check func(ledger, platform assertions.Template, lj, pj tmpl) error
		brk   func(pj tmpl)
		says  string
	}{
		{"execution role on the direct alias", checkLanes, func(pj tmpl) {
			grant(pj, "InvokeToolgateFunctions", tmpl{"Ref": "ReviewRequestFunctionDirectAlias"})
		}, `"review-request:direct"`},
		{"execution role on the unqualified function", checkLanes, func(pj tmpl) {
			grant(pj, "InvokeToolgateFunctions", tmpl{"Fn::GetAtt": []any{"SendEmailFunction", "Arn"}})
		}, `"send-email (unqualified)"`},
		{"execution role on every qualifier", checkLanes, func(pj tmpl) {
			grant(pj, "InvokeToolgateFunctions", tmpl{"Fn::Join": []any{"", []any{tmpl{"Fn::GetAtt": []any{"SendEmailFunction", "Arn"}}, ":*"}}})
		}, `"${SendEmailFunction.Arn}:*"`},
		{"operator on the sfn alias", checkLanes, func(pj tmpl) {
			grant(pj, "DirectLane", tmpl{"Ref": "SendEmailFunctionSfnAlias"})
		}, `"send-email:sfn"`},
		{"operator on the unqualified function", checkLanes, func(pj tmpl) {
			grant(pj, "DirectLane", tmpl{"Fn::GetAtt": []any{"WorkflowValidatorFunction", "Arn"}})
		}, `"workflow-validator (unqualified)"`},
		{"operator by wildcard action", checkLanes, func(pj tmpl) {
			grant(pj, "LedgerIndexReads", "arn:aws:lambda:eu-west-1:123456789012:function:toolgate-test-send-email:sfn")
			for _, p := range resources(pj, "AWS::IAM::ManagedPolicy") {
				for _, s := range statements(props(p)["PolicyDocument"]) {
					if s["Sid"] == "LedgerIndexReads" {
						s["Action"] = []any{"dynamodb:Query", "Lambda:Invoke*"}
					}
				}
			}
		}, `function:toolgate-test-send-email:sfn`},
		{"a function role invokes a tool", checkLanes, func(pj tmpl) {
			addStatement(pj, "ReviewDecisionFunction", tmpl{"Effect": "Allow", "Action": "lambda:InvokeFunction", "Resource": tmpl{"Ref": "SendEmailFunctionDirectAlias"}})
		}, `"ReviewDecisionFunctionRole": {"send-email:direct"}`},
		{"aliases swapped by name", checkLanes, func(pj tmpl) {
			alias(pj, "SendEmailFunctionSfnAlias")["Name"] = "direct"
			alias(pj, "SendEmailFunctionDirectAlias")["Name"] = "sfn"
		}, `"send-email:direct"`},
		{"parameter on the direct alias", checkLanes, func(pj tmpl) {
			setParam(pj, "/toolgate/test/function/send-email/arn", tmpl{"Ref": "SendEmailFunctionDirectAlias"})
		}, `/toolgate/test/function/send-email/arn names send-email:direct`},
		{"parameter on the function", checkLanes, func(pj tmpl) {
			setParam(pj, "/toolgate/test/function/review-request/arn", tmpl{"Fn::GetAtt": []any{"ReviewRequestFunction", "Arn"}})
		}, `/toolgate/test/function/review-request/arn names review-request (unqualified)`},
		{"publisher on the direct alias", checkLanes, func(pj tmpl) {
			grant(pj, "RecordRunStarts", tmpl{"Ref": "ReviewRequestFunctionDirectAlias"})
		}, `"review-request:direct"`},
		{"operator on the start alias", checkLanes, func(pj tmpl) {
			grant(pj, "DirectLane", tmpl{"Ref": "ReviewRequestFunctionStartAlias"})
		}, `"review-request:start"`},
		{"a start alias on another version", checkAliases, func(pj tmpl) {
			alias(pj, "ReviewRequestFunctionStartAlias")["FunctionVersion"] = alias(pj, "SendEmailFunctionSfnAlias")["FunctionVersion"]
		}, `ReviewRequestFunctionStartAlias (start of ReviewRequestFunction) is on`},
		{"a tool with a start alias", checkAliases, func(pj tmpl) {
			a := clone(pj["Resources"].(tmpl)["SendEmailFunctionSfnAlias"].(tmpl))
			props(a)["Name"] = "start"
			pj["Resources"].(tmpl)["SendEmailFunctionStartAlias"] = a
		}, `"start"`},
		{"an alias on $LATEST", checkAliases, func(pj tmpl) {
			alias(pj, "StructuredDataFetchFunctionSfnAlias")["FunctionVersion"] = "$LATEST"
		}, `StructuredDataFetchFunctionSfnAlias (sfn of StructuredDataFetchFunction) is on $LATEST, not on a version`},
		{"an alias on another function's version", checkAliases, func(pj tmpl) {
			alias(pj, "SendEmailFunctionDirectAlias")["FunctionVersion"] = alias(pj, "ReviewRequestFunctionDirectAlias")["FunctionVersion"]
		}, `SendEmailFunction: its sfn alias is on`},
		{"a missing alias", checkAliases, func(pj tmpl) {
			delete(pj["Resources"].(tmpl), "WorkflowValidatorFunctionDirectAlias")
		}, `"WorkflowValidatorFunction"`},
		{"a third alias", checkAliases, func(pj tmpl) {
			a := clone(pj["Resources"].(tmpl)["SendEmailFunctionSfnAlias"].(tmpl))
			props(a)["Name"] = "live"
			pj["Resources"].(tmpl)["SendEmailFunctionLiveAlias"] = a
		}, `"live"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			pj := clone(platformJSON)
			c.brk(pj)
			err := c.check(nil, nil, nil, pj)
			if err == nil {
				t.Fatal("the broken template passed")
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Fatalf("the report does not name the break (%q):\n%v", c.says, err)
			}
		})
	}
}

// TestLaneSpecs: the functions with lanes are exactly the tools and
// review-request, and every function for Solutions has lanes (its sfn
// alias is what Solutions invoke).
func TestLaneSpecs(t *testing.T) {
	for _, spec := range functionSpecs {
		if want := spec.Tool || spec.Name == fnReviewRequest; spec.Lanes != want {
			t.Errorf("%s: Lanes %v, want %v", spec.Name, spec.Lanes, want)
		}
		if spec.ForSolutions && !spec.Lanes {
			t.Errorf("%s: for Solutions without lanes", spec.Name)
		}
	}
}
