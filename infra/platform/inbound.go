package platform

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsssm"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/reviewer"
)

// Inbound events and schedules (docs/webhooks.md, "Receiving events";
// docs/infra.md, "Inbound events and schedules"): one standard queue with
// its dead-letter queue, the three inbound functions around it, the
// inbound-start role whose sessions start the runs, and the EventBridge
// Scheduler group and role that fire schedules.
//
//	provider ─ POST /in/<source> ─ webhook-receiver (public Function URL: verifies, records) ─┐
//	relay (every minute) ─ webhook-receiver (events recorded but not queued) ────────────────┤
//	EventBridge Scheduler (group toolgate-<stage>, the scheduler role) ──────────────────────┤
//	sources (dlq redrive) ───────────────────────────────────────────────────────────────────┤
//	                                                      inbound queue ─ inbound-start ─ DLQ (5 receives)
//	inbound-start ─ sts:AssumeRole (toolgate-<stage>-inbound-start, session src-<source>|sched-<schedule>)
//	              ─ review-request's start alias (the start record) ─ states:StartExecution
//
// A message of the inbound queue names an event ({"source","event_id"})
// or a schedule's firing ({"schedule","scheduled_time"}) and carries no
// body: inbound-start reads the event item (shared/inboundapi).

// Environment variables of the inbound functions: the names are the
// functions' own (shared/inboundapi), so that the two cannot differ.
const (
	envInboundQueue         = inboundapi.EnvQueue
	envInboundDLQ           = inboundapi.EnvDLQ
	envInboundQueueARN      = inboundapi.EnvQueueARN
	envInboundDLQARN        = inboundapi.EnvDLQARN
	envInboundOperators     = inboundapi.EnvOperators
	envInboundRole          = inboundapi.EnvRole
	envInboundRetentionDays = inboundapi.EnvRetentionDays
	envSchedulerGroup       = inboundapi.EnvSchedulerGroup
	envSchedulerRole        = inboundapi.EnvSchedulerRole
	envRunStartFunction     = inboundapi.EnvRunStartFunction
)

// Queue, concurrency and retention settings (SQS Developer Guide, "Amazon
// SQS quotas"; Lambda Developer Guide, "Using Lambda with Amazon SQS").
const (
	// inboundRetention is the inbound queue's retention, SQS's default
	// written out: a message is received at most inboundMaxReceives times,
	// six minutes apart, long before it would expire.
	inboundRetention = 4 * 24 * time.Hour
	// inboundDLQRetention is the most SQS keeps a message: a message moved
	// to a dead-letter queue keeps its first enqueue time.
	inboundDLQRetention = 14 * 24 * time.Hour
	// inboundMaxReceives is how often inbound-start tries a message
	// before SQS moves it to the dead-letter queue.
	inboundMaxReceives = 5
	// inboundBatchSize is the event source mapping's batch: inbound-start
	// starts a batch's runs concurrently, reporting each failed message.
	inboundBatchSize = 10
	// inboundStartConcurrency is the mapping's maximum concurrency
	// (Lambda's ScalingConfig, at least 2). cdk.json reserves one more for
	// inbound-start: a batch throttled by the reservation goes back to the
	// queue and that receive counts as one of its five.
	inboundStartConcurrency = 5
	// inboundAgeAlarm is the age of the inbound queue's oldest message
	// that raises its alarm: a start takes seconds, so a quarter of an
	// hour means inbound-start is not consuming.
	inboundAgeAlarm = 15 * time.Minute
	// inboundRelayRate is how often the relay runs: an event recorded by
	// a receiver that could not queue it is queued within about a minute
	// after TOOLGATE_INBOUND_RELAY_AFTER.
	inboundRelayRate = time.Minute
	// DefaultInboundReceiverConcurrency is webhook-receiver's reserved
	// concurrency when the configuration sets none: its URL is public,
	// so a flood of requests takes at most this much of the account's
	// concurrency (docs/infra.md, "Inbound events and schedules").
	DefaultInboundReceiverConcurrency = 10
	// MaxInboundReceiverConcurrency bounds inboundReceiverConcurrency:
	// Lambda's default account quota of concurrent executions is 1,000,
	// of which 100 stay unreserved.
	MaxInboundReceiverConcurrency = 900
	// The inbound event items' time to live in days
	// (TOOLGATE_INBOUND_RETENTION_DAYS, the items' expires_at): the
	// default, and the bounds the functions accept.
	DefaultInboundRetentionDays = 90
	MinInboundRetentionDays     = 3
	MaxInboundRetentionDays     = 400
)

