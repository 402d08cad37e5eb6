package webhookapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/publishapi"
)

// DefaultRelayAfter is EnvRelayAfter's default: one minute, the period
// of the platform's relay schedule (infra/platform/webhooks.go).
const DefaultRelayAfter = time.Minute

// Environment of the webhook functions (docs/webhooks.md). Queue
// variables hold SQS queue URLs.
const (
	EnvTable = publishapi.EnvTable // the ledger table (required), which holds subscriptions, events and attempts
	// EnvEventsQueue is the events queue: event ids from producers and the
	// relay, and Step Functions status changes from the EventBridge rule
	// (webhook-delivery: required).
	EnvEventsQueue = "TOOLGATE_WEBHOOK_EVENTS_QUEUE"
	// EnvDeliveriesQueue is the deliveries queue: one message per event
	// and subscription (both functions: required).
	EnvDeliveriesQueue = "TOOLGATE_WEBHOOK_DELIVERIES_QUEUE"
	// EnvDeliveriesDLQ is the deliveries queue's dead-letter queue, which
	// dlq list and dlq redrive read (webhooks: required).
	EnvDeliveriesDLQ = "TOOLGATE_WEBHOOK_DELIVERIES_DLQ"
	// EnvEventsDLQ is the events queue's dead-letter queue, which dlq list
	// and dlq redrive read too; dlq redrive sends its messages back to
	// EnvEventsQueue (webhooks: both required).
	EnvEventsDLQ = "TOOLGATE_WEBHOOK_EVENTS_DLQ"
	// EnvSchedule is the retry schedule, webhook.ParseSchedule's syntax
	// ("5s,5m,30m,2h"); unset: webhook.DefaultSchedule. The deliveries
	// queue's maxReceiveCount must be its Attempts().
	EnvSchedule = "TOOLGATE_WEBHOOK_SCHEDULE"
	// EnvAllow is the platform's allow-list of webhook hosts (hostlist
	// entries, comma-separated); unset: no endpoint is allowed.
	EnvAllow = "TOOLGATE_WEBHOOK_ALLOW"
	// EnvAllowAddresses lists addresses exempted from the special-address
	// refusal (CIDR prefixes; the local stack's 127.0.0.1/32 only).
	EnvAllowAddresses = "TOOLGATE_WEBHOOK_ALLOW_ADDRESSES"
	// EnvOwnHosts lists this deployment's Function URL hosts, which no
	// endpoint may name (an inbound receiver would turn events into runs
	// into events): webhook.ParseOwnHost's entries, a host (every port)
	// or host:port (that origin only; the local stack's functions on
	// 127.0.0.1).
	EnvOwnHosts = "TOOLGATE_WEBHOOK_OWN_HOSTS"
	// EnvResolveFile, on the local stack only, names a file of host names
	// and their addresses ("HOST=IP[,IP]" a line, fetch.FileResolver) that
	// the endpoint rules take as the DNS answer for those names, read
	// again at every look-up: a test makes a subscribed name resolve
	// elsewhere at delivery, as the MCP tools' TOOLGATE_MCP_RESOLVE_FILE.
	// Unset: the system resolver. The CDK app never sets it, and its
	// tests assert so.
	EnvResolveFile = "TOOLGATE_WEBHOOK_RESOLVE_FILE"
	// EnvRelayAfter is how long an event may stay recorded but unsent
	// before webhook-delivery's relay sends it (a Go duration, 1s to 1h;
	// unset: DefaultRelayAfter). It must be well past a producer's
	// put-then-send, so that the relay does not race a producer that is
	// only slow (docs/webhooks.md).
	EnvRelayAfter = "TOOLGATE_WEBHOOK_RELAY_AFTER"
	// EnvAdmins is a JSON list of IAM principal ARN patterns of the
	// function's own account (reviewer.ParseAdmins) who may subscribe,
	// manage and redrive. Unset or []: nobody.
	EnvAdmins = "TOOLGATE_WEBHOOK_ADMINS"
	// EnvKey names the KMS key webhook secrets are sealed under: the
	// credentials' key (publishapi.EnvCredentialKey), under the purpose
	// webhook-subscription (webhooks: required).
	EnvKey = publishapi.EnvCredentialKey
)

