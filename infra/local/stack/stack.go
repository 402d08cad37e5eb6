package stack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/toolgate/toolgate/examples/create-ticket/ticketservice"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/httprecorder"
	"github.com/toolgate/toolgate/infra/local/kms"
	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/infra/local/otlpreceiver"
	"github.com/toolgate/toolgate/infra/local/sqs"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/enduser"
	"github.com/toolgate/toolgate/shared/fetch"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/platformtool"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/secrets"
	"github.com/toolgate/toolgate/shared/toolset"
	"github.com/toolgate/toolgate/shared/tracing"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

// The local stack's fixed names. The stage is "local"; parameter names are
// the same as the infrastructure writes to SSM (/toolgate/<stage>/...).
const (
	Stage       = "local"
	Table       = "toolgate-local"
	AccountID   = "000000000000"
	ExecRoleARN = "arn:aws:iam::000000000000:role/toolgate-local-solution-execution"
	// DemoDataAddr is the data server's address that
	// testdata/solutions/demo-digest.yaml names (in fetch_hosts and its
	// fetch URL), so that it compiles as written. The data server listens
	// on a free port chosen when the stack starts; OnDataServer rewrites a
	// Solution for it.
	DemoDataAddr = "127.0.0.1:18080"
	// DemoHTTPAddr is the recording HTTP service's address that
	// testdata/demo/demo-http.yaml names (in http_hosts and its URL), so
	// that it compiles as written. The service listens on a free port
	// chosen when the stack starts; OnHTTPService rewrites a Solution for
	// it.
	DemoHTTPAddr = "127.0.0.1:18081"
	// TeamFunction is the example team function the local stack runs for
	// the platform tools' proxy (examples/create-ticket), and
	// TeamFunctionKey the placeholder key a toolset pins it by
	// (${FunctionCreateTicket}, testdata/toolsets/demo.yaml): the SSM
	// stand-in holds toolset.ToolFunctionParam(Stage, TeamFunctionKey).
	TeamFunction    = "create-ticket"
	TeamFunctionKey = "FunctionCreateTicket"
	// MCPTestHost is a name for the local MCP server that only the local
	// stack's MCP client knows: publish and mcp-call resolve it from
	// Stack.MCPResolveFile (TOOLGATE_MCP_RESOLVE_FILE), never from DNS (.test
	// is reserved, RFC 6761), and may reach it on the server's port
	// (TOOLGATE_MCP_ALLOW). It resolves to 127.0.0.1 until a test says
	// otherwise (ResolveMCPTestHost): a server whose name comes to resolve
	// to a private or metadata address.
	MCPTestHost = "mcp.internal.test"
	// WebhookTestHost is a name for the local webhook receivers that only
	// the stack's webhook functions know: they resolve it from
	// Stack.WebhookResolveFile (TOOLGATE_WEBHOOK_RESOLVE_FILE), never
	// from DNS, and it is on their allow-list on each receiver's port
	// (StackOptions.WebhookAllow). It resolves to 127.0.0.1 until a test
	// says otherwise (ResolveWebhookTestHost): a subscribed name that
	// comes to resolve to a metadata address.
	WebhookTestHost = "hooks.internal.test"
)

// TeamFloor is the floor TeamFunction's tags give it by default: the
// contract examples/create-ticket keeps and testdata/toolsets/demo.yaml
// pins it by, review optional, at_least_once, idempotent (it keeps one
// ticket per idempotency key), duplicates refused.
var TeamFloor = platformtool.Floor{ReviewOptional: true, AtLeastOnce: true, Idempotent: true}

// TeamFunctionTags are TeamFunction's default tags: TeamFloor's, and
// toolgate:tool=<Stage>, which lets the stage's proxy and publish function
// read them (StackOptions.TeamFunctionTags replaces them).
func TeamFunctionTags() map[string]string {
	tags := TeamFloor.Tags()
	tags[platformtool.TagTool] = Stage
	return tags
}

// FunctionARN is the local ARN of a function, as publishing substitutes it.
func FunctionARN(name string) string {
	return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", local.Region, AccountID, name)
}

