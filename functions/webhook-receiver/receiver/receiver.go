package receiver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/functionurl"
	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/inboundapi"
)

// Bounds of a request (docs/webhooks.md, "Receiving events").
const (
	// HardMaxBodyBytes is the largest body the receiver reads,
	// inboundapi.MaxBodyBytes (200 KiB, after base64 decoding): a larger
	// one is refused 413 before any look-up. An event item holds the body
	// until its run starts, and a DynamoDB item is at most 400 KB
	// (DynamoDB quota "Item size").
	HardMaxBodyBytes = inboundapi.MaxBodyBytes
	// UnknownSourceCache is how long a container remembers that a source
	// does not exist: 10 s, so a flood of requests to an unknown name
	// reads the table once per name and period, and a source just added
	// answers within that time.
	UnknownSourceCache = 10 * time.Second
	// MaxCachedSources and MaxCachedUnknown bound the container's caches
	// of known and unknown sources, in entries: unknown names, which any
	// sender may choose, never evict known sources.
	MaxCachedSources = 512
	MaxCachedUnknown = 256
	// RelayBatch is how many RECEIVED events one relay run queues at
	// most, oldest first: the next run takes the rest.
	RelayBatch = 100
)

// Store is the part of the inbound store (shared/inbound/store) the
// receiver uses.
type Store interface {
	SourceSecrets(ctx context.Context, name string) (store.Source, error)
	Receive(ctx context.Context, e store.Event, expires time.Time) (*store.Event, error)
	MarkQueued(ctx context.Context, k store.EventKey, now time.Time) error
	Unqueued(ctx context.Context, before time.Time, limit int) ([]store.EventKey, error)
}

// Queue is the SQS method the receiver sends with.
type Queue interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Config is what New needs. Store, Queue, QueueURL and Open are required;
// the durations default to FunctionConfigFromEnv's defaults.
type Config struct {
	Store Store
	Queue Queue
	// QueueURL is the inbound queue's URL.
	QueueURL string
	// Open opens a source's sealed secret (store.OpenSecret with the KMS
	// client); its error must name no byte of the secret.
	Open func(ctx context.Context, source string, sealed vault.Sealed) ([]byte, error)
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Log receives one line per refusal and per failure; nil: discarded.
	Log *slog.Logger
	// Retention is how long an event item is kept (its expires_at).
	Retention time.Duration
	// RelayAfter is how long an event stays RECEIVED before the relay, or
	// a sender's retry, queues it again.
	RelayAfter time.Duration
	// SecretCache is how long a source and its opened secrets are kept.
	SecretCache time.Duration
}

// Handler is the webhook-receiver function: an http.Handler for its
// Function URL (auth NONE), and the Lambda handler (Handle) that also
// runs the relay on a scheduled event.
type Handler struct {
	c     Config
	cache *sourceCache
}

// New returns the receiver for c.
func New(c Config) *Handler {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Retention <= 0 {
		c.Retention = inboundapi.DefaultRetentionDays * 24 * time.Hour
	}
	if c.RelayAfter <= 0 {
		c.RelayAfter = inboundapi.DefaultRelayAfter
	}
	if c.SecretCache <= 0 {
		c.SecretCache = inboundapi.DefaultSecretCache
	}
	h := &Handler{c: c}
	h.cache = newSourceCache(h.load)
	return h
}

// Handle is the Lambda handler: a Function URL request (payload format
// 2.0) is served by ServeHTTP; a scheduled event (detail-type "Scheduled
// Event") runs Relay. Anything else is an error of the invocation.
func (h *Handler) Handle(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	var probe struct {
		RequestContext json.RawMessage `json:"requestContext"`
		DetailType     string          `json:"detail-type"`
	}
	if err := json.Unmarshal(payload, &probe); err != nil {
		return nil, errors.New("the invocation is not a JSON object")
	}
	switch {
	case probe.RequestContext != nil:
		return functionurl.ServePayload(ctx, h, payload, func() (int, []byte) { return http.StatusBadRequest, answerBody("bad_request") })
	case probe.DetailType == "Scheduled Event":
		n, err := h.Relay(ctx)
		h.c.Log.InfoContext(ctx, "inbound relay", "queued", n)
		if err != nil {
			return nil, fmt.Errorf("relay: %w", err)
		}
		return json.RawMessage("null"), nil
	}
	return nil, errors.New("the invocation is neither a Function URL request nor a scheduled event")
}

