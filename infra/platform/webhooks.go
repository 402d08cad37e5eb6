package platform

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsssm"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/reviewer"
	"github.com/toolgate/toolgate/shared/webhook"
)

// Outgoing webhooks (docs/webhooks.md; docs/infra.md, "Webhooks"): two
// standard queues, each with a dead-letter queue, and the two webhook
// functions around them.
//
//	Step Functions status change ─ rule (input transformer) ─┐
//	review-request, review-decision ─ event item, event id ──┤
//	tool functions ─ event item ─ relay ─────────────────────┤
//	                                                 events queue ─ webhook-delivery (fan-out)
//	                                                 deliveries queue ─ webhook-delivery (deliver, retry) ─ DLQ
//
// A message of the events queue is {"event_id"} or a transformed status
// change; webhook-delivery records the event and sends one message per
// matching subscription to the deliveries queue, where each delivery is
// retried and dead-lettered on its own.

// Queue names: toolgate-<stage>-webhook-events and
// toolgate-<stage>-webhook-deliveries, their dead-letter queues the same
// with -dlq. webhook-delivery tells the two apart by the suffix of the
// eventSourceARN's queue name.
func webhookQueueName(stage, queue string) string { return "toolgate-" + stage + "-webhook-" + queue }

// Queue settings (SQS Developer Guide, "Amazon SQS quotas";
// Lambda Developer Guide, "Using Lambda with Amazon SQS").
const (
	// webhookDLQRetention is the most SQS keeps a message: a message moved
	// to a dead-letter queue keeps its first enqueue time, so the
	// dead-letter queue must keep it longer than its source did.
	webhookDLQRetention = 14 * 24 * time.Hour
	// webhookMinRetention is the source queues' retention at least (SQS's
	// default), and the margin kept over a long schedule.
	webhookMinRetention    = 4 * 24 * time.Hour
	webhookRetentionMargin = 24 * time.Hour
	// webhookEventsMaxReceives is how often the fan-out of one event is
	// tried before its message goes to the events dead-letter queue.
	webhookEventsMaxReceives = 5
	// webhookBatchSize is each event source mapping's batch: the
	// function delivers a batch concurrently, reporting each failed item.
	webhookBatchSize = 10
	// The event source mappings' maximum concurrency (Lambda's
	// ScalingConfig, at least 2), which with the relay's one invocation
	// stays within webhook-delivery's reserved concurrency (cdk.json: 12):
	// a throttled batch goes back to its queue and its receive counts as
	// an attempt, so the mappings must never outgrow the reservation.
	webhookEventsConcurrency     = 2
	webhookDeliveriesConcurrency = 8
	// webhookEventsAgeAlarm is the age of the events queue's oldest
	// message that raises its alarm: fan-out takes seconds, so a quarter
	// of an hour means the function is not consuming.
	webhookEventsAgeAlarm = 15 * time.Minute
	// webhookRelayRate is how often the relay runs: an event left unsent
	// by a crashed producer goes out within about a minute.
	webhookRelayRate = time.Minute
)

// scheduleText is s as webhook.ParseSchedule reads it, each delay in
// its shortest form ("5m", not "5m0s"): TOOLGATE_WEBHOOK_SCHEDULE when
// the configuration sets none.
func scheduleText(s webhook.Schedule) string {
	parts := make([]string, len(s))
	for i, d := range s {
		t := d.String()
		if strings.HasSuffix(t, "m0s") {
			t = strings.TrimSuffix(t, "0s")
		}
		if strings.HasSuffix(t, "h0m") {
			t = strings.TrimSuffix(t, "0m")
		}
		parts[i] = t
	}
	return strings.Join(parts, ",")
}

// webhookVisibility is both queues' visibility timeout: six times the
// function's timeout, as Lambda's guide asks of a queue a function
// consumes, so that a batch is never visible again while it still runs.
// A failed delivery's own delay replaces it (ChangeMessageVisibility).
func webhookVisibility(functionTimeoutSeconds int) time.Duration {
	return 6 * time.Duration(functionTimeoutSeconds) * time.Second
}

// webhookRetention is the deliveries queue's retention: the schedule's
// whole span and a day, at least webhookMinRetention, at most
// webhookDLQRetention (20 delays of 12 h are 10 days).
func webhookRetention(s webhook.Schedule) time.Duration {
	return min(webhookDLQRetention, max(webhookMinRetention, s.Total()+webhookRetentionMargin))
}