// Stack is the whole local stack: dynalite, the SES v2 emulator, every
// function under the RIE, the local Step Functions endpoint, the demo
// data server, the recording HTTP service, the trace receiver, and the SQS
// stand-in with the webhook queues and their pollers, on 127.0.0.1.
type Stack struct {
	Dir        string // holds the parameters, functions and env files
	ParamsFile string // parameter name -> value, as SSM would answer
	EnvFile    string // shell exports of the endpoints for the CLI
	Dynamo     *local.Process
	SES        *local.Process
	SFN        *local.Process
	// SFNFaultsFile is the local Step Functions endpoint's faults file, a
	// test hook (local.WriteSFNFaults); absent: no faults.
	SFNFaultsFile string
	// STS is the STS stand-in that answers the caller proofs signed with
	// Keys (toolgate ... --as NAME).
	STS      *local.STS
	Keys     *local.LocalKeys
	KeysFile string
	// Functions are the functions' RIE instances by name; for the
	// functions with lanes (the tools and review-request) the direct lane's.
	Functions map[string]*local.Process
	// Endpoints are the functions' endpoints people use (name -> base URL):
	// a proxy in front of each RIE that lets one invocation in at a time,
	// since a second concurrent one crashes the RIE. For the functions with
	// lanes, the direct lane's instance; SFNEndpoints are the sfn lane's,
	// which Step Functions invokes. The RIE has no aliases, so each lane is
	// an instance that knows its lane from TOOLGATE_LANE.
	// The example team function (TeamFunction) is in Functions and
	// Endpoints too; it has no lanes.
	Endpoints    map[string]string
	SFNEndpoints map[string]string
	// StartEndpoint is review-request's start lane instance, which
	// toolgate run records a run's start through (the parameter
	// deployment.StartFunctionParam names it).
	StartEndpoint string
	// SSM and Lambda are stand-ins, not emulators: no local emulator of
	// SSM Parameter Store or of the Lambda API runs on these machines.
	// SSM answers GetParameter from the stack's parameters (the
	// parameters file's, and the tool function parameter of
	// TeamFunctionKey) for the proxy and the publish function
	// (AWS_ENDPOINT_URL_SSM); Lambda routes the proxy's Invoke of a team
	// function to that function's RIE, and answers the ListTags of the
	// proxy and the publish function with the team function's tags, for
	// functions tagged toolgate:tool=<Stage> only, as their roles on AWS
	// (AWS_ENDPOINT_URL_LAMBDA).
	SSM    *local.SSM
	Lambda *local.LambdaRouter
	// KMS is local-kms, in-process on a free 127.0.0.1 port (infra/local/kms),
	// holding the stage's credentials key (KMS.KeyARN, alias
	// kms.Alias(Stage)), which credentials are sealed under.
	KMS *kms.Server
	// MCP is the local MCP server (stateless, every protocol revision the
	// SDK serves), in-process, at MCP.URL(): mcp-call and the publish
	// function's registration may reach its host and port
	// (TOOLGATE_MCP_ALLOW, with the loopback exemption
	// TOOLGATE_MCP_ALLOW_ADDRESSES), by its address or by MCPTestHost
	// (MCPTestURL). Tests change its tools and read what it was sent.
	MCP *mcpserver.Server
	// MCPAuth is a second local MCP server, in its bearer-token mode
	// (mcpserver.Options.BearerTokens): every request needs
	// "Authorization: Bearer <token>" with a token tests and the demo
	// choose (MCPAuth.SetBearerTokens); it starts accepting only a random
	// one nobody holds. publish and mcp-call may reach it.
	MCPAuth *mcpserver.Server
	// MCPResolveFile holds MCPTestHost's address for publish and mcp-call
	// (ResolveMCPTestHost).
	MCPResolveFile string
	// WebhookResolveFile holds WebhookTestHost's addresses for the webhook
	// functions (ResolveWebhookTestHost, TOOLGATE_WEBHOOK_RESOLVE_FILE).
	WebhookResolveFile string
	// HTTP is the recording HTTP service (httprecorder), in-process on a
	// free 127.0.0.1 port: the http function and the publish function may
	// reach its host and port (TOOLGATE_HTTP_ALLOW, with the loopback
	// exemption TOOLGATE_HTTP_ALLOW_ADDRESSES). Tests script its answers
	// and read what it received.
	HTTP *httprecorder.Server
	// Traces is the stack's OTLP/HTTP trace receiver (otlpreceiver),
	// in-process on a free 127.0.0.1 port: every function the stack runs,
	// TeamFunction among them, and the CLI (Environ, EnvFile) are given
	// TOOLGATE_TRACING=otlp:<Traces.URL()> (functionconfig.EnvTracing;
	// StackOptions.Env may set another value for the functions). Tests
	// read the spans it kept, also after Stop.
	Traces *otlpreceiver.Receiver
	// Tickets is the ticket service create-ticket opens tickets in, at
	// TicketsURL.
	Tickets    *ticketservice.Service
	TicketsURL string
	tickets    *http.Server
	proxies    []*http.Server
	DataURL    string
	data       *http.Server
	procs      []*local.Process

	// SQS is the SQS stand-in (infra/local/sqs), which holds the webhook
	// queues (WebhookQueues); the Step Functions endpoint puts every
	// execution status change on the events queue, as the platform's
	// EventBridge rule does on AWS (docs/webhooks.md).
	SQS *sqs.Server
	// WebhookQueues are the webhook queues on SQS. Two pollers, started
	// after the functions, invoke webhook-delivery with their batches under
	// its RIE, as its event-source mappings do on AWS.
	WebhookQueues WebhookQueues
	// InboundQueues are the inbound queue and its dead-letter queue on
	// SQS (inbound.go).
	InboundQueues InboundQueues
	// inbound is the webhook receiver's front and relay ticker (inbound.go).
	inbound inboundState

	// sesEndpoint is where send-email reaches SES v2: the emulator, or
	// StackOptions.SESEndpoint's answer.
	sesEndpoint string
	// webhookSchedule is the webhook functions' retry schedule
	// (StackOptions.WebhookSchedule, or DefaultWebhookSchedule).
	webhookSchedule string
	// stopPollers ends the webhook queues' pollers; pollers is done once
	// every one has returned, and pollerErrs holds what they returned.
	stopPollers context.CancelFunc
	pollers     sync.WaitGroup
	pollerMu    sync.Mutex
	pollerErrs  []error
	// consumer is the inbound queue's poller and the scheduler ticker
	// (inboundstart.go).
	consumer *inboundStart
}

// WebhookQueues are the local stack's webhook queues, named as the
// platform names them (toolgate-<stage>-webhook-events, -deliveries, each
// with a dead-letter queue "-dlq"; infra/platform/webhooks.go).
type WebhookQueues struct {
	// Events gets event ids from producers and the relay, and the Step
	// Functions endpoint's status changes; its messages move to EventsDLQ
	// after webhookEventsMaxReceives receives.
	Events, EventsDLQ sqs.Queue
	// Deliveries gets one message per event and subscription; its
	// messages move to DeliveriesDLQ after the schedule's Attempts()
	// receives (webhook.Schedule.Attempts).
	Deliveries, DeliveriesDLQ sqs.Queue
}

// DefaultWebhookSchedule is the local stack's webhook retry schedule
// (webhook.ParseSchedule's syntax): two retries, 1 s and 2 s after the
// first and second failed attempts, so that a test sees a delivery retried
// and dead-lettered in seconds where the platform's default takes about a
// day (webhook.DefaultSchedule).
const DefaultWebhookSchedule = "1s,2s"

// Webhook queue settings of the local stack.
const (
	// webhookEventsMaxReceives is how often the fan-out of one event is
	// tried before its message goes to the events dead-letter queue: the
	// platform's number (infra/platform/webhooks.go).
	webhookEventsMaxReceives = 5
	// webhookVisibility is both queues' visibility timeout: longer than
	// one delivery attempt (webhook.Sender's 10 s timeout) takes to reach
	// its ChangeMessageVisibility. On AWS it is six times the function's
	// timeout, since several invocations may hold a queue's messages; here
	// one poller per queue runs one batch at a time, so no second receive
	// races an invocation in progress, and a timeout well under AWS's
	// lets a message reach its dead-letter queue within a test's time
	// after its last attempt (the queue moves it once this has passed).
	webhookVisibility = 30 * time.Second
	// webhookRelayEvery is the local relay ticker's period, and
	// webhookRelayAfter how long an event stays unsent before the relay
	// sends it (webhookapi.EnvRelayAfter): seconds, not the platform's
	// minute, so that events the tool functions record (they only record)
	// arrive while a demo or test waits.
	webhookRelayEvery = 2 * time.Second
	webhookRelayAfter = 5 * time.Second
)

// WebhookAdmin is the local user the stack's webhooks function takes for
// its only webhook admin (TOOLGATE_WEBHOOK_ADMINS): the same local user as
// CredentialAdmin, the platform's operator.
const WebhookAdmin = CredentialAdmin

// InboundOperator is the local user the stack's sources function takes
// for its only inbound operator (TOOLGATE_INBOUND_OPERATORS), who may
// manage sources and schedules: the platform's operator, CredentialAdmin.
const InboundOperator = CredentialAdmin

