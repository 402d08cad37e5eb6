package platform

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/toolgate/toolgate/shared/enduser"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/webhook"
)

// SenderProps say whom send-email sends as.
type SenderProps struct {
	// Address is the From address (TOOLGATE_SENDER), one bare addr-spec.
	Address string
	// Identity is the SES identity authorising Address: the address itself,
	// its domain or a parent domain.
	Identity string
	// IdentityARN, when set, is used as is (an identity of another account
	// that authorises this one to send); Identity and CreateIdentity are
	// then ignored.
	IdentityARN string
	// CreateIdentity creates Identity in SES (it still needs verifying:
	// DNS records for a domain, a click for an address). False references
	// an existing identity.
	CreateIdentity bool
}

// PlatformStackProps configure NewPlatformStack.
type PlatformStackProps struct {
	awscdk.StackProps
	// Stage names the platform: /toolgate/<stage>/..., toolgate-<stage>-*,
	// and its state machines toolgate-<stage>_* (deployment.CheckStage).
	Stage string
	// TableName is the ledger table's name (LedgerStackProps.TableName).
	TableName string
	// AssetsDir holds <function>/bootstrap for every function
	// (bin/functions, which make build fills).
	AssetsDir string
	// Functions override per function memory, timeout and reserved
	// concurrency, by function name.
	Functions map[string]FunctionSettings
	// Sender is send-email's sender and its SES identity.
	Sender SenderProps
	// RecipientAllow is send-email's recipient allow-list (full addresses or
	// @domain); at least one entry.
	RecipientAllow []string
	// ReviewNotices is the review notices' allow-list (entries as
	// RecipientAllow's; TOOLGATE_REVIEW_NOTICES on review-request, with
	// Sender's address as TOOLGATE_NOTICE_SENDER, and the ses:SendEmail
	// statement sendReviewNotices); empty, the default: no notice, no
	// variable and no SES permission.
	ReviewNotices []string
	// FetchAllow is structured-data-fetch's host allow-list; empty allows
	// no fetch at all.
	FetchAllow []string
	// HTTPAllow is the http function's host allow-list
	// (TOOLGATE_HTTP_ALLOW on http and on the publish function, which
	// refuses a toolset whose http_hosts it does not cover): entries as
	// FetchAllow's, and apart from it. Empty, the default, allows no http
	// at all.
	HTTPAllow []string
	// HTTPMaxRequestBytes bounds an http request body's encoded bytes
	// (TOOLGATE_HTTP_MAX_REQUEST_BYTES), 1..MaxHTTPRequestBytes; zero sets
	// no variable: the tool's default, 64 KiB.
	HTTPMaxRequestBytes int
	// MCPAllow is the MCP servers' host allow-list (TOOLGATE_MCP_ALLOW on
	// mcp-call and on the publish function, whose registration lists
	// servers): entries as FetchAllow's; a server's URL must be on it and
	// on the toolset's. Empty, the default, reaches no MCP server.
	MCPAllow []string
	// MCPSchemaTTLSeconds is how long mcp-call keeps a server's tools/list
	// answer per warm container before it lists again to compare a tool
	// with its pin (TOOLGATE_MCP_SCHEMA_TTL_SECONDS), in seconds; zero
	// means DefaultMCPSchemaTTLSeconds.
	MCPSchemaTTLSeconds int
	// SessionRoles are the IAM role names whose session names identify a
	// person (IAM Identity Center roles, or roles whose trust policy pins
	// sts:RoleSessionName), for every function's caller proofs
	// (TOOLGATE_SESSION_ROLES, shared/caller), to which every function's
	// variable adds the inbound-start role (inboundRoleName), whose
	// session names say which source or schedule started a run.
	SessionRoles []string
	// ReviewerAccounts are other AWS accounts of the organisation whose
	// principals may review: TOOLGATE_REVIEWER_ACCOUNTS on review-decision,
	// whose verifier admits them besides the stack's own account, and on
	// the publish function, which refuses reviewer patterns naming any
	// other account; and review-decision's resource policy, which lets
	// exactly these accounts invoke its Function URL. Empty, the default,
	// sets no variable and no permission.
	ReviewerAccounts []string
	// DirectReviewers are the direct lane's reviewers: tool name to IAM
	// principal ARN patterns (TOOLGATE_DIRECT_REVIEWERS on review-request).
	// A gated tool without patterns cannot be reviewed on the direct lane;
	// empty sets no variable, closing the direct lane to every gated tool.
	DirectReviewers map[string][]string
	// DirectReviewMaxSeconds caps a direct-lane review's timeout, in seconds
	// (TOOLGATE_DIRECT_REVIEW_MAX_SECONDS on review-request); zero means
	// 3600 (review.DefaultDirectMaxTimeout).
	DirectReviewMaxSeconds int
	// CredentialAdmins are who may set toolset-scope credentials and any
	// end user's, and allow toolset ids for them: IAM principal ARN
	// patterns of the stack's account (TOOLGATE_CREDENTIAL_ADMINS on the
	// publish function, a JSON list). Empty, the default: nobody.
	CredentialAdmins []string
	// EndUserMapping is the end-user mapping (shared/enduser Entry):
	// TOOLGATE_END_USER_MAPPING on review-request and publish, which also
	// get the end-user key's parameter name (TOOLGATE_END_USER_KEY_PARAM)
	// and may read it (endUserEnv, readEndUserKey). Empty sets no mapping:
	// no run acts for an end user.
	EndUserMapping []enduser.Entry
	// LogRetention applies to every log group; zero means three months.
	LogRetention awslogs.RetentionDays
	// LogRemovalPolicy applies to every log group; zero means retain.
	LogRemovalPolicy awscdk.RemovalPolicy
	// AlarmTopicARN is the SNS topic the alarms notify; empty defines the
	// alarms without actions.
	AlarmTopicARN string
	// SAMLocal declares, empty, the variables sam local invoke --env-vars
	// sets to reach local stand-ins (samLocalVariables). For local use only:
	// synthesize it under its own stage.
	SAMLocal bool
	// IndexLeadingKeys adds dynamodb:LeadingKeys "<Index.PKPrefix>*" to
	// every statement allowing a Query of an index (review-decision's
	// ListReviews, the Operator's LedgerIndexReads; accessConditions).
	// False, the default, leaves it out: whether IAM evaluates the key
	// against an index's partition key is not confirmed (IAM documents it
	// as the table's partition key), and were it the table's, the
	// condition would deny every listing (docs/infra.md, "Ledger items,
	// per key prefix").
	IndexLeadingKeys bool
	// ErrorAlarmThreshold is how many function errors in 5 minutes raise a
	// function's errors alarm; zero means 5. Tool error codes (a refused
	// recipient, a 404) are function errors too.
	ErrorAlarmThreshold int
	// Tracing is every function's TOOLGATE_TRACING: "off", or "otlp:"
	// and the base URL of an OTLP/HTTP receiver the function can reach,
	// such as the AWS Distro for OpenTelemetry collector layer's
	// http://localhost:4318 (functionconfig.ParseTracing; docs/infra.md,
	// "Tracing"). Empty means "off". X-Ray active tracing of the functions
	// and of the Solutions' state machines is on either way. A value
	// ParseTracing refuses panics: Config.check refuses it first.
	Tracing string
	// ParkDeciders and ParkOperators are who may decide parked calls
	// besides a run's starter, and who may cancel them (TOOLGATE_PARK_DECIDERS
	// and TOOLGATE_PARK_OPERATORS on review-decision, JSON lists of IAM
	// principal ARN patterns of the stack's account; docs/parking.md,
	// "Deciding"). Empty: nobody but the starter.
	ParkDeciders, ParkOperators []string
	// ForkOperators are who may fork any run of the stage besides its
	// starter (TOOLGATE_FORK_OPERATORS on review-decision; docs/fork.md).
	// Empty: nobody but the starter.
	ForkOperators []string
	// Reconcilers are who may reconcile a call whose outcome is unknown
	// (TOOLGATE_RECONCILERS on review-decision, a JSON list as
	// ParkOperators; docs/fork.md, "Reconciling"). Empty: the park
	// operators.
	Reconcilers []string
	// WebhookAdmins are who may subscribe webhooks, manage them and redrive
	// their dead-letter queue: IAM principal ARN patterns of the stack's
	// account, as CredentialAdmins (TOOLGATE_WEBHOOK_ADMINS on the webhooks
	// function, a JSON list). Empty: nobody.
	WebhookAdmins []string
	// WebhookAllow is the webhook hosts' allow-list (TOOLGATE_WEBHOOK_ALLOW
	// on both webhook functions), entries as HTTPAllow's. Empty: no
	// subscription is accepted and nothing is delivered.
	WebhookAllow []string
	// WebhookSchedule is the delivery retry schedule
	// (TOOLGATE_WEBHOOK_SCHEDULE, webhook.ParseSchedule): "" means
	// webhook.DefaultSchedule. The deliveries queue's maxReceiveCount is
	// its attempts, and its retention outlasts it. A value ParseSchedule
	// refuses panics: Config.check refuses it first.
	WebhookSchedule string
	// InboundOperators are who may manage inbound sources and schedules
	// and redrive the inbound dead-letter queue: IAM principal ARN
	// patterns of the stack's account, as WebhookAdmins
	// (TOOLGATE_INBOUND_OPERATORS on the sources function, a JSON list).
	// Empty: nobody.
	InboundOperators []string
	// InboundRetentionDays is how long an inbound event item is kept, in
	// days, MinInboundRetentionDays..MaxInboundRetentionDays
	// (TOOLGATE_INBOUND_RETENTION_DAYS on webhook-receiver and
	// inbound-start); zero means DefaultInboundRetentionDays. The
	// receiver's reserved concurrency is its Functions setting
	// (Config.InboundReceiverConcurrency).
	InboundRetentionDays int
}

