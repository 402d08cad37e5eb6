package delivery

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/sqsbatch"
	"github.com/toolgate/toolgate/shared/tracecontext"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhook/store"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

// Queue name suffixes: a record's eventSourceARN ends in its queue's name,
// toolgate-<stage>-webhook-events or toolgate-<stage>-webhook-deliveries
// (infra/platform).
const (
	EventsQueueSuffix     = "-webhook-events"
	DeliveriesQueueSuffix = "-webhook-deliveries"
)

// MaxConcurrency is how many records of one batch run at once: the
// event-source mapping's batch size is 10 (infra/platform).
const MaxConcurrency = 10

// GoneReason is the disabled_reason of a subscription whose endpoint
// answered 410 (Standard Webhooks: the receiver asks to stop).
const GoneReason = "410 Gone"

// Outcomes of an attempt (webhook.Classify).
const (
	outcomeDelivered = webhook.Outcome("delivered")
	outcomeGone      = webhook.Outcome("gone")
)

// Store is what the function reads and writes in the table
// (shared/webhook/store's Store).
type Store interface {
	Event(ctx context.Context, id string) (webhook.Event, bool, error)
	RecordEvent(ctx context.Context, e webhook.Event) (bool, error)
	MarkSent(ctx context.Context, id string) error
	Subscriptions(ctx context.Context) ([]store.Subscription, error)
	Subscription(ctx context.Context, id string) (store.Subscription, bool, error)
	Disable(ctx context.Context, id, reason string) error
	RecordAttempt(ctx context.Context, eventID, subID string, n int, a webhook.Attempt) error
}

// Queue is the SQS client: fan-out sends to the deliveries queue, and a
// failed attempt sets its message's visibility to the schedule's delay.
type Queue interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// Sender POSTs one delivery under the endpoint rules (webhook.Sender).
type Sender interface {
	Send(ctx context.Context, endpoint string, headers http.Header, body []byte) webhook.Attempt
}

// Config is what New wires: every field but Log and Now is required.
type Config struct {
	Store  Store
	Queue  Queue
	Sender Sender
	// Open opens a subscription's sealed secret (store.OpenSecret with
	// the KMS client).
	Open func(ctx context.Context, subID string, s vault.Sealed) ([]byte, error)
	// Relay hands over the events left unsent (store.Relay); it returns
	// how many it sent.
	Relay func(ctx context.Context, now time.Time) (int, error)
	// DeliveriesQueue is the deliveries queue's URL
	// (webhookapi.EnvDeliveriesQueue).
	DeliveriesQueue string
	// Schedule is the retry schedule: the deliveries queue's
	// maxReceiveCount is its Attempts().
	Schedule webhook.Schedule
	Now      func() time.Time // nil: time.Now
	Log      *slog.Logger     // nil: slog.Default()
}

// Handler is the webhook-delivery function's Lambda handler.
type Handler struct{ c Config }

// New returns the handler of c.
func New(c Config) *Handler {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return &Handler{c: c}
}

// Handle is the Lambda handler: an SQS batch (a payload with "Records")
// answers an events.SQSEventResponse naming the records that failed; a
// scheduled event ("detail-type": "Scheduled Event") runs the relay and
// answers null; anything else is an error.
func (h *Handler) Handle(ctx context.Context, payload json.RawMessage) (any, error) {
	var probe struct {
		Records    json.RawMessage `json:"Records"`
		DetailType string          `json:"detail-type"`
	}
	if err := json.Unmarshal(payload, &probe); err != nil {
		return nil, errors.New("the invocation is not a JSON object")
	}
	switch {
	case probe.Records != nil:
		var ev events.SQSEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return nil, errors.New("the invocation is not an SQS event")
		}
		return h.Batch(ctx, ev), nil
	case probe.DetailType == "Scheduled Event":
		n, err := h.c.Relay(ctx, h.c.Now())
		if err != nil {
			return nil, fmt.Errorf("relay: %w", err)
		}
		h.c.Log.InfoContext(ctx, "webhook relay", "sent", n)
		return nil, nil
	}
	return nil, errors.New("the invocation is neither an SQS batch nor a scheduled event")
}