// StackOptions configure StartStack.
type StackOptions struct {
	// Dir receives the stack's files; default a new temporary directory.
	Dir string
	// Bootstraps maps function name to its bootstrap for the RIE; default:
	// every functions/<name>/main.go built for this machine.
	Bootstraps map[string]string
	// DataDir is served by the demo data server; default testdata/demo.
	DataDir string
	// DataHandler, when set, serves the data server instead of DataDir
	// (tests: an upstream that answers 503 twice, a queue).
	DataHandler http.Handler
	// DataPort is the demo data server's port on 127.0.0.1; default a
	// free port the system chooses (Stack.DataURL says which).
	DataPort int
	// Env adds variables to every function (tests: short leases).
	Env map[string]string
	// TeamFunctionTags, when not nil, are TeamFunction's tags instead of
	// TeamFunctionTags() (tests: a stricter floor, a bad tag value, no
	// stage tag). Stack.Lambda.SetTags changes them while the stack runs.
	TeamFunctionTags map[string]string
	// MCPAllow adds entries to the MCP allow-list of publish and mcp-call
	// (tests: another local MCP server's host and port).
	MCPAllow []string
	// HTTPAllow adds entries to the http allow-list of publish and http,
	// after the recording service's host and port (tests: the data
	// server's).
	HTTPAllow []string
	// SESEndpoint, when set, is given the SES v2 emulator's base URL and
	// returns the one send-email sends to instead (its
	// AWS_ENDPOINT_URL_SESV2). Tests: a proxy in front of the emulator
	// that answers one SendEmail with an SES error. Stack.SES stays the
	// emulator itself, whose store holds what was sent.
	SESEndpoint func(emulator string) string
	// WebhookAllow is the webhook functions' host allow-list
	// (TOOLGATE_WEBHOOK_ALLOW, hostlist entries): tests name their
	// receivers' 127.0.0.1:port, which plain http may reach through the
	// loopback exemption; the stack adds WebhookTestHost on the port of
	// each 127.0.0.1:port entry. A hostlist entry allows one port (or the
	// scheme's default), so a receiver must be listening before the stack
	// starts. nil: no endpoint may be subscribed.
	WebhookAllow []string
	// WebhookSchedule is the webhook retry schedule (webhook.ParseSchedule's
	// syntax) of both webhook functions and the deliveries queue's
	// maxReceiveCount; "": DefaultWebhookSchedule.
	WebhookSchedule string
	// Log receives progress lines; nil discards them.
	Log func(format string, args ...any)
}

// The local stack's allow-lists: send-email's recipients, and
// structured-data-fetch's hosts (its own data server) with its only address
// exemption, loopback; mcp-call's the same for its own MCP server, and
// http's for its own recording HTTP service. The publish function gets the
// same values, to check a Solution's literal URLs and recipients as the
// tools would, a toolset's http_hosts against http's list, and to list
// MCP servers at registration as mcp-call would reach them.
const (
	recipientAllow = "@example.com"
	// sender is send-email's From address, which the SES emulator takes;
	// review-request's notices come from it too.
	sender         = "toolgate-demo@example.com"
	fetchExemption = "127.0.0.1/32"
	mcpExemption   = "127.0.0.1/32"
	httpExemption  = "127.0.0.1/32"
)

// ReviewNotices is the local stack's notices allow-list
// (TOOLGATE_REVIEW_NOTICES on review-request, toolgate:reviewNotices on
// AWS): a review Task's notify addresses it admits receive the review's
// e-mail notice, which the SES emulator keeps.
const ReviewNotices = `["ops@example.com", "@reviewers.example.com"]`

// webhookExemption is the webhook functions' only address exemption from
// the special-address refusal, which also lets plain http reach it: the
// local stack's receivers on loopback (webhook.EndpointRules).
const webhookExemption = "127.0.0.1/32"

// allowLists are the local stack's host allow-lists that name services
// it started on ports chosen at start: the MCP servers' and http's, the
// webhook receivers' (StackOptions.WebhookAllow, webhookAllowList), and
// the webhook functions' own hosts, the endpoints of the functions served
// as Function URLs on AWS (TOOLGATE_WEBHOOK_OWN_HOSTS, ownHosts).
type allowLists struct{ mcp, http, webhook, webhookOwn string }