// Bounds of PlatformStackProps.MCPSchemaTTLSeconds: a few seconds, so
// that a tool changed on its server is called at most that long after the
// change (docs/tools.md, "MCP tools").
const (
	DefaultMCPSchemaTTLSeconds = 5
	MaxMCPSchemaTTLSeconds     = 60
)

// PlatformStack is everything but the table: the functions and the
// aliases of their lanes, the review decision and publish URLs, what
// publishing, reviewing and operating need, the parameters the publish
// function and the CLI read, and the alarms.
type PlatformStack struct {
	awscdk.Stack
	Functions   map[string]*platformFunction
	Access      *Access
	DecisionURL awslambda.FunctionUrl
	PublishURL  awslambda.FunctionUrl
	// LedgerSecrets provisions the tool functions' ledger secrets
	// (secrets.go).
	LedgerSecrets *LedgerSecrets
	// Webhooks is the webhooks' queues, rules and admin URL (webhooks.go).
	Webhooks *Webhooks
	// Inbound is the inbound queue, the inbound functions' URLs, the
	// inbound-start role and the schedules' group and role (inbound.go).
	Inbound *Inbound
}

// NewPlatformStack defines the platform around the ledger table named
// props.TableName, which NewLedgerStack defines.
func NewPlatformStack(scope constructs.Construct, id string, props *PlatformStackProps) *PlatformStack {
	p := *props
	if p.LogRetention == "" {
		p.LogRetention = awslogs.RetentionDays_THREE_MONTHS
	}
	if p.LogRemovalPolicy == "" {
		p.LogRemovalPolicy = awscdk.RemovalPolicy_RETAIN
	}
	if p.ErrorAlarmThreshold == 0 {
		p.ErrorAlarmThreshold = 5
	}
	if p.DirectReviewMaxSeconds == 0 {
		p.DirectReviewMaxSeconds = review.DefaultDirectMaxTimeout
	}
	if p.MCPSchemaTTLSeconds == 0 {
		p.MCPSchemaTTLSeconds = DefaultMCPSchemaTTLSeconds
	}
	if p.Tracing == "" {
		p.Tracing = functionconfig.TracingOff
	}
	if _, err := functionconfig.ParseTracing(p.Tracing); err != nil {
		panic(fmt.Sprintf("PlatformStackProps.Tracing: %v", err))
	}
	if p.InboundRetentionDays == 0 {
		p.InboundRetentionDays = DefaultInboundRetentionDays
	}
	if p.WebhookSchedule == "" {
		p.WebhookSchedule = scheduleText(webhook.DefaultSchedule)
	}
	if _, err := webhook.ParseSchedule(p.WebhookSchedule); err != nil {
		panic(fmt.Sprintf("PlatformStackProps.WebhookSchedule: %v", err))
	}
	stack := newConcernStack(scope, id, &p.StackProps)
	// One construct per concern, in this order: each takes what the ones
	// before it defined. Their ids add nothing to logical IDs
	// (concernStack).
	fns := NewFunctions(stack, "Functions", &FunctionsProps{Platform: &p})
	ls := NewLedgerSecrets(stack, "Secrets", &LedgerSecretsProps{Platform: &p, Functions: fns})
	reviews := NewReviews(stack, "Reviews", &ReviewsProps{Platform: &p, Functions: fns})
	a := NewAccess(stack, "Access", &AccessProps{Platform: &p, Functions: fns})
	publishing := NewPublishing(stack, "Publishing", &PublishingProps{Platform: &p, Functions: fns, Access: a})
	creds := NewCredentials(stack, "Credentials", &CredentialsProps{Platform: &p, Functions: fns})
	url, publishURL := reviews.DecisionURL, publishing.URL
	webhooks := NewWebhooks(stack, "Webhooks", &WebhooksProps{Platform: &p, Functions: fns, Access: a, Credentials: creds,
		OwnURLs: []awslambda.FunctionUrl{url, publishURL}})
	inbound := NewInbound(stack, "Inbound", &InboundProps{Platform: &p, Functions: fns, Access: a, Credentials: creds, LedgerSecrets: ls})
	NewParameters(stack, "Parameters", &ParametersProps{Platform: &p, Functions: fns, Access: a, DecisionURL: url.Url(), PublishURL: publishURL.Url()})
	NewAlarms(stack, "Alarms", &AlarmsProps{Platform: &p, Functions: fns, Access: a})

	awscdk.NewCfnOutput(stack, jsii.String("ReviewDecisionURL"), &awscdk.CfnOutputProps{Value: url.Url()})
	awscdk.NewCfnOutput(stack, jsii.String("PublishURL"), &awscdk.CfnOutputProps{Value: publishURL.Url()})
	awscdk.NewCfnOutput(stack, jsii.String("WebhooksURL"), &awscdk.CfnOutputProps{Value: webhooks.URL.Url()})
	awscdk.NewCfnOutput(stack, jsii.String("SourcesURL"), &awscdk.CfnOutputProps{Value: inbound.SourcesURL.Url()})
	awscdk.NewCfnOutput(stack, jsii.String("InboundURL"), &awscdk.CfnOutputProps{Value: inbound.ReceiverURL.Url()})
	awscdk.NewCfnOutput(stack, jsii.String("SolutionExecutionRoleARN"), &awscdk.CfnOutputProps{Value: a.ExecutionRoleARN})
	awscdk.NewCfnOutput(stack, jsii.String("SolutionExecutionLogGroup"), &awscdk.CfnOutputProps{Value: a.ExecutionLogs.LogGroupName()})
	for _, s := range []struct{ id, arn string }{
		{"PublisherPolicyARN", *a.Publisher.ManagedPolicyArn()},
		{"ReviewerPolicyARN", *a.Reviewer.ManagedPolicyArn()},
		{"OperatorPolicyARN", *a.Operator.ManagedPolicyArn()},
	} {
		awscdk.NewCfnOutput(stack, jsii.String(s.id), &awscdk.CfnOutputProps{Value: jsii.String(s.arn)})
	}
	ps := &PlatformStack{Stack: stack, Functions: fns.ByName, Access: a, DecisionURL: url, PublishURL: publishURL, LedgerSecrets: ls, Webhooks: webhooks, Inbound: inbound}
	nagSuppressions(ps, p.Stage)
	return ps
}