// ProofHeader carries the caller proof on the Function URL
// (caller.ProofHeader).
const ProofHeader = caller.ProofHeader

// The direct invocation actions of the webhooks function
// (DirectRequest.Action), one per route.
const (
	ActionSubscribe    = "subscribe"     // POST /subscriptions
	ActionList         = "list"          // GET /subscriptions
	ActionRotateSecret = "rotate-secret" // POST /subscriptions/{id}/rotate-secret
	ActionDisable      = "disable"       // POST /subscriptions/{id}/disable
	ActionDeliveries   = "deliveries"    // GET /deliveries?event=ID
	ActionDLQList      = "dlq.list"      // GET /dlq
	ActionDLQRedrive   = "dlq.redrive"   // POST /dlq/redrive
)

// DirectRequest is a direct invocation of the webhooks function (the
// local stack's CLI): {"action", the action's members, "proof"}.
type DirectRequest struct {
	Action string `json:"action"`
	// Subscribe is the request of ActionSubscribe.
	Subscribe *SubscribeRequest `json:"subscribe,omitempty"`
	// Subscription is the subscription id of ActionRotateSecret and
	// ActionDisable.
	Subscription string `json:"subscription,omitempty"`
	// Event is the event id of ActionDeliveries.
	Event string `json:"event,omitempty"`
	Proof string `json:"proof"`
}

// SubscribeRequest is the body of POST /subscriptions.
type SubscribeRequest struct {
	// URL is the endpoint events are POSTed to: https, on a host of the
	// platform's allow-list (EnvAllow), never one of this deployment's
	// Function URLs (webhook.EndpointRules.Check).
	URL string `json:"url"`
	// Events are event type patterns, each an exact type or
	// "<prefix>.*" (webhook.ParsePatterns), as the caller wrote them.
	Events []string `json:"events"`
	// Solution, when set, limits the subscription to the events of that
	// published Solution.
	Solution string `json:"solution,omitempty"`
}