// functionEnv is each function's own configuration on the local stack;
// allow holds the MCP, http and webhook allow-lists.
func functionEnv(name string, s *Stack, dataAddr string, allow allowLists) map[string]string {
	switch name {
	case "send-email":
		return map[string]string{functionconfig.EnvSender: sender, functionconfig.EnvRecipientAllow: recipientAllow, "AWS_ENDPOINT_URL_SESV2": s.sesEndpoint}
	case "structured-data-fetch":
		return map[string]string{"TOOLGATE_FETCH_ALLOW": dataAddr, "TOOLGATE_FETCH_ALLOW_ADDRESSES": fetchExemption}
	case "http":
		// Its own allow-list, apart from fetch's: the recording service.
		// Credentials are opened with local-kms (docs/credentials.md).
		return map[string]string{functionconfig.EnvHTTPAllow: allow.http, functionconfig.EnvHTTPAllowAddresses: httpExemption, "AWS_ENDPOINT_URL_KMS": s.kmsEndpoint()}
	case "review-decision":
		// It hands review.decided to the events queue as it records it.
		// The platform's operator, CredentialAdmin, is the park operator
		// and the park decider: who may cancel any park, and approve or
		// reject an ungated step's (docs/parking.md); as the credential
		// admin, it also resumes a park of a toolset's or an end user's
		// credential. run.fork admits the runs of the stage's state
		// machines only, and waits 3 s after it stopped a running parent
		// (the functions' Init phase is local; docs/fork.md). A show of a
		// send-email review says From and each recipient's verdict with
		// send-email's own sender and allow-list (docs/reviews.md).
		return map[string]string{"AWS_ENDPOINT_URL_SFN": s.SFN.Endpoint(), "AWS_ENDPOINT_URL_SQS": s.sqsEndpoint(), webhookapi.EnvEventsQueue: s.WebhookQueues.Events.URL,
			"TOOLGATE_STAGE": Stage, "TOOLGATE_FORK_STOP_GRACE_SECONDS": "3",
			functionconfig.EnvSender: sender, functionconfig.EnvRecipientAllow: recipientAllow,
			park.EnvOperators:              `["` + local.LocalPrincipal(CredentialAdmin) + `"]`,
			park.EnvDeciders:               `["` + local.LocalPrincipal(CredentialAdmin) + `"]`,
			publishapi.EnvCredentialAdmins: `["` + local.LocalPrincipal(CredentialAdmin) + `"]`}
	case "webhooks", "webhook-delivery":
		// Both read the queues and the endpoint rules; webhooks seals
		// subscriptions' secrets under the stage's credentials key and
		// webhook-delivery opens them (docs/webhooks.md). Their own hosts
		// are the Function-URL functions' endpoints, each 127.0.0.1 and
		// its port (a host:port refuses that origin only, so receivers on
		// other ports stay allowed); both refuse all three, the webhooks
		// function its own endpoint too. WebhookTestHost resolves from
		// the stack's resolve file.
		return map[string]string{"AWS_ENDPOINT_URL_SQS": s.sqsEndpoint(), "AWS_ENDPOINT_URL_KMS": s.kmsEndpoint(), webhookapi.EnvKey: s.kmsKey(),
			webhookapi.EnvEventsQueue: s.WebhookQueues.Events.URL, webhookapi.EnvDeliveriesQueue: s.WebhookQueues.Deliveries.URL,
			webhookapi.EnvDeliveriesDLQ: s.WebhookQueues.DeliveriesDLQ.URL, webhookapi.EnvEventsDLQ: s.WebhookQueues.EventsDLQ.URL, webhookapi.EnvSchedule: s.webhookSchedule,
			webhookapi.EnvAllow: allow.webhook, webhookapi.EnvAllowAddresses: webhookExemption, webhookapi.EnvRelayAfter: webhookRelayAfter.String(),
			webhookapi.EnvOwnHosts: allow.webhookOwn, webhookapi.EnvResolveFile: s.WebhookResolveFile,
			webhookapi.EnvAdmins: `["` + local.LocalPrincipal(WebhookAdmin) + `"]`}
	case "sources":
		// Source secrets are sealed under the stage's credentials key in
		// local-kms, for webhook-receiver to open; dlq list and redrive
		// read the inbound queues. No EventBridge Scheduler: schedules are
		// items, which the stack's ticker fires (docs/schedules.md).
		return map[string]string{"AWS_ENDPOINT_URL_KMS": s.kmsEndpoint(), inboundapi.EnvKey: s.kmsKey(),
			"AWS_ENDPOINT_URL_SQS": s.sqsEndpoint(), inboundapi.EnvQueue: s.InboundQueues.Queue.URL, inboundapi.EnvDLQ: s.InboundQueues.DLQ.URL,
			inboundapi.EnvOperators: `["` + local.LocalPrincipal(InboundOperator) + `"]`}
	case receiverFunction:
		return s.receiverEnv()
	case "publish":
		// The platform's parameters from the SSM stand-in, as on AWS (the
		// CLI reads the same values from the parameters file).
		// Registration reads platform tools' floors through the Lambda
		// stand-in.
		return map[string]string{"AWS_ENDPOINT_URL_SFN": s.SFN.Endpoint(), "TOOLGATE_STAGE": Stage, "AWS_ENDPOINT_URL_SSM": s.SSM.Endpoint(), "AWS_ENDPOINT_URL_LAMBDA": s.Lambda.Endpoint(),
			"TOOLGATE_FETCH_ALLOW": dataAddr, "TOOLGATE_FETCH_ALLOW_ADDRESSES": fetchExemption, "TOOLGATE_RECIPIENT_ALLOW": recipientAllow,
			functionconfig.EnvHTTPAllow: allow.http, functionconfig.EnvHTTPAllowAddresses: httpExemption,
			"TOOLGATE_MCP_ALLOW": allow.mcp, "TOOLGATE_MCP_ALLOW_ADDRESSES": mcpExemption, "TOOLGATE_MCP_RESOLVE_FILE": s.MCPResolveFile,
			enduser.EnvKeyParam: functionconfig.EndUserKeyParam(Stage), enduser.EnvMapping: LocalEndUserMapping,
			// Credentials are sealed under the stage's key in local-kms;
			// local user CredentialAdmin is the credential admin.
			"AWS_ENDPOINT_URL_KMS": s.kmsEndpoint(), publishapi.EnvCredentialKey: s.kmsKey(),
			publishapi.EnvCredentialAdmins: `["` + local.LocalPrincipal(CredentialAdmin) + `"]`}
	case "mcp-call":
		// Its own MCP server only, on loopback; the tool list is kept as
		// long as on AWS by default.
		return map[string]string{"TOOLGATE_MCP_ALLOW": allow.mcp, "TOOLGATE_MCP_ALLOW_ADDRESSES": mcpExemption, "TOOLGATE_MCP_SCHEMA_TTL_SECONDS": "5",
			"TOOLGATE_MCP_RESOLVE_FILE": s.MCPResolveFile, "AWS_ENDPOINT_URL_KMS": s.kmsEndpoint()}
	case "lambda-tool":
		// The proxy resolves ${FunctionCreateTicket} from the SSM stand-in,
		// reads create-ticket's floor and invokes it through the Lambda
		// stand-in.
		return map[string]string{"TOOLGATE_STAGE": Stage, "AWS_ENDPOINT_URL_SSM": s.SSM.Endpoint(), "AWS_ENDPOINT_URL_LAMBDA": s.Lambda.Endpoint()}
	case "review-request":
		// Any local user may decide a direct-lane review of send-email or
		// of an http write, except its requester.
		// Step Functions: a child run's start is checked against the
		// version its execution runs. The start lane records starts of
		// the stage's state machines only.
		anyone := `["` + local.LocalPrincipal("*") + `"]`
		// The stage's external key, which provisionSecrets creates: the
		// trace ids of runs given no trace context are derived under it.
		// The stage's end-user key and the local end-user mapping
		// (LocalEndUserMapping).
		return map[string]string{"TOOLGATE_DIRECT_REVIEWERS": `{"http": ` + anyone + `, "send-email": ` + anyone + `}`, "AWS_ENDPOINT_URL_SFN": s.SFN.Endpoint(),
			"TOOLGATE_STAGE": Stage, "AWS_ENDPOINT_URL_SSM": s.SSM.Endpoint(), functionconfig.EnvExternalKeyParam: functionconfig.ExternalKeyParam(Stage),
			enduser.EnvKeyParam: functionconfig.EndUserKeyParam(Stage), enduser.EnvMapping: LocalEndUserMapping,
			// It hands review.requested to the events queue as it records
			// it (docs/webhooks.md).
			"AWS_ENDPOINT_URL_SQS": s.sqsEndpoint(), webhookapi.EnvEventsQueue: s.WebhookQueues.Events.URL,
			// Review notices (docs/reviews.md, "Review notices"): from
			// send-email's sender, to ReviewNotices only, through the SES
			// emulator itself (never StackOptions.SESEndpoint's proxy,
			// whose refusal is send-email's).
			functionconfig.EnvReviewNotices: ReviewNotices, functionconfig.EnvNoticeSender: sender,
			"AWS_ENDPOINT_URL_SESV2": s.SES.Endpoint(),
			// Starts of inbound events and schedule firings come from
			// sessions of the inbound-start role (inboundstart.go).
			inboundapi.EnvRole: InboundRoleARN()}
	case InboundStartFunction:
		return s.inboundStartEnv()
	}
	return nil
}

