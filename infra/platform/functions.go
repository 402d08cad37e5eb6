package platform

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsses"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/toolgate/toolgate/infra/toolfunction"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/recipient"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/toolset"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

// Function names: functions/<name>/main.go, bin/functions/<name>/bootstrap,
// the <name> of /toolgate/<stage>/function/<name>/arn, and the deployed
// function toolgate-<stage>-<name>.
const (
	fnSendEmail = "send-email"
	fnFetch     = "structured-data-fetch"
	// fnHTTP is the http tool's function: requests with any method, so
	// its own role, aliases and allow-list (docs/tools.md, "http").
	fnHTTP           = "http"
	fnValidator      = "workflow-validator"
	fnReviewRequest  = "review-request"
	fnReviewDecision = "review-decision"
	fnPublish        = "publish"
	// fnLambdaTool is the platform tools' proxy (resolver.ProxyFunction,
	// the function a platform tool's Task invokes).
	fnLambdaTool = "lambda-tool"
	// fnMCPCall runs every MCP tool (resolver.MCPFunction, the function
	// an MCP tool's Task invokes).
	fnMCPCall = "mcp-call"
	// The webhook functions (webhooks.go): webhook-delivery fans events
	// out to subscriptions and delivers each; webhooks is the admin
	// function behind its IAM-authorised Function URL (toolgate webhooks).
	fnWebhookDelivery = "webhook-delivery"
	fnWebhooks        = "webhooks"
	// The inbound functions (inbound.go; docs/webhooks.md, "Receiving
	// events"): sources manages sources and schedules behind its
	// IAM-authorised Function URL (toolgate sources, toolgate schedules);
	// webhook-receiver verifies and records each event sent to its public
	// Function URL, and is the inbound relay; inbound-start starts the run
	// of each event the inbound queue holds.
	fnSources         = "sources"
	fnWebhookReceiver = "webhook-receiver"
	fnInboundStart    = "inbound-start"
)

// functionSpec is what the platform knows of one function: its defaults and
// exactly the ledger requests its code makes.
type functionSpec struct {
	Name        string
	LogicalID   string // the template's logical ID: sam local invoke <LogicalID>
	Description string
	// Tool functions run the governed dispatcher: their log carries the
	// "tool invocation" line, and operators may invoke them directly.
	Tool bool
	// LoadsToolsets: the function loads stored toolsets (shared/ledger
	// Toolset, the registration check on every load) and writes one
	// toolset.RefusedLogMessage line for each it refuses; the
	// toolset-refused alarm counts those lines in its log group.
	LoadsToolsets bool
	// Lanes: the function is invoked through one of two aliases, sfn (a
	// Solution's execution) and direct (a person), learns its lane from the
	// alias in the invoked ARN and refuses an invocation through none
	// (shared/lane). Functions without lanes have no alias.
	Lanes bool
	// StartLane: the function has a third alias, start (lane.Start), which
	// the Publisher policy may invoke, and no other: toolgate run records
	// a run's start through it (review-request only; docs/identity.md,
	// "Lanes"). It needs Lanes.
	StartLane bool
	// ForSolutions: the Solution execution role may invoke the function's
	// sfn alias, and /toolgate/<stage>/function/<name>/arn names that alias
	// for toolgate publish. It needs Lanes.
	ForSolutions bool
	MemoryMB     int
	// TimeoutSeconds is the function's timeout; for a tool, 0 takes its
	// catalog function_timeout_seconds, which the function's timeout must
	// not exceed: the resolver compiles the tool's Task timeout from the
	// same value (catalog.Tool.TaskTimeoutSeconds), and a Task that timed
	// out first would leave the run while the function still runs.
	TimeoutSeconds int
	// Principal is who the function is in the ledger table's declaration:
	// its role's ledger statements are table.Of(Principal)'s, the item
	// actions its code calls on the item kinds it uses, naming the
	// attributes it touches (items.go, shared/table accesses.go).
	Principal table.Principal
	// Parks: the function's calls can park (docs/parking.md), so its role
	// also gets table.ParkingToolFunctions's accesses: the read of the
	// park a call is sent again under.
	Parks bool
	// Learns: the function's tools can return results of an undeclared
	// shape, which its dispatcher learns (docs/declarations.md, "Observed
	// shapes"), so its role also gets table.LearningToolFunctions's
	// accesses: the read and the conditional update of shape items.
	Learns bool
}

