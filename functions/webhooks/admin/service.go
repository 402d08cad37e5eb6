package admin

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/reviewer"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhook/store"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

// Callers verifies caller proofs (shared/caller's Verifier).
type Callers interface {
	Verify(ctx context.Context, proof string, b caller.Binding) (caller.Identity, error)
}

// Store is what the function reads and writes in the table
// (shared/webhook/store's Store).
type Store interface {
	Subscribe(ctx context.Context, sub store.Subscription) error
	Subscriptions(ctx context.Context) ([]store.Subscription, error)
	Subscription(ctx context.Context, id string) (store.Subscription, bool, error)
	Rotate(ctx context.Context, id string, next store.SealedSecret, grace time.Duration, version int64) error
	Disable(ctx context.Context, id, reason string) error
	Event(ctx context.Context, id string) (webhook.Event, bool, error)
	Attempts(ctx context.Context, eventID string) ([]store.AttemptRow, error)
}

// Queue is the SQS client: the dead-letter queue is read, released and
// emptied into the deliveries queue.
type Queue interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// Service is the webhooks function.
type Service struct {
	Callers Callers
	// Admins are the webhook admins' patterns (webhookapi.EnvAdmins); none:
	// nobody may do anything.
	Admins []string
	Store  Store
	// Seal seals a subscription's new signing key (store.SealSecret with
	// the KMS client and the credentials' key).
	Seal func(ctx context.Context, subID string, key []byte) (vault.Sealed, error)
	// Rules check an endpoint at subscribe (webhook.EndpointRules.Check);
	// the delivery function checks it again on every attempt.
	Rules webhook.EndpointRules
	// Published reports whether a Solution has a published version in
	// this stage, for a subscription's Solution filter; nil refuses every
	// filter.
	Published func(ctx context.Context, solution string) (bool, error)
	Queue     Queue
	// DeliveriesQueue and DLQ are the deliveries queue's URL and its
	// dead-letter queue's; EventsQueue and EventsDLQ the events queue's
	// and its dead-letter queue's ("": dlq list and redrive read the
	// deliveries' only).
	DeliveriesQueue, DLQ, EventsQueue, EventsDLQ string
	Now                                          func() time.Time // nil: time.Now
	Log                                          *slog.Logger     // nil: slog.Default()
}

// Error is a refused or failed request; Message is safe to show.
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }
func (e *Error) Unwrap() error { return e.Err }

