package inboundapi

import (
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/publishapi"
)

// Environment of the inbound functions (docs/webhooks.md, "Receiving
// events"). Queue variables hold SQS queue URLs unless they say ARN.
const (
	// EnvTable is the ledger table, which holds sources, schedules and
	// inbound events (all three functions: required).
	EnvTable = publishapi.EnvTable
	// EnvQueue is the inbound queue's URL (webhook-receiver: required).
	EnvQueue = "TOOLGATE_INBOUND_QUEUE"
	// EnvDLQ is the inbound queue's dead-letter queue's URL, which dlq list
	// and dlq redrive read (sources: required).
	EnvDLQ = "TOOLGATE_INBOUND_DLQ"
	// EnvKey names the KMS key source secrets are sealed under: the
	// credentials' key, under the purpose webhook-source (sources:
	// required; webhook-receiver opens with it).
	EnvKey = publishapi.EnvCredentialKey
	// EnvOperators is a JSON list of IAM principal ARN patterns of the
	// function's own account who may manage sources and schedules
	// (caller.ActionSourcesManage, caller.ActionSchedulesManage), the
	// platform configuration's inboundOperators. Unset or []: nobody.
	EnvOperators = "TOOLGATE_INBOUND_OPERATORS"
	// EnvRole is the inbound-start role's ARN
	// (arn:aws:iam::<account>:role/toolgate-<stage>-inbound-start), the
	// verified starter of inbound and scheduled runs (inbound-start and
	// review-request: required; docs/identity.md, "Four eyes").
	EnvRole = "TOOLGATE_INBOUND_ROLE"
	// EnvRetentionDays is how long an inbound event item is kept, in days
	// (its expires_at): MinRetentionDays to MaxRetentionDays; unset:
	// DefaultRetentionDays (webhook-receiver, inbound-start).
	EnvRetentionDays = "TOOLGATE_INBOUND_RETENTION_DAYS"
	// EnvRelayAfter is how long an event may stay RECEIVED before
	// webhook-receiver's relay queues it (a Go duration; unset:
	// DefaultRelayAfter). It must be well past a delivery's
	// put-then-send, so that the relay does not race a receiver that is
	// only slow.
	EnvRelayAfter = "TOOLGATE_INBOUND_RELAY_AFTER"
	// EnvSecretCache is how long webhook-receiver keeps a source's opened
	// secrets per container (a Go duration; unset: DefaultSecretCache): a
	// rotation or removal takes effect within it.
	EnvSecretCache = "TOOLGATE_INBOUND_SECRET_CACHE"
	// EnvSchedulerGroup, EnvSchedulerRole and EnvQueueARN are, on AWS
	// only, the EventBridge Scheduler schedule group (toolgate-<stage>),
	// the role the schedules pass to send to the inbound queue, and that
	// queue's ARN, their target (sources). Unset: schedules are items
	// only, and the local stack's ticker fires them.
	EnvSchedulerGroup = "TOOLGATE_SCHEDULER_GROUP"
	EnvSchedulerRole  = "TOOLGATE_SCHEDULER_ROLE"
	EnvQueueARN       = "TOOLGATE_INBOUND_QUEUE_ARN"
	// EnvDLQARN is the inbound dead-letter queue's ARN: a schedule's
	// DeadLetterConfig on AWS (sources).
	EnvDLQARN = "TOOLGATE_INBOUND_DLQ_ARN"
	// EnvStage and EnvAccount name the stage's state machines
	// (toolgate-<stage>_<solution>) and their ARNs, with AWS_REGION
	// (inbound-start: required).
	EnvStage   = publishapi.EnvStage
	EnvAccount = caller.EnvAccount
	// EnvRunStartFunction is review-request's start alias ARN, which
	// inbound-start invokes to record a run's start (inbound-start:
	// required when a Solution begins with the Starter state).
	EnvRunStartFunction = "TOOLGATE_RUN_START_FUNCTION"
	// EnvExternalKeyParam is the stage's external key parameter, from
	// which inbound-start derives the key of execution names
	// (ExecutionNameKeyInfo).
	EnvExternalKeyParam = functionconfig.EnvExternalKeyParam
)

// Defaults and bounds of the environment.
const (
	DefaultRetentionDays = 90
	MinRetentionDays     = 3
	MaxRetentionDays     = 400
	// DefaultRelayAfter is EnvRelayAfter's default: two minutes, past
	// the relay schedule's one-minute period.
	DefaultRelayAfter = 2 * time.Minute
	// DefaultSecretCache is EnvSecretCache's default.
	DefaultSecretCache = 5 * time.Minute
)