// Batch handles ev's records, at most MaxConcurrency at once, and names
// each that failed, in the batch's order.
func (h *Handler) Batch(ctx context.Context, ev events.SQSEvent) events.SQSEventResponse {
	return sqsbatch.Run(ctx, ev, MaxConcurrency, h.record, func(r events.SQSMessage, err error) {
		h.c.Log.WarnContext(ctx, "webhook record failed", "message_id", r.MessageId, "error", err.Error())
	})
}

// record handles one record by its queue.
func (h *Handler) record(ctx context.Context, r events.SQSMessage) error {
	switch {
	case strings.HasSuffix(r.EventSourceARN, EventsQueueSuffix):
		return h.fanOut(ctx, r)
	case strings.HasSuffix(r.EventSourceARN, DeliveriesQueueSuffix):
		return h.deliver(ctx, r)
	}
	return fmt.Errorf("the record's queue %q is neither the events queue nor the deliveries queue", r.EventSourceARN)
}

// fanOut handles a record of the events queue: it loads (or, for a Step
// Functions status change, records) the event and sends one delivery
// message per matching subscription. A message that names no event is
// dropped with a log line: it would never succeed.
func (h *Handler) fanOut(ctx context.Context, r events.SQSMessage) error {
	e, recorded, ok, err := h.eventOf(ctx, r.Body)
	if err != nil || !ok {
		return err
	}
	subs, err := h.c.Store.Subscriptions(ctx)
	if err != nil {
		return fmt.Errorf("list subscriptions: %w", err)
	}
	for _, s := range Matching(subs, e) {
		body, _ := json.Marshal(webhookapi.DeliveryMessage{EventID: e.ID, SubscriptionID: s.ID})
		if _, err := h.c.Queue.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(h.c.DeliveriesQueue), MessageBody: aws.String(string(body))}); err != nil {
			// The record is retried whole: subscribers sent to already get
			// the event twice, and dedupe on its webhook-id.
			return fmt.Errorf("send the delivery of %s to %s: %w", e.ID, s.ID, err)
		}
	}
	if recorded {
		// A status change this function recorded is handed over here:
		// marked sent, the relay does not fan it out again.
		if err := h.c.Store.MarkSent(ctx, e.ID); err != nil {
			h.c.Log.WarnContext(ctx, "webhook event not marked sent: the relay sends it again", "event_id", e.ID, "error", err.Error())
		}
	}
	return nil
}

// Matching are the subscriptions of subs e goes to: active, with a
// pattern matching its type (webhook.Matches), and no Solution filter or
// e's Solution.
func Matching(subs []store.Subscription, e webhook.Event) []store.Subscription {
	var out []store.Subscription
	for _, s := range subs {
		if s.Status == StatusActive && webhook.Matches(s.Events, e.Type) && (s.Solution == "" || s.Solution == e.Solution) {
			out = append(out, s)
		}
	}
	return out
}

// StatusActive is the status of a subscription that gets deliveries.
const StatusActive = "active"