// functionSpecs are the deployed functions in template order. Every one
// verifies caller proofs (shared/caller) and records each proof it accepts
// as a caller proof item: a conditional PutItem, and a GetItem of the item
// already there when the condition fails (table.Functions's accesses).
var functionSpecs = []functionSpec{
	{Name: fnSendEmail, LogicalID: "SendEmailFunction", Tool: true, LoadsToolsets: true, Lanes: true, ForSolutions: true,
		Description: "toolgate tool send-email: SES v2 SendEmail to allow-listed recipients",
		MemoryMB:    256,
		// shared/dispatch: the call's items, the toolset, approvals
		// (dynamo.Store Get and Bind), proofs on the direct lane.
		Principal: table.ToolFunctions},
	{Name: fnFetch, LogicalID: "StructuredDataFetchFunction", Tool: true, LoadsToolsets: true, Lanes: true, ForSolutions: true,
		Description: "toolgate tool structured-data-fetch: HTTP GET of allow-listed hosts",
		MemoryMB:    512,
		Principal:   table.ToolFunctions, Learns: true},
	{Name: fnHTTP, LogicalID: "HttpFunction", Tool: true, LoadsToolsets: true, Lanes: true, ForSolutions: true,
		Description: "toolgate tool http: HTTP requests to allow-listed hosts, reviewed by method",
		// As structured-data-fetch: an answer of up to 5 MB parsed into
		// JSON values. Its role is every tool function's (the dispatcher's
		// items, approvals included: POST, PUT, PATCH and DELETE are
		// reviewed) and nothing else: the hosts are reached over the
		// internet, under TOOLGATE_HTTP_ALLOW. A call to a host entry
		// that declares auth can park.
		MemoryMB:  512,
		Principal: table.ToolFunctions, Parks: true, Learns: true},
	{Name: fnValidator, LogicalID: "WorkflowValidatorFunction", Tool: true, LoadsToolsets: true, Lanes: true, ForSolutions: true,
		Description: "toolgate tool workflow-validator: toolgate check of a Solution",
		MemoryMB:    512,
		Principal:   table.ToolFunctions},
	{Name: fnLambdaTool, LogicalID: "LambdaToolFunction", Tool: true, LoadsToolsets: true, Lanes: true, ForSolutions: true,
		Description: "toolgate lambda-tool: the platform tools' proxy, the governed dispatcher in front of a team's tool function",
		// A platform tool's timeout_seconds is at most 900 (Lambda's
		// maximum): the proxy waits as long as the longest.
		MemoryMB: 256, TimeoutSeconds: 900,
		// The dispatcher's items, as for every tool; its Lambda and SSM
		// statements: toolfunction.InvokeStatement, FloorsStatement,
		// ParametersStatement.
		Principal: table.ToolFunctions, Learns: true},
	{Name: fnMCPCall, LogicalID: "McpCallFunction", Tool: true, LoadsToolsets: true, Lanes: true, ForSolutions: true,
		Description: "toolgate mcp-call: the governed dispatcher for MCP tools, which checks the tool's definition on its server and sends tools/call",
		// An MCP tool's default timeout (toolset.MCPToolTimeout): the
		// pinned timeout_seconds bounds each call within it, and a pin
		// longer than the function's timeout is cut at it. 512 MB: a
		// 5 MiB answer of many small objects measured about 180 MiB of
		// peak heap, decoded by the client and again by the dispatcher.
		MemoryMB: 512, TimeoutSeconds: toolset.MCPToolTimeout,
		// The dispatcher's items, as for every tool, and nothing else: the
		// MCP servers are reached over the internet, under TOOLGATE_MCP_ALLOW.
		// Its calls can park.
		Principal: table.ToolFunctions, Parks: true, Learns: true},
	{Name: fnReviewRequest, LogicalID: "ReviewRequestFunction", LoadsToolsets: true, Lanes: true, StartLane: true, ForSolutions: true,
		Description: "toolgate review-request: stores a pending review with its task token",
		MemoryMB:    256, TimeoutSeconds: 15,
		// The run's toolset GetItem; the review's conditional PutItem, and a
		// GetItem of the one already there; the execution's start; proofs
		// (start Tasks, the direct lane).
		Principal: table.ReviewRequest},
	{Name: fnReviewDecision, LogicalID: "ReviewDecisionFunction",
		Description: "toolgate review-decision: records a person's decision and sends the task result",
		MemoryMB:    256, TimeoutSeconds: 15,
		// A review's GetItem, its decision and delivery UpdateItems; review
		// listing queries the reviews-by-status index; every request's
		// proof (PutItem, GetItem).
		Principal: table.ReviewDecision},
	{Name: fnPublish, LogicalID: "PublishFunction",
		Description: "toolgate publish: runs the resolver on a Solution's source, registers its toolset, creates or updates its state machine",
		// The resolver compiles the Solution and its JSON Schemas; then
		// STS, DynamoDB, SSM and Step Functions, a few requests each.
		MemoryMB: 512, TimeoutSeconds: 30,
		// The toolset's conditional PutItem, and its GetItem (the one
		// already there, the one Publish checks); every request's proof.
		// Its Step Functions, IAM and SSM statements: publishing.go.
		Principal: table.Publish},
	{Name: fnWebhookDelivery, LogicalID: "WebhookDeliveryFunction",
		Description: "toolgate webhook-delivery: fans each event out to its subscriptions, delivers each one signed, retries on the schedule; the relay",
		// A batch of up to 10 deliveries runs concurrently, each bounded by
		// the sender's 10 s timeout, after a KMS Decrypt and a few table
		// requests: 60 s leaves room for a slow batch. Its queues' visibility
		// timeout is six times this (webhookVisibility).
		MemoryMB: 256, TimeoutSeconds: 60,
		// Events (record, read, mark sent, the unsent index), subscriptions
		// (list, disable on 410), attempts. It takes no caller proof: only
		// its queues and its schedule invoke it.
		Principal: table.WebhookDelivery},
	{Name: fnWebhooks, LogicalID: "WebhooksFunction",
		Description: "toolgate webhooks: subscribe, list, rotate-secret, disable, deliveries and the dead-letter queue's list and redrive, for webhook admins",
		MemoryMB:    256, TimeoutSeconds: 30,
		// Subscriptions (put, update, list), an event's deliveries, proofs.
		Principal: table.Webhooks},
	{Name: fnSources, LogicalID: "SourcesFunction",
		Description: "toolgate sources: add, list, rotate-secret and remove inbound sources and schedules, and the inbound dead-letter queue's list and redrive, for inbound operators",
		// A few table requests, a KMS GenerateDataKey, an EventBridge
		// Scheduler request: as the webhooks function.
		MemoryMB: 256, TimeoutSeconds: 30,
		// Sources and schedules (put, read, list, update, delete), proofs.
		Principal: table.Sources},
	{Name: fnWebhookReceiver, LogicalID: "WebhookReceiverFunction",
		Description: "toolgate webhook-receiver: verifies an inbound event's signature, records it once and queues it (POST /in/<source>); the inbound relay",
		// An event is a source read (cached), a KMS Decrypt (cached), a
		// conditional PutItem, a SendMessage and an UpdateItem; the relay
		// queues up to 100 events a run. Providers wait about 10 s for an
		// answer (GitHub's limit), so the event path stays far below; 30 s
		// bounds a relay run.
		MemoryMB: 256, TimeoutSeconds: 30,
		// Sources (read), events (receive, mark queued, the unqueued
		// index). It takes no caller proof: the signature authenticates an
		// event (docs/webhooks.md, "Receiving events: verification").
		Principal: table.WebhookReceiver},
	{Name: fnInboundStart, LogicalID: "InboundStartFunction",
		Description: "toolgate inbound-start: starts the run of each event and schedule firing of the inbound queue, as the inbound-start role's session",
		// A batch of up to 10 messages, each an event read, a
		// DescribeStateMachine, an sts:AssumeRole, review-request's start
		// and a StartExecution: 60 s leaves room for a slow batch. Its
		// queue's visibility timeout is six times this (inboundVisibility).
		MemoryMB: 256, TimeoutSeconds: 60,
		// Events (read, firing, mark started or failed), sources and
		// schedules (read). It takes no caller proof: only its queue
		// invokes it.
		Principal: table.InboundStart},
}