// webhookDeliveriesAgeAlarm is the age of the deliveries queue's oldest
// message that raises its alarm: past the schedule's whole span and a
// quarter of an hour, a delivery should have succeeded or moved to the
// dead-letter queue.
func webhookDeliveriesAgeAlarm(s webhook.Schedule) time.Duration {
	return s.Total() + webhookEventsAgeAlarm
}

// stepFunctionsStatusChange is the detail-type of Step Functions'
// execution status-change events (Step Functions Developer Guide,
// "Automating Step Functions event delivery with EventBridge").
const stepFunctionsStatusChange = "Step Functions Execution Status Change"

// runStatuses are the statuses that make run.* events: run.started,
// run.succeeded, run.failed, run.timed_out, run.aborted. PENDING_REDRIVE
// makes none.
var runStatuses = []string{"RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"}

// runEventFields are the only fields of a status-change event the rule
// passes on, each under its snake_case name: the raw event's detail also
// holds the execution's input, output, error and cause, which no
// subscriber may receive (docs/webhooks.md).
var runEventFields = []struct{ Detail, Message string }{
	{"executionArn", "execution_arn"},
	{"stateMachineArn", "state_machine_arn"},
	{"name", "name"},
	{"status", "status"},
	{"startDate", "start_date"},
	{"stopDate", "stop_date"},
}

// WebhooksProps configure NewWebhooks.
type WebhooksProps struct {
	Platform    *PlatformStackProps
	Functions   *Functions
	Access      *Access
	Credentials *Credentials
	// OwnURLs are this deployment's other Function URLs (review-decision,
	// publish): no webhook may be delivered to one of them.
	OwnURLs []awslambda.FunctionUrl
}

// Webhooks is the webhooks' queues, their dead-letter queues, the rules
// and the admin function's URL.
type Webhooks struct {
	constructs.Construct
	Events, Deliveries       awssqs.Queue
	EventsDLQ, DeliveriesDLQ awssqs.Queue
	// StatusChanges forwards Step Functions status changes to Events;
	// Relay runs webhook-delivery's relay every minute.
	StatusChanges, Relay awsevents.Rule
	// URL is the webhooks function's IAM-authorised Function URL
	// (logical ID WebhooksUrl).
	URL awslambda.FunctionUrl
}