// SubscribeDigest is what a subscribe proof binds besides the URL:
// "sha256:" and the hex SHA-256 of the JSON array
// ["toolgate-webhooks-subscribe/1", solution, pattern...], so that a
// proof made for one set of events or one Solution is refused for another.
func SubscribeDigest(r SubscribeRequest) string {
	doc, _ := json.Marshal(append([]string{"toolgate-webhooks-subscribe/1", r.Solution}, r.Events...))
	sum := sha256.Sum256(doc)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// SubscribeBinding is the caller-proof binding of subscription r.
func SubscribeBinding(r SubscribeRequest) caller.Binding {
	return caller.Binding{Action: caller.ActionWebhooksSubscribe, Target: r.URL, InputDigest: SubscribeDigest(r)}
}

// manageDetail is the Detail of a webhooks.manage binding: the JSON
// array [operation, argument].
func manageDetail(op, arg string) string {
	doc, _ := json.Marshal([]string{op, arg})
	return string(doc)
}

// ListBinding is the caller-proof binding of a listing of subscriptions.
func ListBinding() caller.Binding {
	return caller.Binding{Action: caller.ActionWebhooksManage, Target: "list", Detail: manageDetail(ActionList, "")}
}

// RotateBinding is the caller-proof binding of a secret rotation of
// subscription id.
func RotateBinding(id string) caller.Binding {
	return caller.Binding{Action: caller.ActionWebhooksManage, Target: id, Detail: manageDetail(ActionRotateSecret, "")}
}

// DisableBinding is the caller-proof binding of disabling subscription id.
func DisableBinding(id string) caller.Binding {
	return caller.Binding{Action: caller.ActionWebhooksManage, Target: id, Detail: manageDetail(ActionDisable, "")}
}

// DeliveriesBinding is the caller-proof binding of a listing of event
// id's delivery attempts.
func DeliveriesBinding(event string) caller.Binding {
	return caller.Binding{Action: caller.ActionWebhooksManage, Target: "deliveries", Detail: manageDetail(ActionDeliveries, event)}
}

// DLQListBinding is the caller-proof binding of a listing of the
// dead-letter queue.
func DLQListBinding() caller.Binding {
	return caller.Binding{Action: caller.ActionWebhooksRedrive, Target: "list"}
}

// RedriveBinding is the caller-proof binding of a redrive of the
// dead-letter queue.
func RedriveBinding() caller.Binding {
	return caller.Binding{Action: caller.ActionWebhooksRedrive, Target: "redrive"}
}

// Subscription is one subscription as a listing shows it: never a secret.
type Subscription struct {
	ID       string   `json:"id"`
	URL      string   `json:"url"`
	Events   []string `json:"events"`
	Solution string   `json:"solution,omitempty"`
	// Status is "active" or "disabled", with DisabledReason for the latter
	// ("410 Gone", or who disabled it).
	Status         string `json:"status"`
	DisabledReason string `json:"disabled_reason,omitempty"`
	CreatedAt      string `json:"created_at"` // RFC 3339
	CreatedBy      string `json:"created_by"`
	UpdatedAt      string `json:"updated_at,omitempty"`
	Version        int64  `json:"version"`
	// Secrets counts the secrets that sign its deliveries: 2 during a
	// rotation's grace period, else 1.
	Secrets int `json:"secrets"`
}

// SubscribeResult is a subscribe's answer. Secret is the "whsec_" signing
// secret, shown this once and never stored in the clear.
type SubscribeResult struct {
	Subscription Subscription `json:"subscription"`
	Secret       string       `json:"secret"`
}

// ListResult is a listing's answer.
type ListResult struct {
	Subscriptions []Subscription `json:"subscriptions"`
}

// RotateResult is a rotation's answer: the new "whsec_" secret, shown
// this once; the previous one keeps signing until PreviousRetiresAt (RFC
// 3339; webhook.RotationGrace after the rotation).
type RotateResult struct {
	Subscription      string `json:"subscription"`
	Secret            string `json:"secret"`
	PreviousRetiresAt string `json:"previous_retires_at"`
}

// DisableResult is a disable's answer: Disabled is false when it was
// disabled already.
type DisableResult struct {
	Subscription string `json:"subscription"`
	Disabled     bool   `json:"disabled"`
}

// Delivery is one recorded attempt of an event to a subscription: never
// a body, a header or a URL.
type Delivery struct {
	Subscription string `json:"subscription"`
	Attempt      int    `json:"attempt"`
	At           string `json:"at"` // RFC 3339
	StatusCode   int    `json:"status_code,omitempty"`
	LatencyMS    int64  `json:"latency_ms"`
	Outcome      string `json:"outcome"` // delivered, retry or gone
	ErrorClass   string `json:"error_class,omitempty"`
}

// DeliveriesResult is the answer to a deliveries listing of one event.
type DeliveriesResult struct {
	Event      string     `json:"event"`
	Type       string     `json:"type"`
	Deliveries []Delivery `json:"deliveries"`
}

// DLQMessage is one delivery left in the dead-letter queue.
type DLQMessage struct {
	// Queue is the dead-letter queue it is in: DLQDeliveries (a delivery
	// to one subscription) or DLQEvents (an event not fanned out).
	Queue string `json:"queue"`
	// Event is the event's id; "" for a status change not recorded, whose
	// Execution is then its execution ARN.
	Event        string `json:"event"`
	Execution    string `json:"execution,omitempty"`
	Subscription string `json:"subscription"`
	// ReceiveCount is SQS's ApproximateReceiveCount: the attempts made.
	ReceiveCount int `json:"receive_count"`
	// SentAt is when the delivery was first enqueued (RFC 3339): a moved
	// message keeps it.
	SentAt string `json:"sent_at,omitempty"`
}

// The dead-letter queues a DLQMessage may be in.
const (
	DLQDeliveries = "deliveries"
	DLQEvents     = "events"
)

// DLQResult is a dead-letter queue listing's answer: at most MaxDLQ
// messages, More when others were left.
type DLQResult struct {
	Messages []DLQMessage `json:"messages"`
	More     bool         `json:"more,omitempty"`
}

// RedriveResult is a redrive's answer: Moved messages went back to their
// queues (a delivery gets the whole retry schedule again; an event is
// fanned out again); More when messages were left, for another redrive.
type RedriveResult struct {
	Moved int  `json:"moved"`
	More  bool `json:"more,omitempty"`
}

// MaxDLQ bounds the messages one dlq list or dlq redrive handles, so that
// it ends well within the function's timeout (ten per ReceiveMessage, the
// SQS maximum).
const MaxDLQ = 100

// ErrorBody is a Function URL error response's body; a direct invocation
// fails with the code as its errorType and this body, as JSON, as its
// message.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Error codes of the webhooks function (the Lambda errorType of a direct
// invocation, the "code" of a Function URL error body).
const (
	CodeInvalid         = "WEBHOOKS_INVALID"         // a malformed request
	CodeUnauthenticated = "WEBHOOKS_UNAUTHENTICATED" // no valid caller proof
	CodeRefused         = "WEBHOOKS_REFUSED"         // the caller is not a webhook admin, or the endpoint breaks the address rules
	CodeNotFound        = "WEBHOOKS_NOT_FOUND"       // no such subscription, event or published Solution
	CodeUnavailable     = "WEBHOOKS_UNAVAILABLE"     // DynamoDB, KMS, SQS or STS failed; repeat the request
)

// EventMessage is a message of the events queue from a producer or the
// relay: {"event_id": "evt_..."}.
type EventMessage struct {
	EventID string `json:"event_id"`
}

// StatusChange is a message of the events queue from the EventBridge
// rule: Step Functions' "Execution Status Change" event with only these
// members kept by the rule's input transformer (never the execution's
// input, output or cause). Source is "aws.states".
type StatusChange struct {
	Source          string `json:"source"`
	ExecutionARN    string `json:"execution_arn"`
	StateMachineARN string `json:"state_machine_arn"`
	Name            string `json:"name"`
	Status          string `json:"status"`
	StartDate       Date   `json:"start_date"`
	StopDate        Date   `json:"stop_date,omitempty"`
}

// Date is a status change's start or stop date: Step Functions' event
// gives epoch milliseconds, which an input transformer passes on as a
// number, or as a string when its template quotes it. Either reads as
// RFC 3339 with milliseconds, UTC; null or absent as "".
type Date string

// UnmarshalJSON reads a number of epoch milliseconds, a string (kept as
// it is; a string of digits as epoch milliseconds) or null. Milliseconds
// outside 1970 to 9999, or not whole, are an error.
func (d *Date) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case nil:
		*d = ""
	case float64:
		if v != float64(int64(v)) || v < 0 || v > maxDateMillis {
			return fmt.Errorf("a date's epoch milliseconds must be a whole number from 0 to %d", int64(maxDateMillis))
		}
		*d = Date(time.UnixMilli(int64(v)).UTC().Format(dateLayout))
	case string:
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
			if ms < 0 || ms > maxDateMillis {
				return fmt.Errorf("a date's epoch milliseconds must be from 0 to %d", int64(maxDateMillis))
			}
			*d = Date(time.UnixMilli(ms).UTC().Format(dateLayout))
			return nil
		}
		*d = Date(v)
	default:
		return fmt.Errorf("a date is epoch milliseconds or a string, not %s", b)
	}
	return nil
}

// maxDateMillis is the last millisecond of year 9999, the last RFC 3339
// can write.
const maxDateMillis = 253402300799999

// dateLayout is RFC 3339 with milliseconds, as Step Functions' dates are
// precise to.
const dateLayout = "2006-01-02T15:04:05.000Z07:00"

// DeliveryMessage is a message of the deliveries queue: one event to one
// subscription.
type DeliveryMessage struct {
	EventID        string `json:"event_id"`
	SubscriptionID string `json:"subscription_id"`
}