// eventOf is the event an events-queue message names, recorded first
// when it is a Step Functions status change (recorded is then true: this
// function hands it over, not a producer); ok is false (with a log line)
// for a message that names none.
func (h *Handler) eventOf(ctx context.Context, body string) (e webhook.Event, recorded, ok bool, err error) {
	var probe struct {
		Source  string `json:"source"`
		EventID string `json:"event_id"`
	}
	if err := json.Unmarshal([]byte(body), &probe); err != nil {
		h.c.Log.WarnContext(ctx, "webhook events message dropped: not a JSON object")
		return webhook.Event{}, false, false, nil
	}
	if probe.Source == "aws.states" {
		var sc webhookapi.StatusChange
		if err := json.Unmarshal([]byte(body), &sc); err != nil {
			h.c.Log.WarnContext(ctx, "webhook events message dropped: not a status change")
			return webhook.Event{}, false, false, nil
		}
		e, ok := RunEvent(sc, h.c.Now())
		if !ok {
			return e, false, false, nil // a status no event names (PENDING_REDRIVE)
		}
		// This function produces run events, so it validates them before
		// recording (docs/webhooks.md, "Payloads"); one that fails would
		// never succeed.
		if err := webhook.Validate(e); err != nil {
			h.c.Log.WarnContext(ctx, "webhook events message dropped: its status change fails the event's schema", "event_id", e.ID, "type", string(e.Type))
			return e, false, false, nil
		}
		now, err := h.c.Store.RecordEvent(ctx, e)
		if err != nil {
			return e, false, false, fmt.Errorf("record %s: %w", e.ID, err)
		}
		if !now {
			// Recorded before (a redelivered status change): the event as
			// recorded is fanned out, never what this message says, so a
			// message repeating an execution ARN and status cannot send
			// the event to another Solution's subscribers.
			id := e.ID
			var found bool
			if e, found, err = h.c.Store.Event(ctx, id); err != nil {
				return e, false, false, fmt.Errorf("read event %s recorded before: %w", id, err)
			} else if !found {
				// Its put was seen; a read that misses it is retried.
				return e, false, false, fmt.Errorf("event %s recorded before is not found", id)
			}
		}
		// Recorded now or before: its subscribers get it either way, at
		// least once.
		return e, true, true, nil
	}
	e, ok, err = h.c.Store.Event(ctx, probe.EventID)
	switch {
	case errors.Is(err, store.ErrRefusedCallEvent):
		// An item under the call events' prefix that no dispatcher
		// recorded (any tool function's role may put one): never
		// delivered (docs/webhooks.md, "Who may record an event").
		h.c.Log.WarnContext(ctx, "webhook events message dropped: the call's event is refused", "event_id", probe.EventID)
		return e, false, false, nil
	case err != nil:
		return e, false, false, fmt.Errorf("read event %s: %w", probe.EventID, err)
	case !ok:
		h.c.Log.WarnContext(ctx, "webhook events message dropped: no such event", "event_id", probe.EventID)
	case webhook.Validate(e) != nil:
		// A call's event is put by a tool function's role
		// (RecordCallWebhookEvents): one its type's schema refuses never
		// passes, so it is dropped, never delivered (docs/webhooks.md,
		// "Payloads").
		h.c.Log.WarnContext(ctx, "webhook events message dropped: the recorded event fails its schema", "event_id", e.ID, "type", string(e.Type))
		return e, false, false, nil
	}
	return e, false, ok, nil
}

// runTypes are the run.* event types of Step Functions' execution
// statuses.
var runTypes = map[string]webhook.Type{
	"RUNNING": webhook.RunStarted, "SUCCEEDED": webhook.RunSucceeded, "FAILED": webhook.RunFailed,
	"TIMED_OUT": webhook.RunTimedOut, "ABORTED": webhook.RunAborted,
}

// RunEvent is the run.* event of status change sc, produced at now: id
// webhook.EventID(type, execution ARN + "\n" + status), so that every
// delivery of one change is one event; Solution is the name after the
// first "_" of the state machine's (tool.StateMachineName). false for a
// status no event names.
func RunEvent(sc webhookapi.StatusChange, now time.Time) (webhook.Event, bool) {
	t, ok := runTypes[sc.Status]
	if !ok {
		return webhook.Event{}, false
	}
	data, _ := json.Marshal(webhook.RunData{ExecutionARN: sc.ExecutionARN, StateMachineARN: sc.StateMachineARN, Name: sc.Name,
		Status: sc.Status, StartDate: string(sc.StartDate), StopDate: string(sc.StopDate)})
	return webhook.Event{ID: webhook.EventID(t, sc.ExecutionARN+"\n"+sc.Status), Type: t, Timestamp: now.UTC().Truncate(time.Second),
		Solution: solutionOf(sc.StateMachineARN), Data: data}, true
}