// NewWebhooks defines the queues (newWebhookQueue), the status-change
// rule with its input transformer, the relay's schedule, webhook-delivery's
// event source mappings, the webhooks function's URL with its parameter
// and the Operator's grant to it, both functions' queue statements and
// environment, the review functions' SendMessage to the events queue
// (grantWebhookProducers), and the queues' alarms.
func NewWebhooks(scope constructs.Construct, id string, props *WebhooksProps) *Webhooks {
	c := newConcern(scope, id)
	p := props.Platform
	schedule, err := webhook.ParseSchedule(p.WebhookSchedule)
	if err != nil {
		panic(fmt.Sprintf("PlatformStackProps.WebhookSchedule: %v", err)) // NewPlatformStack checked it
	}
	delivery := props.Functions.ByName[fnWebhookDelivery]
	admin := props.Functions.ByName[fnWebhooks]
	visibility := webhookVisibility(delivery.Settings.TimeoutSeconds)

	w := &Webhooks{Construct: c}
	w.EventsDLQ = newWebhookQueue(c, "WebhookEventsDLQ", webhookQueueName(p.Stage, "events-dlq"), webhookDLQRetention, visibility, nil)
	w.Events = newWebhookQueue(c, "WebhookEventsQueue", webhookQueueName(p.Stage, "events"), webhookMinRetention, visibility,
		&awssqs.DeadLetterQueue{Queue: w.EventsDLQ, MaxReceiveCount: jsii.Number(webhookEventsMaxReceives)})
	w.DeliveriesDLQ = newWebhookQueue(c, "WebhookDeliveriesDLQ", webhookQueueName(p.Stage, "deliveries-dlq"), webhookDLQRetention, visibility, nil)
	// Each receive is one attempt: the last failed one moves the message.
	w.Deliveries = newWebhookQueue(c, "WebhookDeliveriesQueue", webhookQueueName(p.Stage, "deliveries"), webhookRetention(schedule), visibility,
		&awssqs.DeadLetterQueue{Queue: w.DeliveriesDLQ, MaxReceiveCount: jsii.Number(schedule.Attempts())})

	w.StatusChanges = newStatusChangeRule(c, p.Stage, w.Events, w.EventsDLQ)
	w.Relay = awsevents.NewRule(c, jsii.String("WebhookRelaySchedule"), &awsevents.RuleProps{
		Description: jsii.String("toolgate " + p.Stage + ": runs webhook-delivery's relay, which sends events left unsent"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Seconds(jsii.Number(webhookRelayRate.Seconds()))),
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(delivery.Function, &awseventstargets.LambdaFunctionProps{
			// A run that failed leaves its events unsent: the next minute's
			// run sends them, so a failed invocation is not retried.
			RetryAttempts: jsii.Number(0),
			MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(webhookRelayRate.Seconds())),
		})},
	})

	for _, q := range []struct {
		id          string
		queue       awssqs.Queue
		concurrency int
	}{{"WebhookEventsMapping", w.Events, webhookEventsConcurrency}, {"WebhookDeliveriesMapping", w.Deliveries, webhookDeliveriesConcurrency}} {
		delivery.Function.AddEventSourceMapping(jsii.String(q.id), &awslambda.EventSourceMappingOptions{
			EventSourceArn:          q.queue.QueueArn(),
			BatchSize:               jsii.Number(webhookBatchSize),
			ReportBatchItemFailures: jsii.Bool(true),
			MaxConcurrency:          jsii.Number(q.concurrency),
		})
	}
	grantWebhookQueues(w, delivery, admin)
	grantWebhookProducers(w, props.Functions.ByName[fnReviewRequest], props.Functions.ByName[fnReviewDecision])
	// Only the producers may send: webhook-delivery trusts what the queues
	// hold (docs/webhooks.md, "Who may send to the queues").
	restrictWebhookSenders(w.Events, true, delivery, props.Functions.ByName[fnReviewRequest], props.Functions.ByName[fnReviewDecision], admin)
	restrictWebhookSenders(w.Deliveries, false, delivery, admin)
	// The status-change rule's dead-letter queue is the events one; SQS
	// moves the deliveries queue's messages itself.
	restrictWebhookSenders(w.EventsDLQ, true)
	restrictWebhookSenders(w.DeliveriesDLQ, false)

	w.URL = admin.Function.AddFunctionUrl(&awslambda.FunctionUrlOptions{AuthType: awslambda.FunctionUrlAuthType_AWS_IAM})
	overrideLogicalID(w.URL, "WebhooksUrl")
	awsssm.NewStringParameter(c, jsii.String("WebhooksUrlParameter"), &awsssm.StringParameterProps{
		ParameterName: jsii.String(webhooksURLParam(p.Stage)),
		StringValue:   w.URL.Url(),
		Description:   jsii.String("URL of the webhooks function (IAM-authorised): toolgate webhooks --url"),
	})
	grantWebhooksURL(props.Access, admin, p.Stage)

	delivery.Function.AddEnvironment(jsii.String(envWebhookEvents), w.Events.QueueUrl(), nil)
	delivery.Function.AddEnvironment(jsii.String(envWebhookDeliveries), w.Deliveries.QueueUrl(), nil)
	// Its own URL would make a cycle (the URL names the function): the
	// webhooks function refuses the others at subscribe, and
	// webhook-delivery all three at every delivery.
	delivery.Function.AddEnvironment(jsii.String(envWebhookOwnHosts), functionURLHosts(append(props.OwnURLs, w.URL)), nil)
	admin.Function.AddEnvironment(jsii.String(envWebhookOwnHosts), functionURLHosts(props.OwnURLs), nil)
	admin.Function.AddEnvironment(jsii.String(envWebhookDeliveries), w.Deliveries.QueueUrl(), nil)
	admin.Function.AddEnvironment(jsii.String(envWebhookDLQ), w.DeliveriesDLQ.QueueUrl(), nil)
	admin.Function.AddEnvironment(jsii.String(envWebhookEvents), w.Events.QueueUrl(), nil)
	admin.Function.AddEnvironment(jsii.String(envWebhookEventsDLQ), w.EventsDLQ.QueueUrl(), nil)

	newWebhookAlarms(c, p, w, schedule)
	return w
}