// Answers' status words: the whole body of every answer is
// {"status": WORD}; no answer echoes any part of the request.
const (
	wordAccepted    = "accepted"
	wordDuplicate   = "duplicate"
	wordNotFound    = "not_found"
	wordMethod      = "method_not_allowed"
	wordBadRequest  = "bad_request"
	wordTooLarge    = "too_large"
	wordUnauth      = "unauthorized"
	wordUnsupported = "unsupported_media_type"
	wordUnavailable = "unavailable"
)

func answerBody(word string) []byte { return []byte(`{"status":"` + word + `"}`) }

func answer(w http.ResponseWriter, status int, word string) {
	functionurl.WriteJSON(w, status, answerBody(word))
}

// sourceOf is the source name of a path /in/<name>, and whether the path
// has that form (a plain path, functionurl.Plain, of exactly two
// segments, the first "in").
func sourceOf(r *http.Request) (string, bool) {
	if !functionurl.Plain(r) {
		return "", false
	}
	name, ok := strings.CutPrefix(r.URL.Path, inboundapi.ReceiverRoutePrefix)
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return name, true
}

// ServeHTTP serves POST /in/<source>, in this order, stopping at the
// first refusal (docs/webhooks.md, "Receiving events"):
//
//  1. a path of another form, or a name inbound.CheckName refuses: 404;
//     another method: 405 (Allow: POST);
//  2. a body over HardMaxBodyBytes: 413, before any look-up;
//  3. an unknown source: 401;
//  4. inbound.Verify fails over the exact raw bytes: 401, whatever the
//     body's size, so that a sender without the secret cannot tell a
//     source from a name that is none; a verified body over the source's
//     max_body_bytes: 413 (a Stripe body whose signature verifies but
//     that is no JSON object: 415);
//  5. a body that is not JSON, or not UTF-8 (RFC 8259 §8.1): 415;
//  6. store.Receive records the event RECEIVED; a new event is sent to
//     the inbound queue and marked QUEUED: 202 {"status":"accepted"}. An
//     event already QUEUED, STARTED or FAILED: 200 {"status":"duplicate"},
//     nothing sent. An event still RECEIVED is sent again once it is
//     RelayAfter old (202); younger, another request of it is sending it
//     or the relay will, and it is answered 202 with nothing sent, so
//     that concurrent duplicates send one message.
//
// SendMessage failing answers 503 and leaves the item RECEIVED for the
// relay; a table, KMS or queue failure answers 503. Every refusal and
// failure logs one line naming the source and a reason word, never the
// body, a header value, a signature or a secret; a refusal stores and
// sends nothing.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name, ok := sourceOf(r)
	if !ok || inbound.CheckName(name) != nil {
		h.refuse(ctx, "", "no_route")
		answer(w, http.StatusNotFound, wordNotFound)
		return
	}
	if r.Method != http.MethodPost {
		h.refuse(ctx, name, "method")
		w.Header().Set("Allow", http.MethodPost)
		answer(w, http.StatusMethodNotAllowed, wordMethod)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, HardMaxBodyBytes+1))
	if err != nil {
		h.refuse(ctx, name, "unreadable_body")
		answer(w, http.StatusBadRequest, wordBadRequest)
		return
	}
	if len(body) > HardMaxBodyBytes {
		h.refuse(ctx, name, "body_over_hard_cap")
		answer(w, http.StatusRequestEntityTooLarge, wordTooLarge)
		return
	}
	now := h.c.Now()
	src, cached, err := h.cache.get(ctx, name, now)
	if err != nil {
		h.fail(ctx, name, "source_unavailable", err)
		answer(w, http.StatusServiceUnavailable, wordUnavailable)
		return
	}
	if src == nil {
		h.refuse(ctx, name, "unknown_source")
		answer(w, http.StatusUnauthorized, wordUnauth)
		return
	}
	ev, err := inbound.Verify(src.scheme, src.secretsAt(now), r.Header, body, now)
	if cached && (err == nil || errors.Is(err, inbound.ErrBodyNotJSON)) {
		// Verified with cached secrets: taken only if the source still
		// has them, so that a source removed, or removed and added again,
		// takes nothing signed with its old secret while a container
		// keeps it. Only a verified delivery costs this read.
		same, cerr := h.unchanged(ctx, name, src)
		if cerr != nil {
			h.fail(ctx, name, "source_unavailable", cerr)
			answer(w, http.StatusServiceUnavailable, wordUnavailable)
			return
		}
		if !same {
			h.cache.forget(name, src)
			if src, _, err = h.cache.get(ctx, name, now); err != nil {
				h.fail(ctx, name, "source_unavailable", err)
				answer(w, http.StatusServiceUnavailable, wordUnavailable)
				return
			}
			if src == nil {
				h.refuse(ctx, name, "unknown_source")
				answer(w, http.StatusUnauthorized, wordUnauth)
				return
			}
			ev, err = inbound.Verify(src.scheme, src.secretsAt(now), r.Header, body, now)
		}
	}
	if (err == nil || errors.Is(err, inbound.ErrBodyNotJSON)) && len(body) > src.maxBody {
		// Told only once the signature verifies: to anyone else a known
		// source answers as an unknown one does (401).
		h.refuse(ctx, name, "body_over_source_limit")
		answer(w, http.StatusRequestEntityTooLarge, wordTooLarge)
		return
	}
	if errors.Is(err, inbound.ErrBodyNotJSON) {
		h.refuse(ctx, name, "body_not_json")
		answer(w, http.StatusUnsupportedMediaType, wordUnsupported)
		return
	}
	if err != nil {
		h.c.Log.InfoContext(ctx, "inbound webhook refused", "source", name, "reason", verifyReason(err), "detail", err.Error())
		answer(w, http.StatusUnauthorized, wordUnauth)
		return
	}
	if !json.Valid(body) || !utf8.Valid(body) {
		// JSON between systems is UTF-8 (RFC 8259 §8.1), and Step
		// Functions takes no other input: such a body could never start
		// its run.
		h.refuse(ctx, name, "body_not_json")
		answer(w, http.StatusUnsupportedMediaType, wordUnsupported)
		return
	}
	status, word := h.receive(ctx, name, ev, body, now)
	answer(w, status, word)
}