// inboundQueueName is toolgate-<stage>-inbound, and its dead-letter
// queue's name with suffix "-dlq".
func inboundQueueName(stage, suffix string) string { return "toolgate-" + stage + "-inbound" + suffix }

// inboundRoleName is the inbound-start role's name,
// toolgate-<stage>-inbound-start (at most 43 characters: a stage is at
// most 20). It is a session role of every function (functionEnv), so
// that the caller of a start is the session
// arn:aws:sts::<account>:assumed-role/toolgate-<stage>-inbound-start/src-<source>.
func inboundRoleName(stage string) string { return "toolgate-" + stage + "-inbound-start" }

// schedulerGroupName is the stage's EventBridge Scheduler schedule
// group, toolgate-<stage>: every schedule the sources function creates is
// in it, and its role may manage no other.
func schedulerGroupName(stage string) string { return "toolgate-" + stage }

// schedulerGroupARN is the schedule group's ARN in Fn::Sub form
// (Service Authorization Reference, Amazon EventBridge Scheduler:
// schedule-group).
func schedulerGroupARN(stage string) string {
	return "arn:${AWS::Partition}:scheduler:${AWS::Region}:${AWS::AccountId}:schedule-group/" + schedulerGroupName(stage)
}

// schedulesARN matches the schedules of the stage's group in Fn::Sub
// form: schedule/<group>/<name>.
func schedulesARN(stage string) string {
	return "arn:${AWS::Partition}:scheduler:${AWS::Region}:${AWS::AccountId}:schedule/" + schedulerGroupName(stage) + "/*"
}

// sourcesURLParam and inboundURLParam name the parameters of the sources
// function's URL (toolgate sources --url) and of webhook-receiver's, the
// base of every source's endpoint <url>in/<source>.
func sourcesURLParam(stage string) string { return "/toolgate/" + stage + "/sources/url" }
func inboundURLParam(stage string) string { return "/toolgate/" + stage + "/inbound/url" }

// sourceEncryptionContextKeys are the only encryption context keys a
// source secret's requests may carry: {purpose: webhook-source, source:
// <name>} (shared/inbound/store SealSecret).
var sourceEncryptionContextKeys = []string{"purpose", "source"}

// sourceSecretUses is the condition of the key policy's source secret
// statements: the webhook-source purpose, and no other context key.
func sourceSecretUses() *map[string]any {
	return &map[string]any{
		"StringEquals":              map[string]any{"kms:EncryptionContext:purpose": credential.PurposeWebhookSource},
		"ForAllValues:StringEquals": map[string]any{"kms:EncryptionContextKeys": sourceEncryptionContextKeys},
	}
}

// InboundProps configure NewInbound.
type InboundProps struct {
	Platform      *PlatformStackProps
	Functions     *Functions
	Access        *Access
	Credentials   *Credentials
	LedgerSecrets *LedgerSecrets
}