// newWebhookQueue defines a standard queue named name: SSE with
// SQS-managed keys (EventBridge sends to it without a key policy of
// ours), TLS only (a queue policy denying aws:SecureTransport false),
// retained with the stack (its messages are undelivered events).
func newWebhookQueue(scope constructs.Construct, id, name string, retention, visibility time.Duration, dlq *awssqs.DeadLetterQueue) awssqs.Queue {
	q := awssqs.NewQueue(scope, jsii.String(id), &awssqs.QueueProps{
		QueueName:         jsii.String(name),
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		RetentionPeriod:   awscdk.Duration_Seconds(jsii.Number(retention.Seconds())),
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(visibility.Seconds())),
		DeadLetterQueue:   dlq,
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
	})
	return q
}

// newStatusChangeRule forwards the status changes of this stage's
// executions (state machines toolgate-<stage>_*) to the events queue,
// through an input transformer that passes runEventFields only. An event
// EventBridge cannot send after its retries goes to the events
// dead-letter queue.
func newStatusChangeRule(scope constructs.Construct, stage string, events, dlq awssqs.IQueue) awsevents.Rule {
	paths := map[string]*string{}
	fields := make([]string, 0, len(runEventFields)+1)
	fields = append(fields, `"source":"aws.states"`)
	for _, f := range runEventFields {
		paths[f.Detail] = jsii.String("$.detail." + f.Detail)
		// Unquoted: a string arrives as a JSON string, a date as its
		// number (milliseconds since the epoch), a running execution's
		// stopDate as null.
		fields = append(fields, fmt.Sprintf(`"%s":<%s>`, f.Message, f.Detail))
	}
	statusTarget := awseventstargets.NewSqsQueue(events, &awseventstargets.SqsQueueProps{
		DeadLetterQueue: dlq,
		RetryAttempts:   jsii.Number(185), // EventBridge's default, written out
		MaxEventAge:     awscdk.Duration_Hours(jsii.Number(24)),
	})
	rule := awsevents.NewRule(scope, jsii.String("WebhookStatusChangeRule"), &awsevents.RuleProps{
		Description: jsii.String("toolgate " + stage + ": run.* webhook events from this stage's executions' status changes"),
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings("aws.states"),
			DetailType: jsii.Strings(stepFunctionsStatusChange),
			Detail: &map[string]any{
				"stateMachineArn": []any{map[string]any{"prefix": sub(strings.TrimSuffix(stateMachinesARN(stage), "*"))}},
				"status":          runStatuses,
			},
		},
		Targets: &[]awsevents.IRuleTarget{statusTarget},
	})
	// The transformer is written out rather than built from
	// RuleTargetInput.fromObject, so that the template says exactly what
	// passes (TestWebhookStatusChangeTransformer).
	cfn := rule.Node().DefaultChild().(awsevents.CfnRule)
	cfn.AddPropertyOverride(jsii.String("Targets.0.InputTransformer"), map[string]any{
		"InputPathsMap": paths,
		"InputTemplate": "{" + strings.Join(fields, ",") + "}",
	})
	return rule
}

// grantWebhookQueues gives webhook-delivery what its event source
// mappings, its fan-out, its retries and its relay ask of the queues, and
// the webhooks function what dlq list and redrive ask; SQS-managed
// encryption needs no KMS statement.
func grantWebhookQueues(w *Webhooks, delivery, admin *platformFunction) {
	queues := []*string{w.Events.QueueArn(), w.Deliveries.QueueArn()}
	delivery.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String("ConsumeWebhookQueues"),
		// The event source mappings' three; ChangeMessageVisibility sets a
		// failed delivery's delay from the schedule.
		Actions:   jsii.Strings("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"),
		Resources: &queues,
	}))
	delivery.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String("SendWebhookMessages"),
		// The relay's events, the fan-out's deliveries.
		Actions:   jsii.Strings("sqs:SendMessage"),
		Resources: &queues,
	}))
	// dlq list and redrive: read both dead-letter queues (a listing
	// releases what it read with ChangeMessageVisibility) and send back
	// to their queues.
	admin.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("RedriveWebhookDeliveries"),
		Actions:   jsii.Strings("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"),
		Resources: &[]*string{w.DeliveriesDLQ.QueueArn(), w.EventsDLQ.QueueArn()},
	}))
	admin.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ResendWebhookDeliveries"),
		Actions:   jsii.Strings("sqs:SendMessage"),
		Resources: &[]*string{w.Deliveries.QueueArn(), w.Events.QueueArn()},
	}))
}