func (s *Service) now() time.Time {
	if s.Now == nil {
		return time.Now().UTC()
	}
	return s.Now().UTC()
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

// Limits of a subscribe request: an endpoint URL of at most MaxURLBytes
// (the http tool's URL bound) and at most MaxPatterns event patterns.
const (
	MaxURLBytes = 2048
	MaxPatterns = 32
)

// MaxSubscriptions bounds the active subscriptions: webhook-delivery fans
// an event out with one SendMessage per matching subscription within one
// invocation (a minute at most) and retries the whole fan-out when it
// fails, and list answers every subscription in one Function URL answer
// (6 MB); the table keeps all of them in one partition, sized for tens
// (shared/table's WebhookSubscription). Disabled subscriptions do not
// count.
const MaxSubscriptions = 100

// authorize verifies proof for b and that its principal is a webhook
// admin: the principal, or an *Error (UNAUTHENTICATED for a proof the
// verifier refuses, REFUSED for a principal no admin pattern matches).
func (s *Service) authorize(ctx context.Context, proof string, b caller.Binding) (string, error) {
	if s.Callers == nil {
		return "", &Error{Code: webhookapi.CodeUnauthenticated, Message: "this function has no caller verifier"}
	}
	who, err := s.Callers.Verify(ctx, proof, b)
	if err != nil {
		msg, unavailable := caller.Explain(err)
		if unavailable {
			return "", &Error{Code: webhookapi.CodeUnavailable, Message: msg, Err: err}
		}
		return "", &Error{Code: webhookapi.CodeUnauthenticated, Message: msg}
	}
	if !reviewer.IsAdmin(s.Admins, who.Principal) {
		return "", &Error{Code: webhookapi.CodeRefused, Message: who.Principal + " is not a webhook admin (platform configuration webhookAdmins)"}
	}
	return who.Principal, nil
}

// Subscribe creates a subscription of r for a webhook admin whose proof
// is bound to r (webhookapi.SubscribeBinding): the endpoint must pass the
// endpoint rules, its name resolved (webhook.EndpointRules.CheckResolved),
// the patterns webhook.ParsePatterns, and a Solution filter must name a
// published Solution, and fewer than MaxSubscriptions may be active. One
// proof makes one subscription (subscriptionIDOf): its second use is
// WEBHOOKS_UNAUTHENTICATED. The answer holds the "whsec_" secret, this
// once.
func (s *Service) Subscribe(ctx context.Context, r webhookapi.SubscribeRequest, proof string) (*webhookapi.SubscribeResult, error) {
	switch {
	case r.URL == "" || len(r.URL) > MaxURLBytes:
		return nil, &Error{Code: webhookapi.CodeInvalid, Message: fmt.Sprintf("url must be 1 to %d bytes", MaxURLBytes)}
	case len(r.Events) == 0 || len(r.Events) > MaxPatterns:
		return nil, &Error{Code: webhookapi.CodeInvalid, Message: fmt.Sprintf("events must name 1 to %d patterns", MaxPatterns)}
	}
	patterns, err := webhook.ParsePatterns(strings.Join(r.Events, ","))
	if err != nil {
		return nil, &Error{Code: webhookapi.CodeInvalid, Message: "events: " + err.Error()}
	}
	who, err := s.authorize(ctx, proof, webhookapi.SubscribeBinding(r))
	if err != nil {
		return nil, err
	}
	// The name is looked up now too, as before every attempt: a URL whose
	// name resolves to a refused address (any of its answers) or to none
	// is refused before anything is sealed or stored.
	if _, _, err := s.Rules.CheckResolved(ctx, r.URL); err != nil {
		return nil, &Error{Code: webhookapi.CodeRefused, Message: "url: " + err.Error()}
	}
	if r.Solution != "" {
		if err := s.checkSolution(ctx, r.Solution); err != nil {
			return nil, err
		}
	}
	if err := s.checkRoom(ctx); err != nil {
		return nil, err
	}
	id := subscriptionIDOf(proof)
	whsec, sealed, err := s.newSecret(ctx, id)
	if err != nil {
		return nil, err
	}
	now := s.now()
	sub := store.Subscription{ID: id, URL: r.URL, Events: patterns, Solution: r.Solution, Status: StatusActive, CreatedBy: who,
		CreatedAt: now, UpdatedAt: now, Version: 1, Secrets: []store.SealedSecret{{Sealed: sealed, CreatedAt: now}}}
	if err := s.Store.Subscribe(ctx, sub); errors.Is(err, store.ErrExists) {
		return nil, &Error{Code: webhookapi.CodeUnauthenticated, Message: "this proof already made subscription " + id + ": sign a new one for each call"}
	} else if err != nil {
		return nil, &Error{Code: webhookapi.CodeUnavailable, Message: "the subscription could not be stored", Err: err}
	}
	s.log().InfoContext(ctx, "webhook subscribed", "subscription_id", id, "events", strings.Join(patterns, ","), "solution", r.Solution, "by", who)
	return &webhookapi.SubscribeResult{Subscription: info(sub, now), Secret: whsec}, nil
}

// checkRoom refuses a new subscription when MaxSubscriptions are active.
// Two subscribes at once may both pass: the bound may be passed by the
// few a race lets through.
func (s *Service) checkRoom(ctx context.Context) error {
	subs, err := s.Store.Subscriptions(ctx)
	if err != nil {
		return &Error{Code: webhookapi.CodeUnavailable, Message: "the subscriptions could not be read", Err: err}
	}
	active := 0
	for _, sub := range subs {
		if sub.Status == StatusActive {
			active++
		}
	}
	if active >= MaxSubscriptions {
		return &Error{Code: webhookapi.CodeRefused, Message: fmt.Sprintf("%d subscriptions are active, the most there may be (%d): disable one first (toolgate webhooks disable)", active, MaxSubscriptions)}
	}
	return nil
}

// StatusActive and StatusDisabled are a subscription's statuses.
const (
	StatusActive   = "active"
	StatusDisabled = "disabled"
)

// checkSolution refuses a Solution filter naming no published Solution.
func (s *Service) checkSolution(ctx context.Context, name string) error {
	if s.Published == nil {
		return &Error{Code: webhookapi.CodeRefused, Message: "this function reads no published Solutions: subscribe without --solution"}
	}
	ok, err := s.Published(ctx, name)
	switch {
	case err != nil:
		return &Error{Code: webhookapi.CodeUnavailable, Message: "the published Solutions could not be read", Err: err}
	case !ok:
		return &Error{Code: webhookapi.CodeNotFound, Message: fmt.Sprintf("solution %.80q is not published in this stage", name)}
	}
	return nil
}

// newSecret draws a signing secret for subscription id and seals it.
func (s *Service) newSecret(ctx context.Context, id string) (string, vault.Sealed, error) {
	whsec, key, err := webhook.NewSecret()
	if err != nil {
		return "", vault.Sealed{}, &Error{Code: webhookapi.CodeUnavailable, Message: "no secret could be drawn", Err: err}
	}
	sealed, err := s.Seal(ctx, id, key)
	if err != nil {
		return "", vault.Sealed{}, &Error{Code: webhookapi.CodeUnavailable, Message: "the secret could not be sealed", Err: err}
	}
	return whsec, sealed, nil
}

// subscriptionIDOf is the id of the subscription a verified subscribe
// proof makes: "sub_" and 26 lower-case base32 characters, the first 16
// bytes of SHA-256 of "toolgate-webhook-subscription/1", a newline and
// the proof's X-Amz-Signature (the whole proof when it has none), the
// value by which the verifier tells one proof from another. The verifier
// admits a proof again for the binding it was first used for (docs/
// identity.md), so a retried or replayed subscribe would otherwise store
// a second subscription whose secret nobody keeps; with the id derived,
// the store's conditional put refuses it (store.ErrExists). The id stays
// unpredictable: the signature is an HMAC under the caller's key.
func subscriptionIDOf(proof string) string {
	src := proof
	if u, err := url.Parse(proof); err == nil {
		if sig := u.Query().Get("X-Amz-Signature"); sig != "" {
			src = sig
		}
	}
	sum := sha256.Sum256([]byte("toolgate-webhook-subscription/1\n" + src))
	return "sub_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16]))
}

// info is sub as a listing shows it at now.
func info(sub store.Subscription, now time.Time) webhookapi.Subscription {
	out := webhookapi.Subscription{ID: sub.ID, URL: sub.URL, Events: sub.Events, Solution: sub.Solution, Status: sub.Status,
		DisabledReason: sub.DisabledReason, CreatedAt: sub.CreatedAt.UTC().Format(time.RFC3339), CreatedBy: sub.CreatedBy, Version: sub.Version}
	if !sub.UpdatedAt.IsZero() {
		out.UpdatedAt = sub.UpdatedAt.UTC().Format(time.RFC3339)
	}
	for _, sec := range sub.Secrets {
		if sec.RetiresAt.IsZero() || now.Before(sec.RetiresAt) {
			out.Secrets++
		}
	}
	return out
}

// List lists every subscription, never a secret.
func (s *Service) List(ctx context.Context, proof string) (*webhookapi.ListResult, error) {
	if _, err := s.authorize(ctx, proof, webhookapi.ListBinding()); err != nil {
		return nil, err
	}
	subs, err := s.Store.Subscriptions(ctx)
	if err != nil {
		return nil, &Error{Code: webhookapi.CodeUnavailable, Message: "the subscriptions could not be read", Err: err}
	}
	now := s.now()
	out := &webhookapi.ListResult{Subscriptions: []webhookapi.Subscription{}}
	for _, sub := range subs {
		out.Subscriptions = append(out.Subscriptions, info(sub, now))
	}
	return out, nil
}

// subscriptionIDShape is a subscription id's shape (subscriptionIDOf,
// store.NewSubscriptionID): the store refuses any other.
var subscriptionIDShape = regexp.MustCompile(`^sub_[a-z2-7]{26}$`)

// checkSubscriptionID refuses an id of another shape as WEBHOOKS_INVALID,
// before any request: the store's refusal would answer UNAVAILABLE.
func checkSubscriptionID(id string) error {
	if !subscriptionIDShape.MatchString(id) {
		return &Error{Code: webhookapi.CodeInvalid, Message: fmt.Sprintf("subscription %.80q: name it by its id, sub_ and 26 lower-case base32 characters (toolgate webhooks list)", id)}
	}
	return nil
}

// subscription reads subscription id, or answers NOT_FOUND.
func (s *Service) subscription(ctx context.Context, id string) (store.Subscription, error) {
	if err := checkSubscriptionID(id); err != nil {
		return store.Subscription{}, err
	}
	sub, ok, err := s.Store.Subscription(ctx, id)
	switch {
	case err != nil:
		return sub, &Error{Code: webhookapi.CodeUnavailable, Message: "the subscription could not be read", Err: err}
	case !ok:
		return sub, &Error{Code: webhookapi.CodeNotFound, Message: fmt.Sprintf("no subscription %.80q", id)}
	}
	return sub, nil
}

// RotateSecret gives subscription id a new secret, answered this once;
// the previous one keeps signing for webhook.RotationGrace, so that a
// receiver can move to the new one without refusing a delivery. A
// rotation less than rotateInterval after the current secret was made is
// WEBHOOKS_REFUSED (it could be its proof replayed).
func (s *Service) RotateSecret(ctx context.Context, id, proof string) (*webhookapi.RotateResult, error) {
	if err := checkSubscriptionID(id); err != nil {
		return nil, err
	}
	who, err := s.authorize(ctx, proof, webhookapi.RotateBinding(id))
	if err != nil {
		return nil, err
	}
	sub, err := s.subscription(ctx, id)
	if err != nil {
		return nil, err
	}
	now := s.now()
	if at, ok := currentSince(sub); ok && now.Before(at.Add(rotateInterval)) {
		return nil, &Error{Code: webhookapi.CodeRefused, Message: fmt.Sprintf("the secret of %s was made at %s, less than %s ago, within a proof's validity: "+
			"the same rotate-secret proof could rotate it again; rotate after %s", id, at.UTC().Format(time.RFC3339), rotateInterval, at.Add(rotateInterval).UTC().Format(time.RFC3339))}
	}
	whsec, sealed, err := s.newSecret(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.Store.Rotate(ctx, id, store.SealedSecret{Sealed: sealed, CreatedAt: now}, webhook.RotationGrace, sub.Version); err != nil {
		return nil, &Error{Code: webhookapi.CodeUnavailable, Message: "the secret could not be rotated (changed meanwhile?): repeat the request", Err: err}
	}
	s.log().InfoContext(ctx, "webhook secret rotated", "subscription_id", id, "by", who)
	return &webhookapi.RotateResult{Subscription: id, Secret: whsec, PreviousRetiresAt: now.Add(webhook.RotationGrace).Format(time.RFC3339)}, nil
}

// rotateInterval is the least time between two rotations of one
// subscription's secret: the time a caller proof is admitted (caller.Window
// after its signing, caller.Skew before it) and a second for the whole
// seconds its signing time and the secret's created_at are kept in, as
// the verifier's proof record keeps it. The verifier admits a proof
// again for the binding it was first used for, so a rotate-secret proof
// replayed within that time would rotate once more and answer a new
// secret to whoever replayed it; a rotation this soon after the last is
// refused instead.
const rotateInterval = caller.Window + caller.Skew + time.Second

// currentSince is when sub's current secret (the last without a
// retires_at) was made; false when it has none or its time is unknown.
func currentSince(sub store.Subscription) (time.Time, bool) {
	for i := len(sub.Secrets) - 1; i >= 0; i-- {
		if sec := sub.Secrets[i]; sec.RetiresAt.IsZero() {
			return sec.CreatedAt, !sec.CreatedAt.IsZero()
		}
	}
	return time.Time{}, false
}

// Disable stops deliveries to subscription id: messages already queued
// for it are dropped when they are received.
func (s *Service) Disable(ctx context.Context, id, proof string) (*webhookapi.DisableResult, error) {
	if err := checkSubscriptionID(id); err != nil {
		return nil, err
	}
	who, err := s.authorize(ctx, proof, webhookapi.DisableBinding(id))
	if err != nil {
		return nil, err
	}
	sub, err := s.subscription(ctx, id)
	if err != nil {
		return nil, err
	}
	if sub.Status == StatusDisabled {
		return &webhookapi.DisableResult{Subscription: id}, nil
	}
	if err := s.Store.Disable(ctx, id, "disabled by "+who); err != nil {
		return nil, &Error{Code: webhookapi.CodeUnavailable, Message: "the subscription could not be disabled", Err: err}
	}
	s.log().InfoContext(ctx, "webhook subscription disabled", "subscription_id", id, "by", who)
	return &webhookapi.DisableResult{Subscription: id, Disabled: true}, nil
}

// Deliveries lists event id's recorded attempts: status code, latency,
// outcome, never a body.
func (s *Service) Deliveries(ctx context.Context, event, proof string) (*webhookapi.DeliveriesResult, error) {
	if !webhook.IDPattern.MatchString(event) {
		return nil, &Error{Code: webhookapi.CodeInvalid, Message: fmt.Sprintf("event %.80q: name it by its id, evt_ and 26 lower-case base32 characters (a receiver's webhook-id, or dlq list's)", event)}
	}
	if _, err := s.authorize(ctx, proof, webhookapi.DeliveriesBinding(event)); err != nil {
		return nil, err
	}
	e, ok, err := s.Store.Event(ctx, event)
	switch {
	case errors.Is(err, store.ErrRefusedCallEvent):
		return nil, &Error{Code: webhookapi.CodeNotFound, Message: fmt.Sprintf("event %.80q is refused: not a call's event as a dispatcher records it, so it was never delivered", event)}
	case err != nil:
		return nil, &Error{Code: webhookapi.CodeUnavailable, Message: "the event could not be read", Err: err}
	case !ok:
		return nil, &Error{Code: webhookapi.CodeNotFound, Message: fmt.Sprintf("no event %.80q (events are kept 30 days)", event)}
	}
	rows, err := s.Store.Attempts(ctx, event)
	if err != nil {
		return nil, &Error{Code: webhookapi.CodeUnavailable, Message: "the attempts could not be read", Err: err}
	}
	out := &webhookapi.DeliveriesResult{Event: e.ID, Type: string(e.Type), Deliveries: []webhookapi.Delivery{}}
	for _, r := range rows {
		out.Deliveries = append(out.Deliveries, deliveryOf(r))
	}
	return out, nil
}

// deliveryOf is one attempt row as a listing shows it.
func deliveryOf(r store.AttemptRow) webhookapi.Delivery {
	return webhookapi.Delivery{Subscription: r.SubscriptionID, Attempt: r.N, At: r.At.UTC().Format(time.RFC3339), StatusCode: r.Attempt.Status,
		LatencyMS: r.Attempt.Latency.Milliseconds(), Outcome: string(r.Attempt.Outcome), ErrorClass: r.Attempt.ErrorClass}
}

// dlqVisibility is how long dlq list and redrive hold the messages they
// received, in seconds: dlq list releases them at once after.
const dlqVisibility = 30

// dlqWait is each dead-letter queue receive's WaitTimeSeconds: a long
// poll asks every SQS server, so that an empty answer means an empty
// queue; a short poll samples some and may answer none while messages
// wait (SQS Developer Guide, "Amazon SQS short and long polling"). The
// last, empty receive of a listing waits this long.
const dlqWait = 1

// deadLetters are the dead-letter queues dlq list and redrive handle,
// each with the queue its messages go back to: the deliveries', then the
// events' (when configured).
func (s *Service) deadLetters() []deadLetter {
	out := []deadLetter{{name: webhookapi.DLQDeliveries, dlq: s.DLQ, back: s.DeliveriesQueue}}
	if s.EventsDLQ != "" && s.EventsQueue != "" {
		out = append(out, deadLetter{name: webhookapi.DLQEvents, dlq: s.EventsDLQ, back: s.EventsQueue})
	}
	return out
}

// deadLetter is a dead-letter queue and its source queue.
type deadLetter struct{ name, dlq, back string }

// receiveDLQ receives up to limit messages of the dead-letter queue at
// url, ten at a time, long-polling (dlqWait), until it answers none; more
// reports that the bound was reached.
func (s *Service) receiveDLQ(ctx context.Context, url string, limit int) (msgs []types.Message, more bool, err error) {
	for len(msgs) < limit {
		out, err := s.Queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: int32(min(10, limit-len(msgs))), VisibilityTimeout: dlqVisibility,
			WaitTimeSeconds: dlqWait,
			// The SQS stand-in answers ApproximateReceiveCount only through
			// the older AttributeNames; AWS through either.
			AttributeNames:              []types.QueueAttributeName{"ApproximateReceiveCount", "SentTimestamp"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount, types.MessageSystemAttributeNameSentTimestamp}})
		if err != nil {
			return msgs, false, err
		}
		if len(out.Messages) == 0 {
			return msgs, false, nil
		}
		msgs = append(msgs, out.Messages...)
	}
	return msgs, true, nil
}