// FunctionSettings override one function's defaults; zero fields keep them.
type FunctionSettings struct {
	MemoryMB       int `json:"memoryMB,omitempty"`
	TimeoutSeconds int `json:"timeoutSeconds,omitempty"`
	// ReservedConcurrency reserves (and caps) the function's concurrent
	// executions; 0 reserves none (in Config.Functions: takes the stage's
	// Config.ReservedConcurrency). Reserving more than the account's
	// unreserved pool (less 100) fails the deployment.
	ReservedConcurrency int `json:"reservedConcurrency,omitempty"`
}

// catalogTimeout is a tool function's timeout in the catalog
// (function_timeout_seconds); 0 for a function that is not a catalog tool.
func (spec functionSpec) catalogTimeout() int {
	if t, ok := catalog.Default().Lookup(spec.Name); ok && spec.Tool {
		return t.FunctionTimeoutSeconds
	}
	return 0
}

// settings returns spec's defaults with s applied.
func (spec functionSpec) settings(s FunctionSettings) FunctionSettings {
	if s.MemoryMB == 0 {
		s.MemoryMB = spec.MemoryMB
	}
	if s.TimeoutSeconds == 0 {
		s.TimeoutSeconds = spec.TimeoutSeconds
	}
	if s.TimeoutSeconds == 0 {
		s.TimeoutSeconds = spec.catalogTimeout()
	}
	return s
}

// platformFunction is one deployed function with its own role and log group.
type platformFunction struct {
	Spec     functionSpec
	Function awslambda.Function
	// Aliases are the function's sfn and direct aliases (Spec.Lanes), on
	// its current version; nil for a function without lanes.
	Aliases  map[lane.Lane]awslambda.Alias
	Role     awsiam.Role
	LogGroup awslogs.LogGroup
	Settings FunctionSettings
}

// aliasARN is the ARN of the function's alias for lane l. It panics when
// the function has no such alias: a policy or parameter must never fall back
// to the unqualified ARN, which no lane may be invoked through.
func (f *platformFunction) aliasARN(l lane.Lane) *string {
	a, ok := f.Aliases[l]
	if !ok {
		panic(fmt.Sprintf("function %s has no %s alias", f.Spec.Name, l))
	}
	return a.FunctionArn()
}

// aliasLanes name the aliases of a function with Lanes, in template order.
var aliasLanes = []lane.Lane{lane.SFN, lane.Direct}

// Environment variables the infrastructure sets (docs/tools.md).
const (
	envTable          = "TOOLGATE_TABLE"
	envTimeoutSeconds = "TOOLGATE_FUNCTION_TIMEOUT_SECONDS"
	envSender         = "TOOLGATE_SENDER"
	envSenderIdentity = "TOOLGATE_SENDER_IDENTITY_ARN"
	envRecipientAllow = "TOOLGATE_RECIPIENT_ALLOW"
	envFetchAllow     = "TOOLGATE_FETCH_ALLOW"
	envFetchTimeout   = "TOOLGATE_FETCH_TIMEOUT_SECONDS"
	// The http function's (docs/tools.md, "http"): its host
	// allow-list, which the publish function reads too, the bound of one
	// request, and of a request body.
	envHTTPAllow           = functionconfig.EnvHTTPAllow
	envHTTPTimeout         = functionconfig.EnvHTTPTimeoutSeconds
	envHTTPMaxRequestBytes = functionconfig.EnvHTTPMaxRequestBytes
	// mcp-call's (docs/tools.md, "MCP tools"): the MCP hosts allow-list,
	// which the publish function's registration reads too, and how long
	// a server's tools/list answer is kept per warm container.
	envMCPAllow     = "TOOLGATE_MCP_ALLOW"
	envMCPSchemaTTL = "TOOLGATE_MCP_SCHEMA_TTL_SECONDS"
	// Every function verifies caller proofs (shared/caller); the STS
	// endpoint is left to its default, https://sts.<AWS_REGION>.amazonaws.com.
	envSessionRoles = caller.EnvSessionRoles
	// The stack's own account: every verifier refuses other accounts'
	// principals. The organisation's reviewer accounts, on review-decision
	// (admitted) and publish (the accounts reviewer patterns may name).
	envAccount          = caller.EnvAccount
	envReviewerAccounts = caller.EnvReviewerAccounts
	// The publish function's stage: it reads /toolgate/<stage>/... and
	// names state machines toolgate-<stage>_<solution> (shared/deployment);
	// the proxy's, whose placeholders resolve under it (tool.EnvStage);
	// review-request's, whose start lane admits this stage's state machines
	// only (tool.EnvStage).
	envStage = publishapi.EnvStage
	// review-request's direct lane (shared/review).
	envDirectReviewers     = review.EnvDirectReviewers
	envDirectReviewMaxSecs = review.EnvDirectMaxTimeout
	// Every function's span export (docs/infra.md, "Tracing").
	envTracing = functionconfig.EnvTracing
	// The webhook functions' (docs/webhooks.md; webhooks.go): the queues'
	// URLs, the retry schedule, the webhook hosts' allow-list, this
	// deployment's own Function URL hosts (never a webhook endpoint), the
	// admins (a JSON list of principal patterns) and the deliveries
	// dead-letter queue's URL (dlq list and redrive).
	// The names are the functions' own (shared/webhookapi), so that the
	// two cannot differ.
	envWebhookEvents     = webhookapi.EnvEventsQueue
	envWebhookDeliveries = webhookapi.EnvDeliveriesQueue
	envWebhookDLQ        = webhookapi.EnvDeliveriesDLQ
	envWebhookEventsDLQ  = webhookapi.EnvEventsDLQ
	envWebhookSchedule   = webhookapi.EnvSchedule
	envWebhookAllow      = webhookapi.EnvAllow
	envWebhookOwnHosts   = webhookapi.EnvOwnHosts
	envWebhookAdmins     = webhookapi.EnvAdmins
	// review-decision's park deciders and operators (docs/parking.md).
	envParkDeciders  = park.EnvDeciders
	envParkOperators = park.EnvOperators
	// review-decision's fork operators (docs/fork.md).
	envForkOperators = review.EnvForkOperators
	// review-decision's reconcilers (docs/fork.md, "Reconciling").
	envReconcilers = review.EnvReconcilers
)