// Inbound is the inbound queue and its dead-letter queue, the relay's
// rule, the two Function URLs, the inbound-start role and the
// EventBridge Scheduler group and role.
type Inbound struct {
	constructs.Construct
	Queue, DLQ awssqs.Queue
	// Relay runs webhook-receiver's relay every minute.
	Relay awsevents.Rule
	// SourcesURL is the sources function's IAM-authorised Function URL
	// (logical ID SourcesUrl); ReceiverURL is webhook-receiver's public
	// one (auth NONE, logical ID WebhookReceiverUrl).
	SourcesURL, ReceiverURL awslambda.FunctionUrl
	// StartRole is toolgate-<stage>-inbound-start: trusted by
	// inbound-start's role alone, with no permission of its own.
	StartRole awsiam.Role
	// SchedulerRole is the role EventBridge Scheduler takes to send a
	// schedule's firings to the inbound queue, and its failures to the
	// dead-letter queue; ScheduleGroup is toolgate-<stage>.
	SchedulerRole awsiam.Role
	ScheduleGroup awsscheduler.ScheduleGroup
}

// NewInbound defines the queues (newWebhookQueue), the inbound-start
// role, the schedule group and the scheduler role, the queue policies
// that let only the producers send, inbound-start's event source mapping,
// the relay's schedule, both Function URLs with their parameters and the
// Operator's grants, the three functions' statements and environment,
// the key policy's source secret statements, review-request's
// TOOLGATE_INBOUND_ROLE, and the queues' alarms.
func NewInbound(scope constructs.Construct, id string, props *InboundProps) *Inbound {
	c := newConcern(scope, id)
	p := props.Platform
	fns := props.Functions.ByName
	sources, receiver, starter := fns[fnSources], fns[fnWebhookReceiver], fns[fnInboundStart]
	visibility := 6 * time.Duration(starter.Settings.TimeoutSeconds) * time.Second

	in := &Inbound{Construct: c}
	in.DLQ = newWebhookQueue(c, "InboundDLQ", inboundQueueName(p.Stage, "-dlq"), inboundDLQRetention, visibility, nil)
	in.Queue = newWebhookQueue(c, "InboundQueue", inboundQueueName(p.Stage, ""), inboundRetention, visibility,
		&awssqs.DeadLetterQueue{Queue: in.DLQ, MaxReceiveCount: jsii.Number(inboundMaxReceives)})
	in.StartRole = newInboundStartRole(c, p.Stage, starter)
	in.ScheduleGroup = awsscheduler.NewScheduleGroup(c, jsii.String("InboundScheduleGroup"), &awsscheduler.ScheduleGroupProps{
		ScheduleGroupName: jsii.String(schedulerGroupName(p.Stage)),
		// The schedule items in the table are the record: a group kept
		// after the stack would go on firing into a queue nothing consumes.
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	in.SchedulerRole = newSchedulerRole(c, p.Stage, in)

	// Only the producers may send: inbound-start trusts what the queue
	// holds to name an event or a schedule that was recorded
	// (docs/infra.md, "Inbound events and schedules").
	restrictInboundSenders(in.Queue, receiver.Role.RoleArn(), sources.Role.RoleArn(), in.SchedulerRole.RoleArn())
	restrictInboundSenders(in.DLQ, in.SchedulerRole.RoleArn())

	starter.Function.AddEventSourceMapping(jsii.String("InboundMapping"), &awslambda.EventSourceMappingOptions{
		EventSourceArn:          in.Queue.QueueArn(),
		BatchSize:               jsii.Number(inboundBatchSize),
		ReportBatchItemFailures: jsii.Bool(true),
		MaxConcurrency:          jsii.Number(inboundStartConcurrency),
	})
	in.Relay = awsevents.NewRule(c, jsii.String("InboundRelaySchedule"), &awsevents.RuleProps{
		Description: jsii.String("toolgate " + p.Stage + ": runs webhook-receiver's relay, which queues inbound events recorded but not queued"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Seconds(jsii.Number(inboundRelayRate.Seconds()))),
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(receiver.Function, &awseventstargets.LambdaFunctionProps{
			// The next minute's run queues what a failed one left.
			RetryAttempts: jsii.Number(0),
			MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(inboundRelayRate.Seconds())),
		})},
	})

	grantInbound(in, p.Stage, fns)
	grantSourceSecrets(props.Credentials, sources, receiver)
	// inbound-start reads the external key at its cold start, which the
	// ledger secrets' custom resource creates.
	starter.Function.Node().AddDependency(props.LedgerSecrets.Resource)

	in.SourcesURL = sources.Function.AddFunctionUrl(&awslambda.FunctionUrlOptions{AuthType: awslambda.FunctionUrlAuthType_AWS_IAM})
	overrideLogicalID(in.SourcesURL, "SourcesUrl")
	// Public: a provider signs each delivery, and the signature is what
	// authenticates it (inbound.Verify, before anything is read or
	// stored). The CDK adds the two permissions a URL of auth type NONE
	// needs (Lambda Developer Guide, "Control access to Lambda function
	// URLs"): lambda:InvokeFunctionUrl to everyone with
	// lambda:FunctionUrlAuthType NONE, and lambda:InvokeFunction to
	// everyone only with lambda:InvokedViaFunctionUrl true, so the
	// function cannot be invoked directly with an event of anyone's
	// making (TestInboundReceiverURL).
	in.ReceiverURL = receiver.Function.AddFunctionUrl(&awslambda.FunctionUrlOptions{AuthType: awslambda.FunctionUrlAuthType_NONE})
	overrideLogicalID(in.ReceiverURL, "WebhookReceiverUrl")
	awsssm.NewStringParameter(c, jsii.String("SourcesUrlParameter"), &awsssm.StringParameterProps{
		ParameterName: jsii.String(sourcesURLParam(p.Stage)),
		StringValue:   in.SourcesURL.Url(),
		Description:   jsii.String("URL of the sources function (IAM-authorised): toolgate sources --url, toolgate schedules --url"),
	})
	awsssm.NewStringParameter(c, jsii.String("InboundUrlParameter"), &awsssm.StringParameterProps{
		ParameterName: jsii.String(inboundURLParam(p.Stage)),
		StringValue:   in.ReceiverURL.Url(),
		Description:   jsii.String("URL of webhook-receiver (public; each delivery is verified by its signature): a source's endpoint is <url>in/<source>"),
	})
	grantSourcesURL(props.Access, sources, p.Stage)

	receiver.Function.AddEnvironment(jsii.String(envInboundQueue), in.Queue.QueueUrl(), nil)
	sources.Function.AddEnvironment(jsii.String(envInboundQueue), in.Queue.QueueUrl(), nil)
	sources.Function.AddEnvironment(jsii.String(envInboundDLQ), in.DLQ.QueueUrl(), nil)
	sources.Function.AddEnvironment(jsii.String(envInboundQueueARN), in.Queue.QueueArn(), nil)
	sources.Function.AddEnvironment(jsii.String(envInboundDLQARN), in.DLQ.QueueArn(), nil)
	sources.Function.AddEnvironment(jsii.String(envSchedulerGroup), in.ScheduleGroup.ScheduleGroupName(), nil)
	// The name is known at synth, so the variable alone orders nothing:
	// the group exists before the function that creates schedules in it.
	sources.Function.Node().AddDependency(in.ScheduleGroup)
	sources.Function.AddEnvironment(jsii.String(envSchedulerRole), in.SchedulerRole.RoleArn(), nil)
	starter.Function.AddEnvironment(jsii.String(envRunStartFunction), fns[fnReviewRequest].aliasARN(lane.Start), nil)
	starter.Function.AddEnvironment(jsii.String(envInboundRole), in.StartRole.RoleArn(), nil)
	// review-request admits a start's origin only from a session of this
	// role (docs/identity.md, "Lanes").
	fns[fnReviewRequest].Function.AddEnvironment(jsii.String(envInboundRole), in.StartRole.RoleArn(), nil)

	newInboundAlarms(c, p, in)
	return in
}