// grantWebhookProducers lets the functions that hand their events to
// the events queue as they record them (review-request's
// review.requested, review-decision's review.decided) send to that
// queue, and no other, and tells them its URL (EnvEventsQueue of
// shared/webhookapi). The tool functions get neither: they record their
// events only and the relay sends them (docs/webhooks.md).
func grantWebhookProducers(w *Webhooks, producers ...*platformFunction) {
	for _, f := range producers {
		f.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("SendWebhookEvents"),
			Actions:   jsii.Strings("sqs:SendMessage"),
			Resources: &[]*string{w.Events.QueueArn()},
		}))
		f.Function.AddEnvironment(jsii.String(envWebhookEvents), w.Events.QueueUrl(), nil)
	}
}

// restrictWebhookSenders adds to q's queue policy a statement denying
// sqs:SendMessage to every principal but the roles of senders (matched on
// aws:PrincipalArn, the role's ARN whatever the session) and, when
// statusChanges is set, the EventBridge service (aws:PrincipalServiceName
// events.amazonaws.com), whose rule puts Step Functions status changes on
// the events queue. An identity policy of the account granting
// sqs:SendMessage on "*" then still cannot put a forged event or delivery
// on the queue, since an explicit deny wins (IAM User Guide, "Policy
// evaluation logic"). Both keys are in one operator, so both must differ
// for the deny to apply. With no senders and no status changes (the
// deliveries dead-letter queue, which only SQS's own redrive fills, and
// that move is no principal's SendMessage) the deny has no condition.
// The dead-letter queues are restricted too: dlq redrive sends their
// messages on to the queues above as their producer, so a message put on
// a dead-letter queue by another principal would reach the delivery
// function as trusted (docs/webhooks.md, "Who may send to the queues").
func restrictWebhookSenders(q awssqs.Queue, statusChanges bool, senders ...*platformFunction) {
	arns := make([]*string, 0, len(senders))
	for _, f := range senders {
		arns = append(arns, f.Role.RoleArn())
	}
	notEquals := map[string]any{}
	if len(arns) > 0 {
		notEquals["aws:PrincipalArn"] = arns
	}
	if statusChanges {
		notEquals["aws:PrincipalServiceName"] = "events.amazonaws.com"
	}
	var conditions *map[string]any
	if len(notEquals) > 0 {
		conditions = &map[string]any{"StringNotEquals": notEquals}
	}
	q.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("OnlyProducersSend"),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings("sqs:SendMessage"),
		Resources:  &[]*string{q.QueueArn()},
		Conditions: conditions,
	}))
}

// grantWebhooksURL lets the Operator policy reach the webhooks function
// through its URL only (as the Publisher the publish function's) and read
// its parameter; the function's own TOOLGATE_WEBHOOK_ADMINS decides who
// may act.
func grantWebhooksURL(a *Access, admin *platformFunction, stage string) {
	a.Operator.AddStatements(append(invokeThroughURLOnly("Webhooks", admin),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("WebhooksParameter"),
			Actions:   jsii.Strings("ssm:GetParameter"),
			Resources: &[]*string{parameterARN(webhooksURLParam(stage))},
		}))...)
}

// invokeThroughURLOnly are the statements that let a policy invoke fn
// through its IAM-authorised Function URL and no other way:
// lambda:InvokeFunctionUrl with the AWS_IAM auth type, and
// lambda:InvokeFunction only with lambda:InvokedViaFunctionUrl (AWS
// Lambda Developer Guide, "Control access to function URLs"; docs/infra.md).
// Their Sids are prefix + "FunctionURL" and prefix + "Function".
func invokeThroughURLOnly(prefix string, fn *platformFunction) []awsiam.PolicyStatement {
	return []awsiam.PolicyStatement{
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String(prefix + "FunctionURL"),
			Actions:    jsii.Strings("lambda:InvokeFunctionUrl"),
			Resources:  &[]*string{fn.Function.FunctionArn()},
			Conditions: &map[string]any{"StringEquals": map[string]any{"lambda:FunctionUrlAuthType": "AWS_IAM"}},
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String(prefix + "Function"),
			Actions:    jsii.Strings("lambda:InvokeFunction"),
			Resources:  &[]*string{fn.Function.FunctionArn()},
			Conditions: &map[string]any{"Bool": map[string]any{"lambda:InvokedViaFunctionUrl": "true"}},
		}),
	}
}