// fetchTimeoutSeconds bounds one fetch (or one http request) inside the
// function's timeout: the dispatcher stops the tool 2 s before the
// deadline, after claiming the key, so the request gets the timeout less
// 5 s, at most 30 s (its own maximum; the catalog's 35 s Task timeout of
// either tool leaves it whole).
func fetchTimeoutSeconds(functionTimeout int) int {
	return max(1, min(30, functionTimeout-5))
}

// functionName is the deployed name, at most 64 characters (a Lambda
// limit): stage names are at most 20 characters.
func functionName(stage, name string) string { return "toolgate-" + stage + "-" + name }

// newFunctions defines every function with its own role, log group and
// environment: each function's configuration reaches only that function.
func newFunctions(scope constructs.Construct, p *PlatformStackProps, ledger ledgerARNs) map[string]*platformFunction {
	senderIdentityARN := newSenderIdentity(scope, p)
	out := map[string]*platformFunction{}
	for _, spec := range functionSpecs {
		set := spec.settings(p.Functions[spec.Name])
		env := functionEnv(spec, p, set, senderIdentityARN)
		var extra []awsiam.PolicyStatement
		if spec.Tool {
			// The dispatcher's own sealing key, the external key and the
			// since time (docs/ledger.md, "Records are sealed by the
			// function that writes them").
			for k, v := range ledgerSecretsEnv(p.Stage, spec.Name) {
				env[k] = v
			}
			extra = append(extra, readLedgerSecrets(p.Stage, spec.Name))
		}
		switch spec.Name {
		case fnSendEmail:
			extra = append(extra, sendAsTheSender(p, senderIdentityARN))
		case fnLambdaTool:
			extra = append(extra, toolfunction.InvokeStatement(p.Stage), toolfunction.FloorsStatement(p.Stage), toolfunction.ParametersStatement(p.Stage))
		case fnReviewRequest:
			// A child run's start (docs/solutions.md, "Workflow steps"):
			// the version its execution runs, of this stage's executions,
			// and the definition (its input record) of the published
			// version a parent's workflow step starts.
			children := awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("DescribeChildExecutions"),
				Actions:   jsii.Strings("states:DescribeExecution"),
				Resources: &[]*string{sub(executionsARN(p.Stage))},
			})
			// A review's review.requested event names the Solution version
			// the run executes, read from the definition of the revision
			// its execution started on (docs/webhooks.md, "The version a
			// review names"): the action's resource is the execution
			// (Service Authorization Reference, AWS Step Functions), of this
			// stage's state machines only.
			revisions := awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("DescribeReviewedRunsRevisions"),
				Actions:   jsii.Strings("states:DescribeStateMachineForExecution"),
				Resources: &[]*string{sub(executionsARN(p.Stage))},
			})
			extra = append(extra, children, revisions, childVersionDefinitions(p.Stage), readExternalKey(p.Stage), readEndUserKey(p.Stage))
			// Review notices (docs/reviews.md, "Review notices"): only
			// where the deployment lists whom they may reach.
			if len(p.ReviewNotices) > 0 {
				extra = append(extra, sendReviewNotices(p, senderIdentityARN))
			}
		case fnPublish:
			// An end user's credentials are scoped under the stage's
			// end-user key (docs/credentials.md).
			extra = append(extra, readEndUserKey(p.Stage))
		case fnReviewDecision:
			extra = append(extra, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("SendTaskResult"),
				Actions:   jsii.Strings(sendTaskActions...),
				Resources: jsii.Strings("*"),
			}), awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				// A cancelled park stops its run: this stage's executions
				// only (docs/parking.md, "Deciding").
				Sid:       jsii.String("StopParkedRuns"),
				Actions:   jsii.Strings("states:StopExecution"),
				Resources: &[]*string{sub(executionsARN(p.Stage))},
			}), awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				// run.fork reads the parent's status and start, and stops
				// it while it runs: this stage's executions only
				// (docs/fork.md, "Forking a run").
				Sid:       jsii.String("ForkRuns"),
				Actions:   jsii.Strings("states:DescribeExecution", "states:StopExecution"),
				Resources: &[]*string{sub(executionsARN(p.Stage))},
			}))
		}
		out[spec.Name] = newFunction(scope, p, spec, set, env, ledger, extra)
	}
	return out
}