// newInboundStartRole defines toolgate-<stage>-inbound-start: its trust
// policy admits inbound-start's role alone, and only for a session named
// src-<source> or sched-<schedule> (sts:RoleSessionName); it has no
// policy. A session of it is the verified starter of an inbound run:
// inbound-start signs the start record's caller proof with the session's
// credentials, and review-request admits a start's origin only from a
// session of this role whose name matches the origin (docs/identity.md,
// "Lanes"). Four eyes refuse the session as a reviewer of its runs, as any
// starter.
func newInboundStartRole(scope constructs.Construct, stage string, starter *platformFunction) awsiam.Role {
	trusted := awsiam.NewPrincipalWithConditions(awsiam.NewArnPrincipal(starter.Role.RoleArn()), &map[string]any{
		"StringLike": map[string]any{"sts:RoleSessionName": []string{"src-*", "sched-*"}},
	})
	return awsiam.NewRole(scope, jsii.String("InboundStartRole"), &awsiam.RoleProps{
		RoleName:    jsii.String(inboundRoleName(stage)),
		AssumedBy:   trusted,
		Description: jsii.String("toolgate inbound-start role (" + stage + "): the caller of inbound runs' starts; no permissions"),
	})
}

// newSchedulerRole defines the role EventBridge Scheduler takes for the
// stage's schedules: trusted by scheduler.amazonaws.com for the stage's
// schedule group of this account only (aws:SourceAccount and
// aws:SourceArn, EventBridge Scheduler User Guide, "Set up the execution
// role": confused deputy prevention), allowed sqs:SendMessage on the
// inbound queue (each firing, the target) and on the dead-letter queue (a
// firing the Scheduler could not deliver after its retries, the schedule's
// DeadLetterConfig: "Configuring a schedule's dead-letter queue").
func newSchedulerRole(scope constructs.Construct, stage string, in *Inbound) awsiam.Role {
	trusted := awsiam.NewPrincipalWithConditions(awsiam.NewServicePrincipal(jsii.String("scheduler.amazonaws.com"), nil), &map[string]any{
		"StringEquals": map[string]any{"aws:SourceAccount": awscdk.Aws_ACCOUNT_ID(), "aws:SourceArn": sub(schedulerGroupARN(stage))},
	})
	role := awsiam.NewRole(scope, jsii.String("InboundSchedulerRole"), &awsiam.RoleProps{
		AssumedBy:   trusted,
		Description: jsii.String("toolgate EventBridge Scheduler role (" + stage + "): sends schedule firings to the inbound queue"),
	})
	role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("SendScheduleFirings"),
		Actions:   jsii.Strings("sqs:SendMessage"),
		Resources: &[]*string{in.Queue.QueueArn(), in.DLQ.QueueArn()},
	}))
	return role
}