// solutionOf is the Solution of a toolgate state machine ARN
// (arn:PARTITION:states:REGION:ACCOUNT:stateMachine:toolgate-STAGE_SOLUTION[:VERSION]),
// or "" for another name.
func solutionOf(arn string) string {
	parts := strings.Split(arn, ":")
	if len(parts) < 7 || parts[5] != "stateMachine" || !strings.HasPrefix(parts[6], "toolgate-") {
		return ""
	}
	_, solution, _ := strings.Cut(parts[6], "_")
	return solution
}

// deliver handles a record of the deliveries queue: one attempt of one
// event to one subscription. It returns an error for a record to be
// received again: after a failed attempt, once its visibility is set to
// the schedule's delay (or to zero for the last attempt, which SQS then
// moves to the dead-letter queue at its next receive).
func (h *Handler) deliver(ctx context.Context, r events.SQSMessage) error {
	var m webhookapi.DeliveryMessage
	if err := json.Unmarshal([]byte(r.Body), &m); err != nil || m.EventID == "" || m.SubscriptionID == "" {
		h.c.Log.WarnContext(ctx, "webhook delivery message dropped: not {\"event_id\", \"subscription_id\"}", "message_id", r.MessageId)
		return nil
	}
	n := ReceiveCount(r)
	e, ok, err := h.c.Store.Event(ctx, m.EventID)
	if errors.Is(err, store.ErrRefusedCallEvent) {
		h.c.Log.WarnContext(ctx, "webhook delivery dropped: the call's event is refused", "event_id", m.EventID, "subscription_id", m.SubscriptionID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read event %s: %w", m.EventID, err)
	}
	if !ok {
		h.c.Log.WarnContext(ctx, "webhook delivery dropped: no such event", "event_id", m.EventID, "subscription_id", m.SubscriptionID)
		return nil
	}
	// Read again, the event is held to its type's schema again: a call's
	// event item may be put again after its fan-out (any tool function's
	// role may put one), and data its schema refuses is never signed or
	// sent (docs/webhooks.md, "Payloads").
	if err := webhook.Validate(e); err != nil {
		h.c.Log.WarnContext(ctx, "webhook delivery dropped: the recorded event fails its schema", "event_id", e.ID, "subscription_id", m.SubscriptionID, "type", string(e.Type))
		return nil
	}
	sub, ok, err := h.c.Store.Subscription(ctx, m.SubscriptionID)
	if err != nil {
		return fmt.Errorf("read subscription %s: %w", m.SubscriptionID, err)
	}
	if !ok || sub.Status != StatusActive {
		h.c.Log.InfoContext(ctx, "webhook delivery skipped: the subscription is gone or disabled", "event_id", e.ID, "subscription_id", m.SubscriptionID)
		return nil
	}
	// The fan-out paired them because the subscription matched; it is
	// checked again, so that no message (a crafted one, or one redriven
	// after the subscription changed) delivers an event its subscription
	// does not take (docs/webhooks.md, "Who may send to the queues").
	if len(Matching([]store.Subscription{sub}, e)) == 0 {
		h.c.Log.WarnContext(ctx, "webhook delivery dropped: the subscription does not take the event", "event_id", e.ID, "subscription_id", m.SubscriptionID, "type", string(e.Type))
		return nil
	}
	now := h.c.Now()
	keys, err := h.keys(ctx, sub, now)
	if err != nil {
		return err
	}
	body, err := webhook.Body(e)
	if err != nil {
		return fmt.Errorf("encode event %s: %w", e.ID, err)
	}
	sig, err := webhook.Sign(keys, e.ID, now, body)
	if err != nil {
		return fmt.Errorf("sign event %s: %w", e.ID, err)
	}
	hdr := http.Header{}
	hdr.Set("webhook-id", e.ID)
	hdr.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	hdr.Set("webhook-signature", sig)
	hdr.Set("Content-Type", "application/json")
	if tp := NewTraceparent(); tp != "" {
		hdr.Set("traceparent", tp)
	}
	a := h.c.Sender.Send(ctx, sub.URL, hdr, body)
	h.c.Log.InfoContext(ctx, "webhook attempt", "event_id", e.ID, "type", string(e.Type), "subscription_id", sub.ID, "attempt", n,
		"status_code", a.Status, "latency_ms", a.Latency.Milliseconds(), "outcome", string(a.Outcome), "error_class", a.ErrorClass)
	if err := h.c.Store.RecordAttempt(ctx, e.ID, sub.ID, n, a); err != nil {
		// Not a reason to send again what may have been delivered.
		h.c.Log.WarnContext(ctx, "webhook attempt not recorded", "event_id", e.ID, "subscription_id", sub.ID, "attempt", n, "error", err.Error())
	}
	switch a.Outcome {
	case outcomeDelivered:
		return nil
	case outcomeGone:
		if err := h.c.Store.Disable(ctx, sub.ID, GoneReason); err != nil {
			return fmt.Errorf("disable %s after a 410: %w", sub.ID, err)
		}
		h.c.Log.InfoContext(ctx, "webhook subscription disabled", "subscription_id", sub.ID, "reason", GoneReason)
		return nil
	}
	d, again := h.c.Schedule.Delay(n)
	if !again {
		// The last attempt: visible again at once, the message has been
		// received maxReceiveCount times, so the queue moves it to the
		// dead-letter queue at its next receive rather than after the
		// queue's visibility timeout. Should the change fail, the timeout
		// moves it later.
		if _, err := h.c.Queue.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(h.c.DeliveriesQueue),
			ReceiptHandle: aws.String(r.ReceiptHandle), VisibilityTimeout: 0}); err != nil {
			h.c.Log.WarnContext(ctx, "webhook delivery: the last attempt's visibility was not cleared; it reaches the dead-letter queue after the visibility timeout",
				"event_id", e.ID, "subscription_id", sub.ID, "error", err.Error())
		}
		return fmt.Errorf("attempt %d of %d failed: the queue moves it to the dead-letter queue", n, h.c.Schedule.Attempts())
	}
	if _, err := h.c.Queue.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(h.c.DeliveriesQueue),
		// Within SQS's 12 hours from the receive (webhook.Visibility).
		ReceiptHandle: aws.String(r.ReceiptHandle), VisibilityTimeout: int32(webhook.Visibility(d) / time.Second)}); err != nil {
		return fmt.Errorf("attempt %d failed, and its retry delay could not be set: %w", n, err)
	}
	return fmt.Errorf("attempt %d failed: the next in %s", n, d)
}