// DLQList lists the messages in the dead-letter queues (the deliveries',
// then the events'; at most webhookapi.MaxDLQ in all), then makes them
// visible again at once.
func (s *Service) DLQList(ctx context.Context, proof string) (*webhookapi.DLQResult, error) {
	if _, err := s.authorize(ctx, proof, webhookapi.DLQListBinding()); err != nil {
		return nil, err
	}
	out := &webhookapi.DLQResult{Messages: []webhookapi.DLQMessage{}}
	for _, q := range s.deadLetters() {
		if len(out.Messages) >= webhookapi.MaxDLQ {
			out.More = true
			break
		}
		msgs, more, err := s.receiveDLQ(ctx, q.dlq, webhookapi.MaxDLQ-len(out.Messages))
		s.release(ctx, q.dlq, msgs)
		if err != nil {
			return nil, &Error{Code: webhookapi.CodeUnavailable, Message: "the " + q.name + " dead-letter queue could not be read", Err: err}
		}
		out.More = out.More || more
		for _, m := range msgs {
			out.Messages = append(out.Messages, dlqMessage(q.name, m))
		}
	}
	return out, nil
}

// release makes msgs of the queue at url visible again (visibility 0),
// so that a redrive right after a listing finds them.
func (s *Service) release(ctx context.Context, url string, msgs []types.Message) {
	for _, m := range msgs {
		if _, err := s.Queue.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0}); err != nil {
			s.log().WarnContext(ctx, "dead-letter message not released", "message_id", aws.ToString(m.MessageId), "error", err.Error())
		}
	}
}