// restrictInboundSenders adds to q's queue policy a statement denying
// sqs:SendMessage to every principal whose aws:PrincipalArn (a role's
// ARN whatever its session) is none of senders, as
// restrictWebhookSenders does for the webhook queues: an identity policy
// of the account granting sqs:SendMessage on "*" still cannot put a forged
// event or firing on the queue, since an explicit deny wins (IAM User
// Guide, "Policy evaluation logic"). SQS's own move of a message to the
// dead-letter queue is no principal's SendMessage.
func restrictInboundSenders(q awssqs.Queue, senders ...*string) {
	q.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("OnlyProducersSend"),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings("sqs:SendMessage"),
		Resources:  &[]*string{q.QueueArn()},
		Conditions: &map[string]any{"StringNotEquals": map[string]any{"aws:PrincipalArn": senders}},
	}))
}

// grantInbound gives each inbound function what its flow asks
// (docs/webhooks.md, "Receiving events"), SQS-managed encryption needing
// no KMS statement:
//   - webhook-receiver: sqs:SendMessage on the inbound queue (each
//     event, and the relay's);
//   - sources: dlq list and redrive (read the dead-letter queue, send back
//     to the inbound queue); EventBridge Scheduler's schedule actions on
//     the stage's group's schedules only, ListSchedules (no resource
//     type), and iam:PassRole of the scheduler role to
//     scheduler.amazonaws.com only;
//   - inbound-start: its event source mapping's actions on the inbound
//     queue; sts:AssumeRole of the inbound-start role only; the latest
//     revision of the stage's state machines (DescribeStateMachine for the
//     input record, StartExecution), DescribeExecution of their executions
//     (an earlier attempt's run); review-request's start alias only; the
//     stage's external key, which names the executions.
func grantInbound(in *Inbound, stage string, fns map[string]*platformFunction) {
	receiver, sources, starter := fns[fnWebhookReceiver], fns[fnSources], fns[fnInboundStart]
	receiver.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("SendInboundEvents"),
		Actions:   jsii.Strings("sqs:SendMessage"),
		Resources: &[]*string{in.Queue.QueueArn()},
	}))

	sources.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String("RedriveInboundEvents"),
		// A listing releases what it read with ChangeMessageVisibility; a
		// redrive deletes what it sent on. No GetQueueAttributes: nothing
		// reads the queue's counts.
		Actions:   jsii.Strings("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"),
		Resources: &[]*string{in.DLQ.QueueArn()},
	}))
	sources.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ResendInboundEvents"),
		Actions:   jsii.Strings("sqs:SendMessage"),
		Resources: &[]*string{in.Queue.QueueArn()},
	}))
	sources.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ManageSchedules"),
		Actions:   jsii.Strings("scheduler:CreateSchedule", "scheduler:UpdateSchedule", "scheduler:DeleteSchedule", "scheduler:GetSchedule"),
		Resources: &[]*string{sub(schedulesARN(stage))},
	}))
	sources.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ListSchedules"),
		Actions:   jsii.Strings("scheduler:ListSchedules"),
		Resources: jsii.Strings("*"),
	}))
	sources.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("PassTheSchedulerRole"),
		Actions:    jsii.Strings("iam:PassRole"),
		Resources:  &[]*string{in.SchedulerRole.RoleArn()},
		Conditions: &map[string]any{"StringEquals": map[string]any{"iam:PassedToService": "scheduler.amazonaws.com"}},
	}))

	for _, s := range []awsiam.PolicyStatement{
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("ConsumeInboundQueue"),
			Actions:   jsii.Strings("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"),
			Resources: &[]*string{in.Queue.QueueArn()},
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("AssumeTheInboundStartRole"),
			Actions:   jsii.Strings("sts:AssumeRole"),
			Resources: &[]*string{in.StartRole.RoleArn()},
		}),
		// The latest revision only, as toolgate run starts it: a request
		// naming a version carries states:StateMachineQualifier.
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("StartInboundRuns"),
			Actions:    jsii.Strings("states:DescribeStateMachine", "states:StartExecution"),
			Resources:  &[]*string{sub(stateMachinesARN(stage))},
			Conditions: &map[string]any{"Null": map[string]any{"states:StateMachineQualifier": "true"}},
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("DescribeInboundRuns"),
			Actions:   jsii.Strings("states:DescribeExecution"),
			Resources: &[]*string{sub(executionsARN(stage))},
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("RecordInboundStarts"),
			Actions:   jsii.Strings("lambda:InvokeFunction"),
			Resources: &[]*string{fns[fnReviewRequest].aliasARN(lane.Start)},
		}),
		readExternalKey(stage),
	} {
		starter.Role.AddToPolicy(s)
	}
}