// keys opens every secret of sub that has not retired at now: the current
// one, and during a rotation's grace period the previous one too.
func (h *Handler) keys(ctx context.Context, sub store.Subscription, now time.Time) ([][]byte, error) {
	var keys [][]byte
	for _, s := range sub.Secrets {
		if !s.RetiresAt.IsZero() && !now.Before(s.RetiresAt) {
			continue
		}
		k, err := h.c.Open(ctx, sub.ID, s.Sealed)
		if err != nil {
			return nil, fmt.Errorf("open a secret of %s: %w", sub.ID, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("subscription %s has no current secret", sub.ID)
	}
	return keys, nil
}

// ReceiveCount is the record's ApproximateReceiveCount, the attempt's
// number (1 for the first); 1 when it is missing or malformed.
func ReceiveCount(r events.SQSMessage) int {
	n, err := strconv.Atoi(r.Attributes["ApproximateReceiveCount"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// NewTraceparent is a new W3C traceparent (tracecontext.Format) with a
// random trace id and span id, sampled: each attempt is a trace of its
// own, which the receiver may continue. "" if randomness fails.
func NewTraceparent() string {
	var tid trace.TraceID
	var sid trace.SpanID
	if _, err := rand.Read(tid[:]); err != nil {
		return ""
	}
	if _, err := rand.Read(sid[:]); err != nil {
		return ""
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	return tracecontext.Format(sc).Traceparent
}