// ExecutionNameKeyInfo is what inbound-start MACs under the stage's
// external key to get the key of inbound.ExecutionName: HMAC-SHA256(
// external key, ExecutionNameKeyInfo). A label of its own separates the
// use (domain separation) without a new secret.
const ExecutionNameKeyInfo = "toolgate inbound execution names v1"

// Body bounds of the receiver (docs/webhooks.md, "Receiving events").
const (
	// MaxBodyBytes is the hard cap on a delivery's body, 200 KiB: a longer
	// one is refused (413) before its source is looked up. A source's
	// max_body_bytes is 1 to MaxBodyBytes.
	MaxBodyBytes = 200 << 10
	// DefaultMaxBodyBytes is a source's max_body_bytes when it is added
	// without one: 64 KiB.
	DefaultMaxBodyBytes = 64 << 10
	// MaxScheduleInputBytes bounds a schedule's input JSON: 32 KiB.
	MaxScheduleInputBytes = 32 << 10
)

// ReceiverRoutePrefix is the receiver's route: POST /in/<source>.
const ReceiverRoutePrefix = "/in/"

// Routes of the sources function (its Function URL; the method first).
// {name} is a source's or schedule's name (inbound.CheckName).
const (
	RouteAddSource      = "POST /sources"
	RouteListSources    = "GET /sources"
	RouteRotateSecret   = "POST /sources/{name}/rotate-secret"
	RouteRetireSecrets  = "POST /sources/{name}/retire-secrets"
	RouteRemoveSource   = "POST /sources/{name}/remove"
	RouteAddSchedule    = "POST /schedules"
	RouteListSchedules  = "GET /schedules"
	RoutePauseSchedule  = "POST /schedules/{name}/pause"
	RouteResumeSchedule = "POST /schedules/{name}/resume"
	RouteRemoveSchedule = "POST /schedules/{name}/remove"
	RouteDLQList        = "GET /dlq"
	RouteDLQRedrive     = "POST /dlq/redrive"
)

// ProofHeader carries the caller proof on the sources function's
// Function URL (caller.ProofHeader).
const ProofHeader = caller.ProofHeader

// Schedule states.
const (
	StateEnabled = "ENABLED"
	StatePaused  = "PAUSED"
)

// AddSourceRequest is the body of POST /sources.
type AddSourceRequest struct {
	// Name is the source's name (inbound.CheckName): its route is POST
	// /in/<name>.
	Name string `json:"name"`
	// Scheme is how its deliveries are signed (inbound.ParseScheme).
	Scheme string `json:"scheme"`
	// Solution is the published Solution each event starts a run of.
	Solution string `json:"solution"`
	// MaxBodyBytes bounds a delivery's body, 1 to MaxBodyBytes; 0:
	// DefaultMaxBodyBytes.
	MaxBodyBytes int `json:"max_body_bytes,omitempty"`
	// EndUser, when set, is the end-user id the runs act for.
	EndUser string `json:"end_user,omitempty"`
	// Secret is the provider's signing secret, when the provider draws it
	// (Stripe, GitHub); absent: the function draws one and answers it
	// once (AddSourceResult.Secret). Never logged nor stored in the clear.
	Secret string `json:"secret,omitempty"`
}

// SourceInfo is one source as a listing shows it: never a secret.
type SourceInfo struct {
	Name         string `json:"name"`
	Scheme       string `json:"scheme"`
	Solution     string `json:"solution"`
	MaxBodyBytes int    `json:"max_body_bytes"`
	EndUser      string `json:"end_user,omitempty"`
	// Route is where the provider POSTs: ReceiverRoutePrefix and the name.
	Route     string `json:"route"`
	AddedBy   string `json:"added_by"`
	AddedAt   string `json:"added_at"` // RFC 3339
	UpdatedAt string `json:"updated_at,omitempty"`
	Version   int    `json:"version"`
	// Secrets counts the secrets that verify its deliveries: 2 or more
	// during a rotation's grace period, else 1.
	Secrets int `json:"secrets"`
}

// AddSourceResult is an add's answer. Secret is the secret the function
// drew, shown this once; "" when the request gave one.
type AddSourceResult struct {
	Source SourceInfo `json:"source"`
	Secret string     `json:"secret,omitempty"`
}

// ListSourcesResult is a listing of sources.
type ListSourcesResult struct {
	Sources []SourceInfo `json:"sources"`
}