// grantSourceSecrets adds the source secrets' statements to the
// credentials key's policy (docs/webhooks.md, "Receiving events"): the
// sources function seals a source's secret (kms:GenerateDataKey) and
// webhook-receiver opens it to verify a delivery (kms:Decrypt), each only
// under the purpose webhook-source and with no context key but
// sourceEncryptionContextKeys, and nobody else gains either: no
// credential or webhook role matches the purpose, nor these roles another
// one. The sources function never opens a secret: it shows a drawn one
// once, before sealing it.
func grantSourceSecrets(creds *Credentials, sources, receiver *platformFunction) {
	for _, s := range []struct {
		sid, action string
		role        awsiam.IRole
	}{{"SealSourceSecrets", "kms:GenerateDataKey", sources.Role}, {"OpenSourceSecrets", "kms:Decrypt", receiver.Role}} {
		creds.Key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String(s.sid),
			Principals: &[]awsiam.IPrincipal{awsiam.NewArnPrincipal(s.role.RoleArn())},
			Actions:    jsii.Strings(s.action),
			Resources:  jsii.Strings("*"),
			Conditions: sourceSecretUses(),
		}), jsii.Bool(false))
	}
	sources.Function.AddEnvironment(jsii.String(inboundapi.EnvKey), creds.Key.KeyArn(), nil)
}