// sendAsTheSender is send-email's SES statement: SES v2 SendEmail with
// simple content (shared/sendemail), which IAM authorises as ses:SendEmail
// (no raw messages), on the sender's identity, from the sender only, to the
// allow-listed recipients only. The recipients' condition holds the
// allow-list's IAM patterns (recipientPatterns): the same entries the
// function decides with, in the canonical form it sends (IAM compares
// case-sensitively). ForAllValues is true of an empty set, but SES has no
// message without a recipient, and the function sends none without a "to".
func sendAsTheSender(p *PlatformStackProps, senderIdentityARN *string) awsiam.PolicyStatement {
	recipients, err := recipientPatterns(p.RecipientAllow)
	if err != nil {
		// Config.check refuses the list before any stack is defined.
		panic(fmt.Sprintf("send-email: %v", err))
	}
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("SendAsTheSenderOnly"),
		Actions:   jsii.Strings("ses:SendEmail"),
		Resources: &[]*string{senderIdentityARN},
		Conditions: &map[string]any{
			"StringEquals":            map[string]any{"ses:FromAddress": p.Sender.Address},
			"ForAllValues:StringLike": map[string]any{"ses:Recipients": recipients},
		},
	})
}

// sendReviewNotices is review-request's SES statement, only with a
// notices allow-list: SES v2 SendEmail with simple content
// (functions/review-request/request notice), as ses:SendEmail on the
// sender's identity, from the platform's sender only, to the notices
// allow-list only: built as send-email's (sendAsTheSender), from
// ReviewNotices's IAM patterns (recipient.List.IAMPatterns), in the
// canonical form review-request sends (review.NoticeRecipients).
func sendReviewNotices(p *PlatformStackProps, senderIdentityARN *string) awsiam.PolicyStatement {
	n, err := functionconfig.ParseReviewNotices(p.ReviewNotices, p.Sender.Address)
	if err != nil {
		// Config.check refuses the list before any stack is defined.
		panic(fmt.Sprintf("review-request: reviewNotices: %v", err))
	}
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("SendReviewNoticesAsTheSenderOnly"),
		Actions:   jsii.Strings("ses:SendEmail"),
		Resources: &[]*string{senderIdentityARN},
		Conditions: &map[string]any{
			"StringEquals":            map[string]any{"ses:FromAddress": n.Sender},
			"ForAllValues:StringLike": map[string]any{"ses:Recipients": n.Allow.IAMPatterns()},
		},
	})
}

// recipientPatterns are the ses:Recipients values of send-email's role:
// the allow-list read as the function reads TOOLGATE_RECIPIENT_ALLOW
// (recipient.ParseCommaList of the same text), as IAM patterns
// (recipient.List.IAMPatterns: "*@<A-label>" for a domain entry, an
// address entry in its canonical form).
func recipientPatterns(allow []string) ([]string, error) {
	l, err := recipient.ParseCommaList(strings.Join(allow, ","))
	if err != nil {
		return nil, fmt.Errorf("recipientAllow: %w", err)
	}
	return l.IAMPatterns(), nil
}

// IAM's limit on a role's inline policies, and the part of it send-email's
// recipients condition may take. IAM counts the policy documents of a
// role's inline policies together, whitespace not counted (IAM User Guide,
// "IAM and AWS STS quotas": role policy size, 10,240 characters); the CDK
// moves statements to managed policies past its own estimate of 10,000,
// which no role here may have. The rest of send-email's policy, with its
// ARNs resolved at their longest and the longest sender and identity, takes
// at most rolePolicyChars - maxRecipientConditionChars
// (TestRecipientConditionBudget checks that against the template). The
// recipients' part was 5 000 characters until the tool roles' ledger
// statement gained the Query of a fork's parent calls (docs/fork.md,
// "Matching").
const (
	rolePolicyChars            = 10240
	maxRecipientConditionChars = 4950
	// maxNoticeConditionChars is the part of review-request's inline
	// policy its notices' recipients condition may take: what its other
	// statements leave (TestNoticeConditionBudget checks the rest against
	// the template), about 20 short @domain entries. The notices
	// allow-list names the reviewers' domains, not each reviewer.
	maxNoticeConditionChars = 500
)

// recipientConditionChars estimates, from above, the characters send-email's
// recipients condition adds to its policy: the length of
// {"ForAllValues:StringLike":{"ses:Recipients":[...]}} as encoding/json
// writes it (escaping &, < and > as six characters each, where IAM counts
// one).
func recipientConditionChars(patterns []string) int {
	b, err := json.Marshal(map[string]any{"ForAllValues:StringLike": map[string]any{"ses:Recipients": patterns}})
	if err != nil {
		panic(err) // a list of strings always encodes
	}
	return len(b)
}

// childVersionDefinitions lets review-request read the definition of a
// published version of this stage's state machines, whose input record a
// child's input is checked against before its parent records the start
// (DescribeStateMachine of toolgate-<stage>_<solution>:<version>). Step
// Functions authorises a request on a version ARN against the state
// machine's ARN, and names the version in the states:StateMachineQualifier
// context key (Step Functions Developer Guide, "Authorization for versions
// and aliases"): the key must be present, so the latest revision, which
// publishing changes, is never read. toolgate publishes no aliases.
func childVersionDefinitions(stage string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("ReadChildVersionDefinitions"),
		Actions:    jsii.Strings("states:DescribeStateMachine"),
		Resources:  &[]*string{sub(stateMachinesARN(stage))},
		Conditions: &map[string]any{"Null": map[string]any{"states:StateMachineQualifier": "false"}},
	})
}