// dlqMessage is m of dead-letter queue queue as a listing shows it: a
// delivery's event and subscription ids, an event's id, or a status
// change's execution ARN; a body that is none of them shows empty ids.
func dlqMessage(queue string, m types.Message) webhookapi.DLQMessage {
	var d struct {
		webhookapi.DeliveryMessage
		ExecutionARN string `json:"execution_arn"`
	}
	_ = json.Unmarshal([]byte(aws.ToString(m.Body)), &d)
	out := webhookapi.DLQMessage{Queue: queue, Event: d.EventID, Subscription: d.SubscriptionID}
	if queue == webhookapi.DLQEvents && d.EventID == "" {
		out.Execution = d.ExecutionARN
	}
	out.ReceiveCount, _ = strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	if ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		out.SentAt = time.UnixMilli(ms).UTC().Format(time.RFC3339)
	}
	return out
}

// Redrive moves the dead-letter queues' messages back to their queues
// (at most webhookapi.MaxDLQ in all): the deliveries' to the deliveries
// queue, where each gets the whole retry schedule again, and the events'
// to the events queue, where each is fanned out again (an event's
// message was marked sent when it was first handed over, so the relay
// never sends it again: only a redrive does). Each is sent back, then
// deleted from its dead-letter queue (a failure between the two leaves it
// in both; receivers dedupe on the webhook-id).
func (s *Service) Redrive(ctx context.Context, proof string) (*webhookapi.RedriveResult, error) {
	who, err := s.authorize(ctx, proof, webhookapi.RedriveBinding())
	if err != nil {
		return nil, err
	}
	res := &webhookapi.RedriveResult{}
	for _, q := range s.deadLetters() {
		if res.Moved >= webhookapi.MaxDLQ {
			res.More = true
			break
		}
		msgs, more, err := s.receiveDLQ(ctx, q.dlq, webhookapi.MaxDLQ-res.Moved)
		if err != nil {
			s.release(ctx, q.dlq, msgs)
			return nil, &Error{Code: webhookapi.CodeUnavailable, Message: fmt.Sprintf("%d moved, then the %s dead-letter queue could not be read: repeat the redrive", res.Moved, q.name), Err: err}
		}
		res.More = res.More || more
		for i, m := range msgs {
			if _, err := s.Queue.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.back), MessageBody: m.Body}); err != nil {
				s.release(ctx, q.dlq, msgs[i:])
				return nil, &Error{Code: webhookapi.CodeUnavailable, Message: fmt.Sprintf("%d moved, then the %s queue failed: repeat the redrive", res.Moved, q.name), Err: err}
			}
			if _, err := s.Queue.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.dlq), ReceiptHandle: m.ReceiptHandle}); err != nil {
				s.release(ctx, q.dlq, msgs[i+1:])
				return nil, &Error{Code: webhookapi.CodeUnavailable, Message: fmt.Sprintf("%d moved, then the %s dead-letter queue failed (the last one may be delivered twice): repeat the redrive", res.Moved+1, q.name), Err: err}
			}
			res.Moved++
		}
	}
	s.log().InfoContext(ctx, "webhook dead-letter queues redriven", "moved", res.Moved, "more", res.More, "by", who)
	return res, nil
}

// errorOf is err as an *Error: one that is not is UNAVAILABLE, "internal
// error".
func errorOf(err error) *Error {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: webhookapi.CodeUnavailable, Message: "internal error", Err: err}
	}
	return e
}