// grantSourcesURL lets the Operator policy reach the sources function
// through its URL only and read both inbound URL parameters; the
// function's own TOOLGATE_INBOUND_OPERATORS decides who may act.
func grantSourcesURL(a *Access, sources *platformFunction, stage string) {
	a.Operator.AddStatements(append(invokeThroughURLOnly("Sources", sources),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("InboundParameters"),
			Actions:   jsii.Strings("ssm:GetParameter"),
			Resources: &[]*string{parameterARN(sourcesURLParam(stage)), parameterARN(inboundURLParam(stage))},
		}))...)
}

// newInboundAlarms defines the inbound queues' alarms: a message in the
// dead-letter queue (an event or firing whose start failed five times, or
// a firing the Scheduler could not deliver: toolgate sources dlq list
// shows it, dlq redrive sends it again), and the inbound queue's oldest
// message past inboundAgeAlarm.
func newInboundAlarms(scope constructs.Construct, p *PlatformStackProps, in *Inbound) {
	var action awscloudwatch.IAlarmAction
	if p.AlarmTopicARN != "" {
		action = awscloudwatchactions.NewSnsAction(awssns.Topic_FromTopicArn(scope, jsii.String("InboundAlarmTopic"), jsii.String(p.AlarmTopicARN)))
	}
	maximum := &awscloudwatch.MetricOptions{Period: alarmPeriod(), Statistic: jsii.String("Maximum")}
	newAlarm(scope, p.Stage, "InboundDLQAlarm", "inbound-dlq",
		"toolgate: an inbound event or schedule firing was not started and moved to the inbound dead-letter queue (toolgate sources dlq list, dlq redrive)",
		in.DLQ.MetricApproximateNumberOfMessagesVisible(maximum), 1, action)
	newAlarm(scope, p.Stage, "InboundAgeAlarm", "inbound-age",
		fmt.Sprintf("toolgate: an inbound event waited %s on the inbound queue: inbound-start is not consuming it", inboundAgeAlarm),
		in.Queue.MetricApproximateAgeOfOldestMessage(maximum), inboundAgeAlarm.Seconds(), action)
}

// checkInbound checks the inbound configuration: the operators as
// webhookAdmins (reviewer patterns naming their account), the receiver's
// reserved concurrency (0: none; unset: DefaultInboundReceiverConcurrency)
// and the event retention in days.
func (c *Config) checkInbound() []error {
	var problems []error
	if len(c.InboundOperators) > reviewer.MaxReviewers {
		problems = append(problems, fmt.Errorf("inboundOperators: %d patterns, over %d", len(c.InboundOperators), reviewer.MaxReviewers))
	}
	for _, p := range c.InboundOperators {
		if err := reviewer.CheckPattern(p); err != nil {
			problems = append(problems, fmt.Errorf("inboundOperators: %w", err))
		}
	}
	if n := c.InboundReceiverConcurrency; n != nil && (*n < 0 || *n > MaxInboundReceiverConcurrency) {
		problems = append(problems, fmt.Errorf("inboundReceiverConcurrency %d: want 0 (none) to %d", *n, MaxInboundReceiverConcurrency))
	}
	if d := c.InboundRetentionDays; d != 0 && (d < MinInboundRetentionDays || d > MaxInboundRetentionDays) {
		problems = append(problems, fmt.Errorf("inboundRetentionDays %d: want %d..%d (0: %d)", d, MinInboundRetentionDays, MaxInboundRetentionDays, DefaultInboundRetentionDays))
	}
	return problems
}