// receive records a verified event and queues it (ServeHTTP, step 6).
func (h *Handler) receive(ctx context.Context, name string, ev inbound.Event, body []byte, now time.Time) (int, string) {
	key := store.EventKey{Origin: inboundapi.OriginSource, Name: name, ID: ev.ID}
	received := now.UTC().Truncate(time.Second)
	existing, err := h.c.Store.Receive(ctx, store.Event{Key: key, EventType: ev.Type, Body: body,
		BodySHA256: store.BodyDigest(body), ReceivedAt: received}, now.Add(h.c.Retention))
	if err != nil {
		h.fail(ctx, name, "record_failed", err)
		return http.StatusServiceUnavailable, wordUnavailable
	}
	if existing != nil {
		switch {
		case existing.Status != store.StatusReceived:
			h.c.Log.InfoContext(ctx, "inbound webhook", "source", name, "outcome", wordDuplicate, "status", existing.Status)
			return http.StatusOK, wordDuplicate
		case now.Sub(existing.ReceivedAt) < h.c.RelayAfter:
			h.c.Log.InfoContext(ctx, "inbound webhook", "source", name, "outcome", "in_flight")
			return http.StatusAccepted, wordAccepted
		}
	}
	if err := h.send(ctx, key); err != nil {
		h.fail(ctx, name, "queue_failed", err)
		return http.StatusServiceUnavailable, wordUnavailable
	}
	if err := h.c.Store.MarkQueued(ctx, key, now); err != nil {
		// Sent: the consumer runs it. Left RECEIVED, the relay sends it
		// once more, which the consumer's execution name deduplicates.
		h.fail(ctx, name, "mark_queued_failed", err)
	}
	h.c.Log.InfoContext(ctx, "inbound webhook", "source", name, "outcome", wordAccepted)
	return http.StatusAccepted, wordAccepted
}