// samLocalVariables are declared empty in a SAM local template
// (PlatformStackProps.SAMLocal) so that sam local invoke --env-vars may set
// them: SAM overrides only variables the template declares. Empty, each
// means what it means unset: the AWS endpoints, no address exemption (on
// the fetch and http functions and on publish, which checks literal IP
// addresses as those tools do; on mcp-call and on publish, which lists MCP
// servers at registration), the lane from the invoked alias. sam local invoke
// has no aliases, so the functions with lanes declare TOOLGATE_LANE for
// --env-vars to name the sfn lane.
// TOOLGATE_STS_ALLOW_HTTP is never declared: caller proofs go to STS over
// HTTPS, which leaves review-decision, the publish function and the direct
// lane to the local stack (docs/infra.md, "SAM local").
var samLocalVariables = map[string][]string{
	"":               {"AWS_ENDPOINT_URL_DYNAMODB"},
	fnSendEmail:      {"AWS_ENDPOINT_URL_SESV2", lane.EnvLane},
	fnFetch:          {"TOOLGATE_FETCH_ALLOW_ADDRESSES", lane.EnvLane},
	fnHTTP:           {functionconfig.EnvHTTPAllowAddresses, lane.EnvLane},
	fnValidator:      {lane.EnvLane},
	fnReviewRequest:  {lane.EnvLane},
	fnReviewDecision: {"AWS_ENDPOINT_URL_SFN"},
	fnPublish:        {"AWS_ENDPOINT_URL_SFN", "TOOLGATE_FETCH_ALLOW_ADDRESSES", functionconfig.EnvHTTPAllowAddresses, "TOOLGATE_MCP_ALLOW_ADDRESSES"},
	fnLambdaTool:     {"AWS_ENDPOINT_URL_LAMBDA", "AWS_ENDPOINT_URL_SSM", lane.EnvLane},
	fnMCPCall:        {"TOOLGATE_MCP_ALLOW_ADDRESSES", lane.EnvLane},
	// The SQS and KMS stand-ins, and the receiver's loopback exemption.
	fnWebhookDelivery: {"AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_KMS", "TOOLGATE_WEBHOOK_ALLOW_ADDRESSES"},
	fnWebhooks:        {"AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_KMS", "TOOLGATE_WEBHOOK_ALLOW_ADDRESSES"},
	// The inbound functions' stand-ins: SQS and KMS for sources and
	// webhook-receiver; Step Functions, review-request's start instance
	// and STS (the inbound-start role's AssumeRole) for inbound-start.
	fnSources:         {"AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_KMS"},
	fnWebhookReceiver: {"AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_KMS"},
	fnInboundStart:    {"AWS_ENDPOINT_URL_SFN", "AWS_ENDPOINT_URL_LAMBDA", "AWS_ENDPOINT_URL_STS"},
}