// mcpAllowList is the MCP allow-list of publish and mcp-call: the local MCP
// server's host and port, and MCPTestHost on that port (without a port an
// entry allows only 80 and 443, as the http tool's), and more.
func mcpAllowList(srv *mcpserver.Server, more []string) string {
	u, err := toolset.ParseMCPURL(srv.URL())
	if err != nil {
		panic("the local MCP server's URL: " + err.Error()) // mcpserver writes it
	}
	return strings.Join(append([]string{u.Parsed.Host, MCPTestHost + ":" + u.Port}, more...), ",")
}

// kmsEndpoint is local-kms's endpoint, "" before it started (a Stack
// value built by a test to read functionEnv).
func (s *Stack) kmsEndpoint() string {
	if s.KMS == nil {
		return ""
	}
	return s.KMS.Endpoint()
}

// sqsEndpoint is the SQS stand-in's endpoint, "" before it started.
func (s *Stack) sqsEndpoint() string {
	if s.SQS == nil {
		return ""
	}
	return s.SQS.Endpoint()
}

// kmsKey is the stage's credentials key in local-kms, "" before it
// started.
func (s *Stack) kmsKey() string {
	if s.KMS == nil {
		return ""
	}
	return s.KMS.KeyARN
}

// hostOf is srv's host and port, as an allow-list entry.
func hostOf(srv *mcpserver.Server) string {
	u, err := toolset.ParseMCPURL(srv.URL())
	if err != nil {
		panic("a local MCP server's URL: " + err.Error()) // mcpserver writes it
	}
	return u.Parsed.Host
}

// MCPTestURL is the local MCP server's URL by MCPTestHost:
// http://mcp.internal.test:<port>/mcp.
func (s *Stack) MCPTestURL() string {
	u, err := toolset.ParseMCPURL(s.MCP.URL())
	if err != nil {
		panic("the local MCP server's URL: " + err.Error()) // mcpserver writes it
	}
	u.Parsed.Host = MCPTestHost + ":" + u.Port
	return u.Parsed.String()
}