// send puts the message of source event k on the inbound queue,
// {"source", "event_id"} (inboundapi.SourceMessage); never a body. Only
// source events are ever RECEIVED (store.Receive refuses any other
// origin): a schedule's firing is put QUEUED by inbound-start itself.
func (h *Handler) send(ctx context.Context, k store.EventKey) error {
	m := inboundapi.SourceMessage(k.Name, k.ID)
	if _, err := h.c.Queue.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(h.c.QueueURL), MessageBody: aws.String(string(m.Encode()))}); err != nil {
		return fmt.Errorf("send to the inbound queue: %w", err)
	}
	return nil
}

// Relay queues the events left RECEIVED for longer than RelayAfter,
// oldest first, at most RelayBatch (store.Unqueued): each is sent to the
// inbound queue and marked QUEUED. It returns how many it queued; its
// error counts those it did not (each logged with its origin and name),
// which the next run tries again.
func (h *Handler) Relay(ctx context.Context) (int, error) {
	now := h.c.Now()
	keys, err := h.c.Store.Unqueued(ctx, now.Add(-h.c.RelayAfter), RelayBatch)
	if err != nil {
		return 0, fmt.Errorf("read the unqueued events: %w", err)
	}
	queued, failed := 0, 0
	for _, k := range keys {
		if err := h.send(ctx, k); err != nil {
			failed++
			h.c.Log.WarnContext(ctx, "inbound relay failed", "origin", k.Origin, "name", k.Name, "reason", "queue_failed", "error", err.Error())
			continue
		}
		if err := h.c.Store.MarkQueued(ctx, k, now); err != nil {
			failed++
			h.c.Log.WarnContext(ctx, "inbound relay failed", "origin", k.Origin, "name", k.Name, "reason", "mark_queued_failed", "error", err.Error())
			continue
		}
		queued++
	}
	if failed > 0 {
		return queued, fmt.Errorf("%d of %d events not queued", failed, len(keys))
	}
	return queued, nil
}

// refuse logs one refused request.
func (h *Handler) refuse(ctx context.Context, source, reason string) {
	h.c.Log.InfoContext(ctx, "inbound webhook refused", "source", source, "reason", reason)
}

// fail logs one request the receiver could not serve, with the cause: a
// store, KMS or SQS error, which names keys and AWS error codes, never a
// body or a secret.
func (h *Handler) fail(ctx context.Context, source, reason string, err error) {
	h.c.Log.WarnContext(ctx, "inbound webhook failed", "source", source, "reason", reason, "error", err.Error())
}

// verifyReason is the reason word of a Verify error.
func verifyReason(err error) string {
	for _, r := range []struct {
		err  error
		word string
	}{
		{inbound.ErrNoSecret, "no_secret"},
		{inbound.ErrMissingHeader, "missing_header"},
		{inbound.ErrMalformedHeader, "malformed_header"},
		{inbound.ErrStaleTimestamp, "stale_timestamp"},
		{inbound.ErrBadSignature, "bad_signature"},
		{inbound.ErrNoEventID, "no_event_id"},
		{inbound.ErrUnknownScheme, "unknown_scheme"},
	} {
		if errors.Is(err, r.err) {
			return r.word
		}
	}
	return "unverified"
}