// webhooksURLParam names the webhooks function's URL parameter,
// /toolgate/<stage>/webhooks/url.
func webhooksURLParam(stage string) string { return "/toolgate/" + stage + "/webhooks/url" }

// functionURLHosts is TOOLGATE_WEBHOOK_OWN_HOSTS: the hosts of urls
// (https://<id>.lambda-url.<region>.on.aws/), comma-separated.
func functionURLHosts(urls []awslambda.FunctionUrl) *string {
	hosts := make([]*string, len(urls))
	for i, u := range urls {
		hosts[i] = awscdk.Fn_Select(jsii.Number(2), awscdk.Fn_Split(jsii.String("/"), u.Url(), nil))
	}
	return awscdk.Fn_Join(jsii.String(","), &hosts)
}

// newWebhookAlarms defines the queues' alarms: a message in either
// dead-letter queue (an event whose fan-out failed, a delivery whose every
// attempt failed: dlq list shows it, dlq redrive sends it again), and the
// age of each source queue's oldest message past what its processing
// takes.
func newWebhookAlarms(scope constructs.Construct, p *PlatformStackProps, w *Webhooks, s webhook.Schedule) {
	var action awscloudwatch.IAlarmAction
	if p.AlarmTopicARN != "" {
		action = awscloudwatchactions.NewSnsAction(awssns.Topic_FromTopicArn(scope, jsii.String("WebhookAlarmTopic"), jsii.String(p.AlarmTopicARN)))
	}
	maximum := &awscloudwatch.MetricOptions{Period: alarmPeriod(), Statistic: jsii.String("Maximum")}
	alarm := func(id, name, description string, metric awscloudwatch.IMetric, threshold float64) {
		newAlarm(scope, p.Stage, id, name, description, metric, threshold, action)
	}
	alarm("WebhookEventsDLQAlarm", "webhook-events-dlq",
		"toolgate: a webhook event's fan-out failed on every receive and moved to the events dead-letter queue",
		w.EventsDLQ.MetricApproximateNumberOfMessagesVisible(maximum), 1)
	alarm("WebhookDeliveriesDLQAlarm", "webhook-deliveries-dlq",
		"toolgate: a webhook delivery failed every attempt of its schedule (toolgate webhooks dlq list, dlq redrive)",
		w.DeliveriesDLQ.MetricApproximateNumberOfMessagesVisible(maximum), 1)
	alarm("WebhookEventsAgeAlarm", "webhook-events-age",
		fmt.Sprintf("toolgate: a webhook event waited %s on the events queue: webhook-delivery is not consuming it", webhookEventsAgeAlarm),
		w.Events.MetricApproximateAgeOfOldestMessage(maximum), webhookEventsAgeAlarm.Seconds())
	age := webhookDeliveriesAgeAlarm(s)
	alarm("WebhookDeliveriesAgeAlarm", "webhook-deliveries-age",
		fmt.Sprintf("toolgate: a webhook delivery is still queued %s after it was sent, past its whole retry schedule: webhook-delivery is not consuming it", age),
		w.Deliveries.MetricApproximateAgeOfOldestMessage(maximum), age.Seconds())
}

// checkWebhooks checks the webhook configuration with the functions' own
// parsers: admins as credentialAdmins (reviewer patterns naming their
// account; the function refuses another account's at cold start), the
// hosts as httpAllow's (shared/hostlist), the schedule with
// webhook.ParseSchedule.
func (c *Config) checkWebhooks() []error {
	var problems []error
	if len(c.WebhookAdmins) > reviewer.MaxReviewers {
		problems = append(problems, fmt.Errorf("webhookAdmins: %d patterns, over %d", len(c.WebhookAdmins), reviewer.MaxReviewers))
	}
	for _, p := range c.WebhookAdmins {
		if err := reviewer.CheckPattern(p); err != nil {
			problems = append(problems, fmt.Errorf("webhookAdmins: %w", err))
		}
	}
	if _, err := hostlist.ParseList(c.WebhookAllow); err != nil {
		problems = append(problems, fmt.Errorf("webhookAllow: %w", err))
	}
	if c.WebhookSchedule != "" {
		if _, err := webhook.ParseSchedule(c.WebhookSchedule); err != nil {
			problems = append(problems, fmt.Errorf("webhookSchedule: %w", err))
		}
	}
	return problems
}