// functionEnv is the function's own environment (docs/tools.md,
// docs/reviews.md): the table, the timeout the dispatcher's lease follows,
// the session roles when there are any (every function verifies callers),
// and its own configuration, which no other function sees.
func functionEnv(spec functionSpec, p *PlatformStackProps, set FunctionSettings, senderIdentityARN *string) map[string]*string {
	env := map[string]*string{
		envTable:          jsii.String(p.TableName),
		envTimeoutSeconds: jsii.String(strconv.Itoa(set.TimeoutSeconds)),
		// Caller proofs of any other account's principals are refused.
		envAccount: awscdk.Aws_ACCOUNT_ID(),
		// Where the function exports its spans, or off.
		envTracing: jsii.String(p.Tracing),
	}
	// One P when the function's memory buys it at most one vCPU.
	if v := functionconfig.GoMaxProcs(set.MemoryMB); v != "" {
		env[functionconfig.EnvGoMaxProcs] = jsii.String(v)
	}
	// The configured session roles, and the inbound-start role: the caller
	// of an inbound run's start is its session, src-<source> or
	// sched-<schedule> (inbound.go).
	env[envSessionRoles] = jsii.String(strings.Join(append(slices.Clone(p.SessionRoles), inboundRoleName(p.Stage)), ","))
	switch spec.Name {
	case fnSendEmail:
		env[envSender] = jsii.String(p.Sender.Address)
		env[envSenderIdentity] = senderIdentityARN
		env[envRecipientAllow] = jsii.String(strings.Join(p.RecipientAllow, ","))
	case fnFetch:
		env[envFetchAllow] = jsii.String(strings.Join(p.FetchAllow, ","))
		env[envFetchTimeout] = jsii.String(strconv.Itoa(fetchTimeoutSeconds(set.TimeoutSeconds)))
	case fnHTTP:
		// Its own allow-list, never structured-data-fetch's: a tool that
		// can change things elsewhere is configured apart from the read
		// tool. Empty: no http at all.
		env[envHTTPAllow] = jsii.String(strings.Join(p.HTTPAllow, ","))
		env[envHTTPTimeout] = jsii.String(strconv.Itoa(fetchTimeoutSeconds(set.TimeoutSeconds)))
		// Unset: the tool's default bound, 64 KiB.
		if p.HTTPMaxRequestBytes > 0 {
			env[envHTTPMaxRequestBytes] = jsii.String(strconv.Itoa(p.HTTPMaxRequestBytes))
		}
	case fnReviewRequest:
		// No reviewers: the variable is left out, and the direct lane is
		// closed to every gated tool.
		if len(p.DirectReviewers) > 0 {
			env[envDirectReviewers] = jsii.String(directReviewersJSON(p.DirectReviewers))
		}
		env[envDirectReviewMaxSecs] = jsii.String(strconv.Itoa(p.DirectReviewMaxSeconds))
		// The start lane records starts of this stage's Solutions only
		// (request.StartScope).
		env[envStage] = jsii.String(p.Stage)
		// The stage's external key, under which it derives the trace ids
		// of runs given no trace context (readExternalKey).
		env[functionconfig.EnvExternalKeyParam] = jsii.String(functionconfig.ExternalKeyParam(p.Stage))
		endUserEnv(env, p)
		// Review notices: the allow-list and the platform's sender; no
		// list, no variables (none is sent).
		if len(p.ReviewNotices) > 0 {
			env[functionconfig.EnvReviewNotices] = jsii.String(jsonList(p.ReviewNotices))
			env[functionconfig.EnvNoticeSender] = jsii.String(p.Sender.Address)
			// The identity the notices' statement names, as send-email's.
			env[functionconfig.EnvSenderIdentityARN] = senderIdentityARN
		}
	case fnLambdaTool:
		// The placeholders' parameters, /toolgate/<stage>/tool-function/...
		// (shared/platformtool).
		env[envStage] = jsii.String(p.Stage)
	case fnMCPCall:
		// Empty: no MCP server is reachable. The address exemptions are the
		// local stack's only, as the fetch tool's.
		env[envMCPAllow] = jsii.String(strings.Join(p.MCPAllow, ","))
		env[envMCPSchemaTTL] = jsii.String(strconv.Itoa(p.MCPSchemaTTLSeconds))
	case fnReviewDecision:
		if len(p.ReviewerAccounts) > 0 {
			env[envReviewerAccounts] = jsii.String(strings.Join(p.ReviewerAccounts, ","))
		}
		// Who decides and cancels parks besides a run's starter (unset:
		// nobody).
		if len(p.ParkDeciders) > 0 {
			env[envParkDeciders] = jsii.String(credentialAdminsJSON(p.ParkDeciders))
		}
		if len(p.ParkOperators) > 0 {
			env[envParkOperators] = jsii.String(credentialAdminsJSON(p.ParkOperators))
		}
		// run.fork admits runs of this stage only (review.StartScope), and
		// fork operators besides a run's starter (unset: nobody).
		env[envStage] = jsii.String(p.Stage)
		if len(p.ForkOperators) > 0 {
			env[envForkOperators] = jsii.String(credentialAdminsJSON(p.ForkOperators))
		}
		// Who may reconcile a call whose outcome is unknown (unset: the
		// park operators).
		if len(p.Reconcilers) > 0 {
			env[envReconcilers] = jsii.String(credentialAdminsJSON(p.Reconcilers))
		}
		// send-email's sender and recipient allow-list, the same values
		// as send-email's: a show answer of a send-email review carries
		// From and each recipient's verdict (docs/reviews.md, "What a
		// review's show answer carries"). Not the identity ARN: it sends
		// nothing.
		env[envSender] = jsii.String(p.Sender.Address)
		env[envRecipientAllow] = jsii.String(strings.Join(p.RecipientAllow, ","))
	case fnWebhookDelivery:
		// Checked again at every delivery: the hosts a webhook may reach,
		// and the retry schedule, which sizes its queues (webhooks.go).
		env[envWebhookAllow] = jsii.String(strings.Join(p.WebhookAllow, ","))
		env[envWebhookSchedule] = jsii.String(p.WebhookSchedule)
	case fnWebhooks:
		// Subscribe checks the URL against the same list; who may
		// administer webhooks; the stage whose Solutions a --solution
		// filter names.
		env[envWebhookAllow] = jsii.String(strings.Join(p.WebhookAllow, ","))
		env[envWebhookAdmins] = jsii.String(credentialAdminsJSON(p.WebhookAdmins))
		env[envStage] = jsii.String(p.Stage)
	case fnSources:
		// Who may manage sources and schedules; the stage whose Solutions
		// a source or schedule names.
		env[envInboundOperators] = jsii.String(credentialAdminsJSON(p.InboundOperators))
		env[envStage] = jsii.String(p.Stage)
	case fnWebhookReceiver:
		// The event items' time to live.
		env[envInboundRetentionDays] = jsii.String(strconv.Itoa(p.InboundRetentionDays))
	case fnInboundStart:
		// The state machine toolgate-<stage>_<solution> a run starts; the
		// stage's external key, under which it names executions
		// (HMAC-SHA256, domain-separated); the event items' time to live
		// (a schedule's firing item).
		env[envStage] = jsii.String(p.Stage)
		env[functionconfig.EnvExternalKeyParam] = jsii.String(functionconfig.ExternalKeyParam(p.Stage))
		env[envInboundRetentionDays] = jsii.String(strconv.Itoa(p.InboundRetentionDays))
	case fnPublish:
		env[envStage] = jsii.String(p.Stage)
		if len(p.ReviewerAccounts) > 0 {
			env[envReviewerAccounts] = jsii.String(strings.Join(p.ReviewerAccounts, ","))
		}
		// The tools' allow-lists, the same values as theirs: publish refuses
		// a Solution whose literal URLs or recipients the tools would refuse
		// (functions/publish/publish Deployment), a toolset whose http_hosts
		// the http function's list does not cover, and registration lists
		// only the MCP servers mcp-call may call. Only the lists: not the
		// sender, its identity, the fetch and http timeouts, the http body
		// bound or the MCP listing's cache.
		env[envFetchAllow] = jsii.String(strings.Join(p.FetchAllow, ","))
		env[envHTTPAllow] = jsii.String(strings.Join(p.HTTPAllow, ","))
		env[envRecipientAllow] = jsii.String(strings.Join(p.RecipientAllow, ","))
		env[envMCPAllow] = jsii.String(strings.Join(p.MCPAllow, ","))
		// Who may set an end user's credentials, and their scope.
		endUserEnv(env, p)
	}
	if p.SAMLocal {
		for _, k := range append(samLocalVariables[""], samLocalVariables[spec.Name]...) {
			env[k] = jsii.String("")
		}
	}
	return env
}