// RotateSecretRequest is the body of POST /sources/{name}/rotate-secret:
// the provider's new secret, or none for the function to draw one.
type RotateSecretRequest struct {
	Secret string `json:"secret,omitempty"`
}

// RotateSecretResult is a rotation's answer: the new secret when the
// function drew it, shown this once; the previous ones keep verifying
// until PreviousRetiresAt (RFC 3339).
type RotateSecretResult struct {
	Source            string `json:"source"`
	Secret            string `json:"secret,omitempty"`
	PreviousRetiresAt string `json:"previous_retires_at"`
}

// RetireSecretsResult is the answer of POST /sources/{name}/retire-secrets:
// every secret but the current one is retired now; Retired counts them.
type RetireSecretsResult struct {
	Source  string `json:"source"`
	Retired int    `json:"retired"`
}

// RemoveResult is the answer of a source's or schedule's remove.
type RemoveResult struct {
	Name    string `json:"name"`
	Removed bool   `json:"removed"`
}

// AddScheduleRequest is the body of POST /schedules.
type AddScheduleRequest struct {
	// Name is the schedule's name (inbound.CheckName).
	Name string `json:"name"`
	// Solution is the published Solution each firing starts a run of.
	Solution string `json:"solution"`
	// Expression is rate(...) or cron(...), as EventBridge Scheduler reads
	// them (shared/schedule).
	Expression string `json:"expression"`
	// Input is the run's input, a JSON value of at most
	// MaxScheduleInputBytes.
	Input json.RawMessage `json:"input"`
	// EndUser, when set, is the end-user id the runs act for.
	EndUser string `json:"end_user,omitempty"`
}

// ScheduleInfo is one schedule as a listing shows it.
type ScheduleInfo struct {
	Name       string `json:"name"`
	Solution   string `json:"solution"`
	Expression string `json:"expression"`
	EndUser    string `json:"end_user,omitempty"`
	State      string `json:"state"` // StateEnabled or StatePaused
	// InputBytes is the size of the run's input JSON.
	InputBytes int    `json:"input_bytes"`
	AddedBy    string `json:"added_by"`
	AddedAt    string `json:"added_at"` // RFC 3339
	UpdatedAt  string `json:"updated_at,omitempty"`
	Version    int    `json:"version"`
}

// AddScheduleResult is an add's answer.
type AddScheduleResult struct {
	Schedule ScheduleInfo `json:"schedule"`
}

// ListSchedulesResult is a listing of schedules.
type ListSchedulesResult struct {
	Schedules []ScheduleInfo `json:"schedules"`
}

// ScheduleStateResult is a pause's or resume's answer: Changed is false
// when the schedule was in State already.
type ScheduleStateResult struct {
	Schedule string `json:"schedule"`
	State    string `json:"state"`
	Changed  bool   `json:"changed"`
}

// DLQMessage is one message left in the inbound dead-letter queue: which
// event or firing it names, never a body.
type DLQMessage struct {
	Message
	// ReceiveCount is SQS's ApproximateReceiveCount: the attempts made.
	ReceiveCount int `json:"receive_count"`
	// SentAt is when the message was first sent (RFC 3339): a moved
	// message keeps it.
	SentAt string `json:"sent_at,omitempty"`
}

// DLQResult is a dead-letter queue listing: at most MaxDLQ messages, More
// when others were left.
type DLQResult struct {
	Messages []DLQMessage `json:"messages"`
	More     bool         `json:"more,omitempty"`
}

// RedriveResult is a redrive's answer: Moved messages went back to the
// inbound queue; More when messages were left, for another redrive.
type RedriveResult struct {
	Moved int  `json:"moved"`
	More  bool `json:"more,omitempty"`
}

// MaxDLQ bounds the messages one dlq list or dlq redrive handles (ten per
// ReceiveMessage, the SQS maximum).
const MaxDLQ = 100

// ErrorBody is a Function URL error response's body.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Error codes of the sources function (the "code" of an ErrorBody).
const (
	CodeInvalid         = "SOURCES_INVALID"         // a malformed request, naming the field and rule
	CodeUnauthenticated = "SOURCES_UNAUTHENTICATED" // no valid caller proof
	CodeRefused         = "SOURCES_REFUSED"         // the caller is not an inbound operator
	CodeNotFound        = "SOURCES_NOT_FOUND"       // no such source, schedule or published Solution
	CodeConflict        = "SOURCES_CONFLICT"        // the name exists, or the item changed meanwhile (repeat the request)
	CodeUnavailable     = "SOURCES_UNAVAILABLE"     // DynamoDB, KMS, SQS or EventBridge Scheduler failed; repeat the request
)