// ResolveMCPTestHost makes MCPTestHost resolve to addrs (IP addresses) for
// publish and mcp-call from their next request on.
func (s *Stack) ResolveMCPTestHost(addrs ...string) error {
	line := MCPTestHost + "=" + strings.Join(addrs, ",")
	if _, err := fetch.ParseResolve([]string{line}); err != nil {
		return err
	}
	tmp := s.MCPResolveFile + ".tmp"
	if err := os.WriteFile(tmp, []byte("# "+MCPTestHost+" for publish and mcp-call (TOOLGATE_MCP_RESOLVE_FILE)\n"+line+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, s.MCPResolveFile)
}

// laned are the functions with an sfn and a direct lane: every function
// with both aliases on AWS (infra/functions.go). The webhook functions
// have none: Step Functions never invokes them.
func laned(name string) bool {
	switch name {
	case "review-decision", "publish", "webhooks", "webhook-delivery", "sources":
		return false
	case InboundStartFunction:
		return false
	}
	return name != receiverFunction
}

// lanesOf are the RIE instances of a function, by lane ("" a function
// without lanes): review-request has a third, the start lane toolgate run
// records a run's start through (its start alias on AWS).
func lanesOf(name string) []string {
	switch {
	case name == "review-request":
		return []string{"direct", "sfn", "start"}
	case laned(name):
		return []string{"direct", "sfn"}
	}
	return []string{""}
}

// StartStack starts everything and writes the parameters file. On error
// everything already started is stopped.
func StartStack(ctx context.Context, o StackOptions) (s *Stack, err error) {
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	root, err := local.Root()
	if err != nil {
		return nil, err
	}
	s = &Stack{Functions: map[string]*local.Process{}, Endpoints: map[string]string{}, SFNEndpoints: map[string]string{}}
	started := s // a failing return sets s to nil
	defer func() {
		if err != nil {
			started.Stop()
		}
	}()
	if s.Dir = o.Dir; s.Dir == "" {
		if s.Dir, err = os.MkdirTemp("", "toolgate-local-"); err != nil {
			return nil, err
		}
	}
	dataDir := o.DataDir
	if dataDir == "" {
		dataDir = filepath.Join(root, "testdata", "demo")
	}
	// Port 0 lets the system choose a free port; the listener is held
	// from here on, so no other process can take it in between.
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(o.DataPort))
	if err != nil {
		return nil, fmt.Errorf("the demo data server: %w", err)
	}
	dataAddr := ln.Addr().String()
	handler := o.DataHandler
	if handler == nil {
		handler = http.FileServer(http.Dir(dataDir))
	}
	s.data = &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go s.data.Serve(ln)
	s.DataURL = "http://" + dataAddr
	logf("data server  %s (serves %s)", s.DataURL, dataDir)

	if s.Dynamo, err = local.StartDynalite(ctx); err != nil {
		return nil, err
	}
	s.procs = append(s.procs, s.Dynamo)
	db := local.DynamoDB(s.Dynamo.Endpoint())
	if err := dynamo.CreateTable(ctx, db, Table); err != nil {
		return nil, err
	}
	logf("dynalite     %s (table %s)", s.Dynamo.Endpoint(), Table)
	if s.SES, err = local.StartSES(ctx); err != nil {
		return nil, err
	}
	s.procs = append(s.procs, s.SES)
	logf("SES v2       %s", s.SES.Endpoint())
	if s.sesEndpoint = s.SES.Endpoint(); o.SESEndpoint != nil {
		s.sesEndpoint = o.SESEndpoint(s.sesEndpoint)
		logf("send-email reaches SES v2 at %s", s.sesEndpoint)
	}

	if s.Keys, err = local.NewLocalKeys(); err != nil {
		return nil, err
	}
	s.KeysFile = filepath.Join(s.Dir, "local-keys")
	if err := s.Keys.Save(s.KeysFile); err != nil {
		return nil, err
	}
	if s.STS, err = local.StartSTS(s.Keys); err != nil {
		return nil, err
	}
	logf("STS stand-in %s (keys in %s)", s.STS.Endpoint(), s.KeysFile)
	if s.SSM, err = local.StartSSM(nil); err != nil {
		return nil, err
	}
	logf("SSM stand-in %s", s.SSM.Endpoint())
	if s.KMS, err = kms.Start(ctx, kms.Options{Stage: Stage}); err != nil {
		return nil, err
	}
	logf("local-kms    %s (key %s, %s)", s.KMS.Endpoint(), s.KMS.KeyARN, s.KMS.Alias)
	if s.Lambda, err = local.StartLambdaRouter(nil); err != nil {
		return nil, err
	}
	s.Lambda.RequireTag(platformtool.TagTool, Stage)
	logf("Lambda stand-in %s (Invoke, ListTags)", s.Lambda.Endpoint())
	if s.Traces, err = otlpreceiver.Start(); err != nil {
		return nil, fmt.Errorf("the trace receiver: %w", err)
	}
	logf("trace receiver %s%s (OTLP/HTTP)", s.Traces.URL(), otlpreceiver.TracesPath)
	if err := s.startTeamFunction(ctx, root, logf); err != nil {
		return nil, err
	}
	teamTags := o.TeamFunctionTags
	if teamTags == nil {
		teamTags = TeamFunctionTags()
	}
	s.Lambda.SetTags(TeamFunction, teamTags)
	logf("team function %s tags %v", TeamFunction, teamTags)
	// The MCP server continues each call's trace, as a traced server
	// would: its spans go to the stack's receiver.
	if s.MCP, err = mcpserver.Start(mcpserver.Options{Stateless: true, Hosts: []string{MCPTestHost},
		Tracer: tracing.New(s.Traces.URL(), "mcpserver", nil)}); err != nil {
		return nil, fmt.Errorf("the local MCP server: %w", err)
	}
	s.MCPResolveFile = filepath.Join(s.Dir, "mcp-resolve")
	if err := s.ResolveMCPTestHost("127.0.0.1"); err != nil {
		return nil, err
	}
	s.WebhookResolveFile = filepath.Join(s.Dir, "webhook-resolve")
	if err := s.ResolveWebhookTestHost("127.0.0.1"); err != nil {
		return nil, err
	}
	logf("MCP server   %s (and %s)", s.MCP.URL(), s.MCPTestURL())
	nobody := make([]byte, 16)
	if _, err := rand.Read(nobody); err != nil {
		return nil, err
	}
	if s.MCPAuth, err = mcpserver.Start(mcpserver.Options{Stateless: true, BearerTokens: []string{hex.EncodeToString(nobody)},
		Tracer: tracing.New(s.Traces.URL(), "mcpserver-auth", nil)}); err != nil {
		return nil, fmt.Errorf("the local MCP server with bearer tokens: %w", err)
	}
	logf("MCP server   %s (bearer tokens required)", s.MCPAuth.URL())
	if s.HTTP, err = httprecorder.Start(httprecorder.Options{}); err != nil {
		return nil, fmt.Errorf("the recording HTTP service: %w", err)
	}
	logf("HTTP service %s (records what it receives)", s.HTTP.URL())
	allow := allowLists{mcp: mcpAllowList(s.MCP, append([]string{hostOf(s.MCPAuth)}, o.MCPAllow...)), http: strings.Join(append([]string{s.HTTP.Host()}, o.HTTPAllow...), ","),
		webhook: webhookAllowList(o.WebhookAllow)}
	if err := s.startWebhookQueues(ctx, o, logf); err != nil {
		return nil, err
	}
	if err := s.startInboundQueues(ctx, logf); err != nil {
		return nil, err
	}

	bootstraps := o.Bootstraps
	if bootstraps == nil {
		if bootstraps, err = BuildAll(ctx, root, filepath.Join(s.Dir, "functions")); err != nil {
			return nil, err
		}
	}
	functionsFile := filepath.Join(s.Dir, "functions.json")
	if err := writeJSON(functionsFile, map[string]string{}); err != nil {
		return nil, err
	}
	s.SFNFaultsFile = filepath.Join(s.Dir, "sfn-faults.json")
	if s.SFN, err = local.StartSFNWith(ctx, local.SFNOptions{FunctionsFile: functionsFile, FaultsFile: s.SFNFaultsFile,
		EventsQueue: s.WebhookQueues.Events.URL}); err != nil {
		return nil, err
	}
	s.procs = append(s.procs, s.SFN)
	logf("Step Functions %s", s.SFN.Endpoint())

	names := make([]string, 0, len(bootstraps))
	for n := range bootstraps {
		names = append(names, n)
	}
	sort.Strings(names)
	// inbound-start names review-request's start instance: it starts last.
	if i := slices.Index(names, InboundStartFunction); i >= 0 {
		names = append(slices.Delete(names, i, i+1), InboundStartFunction)
	}
	urls := map[string]string{}
	params := map[string]string{
		"/toolgate/" + Stage + "/table/name":                  Table,
		"/toolgate/" + Stage + "/role/solution-execution/arn": ExecRoleARN,
	}
	// The parameters are known before the functions start (their ARNs
	// are the local stack's fixed names): the publish function reads them.
	params[toolset.ToolFunctionParam(Stage, TeamFunctionKey)] = FunctionARN(TeamFunction)
	for _, name := range names {
		params["/toolgate/"+Stage+"/function/"+name+"/arn"] = FunctionARN(name)
		if laned(name) {
			params["/toolgate/"+Stage+"/function/"+name+"/arn"] = FunctionARN(name) + ":sfn"
		}
	}
	s.ParamsFile = filepath.Join(s.Dir, "params.json")
	if err := s.writeParams(params); err != nil {
		return nil, err
	}
	secretEnv, err := s.provisionSecrets(ctx, names)
	if err != nil {
		return nil, err
	}
	// The proxies of the functions served as Function URLs on AWS listen
	// before any function starts: the webhook functions refuse their
	// endpoints as their own hosts.
	functionURLs, err := reserveFunctionURLs(names)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, ln := range functionURLs { // left by a start that failed
			ln.Close()
		}
	}()
	allow.webhookOwn = ownHosts(functionURLs)
	for _, name := range names {
		vars := map[string]string{"TOOLGATE_TABLE": Table, "AWS_ENDPOINT_URL_DYNAMODB": s.Dynamo.Endpoint(), "TOOLGATE_FUNCTION_TIMEOUT_SECONDS": "60",
			// The local stack's only exemption from https: the STS stand-in.
			"TOOLGATE_STS_ENDPOINT": s.STS.Endpoint(), "TOOLGATE_STS_ALLOW_HTTP": "true",
			// The local stack's account: proofs of any other account's
			// principals are refused.
			"TOOLGATE_ACCOUNT":        local.LocalAccountID,
			functionconfig.EnvTracing: s.tracing()}
		roles, inboundRole := sessionRolesEnv()
		vars[roles] = inboundRole
		for k, v := range functionEnv(name, s, dataAddr, allow) {
			vars[k] = v
		}
		for k, v := range secretEnv[name] {
			vars[k] = v
		}
		for k, v := range o.Env {
			vars[k] = v
		}
		for _, l := range lanesOf(name) {
			v := vars
			label := name
			if l != "" {
				v = map[string]string{"TOOLGATE_LANE": l}
				for k, x := range vars {
					v[k] = x
				}
				label = name + ":" + l
			}
			p, err := local.StartRIE(ctx, label, bootstraps[name], 60*time.Second, v)
			if err != nil {
				return nil, err
			}
			s.procs = append(s.procs, p)
			var ln net.Listener
			if l == "" {
				ln = functionURLs[name]
				delete(functionURLs, name)
			}
			endpoint, err := s.serialiseOn(p, ln)
			if err != nil {
				return nil, err
			}
			switch l {
			case "sfn":
				s.SFNEndpoints[name] = endpoint
			case "start":
				s.StartEndpoint = endpoint
				params[deployment.StartFunctionParam(Stage)] = endpoint
			default:
				s.Functions[name] = p
				s.Endpoints[name] = endpoint
			}
			logf("function     %-29s %s", label, endpoint)
		}
		sfnEndpoint := s.Endpoints[name]
		if e, ok := s.SFNEndpoints[name]; ok {
			sfnEndpoint = e
		}
		urls[name] = sfnEndpoint + "/2015-03-31/functions/function/invocations"
	}
	if e, ok := s.Endpoints["review-decision"]; ok {
		params["/toolgate/"+Stage+"/review-decision/url"] = e
	}
	if err := writeJSON(functionsFile, urls); err != nil {
		return nil, err
	}
	if e, ok := s.Endpoints["publish"]; ok {
		params[deployment.PublishURLParam(Stage)] = e
	}
	if err := s.writeParams(params); err != nil {
		return nil, err
	}
	if e, ok := s.Endpoints["webhook-delivery"]; ok {
		s.startWebhookPollers(e+local.InvokePath, logf)
	}
	if e, ok := s.Endpoints[receiverFunction]; ok {
		if err := s.startReceiver(ctx, e, logf); err != nil {
			return nil, err
		}
	}
	if e, ok := s.Endpoints[InboundStartFunction]; ok {
		if err := s.startInboundStart(e+local.InvokePath, logf); err != nil {
			return nil, err
		}
	}
	s.EnvFile = filepath.Join(s.Dir, "env.sh")
	env := []string{
		"export TOOLGATE_STAGE=" + Stage,
		"export TOOLGATE_PARAMS_FILE=" + s.ParamsFile,
		"export TOOLGATE_TABLE=" + Table,
		"export AWS_ENDPOINT_URL_DYNAMODB=" + s.Dynamo.Endpoint(),
		"export AWS_ENDPOINT_URL_SFN=" + s.SFN.Endpoint(),
		"export AWS_REGION=" + local.Region,
		"export AWS_ACCESS_KEY_ID=" + local.FakeAccessKeyID,
		"export AWS_SECRET_ACCESS_KEY=" + local.FakeSecretAccessKey,
		"export AWS_ENDPOINT_URL_STS=" + s.STS.Endpoint(),
		"export TOOLGATE_LOCAL_KEYS=" + s.KeysFile,
		"export " + functionconfig.EnvTracing + "=" + s.tracing(),
	}
	if err := os.WriteFile(s.EnvFile, []byte(strings.Join(env, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	return s, nil
}

// Processes are every process the stack started (dynalite, the
// emulators, each function's RIE instance of every lane): tests read their
// logs (Process.Stdout, Stderr).
func (s *Stack) Processes() []*local.Process { return slices.Clone(s.procs) }

// CredentialAdmin is the local user the stack's publish function takes
// for its only credential admin (TOOLGATE_CREDENTIAL_ADMINS): it may set
// toolset-scope credentials and allow toolset ids for them.
const CredentialAdmin = "ops"

// LocalEndUserMapping is the local stack's end-user mapping
// (shared/enduser Parse): local user demo may act for end users named
// customer-*, and nobody else for anyone, so that tests show both a
// recorded end user and a skipped one.
var LocalEndUserMapping = `[{"principal": "` + local.LocalPrincipal("demo") + `", "endUser": "customer-*"}]`

// sealing reports whether function runs the dispatcher, and so seals its
// call items with its own key (functionconfig.ToolFunctions).
func sealing(function string) bool { return slices.Contains(functionconfig.ToolFunctions, function) }

// provisionSecrets creates, in the SSM stand-in, each sealing function's
// own MAC key among names, the stage's external key and its since time,
// as the deploy's provisioning function does (secrets.Ensure), and
// returns each such function's environment naming them.
func (s *Stack) provisionSecrets(ctx context.Context, names []string) (map[string]map[string]string, error) {
	p := secrets.Provision{Secrets: []string{functionconfig.ExternalKeyParam(Stage), functionconfig.EndUserKeyParam(Stage)}, Since: functionconfig.SinceParam(Stage), Now: time.Now()}
	env := map[string]map[string]string{}
	for _, name := range names {
		if !sealing(name) {
			continue
		}
		n := functionconfig.SecretNamesFor(Stage, name)
		p.Secrets = append(p.Secrets, n.MAC)
		env[name] = map[string]string{"AWS_ENDPOINT_URL_SSM": s.SSM.Endpoint(), functionconfig.EnvMACParam: n.MAC, functionconfig.EnvExternalKeyParam: n.ExternalKey, functionconfig.EnvSinceParam: n.Since}
	}
	if _, err := secrets.Ensure(ctx, s.ssmClient(), p); err != nil {
		return nil, fmt.Errorf("the functions' ledger secrets: %w", err)
	}
	return env, nil
}

// ssmClient is a client of the stack's SSM stand-in.
func (s *Stack) ssmClient() *ssm.Client {
	return ssm.New(ssm.Options{Region: local.Region, BaseEndpoint: aws.String(s.SSM.Endpoint()),
		Credentials: credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")})
}

// LedgerSecrets reads function's ledger secrets from the stack's SSM
// stand-in as the function reads them at cold start (secrets.Load): its
// own MAC key, the stage's external key secret and since time. function
// must run the dispatcher (functionconfig.ToolFunctions); the error names a missing
// parameter, never a value. Tests compute the external keys the functions
// send with it (externalkey.New on Ledger.ExternalKey).
func (s *Stack) LedgerSecrets(ctx context.Context, function string) (secrets.Ledger, error) {
	if !sealing(function) {
		return secrets.Ledger{}, fmt.Errorf("%s has no ledger secrets: it runs no dispatcher", function)
	}
	return secrets.Load(ctx, s.ssmClient(), functionconfig.SecretNamesFor(Stage, function))
}

// writeParams writes the parameters file and puts every parameter into
// the SSM stand-in.
func (s *Stack) writeParams(params map[string]string) error {
	for k, v := range params {
		s.SSM.Set(k, v)
	}
	return writeJSON(s.ParamsFile, params)
}

// startTeamFunction starts the ticket service and the example team
// function (TeamFunction, built from examples/create-ticket) under its own
// RIE, behind a one-at-a-time proxy, and routes the Lambda stand-in's
// TeamFunction to it.
func (s *Stack) startTeamFunction(ctx context.Context, root string, logf func(string, ...any)) error {
	s.Tickets = ticketservice.New()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.tickets = &http.Server{Handler: s.Tickets, ReadHeaderTimeout: 5 * time.Second}
	go s.tickets.Serve(ln)
	s.TicketsURL = "http://" + ln.Addr().String()
	logf("ticket service %s", s.TicketsURL)
	bs := filepath.Join(s.Dir, "team", TeamFunction, "bootstrap")
	if err := local.BuildBootstrap(ctx, filepath.Join(root, "examples", TeamFunction), bs); err != nil {
		return err
	}
	p, err := local.StartRIE(ctx, TeamFunction, bs, 30*time.Second, map[string]string{"TICKETS_URL": s.TicketsURL, functionconfig.EnvTracing: s.tracing()})
	if err != nil {
		return err
	}
	s.procs = append(s.procs, p)
	endpoint, err := s.serialise(p)
	if err != nil {
		return err
	}
	s.Functions[TeamFunction], s.Endpoints[TeamFunction] = p, endpoint
	s.Lambda.Add(TeamFunction, endpoint+local.InvokePath)
	logf("team function %-28s %s (%s)", TeamFunction, endpoint, FunctionARN(TeamFunction))
	return nil
}

// serialise starts a proxy on a free 127.0.0.1 port that forwards to the
// function's RIE one request at a time, and returns its base URL.
func (s *Stack) serialise(p *local.Process) (string, error) {
	return s.serialiseOn(p, nil)
}

// serialiseOn is serialise on ln, a listener reserved before the function
// started (reserveFunctionURLs); nil: a free port.
func (s *Stack) serialiseOn(p *local.Process, ln net.Listener) (string, error) {
	target, err := url.Parse(p.Endpoint())
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return "", err
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	// A caller that went away (a poller or ticker stopped with the stack)
	// is no error worth a line; others are logged as the default handler
	// logs them.
	proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if !errors.Is(err, context.Canceled) {
			log.Printf("http: proxy error: %v", err)
		}
		w.WriteHeader(http.StatusBadGateway)
	}
	var mu sync.Mutex
	if ln == nil {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return "", err
		}
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		proxy.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	s.proxies = append(s.proxies, srv)
	return "http://" + ln.Addr().String(), nil
}

// Environ returns the environment a CLI on the local stack runs with: the
// variables its env.sh exports, by name. Tests give it to the CLI as its
// cli.Env (Getenv, and local.AWSConfigLoader for the AWS configuration)
// instead of setting the process's environment.
func (s *Stack) Environ() map[string]string {
	return map[string]string{
		"TOOLGATE_STAGE":            Stage,
		"TOOLGATE_PARAMS_FILE":      s.ParamsFile,
		"TOOLGATE_TABLE":            Table,
		"AWS_ENDPOINT_URL_DYNAMODB": s.Dynamo.Endpoint(),
		"AWS_ENDPOINT_URL_SFN":      s.SFN.Endpoint(),
		"AWS_REGION":                local.Region,
		"AWS_ACCESS_KEY_ID":         local.FakeAccessKeyID,
		"AWS_SECRET_ACCESS_KEY":     local.FakeSecretAccessKey,
		"AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ENDPOINT_URL_STS":      s.STS.Endpoint(),
		"TOOLGATE_LOCAL_KEYS":       s.KeysFile,
		functionconfig.EnvTracing:   s.tracing(),
	}
}

// tracing is the TOOLGATE_TRACING value that exports to Traces
// (functionconfig.ParseTracing); off before Traces has started.
func (s *Stack) tracing() string {
	if s.Traces == nil {
		return functionconfig.TracingOff
	}
	return "otlp:" + s.Traces.URL()
}

// Stop stops everything the stack started, in reverse order: the webhook
// queues' pollers first, while the function they invoke still runs. Its
// error includes a poller's that ended on an error of its own.
func (s *Stack) Stop() error {
	var errs []error
	s.stopInboundStart()
	if s.stopPollers != nil {
		s.stopPollers()
		s.pollers.Wait()
		s.stopPollers = nil
		s.pollerMu.Lock()
		errs = append(errs, s.pollerErrs...)
		s.pollerErrs = nil
		s.pollerMu.Unlock()
	}
	if err := s.stopReceiver(); err != nil {
		errs = append(errs, fmt.Errorf("stop the webhook receiver's front: %w", err))
	}
	for i := len(s.procs) - 1; i >= 0; i-- {
		if err := s.procs[i].Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	s.procs = nil
	if s.STS != nil {
		s.STS.Close()
		s.STS = nil
	}
	if s.SSM != nil {
		s.SSM.Close()
		s.SSM = nil
	}
	if s.Lambda != nil {
		s.Lambda.Close()
		s.Lambda = nil
	}
	if s.KMS != nil {
		if err := s.KMS.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop local-kms: %w", err))
		}
		s.KMS = nil
	}
	if s.tickets != nil {
		s.tickets.Close()
		s.tickets = nil
	}
	if s.HTTP != nil {
		s.HTTP.Close()
		s.HTTP = nil
	}
	if s.Traces != nil {
		s.Traces.Close() // kept: its spans stay readable
	}
	if s.MCP != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := s.MCP.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop the local MCP server: %w", err))
		}
		cancel()
		s.MCP = nil
	}
	if s.MCPAuth != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := s.MCPAuth.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop the local MCP server with bearer tokens: %w", err))
		}
		cancel()
		s.MCPAuth = nil
	}
	for _, p := range s.proxies {
		p.Close()
	}
	s.proxies = nil
	if s.data != nil {
		s.data.Close()
		s.data = nil
	}
	return errors.Join(errs...)
}

// BuildAll builds every functions/<name>/main.go for the RIE into
// dir/<name>/bootstrap.
func BuildAll(ctx context.Context, root, dir string) (map[string]string, error) {
	mains, _ := filepath.Glob(filepath.Join(root, "functions", "*", "main.go"))
	out := map[string]string{}
	for _, m := range mains {
		name := filepath.Base(filepath.Dir(m))
		bs := filepath.Join(dir, name, "bootstrap")
		if err := local.BuildBootstrap(ctx, filepath.Dir(m), bs); err != nil {
			return nil, err
		}
		out[name] = bs
	}
	return out, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