// newFunction defines one function, its role and its log group. The role
// holds only: writing to its own log group, the function's ledger actions,
// extra, and the X-Ray statement that active tracing adds.
func newFunction(scope constructs.Construct, p *PlatformStackProps, spec functionSpec, set FunctionSettings,
	env map[string]*string, ledger ledgerARNs, extra []awsiam.PolicyStatement) *platformFunction {
	logs := awslogs.NewLogGroup(scope, jsii.String(spec.LogicalID+"Logs"), &awslogs.LogGroupProps{
		Retention:     p.LogRetention,
		RemovalPolicy: p.LogRemovalPolicy,
	})
	role := awsiam.NewRole(scope, jsii.String(spec.LogicalID+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("toolgate " + spec.Name + " function (" + p.Stage + ")"),
	})
	role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("OwnLogGroup"),
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: &[]*string{logs.LogGroupArn()},
	}))
	for _, s := range ledgerStatements(spec.Principal, ledger, p.IndexLeadingKeys) {
		role.AddToPolicy(s)
	}
	if spec.Parks {
		for _, s := range ledgerStatements(table.ParkingToolFunctions, ledger, p.IndexLeadingKeys) {
			role.AddToPolicy(s)
		}
	}
	if spec.Learns {
		for _, s := range ledgerStatements(table.LearningToolFunctions, ledger, p.IndexLeadingKeys) {
			role.AddToPolicy(s)
		}
	}
	for _, s := range extra {
		role.AddToPolicy(s)
	}
	var reserved *float64
	if set.ReservedConcurrency > 0 {
		reserved = jsii.Number(set.ReservedConcurrency)
	}
	// The version the aliases point at (newAliases): a replaced one is
	// deleted, which is the default, written out.
	versions := &awslambda.VersionOptions{RemovalPolicy: awscdk.RemovalPolicy_DESTROY}
	fn := awslambda.NewFunction(scope, jsii.String(spec.LogicalID), &awslambda.FunctionProps{
		FunctionName:                 jsii.String(functionName(p.Stage, spec.Name)),
		Description:                  jsii.String(spec.Description),
		Runtime:                      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:                 awslambda.Architecture_ARM_64(),
		Handler:                      jsii.String("bootstrap"),
		Code:                         awslambda.Code_FromAsset(jsii.String(filepath.Join(p.AssetsDir, spec.Name)), nil),
		MemorySize:                   jsii.Number(set.MemoryMB),
		Timeout:                      awscdk.Duration_Seconds(jsii.Number(set.TimeoutSeconds)),
		Environment:                  &env,
		Role:                         role,
		LogGroup:                     logs,
		LoggingFormat:                awslambda.LoggingFormat_JSON,
		ApplicationLogLevelV2:        awslambda.ApplicationLogLevel_INFO,
		SystemLogLevelV2:             awslambda.SystemLogLevel_INFO,
		Tracing:                      awslambda.Tracing_ACTIVE,
		ReservedConcurrentExecutions: reserved,
		CurrentVersionOptions:        versions,
	})
	overrideLogicalID(fn, spec.LogicalID)
	pf := &platformFunction{Spec: spec, Function: fn, Role: role, LogGroup: logs, Settings: set}
	if spec.Lanes {
		pf.Aliases = newAliases(scope, spec, fn)
	}
	return pf
}

// newAliases defines the function's sfn and direct aliases (and its start
// alias, Spec.StartLane), all on its current version: the version CDK publishes under a logical ID that hashes
// the function's code and configuration, so a deployment that changes
// either publishes a new version and moves every alias to it, and the
// lanes always run the same code with the same environment. The replaced
// version is deleted (no policy names a version, so nothing could invoke
// it). Alias logical IDs are fixed: <LogicalID>SfnAlias,
// <LogicalID>DirectAlias, <LogicalID>StartAlias.
func newAliases(scope constructs.Construct, spec functionSpec, fn awslambda.Function) map[lane.Lane]awslambda.Alias {
	version := fn.CurrentVersion()
	out := map[lane.Lane]awslambda.Alias{}
	lanes := aliasLanes
	if spec.StartLane {
		lanes = append(slices.Clone(lanes), lane.Start)
	}
	for _, l := range lanes {
		id := spec.LogicalID + aliasIDPart(l) + "Alias"
		a := awslambda.NewAlias(scope, jsii.String(id), &awslambda.AliasProps{
			AliasName:   jsii.String(string(l)),
			Version:     version,
			Description: jsii.String(aliasDescriptions[l]),
		})
		overrideLogicalID(a, id)
		out[l] = a
	}
	return out
}

// aliasDescriptions say who invokes each alias.
var aliasDescriptions = map[lane.Lane]string{
	lane.SFN:    "the sfn lane: Solutions' executions (the Solution execution role) invoke this alias only",
	lane.Direct: "the direct lane: people (the Operator policy, toolgate invoke) invoke this alias only",
	lane.Start:  "the start lane: toolgate run (the Publisher policy) records a run's start through this alias only; it takes start requests only",
}

// aliasIDPart is the lane's name in a logical ID: Sfn, Direct.
func aliasIDPart(l lane.Lane) string { return strings.ToUpper(string(l[:1])) + string(l[1:]) }

// jsonList is a list of strings as JSON text (encoding/json).
func jsonList(l []string) string {
	b, err := json.Marshal(l)
	if err != nil {
		panic(err) // a list of strings always encodes
	}
	return string(b)
}

// directReviewersJSON is TOOLGATE_DIRECT_REVIEWERS: a JSON object from tool
// name to reviewer patterns, keys sorted (encoding/json).
func directReviewersJSON(m map[string][]string) string {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // a map of string lists always encodes
	}
	return string(b)
}

// newSenderIdentity returns the ARN of the SES identity send-email sends
// as: created here when props ask for it, else referenced (it must exist and
// be verified in the account and region).
func newSenderIdentity(scope constructs.Construct, p *PlatformStackProps) *string {
	s := p.Sender
	if s.IdentityARN != "" {
		return jsii.String(s.IdentityARN)
	}
	if s.CreateIdentity {
		var id awsses.Identity
		if strings.Contains(s.Identity, "@") {
			id = awsses.Identity_Email(jsii.String(s.Identity))
		} else {
			id = awsses.Identity_Domain(jsii.String(s.Identity))
		}
		ident := awsses.NewEmailIdentity(scope, jsii.String("SenderIdentity"), &awsses.EmailIdentityProps{Identity: id})
		return ident.EmailIdentityArn()
	}
	return sub(fmt.Sprintf("arn:${AWS::Partition}:ses:${AWS::Region}:${AWS::AccountId}:identity/%s", s.Identity))
}

// overrideLogicalID gives a construct's CloudFormation resource a stable,
// readable logical ID (the name sam local invoke takes).
func overrideLogicalID(c constructs.IConstruct, id string) {
	c.Node().DefaultChild().(awscdk.CfnResource).OverrideLogicalId(jsii.String(id))
}
