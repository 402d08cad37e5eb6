package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	localkms "github.com/toolgate/toolgate/infra/local/kms"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/webhook"
)

// clock is an injected clock tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// queue records what SendMessage sent, failing while err is set. It is a
// fake where a stand-in is wanted: the local stack's SQS stand-in is
// being added beside this package, and these tests only need to see what
// was sent.
type queue struct {
	mu   sync.Mutex
	sent []sqs.SendMessageInput
	err  error
}

func (q *queue) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return nil, q.err
	}
	q.sent = append(q.sent, *in)
	return &sqs.SendMessageOutput{MessageId: aws.String(fmt.Sprint(len(q.sent)))}, nil
}

// ids are the event ids the queue's messages name, in order.
func (q *queue) ids(t *testing.T) []string {
	t.Helper()
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for _, in := range q.sent {
		var m EventMessage
		if err := json.Unmarshal([]byte(aws.ToString(in.MessageBody)), &m); err != nil {
			t.Fatalf("message body %q: %v", aws.ToString(in.MessageBody), err)
		}
		if aws.ToString(in.QueueUrl) != queueURL {
			t.Errorf("sent to %q, want %q", aws.ToString(in.QueueUrl), queueURL)
		}
		out = append(out, m.EventID)
	}
	return out
}

const queueURL = "http://127.0.0.1:9324/000000000000/toolgate-test-webhook-events"

// t0 is the clock's start: whole seconds, as events are stamped.
var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// fixture is a Store on a table of the test's own on the shared dynalite,
// and its clock.
type fixture struct {
	store *Store
	clock *clock
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	_, db, name := localtest.SharedTable(t, "webhooks")
	c := &clock{t: t0}
	return fixture{store: New(db, name, c.Now), clock: c}
}

// evtID is the id of the i-th test event: evt_ and 26 base32 characters,
// as webhook.EventID makes them.
func evtID(i int) string {
	sum := sha256.Sum256([]byte(fmt.Sprint("test event ", i)))
	return "evt_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16]))
}

func event(i int, at time.Time) webhook.Event {
	return webhook.Event{ID: evtID(i), Type: "review.requested", Timestamp: at, Solution: "digest",
		Data: json.RawMessage(fmt.Sprintf(`{"review_id":"rv_%d"}`, i))}
}

func subID(t *testing.T) string {
	t.Helper()
	id, err := NewSubscriptionID()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// sealedFor is a sealed secret whose bytes are not a real seal: for tests
// of the store alone, which never open it.
func sealedFor(tag byte) SealedSecret {
	return SealedSecret{Sealed: vault.Sealed{Ciphertext: []byte{tag, 1}, Nonce: bytes.Repeat([]byte{tag}, 12), EncryptedKey: []byte{tag, 2},
		KeyID: "arn:aws:kms:eu-west-1:123456789012:key/k"}}
}

func subscription(t *testing.T, tag byte) Subscription {
	return Subscription{ID: subID(t), URL: "https://hooks.example.com/toolgate", Events: []string{"run.*", "review.requested"},
		CreatedBy: "arn:aws:iam::123456789012:role/operator", Secrets: []SealedSecret{sealedFor(tag)}}
}

func TestNewSubscriptionIDIsSubAnd26Base32Characters(t *testing.T) {
	a, b := subID(t), subID(t)
	if !subscriptionID.MatchString(a) || a == b {
		t.Fatalf("ids %q, %q", a, b)
	}
}

// Subscribe is conditional: an id already taken is ErrExists, and the
// first subscription stays as it was.
func TestSubscribeRefusesAnIDTaken(t *testing.T) {
	f := newFixture(t)
	sub := subscription(t, 1)
	if err := f.store.Subscribe(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	again := sub
	again.URL = "https://attacker.example.com/"
	if err := f.store.Subscribe(t.Context(), again); !errors.Is(err, ErrExists) {
		t.Fatalf("second Subscribe = %v, want ErrExists", err)
	}
	got, ok, err := f.store.Subscription(t.Context(), sub.ID)
	if err != nil || !ok {
		t.Fatalf("Subscription = %v, %v", ok, err)
	}
	if got.URL != sub.URL || got.Status != StatusActive || got.Version != 1 || !got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t0) {
		t.Errorf("stored %+v", got)
	}
}

// Subscribe refuses what could not be delivered or signed, naming what is
// missing.
func TestSubscribeRefusesAnIncompleteSubscription(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		name string
		edit func(*Subscription)
		says string
	}{
		{"a bad id", func(s *Subscription) { s.ID = "sub_#x" }, "subscription id"},
		{"no URL", func(s *Subscription) { s.URL = "" }, "no URL"},
		{"no patterns", func(s *Subscription) { s.Events = nil }, "no event patterns"},
		{"no secret", func(s *Subscription) { s.Secrets = nil }, "current one"},
		{"a retiring secret last", func(s *Subscription) { s.Secrets[0].RetiresAt = t0.Add(time.Hour) }, "current one"},
		{"an incomplete seal", func(s *Subscription) { s.Secrets[0].EncryptedKey = nil }, "incomplete"},
		{"an unknown status", func(s *Subscription) { s.Status = "paused" }, "status"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sub := subscription(t, 1)
			c.edit(&sub)
			if err := f.store.Subscribe(t.Context(), sub); err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("Subscribe = %v, want %q", err, c.says)
			}
		})
	}
}

// Subscriptions lists every subscription, active and disabled, in id
// order, each as stored.
func TestSubscriptionsListsEveryOne(t *testing.T) {
	f := newFixture(t)
	var want []Subscription
	for i := range 3 {
		sub := subscription(t, byte(i))
		if i == 1 {
			sub.Solution = "digest"
			sub.Status, sub.DisabledReason = StatusDisabled, "410 Gone"
		}
		if err := f.store.Subscribe(t.Context(), sub); err != nil {
			t.Fatal(err)
		}
		sub.Status = cmpOr(sub.Status, StatusActive)
		sub.CreatedAt, sub.UpdatedAt, sub.Version = t0, t0, 1
		sub.Secrets[0].CreatedAt = t0
		want = append(want, sub)
	}
	slices.SortFunc(want, func(a, b Subscription) int { return strings.Compare(a.ID, b.ID) })
	got, err := f.store.Subscriptions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !equalSubscriptions(got, want) {
		t.Errorf("Subscriptions =\n%+v\nwant\n%+v", got, want)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func equalSubscriptions(a, b []Subscription) bool {
	return slices.EqualFunc(a, b, func(x, y Subscription) bool {
		return x.ID == y.ID && x.URL == y.URL && slices.Equal(x.Events, y.Events) && x.Solution == y.Solution && x.Status == y.Status &&
			x.DisabledReason == y.DisabledReason && x.CreatedBy == y.CreatedBy && x.CreatedAt.Equal(y.CreatedAt) &&
			x.UpdatedAt.Equal(y.UpdatedAt) && x.Version == y.Version && equalSecrets(x.Secrets, y.Secrets)
	})
}

func equalSecrets(a, b []SealedSecret) bool {
	return slices.EqualFunc(a, b, func(x, y SealedSecret) bool {
		return bytes.Equal(x.Ciphertext, y.Ciphertext) && bytes.Equal(x.Nonce, y.Nonce) && bytes.Equal(x.EncryptedKey, y.EncryptedKey) &&
			x.KeyID == y.KeyID && x.CreatedAt.Equal(y.CreatedAt) && x.RetiresAt.Equal(y.RetiresAt)
	})
}

// Rotate keeps the old current secret signing for the grace, then drops
// it at the next rotation after its retires_at; it is conditional on the
// version read.
func TestRotateKeepsTheOldSecretForTheGraceThenRetiresIt(t *testing.T) {
	f := newFixture(t)
	sub := subscription(t, 1)
	if err := f.store.Subscribe(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	grace := 24 * time.Hour
	f.clock.Add(time.Minute)
	rotated := f.clock.Now()
	if err := f.store.Rotate(t.Context(), sub.ID, sealedFor(2), grace, 1); err != nil {
		t.Fatal(err)
	}
	got, _, err := f.store.Subscription(t.Context(), sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 2 || !got.UpdatedAt.Equal(rotated) || len(got.Secrets) != 2 ||
		!got.Secrets[0].RetiresAt.Equal(rotated.Add(grace)) || !got.Secrets[1].RetiresAt.IsZero() ||
		!got.Secrets[1].CreatedAt.Equal(rotated) || got.Secrets[1].Ciphertext[0] != 2 {
		t.Fatalf("after one rotation: %+v", got)
	}
	if n := len(got.Signing(rotated.Add(grace - time.Second))); n != 2 {
		t.Errorf("within the grace %d secrets sign, want 2", n)
	}
	if s := got.Signing(rotated.Add(grace)); len(s) != 1 || s[0].Ciphertext[0] != 2 {
		t.Errorf("after the grace the signing secrets are %+v, want the new one only", s)
	}
	if err := f.store.Rotate(t.Context(), sub.ID, sealedFor(3), grace, 1); !errors.Is(err, ErrConflict) {
		t.Fatalf("Rotate at a stale version = %v, want ErrConflict", err)
	}
	f.clock.Add(grace + time.Second)
	if err := f.store.Rotate(t.Context(), sub.ID, sealedFor(3), grace, 2); err != nil {
		t.Fatal(err)
	}
	got, _, err = f.store.Subscription(t.Context(), sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	var tags []byte
	for _, s := range got.Secrets {
		tags = append(tags, s.Ciphertext[0])
	}
	if !bytes.Equal(tags, []byte{2, 3}) || got.Version != 3 {
		t.Errorf("after the grace and a second rotation: secrets %v, version %d; want [2 3] (the first retired), 3", tags, got.Version)
	}
	if err := f.store.Rotate(t.Context(), subID(t), sealedFor(4), grace, 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("Rotate of no subscription = %v, want ErrNotFound", err)
	}
}

// Disable sets the status and reason, moves the version (so a rotation
// read before fails), and keeps the URL and secrets.
func TestDisableKeepsTheSubscriptionDisabled(t *testing.T) {
	f := newFixture(t)
	sub := subscription(t, 1)
	if err := f.store.Subscribe(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	f.clock.Add(time.Minute)
	if err := f.store.Disable(t.Context(), sub.ID, "410 Gone"); err != nil {
		t.Fatal(err)
	}
	got, _, err := f.store.Subscription(t.Context(), sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusDisabled || got.DisabledReason != "410 Gone" || got.Version != 2 || !got.UpdatedAt.Equal(t0.Add(time.Minute)) ||
		got.URL != sub.URL || len(got.Secrets) != 1 {
		t.Errorf("disabled: %+v", got)
	}
	if err := f.store.Rotate(t.Context(), sub.ID, sealedFor(2), time.Hour, 1); !errors.Is(err, ErrConflict) {
		t.Errorf("Rotate at the version before the disable = %v, want ErrConflict", err)
	}
	if err := f.store.Disable(t.Context(), subID(t), "gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Disable of no subscription = %v, want ErrNotFound", err)
	}
}

// RecordEvent records an event once: a second record of its id reports
// false and changes nothing; Event reads it back.
func TestRecordEventRecordsOnce(t *testing.T) {
	f := newFixture(t)
	e := event(1, t0)
	if ok, err := f.store.RecordEvent(t.Context(), e); err != nil || !ok {
		t.Fatalf("first RecordEvent = %v, %v", ok, err)
	}
	second := e
	second.Data = json.RawMessage(`{"review_id":"rv_other"}`)
	if ok, err := f.store.RecordEvent(t.Context(), second); err != nil || ok {
		t.Fatalf("second RecordEvent = %v, %v; want false, nil", ok, err)
	}
	got, ok, err := f.store.Event(t.Context(), e.ID)
	if err != nil || !ok {
		t.Fatalf("Event = %v, %v", ok, err)
	}
	if got.ID != e.ID || got.Type != e.Type || !got.Timestamp.Equal(e.Timestamp) || got.Solution != e.Solution || string(got.Data) != string(e.Data) {
		t.Errorf("Event = %+v, want %+v", got, e)
	}
	if _, ok, err := f.store.Event(t.Context(), evtID(2)); ok || err != nil {
		t.Errorf("Event of no event = %v, %v", ok, err)
	}
}

// RecordEvent refuses an event it could not key or deliver, and never
// quotes the data.
func TestRecordEventRefusesABadEvent(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		name string
		edit func(*webhook.Event)
		says string
	}{
		{"a bad id", func(e *webhook.Event) { e.ID = "evt_SECRET" }, "event id"},
		{"no type", func(e *webhook.Event) { e.Type = "" }, "no type"},
		{"data that is not JSON", func(e *webhook.Event) { e.Data = json.RawMessage(`{"canary":`) }, "not JSON"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := event(1, t0)
			c.edit(&e)
			_, err := f.store.RecordEvent(t.Context(), e)
			if err == nil || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "canary") {
				t.Fatalf("RecordEvent = %v, want %q and no data", err, c.says)
			}
		})
	}
}

// MarkSent takes the event out of the sparse index; an unknown id is
// ErrNotFound, and creates no item.
func TestMarkSentRemovesTheEventFromTheUnsentIndex(t *testing.T) {
	f := newFixture(t)
	for i := range 2 {
		if _, err := f.store.RecordEvent(t.Context(), event(i, t0)); err != nil {
			t.Fatal(err)
		}
	}
	later := t0.Add(time.Hour)
	if ids, err := f.store.Unsent(t.Context(), later, 10); err != nil || len(ids) != 2 {
		t.Fatalf("Unsent before MarkSent = %v, %v", ids, err)
	}
	if err := f.store.MarkSent(t.Context(), evtID(0)); err != nil {
		t.Fatal(err)
	}
	if ids, err := f.store.Unsent(t.Context(), later, 10); err != nil || !slices.Equal(ids, []string{evtID(1)}) {
		t.Errorf("Unsent after MarkSent = %v, %v; want only %s", ids, err, evtID(1))
	}
	if err := f.store.MarkSent(t.Context(), evtID(7)); !errors.Is(err, ErrNotFound) {
		t.Errorf("MarkSent of no event = %v, want ErrNotFound", err)
	}
	if _, ok, _ := f.store.Event(t.Context(), evtID(7)); ok {
		t.Error("MarkSent of no event created one")
	}
}

// Unsent lists events oldest first, only those produced before the bound,
// at most limit.
func TestUnsentIsOldestFirstAndOnlyOlderThanTheBound(t *testing.T) {
	f := newFixture(t)
	// Recorded newest first, so that the order is the index's, not the
	// writes'.
	for i := 3; i >= 0; i-- {
		if _, err := f.store.RecordEvent(t.Context(), event(i, t0.Add(time.Duration(i)*time.Minute))); err != nil {
			t.Fatal(err)
		}
	}
	bound := t0.Add(2 * time.Minute) // events 0 and 1 are older; 2 is at the bound, 3 after it
	if ids, err := f.store.Unsent(t.Context(), bound, 10); err != nil || !slices.Equal(ids, []string{evtID(0), evtID(1)}) {
		t.Errorf("Unsent(bound) = %v, %v; want %s, %s", ids, err, evtID(0), evtID(1))
	}
	if ids, err := f.store.Unsent(t.Context(), t0.Add(time.Hour), 3); err != nil || !slices.Equal(ids, []string{evtID(0), evtID(1), evtID(2)}) {
		t.Errorf("Unsent(limit 3) = %v, %v", ids, err)
	}
	if _, err := f.store.Unsent(t.Context(), bound, 0); err == nil {
		t.Error("Unsent with limit 0 gave no error")
	}
}

// Emit records the event, sends {"event_id"} to the queue and marks it
// sent: the relay finds nothing.
func TestEmitRecordsSendsAndMarks(t *testing.T) {
	f := newFixture(t)
	q := &queue{}
	em := &Emitter{Store: f.store, Queue: q, QueueURL: queueURL}
	e := event(1, t0)
	if err := em.Emit(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	if ids := q.ids(t); !slices.Equal(ids, []string{e.ID}) {
		t.Fatalf("sent %v, want %s", ids, e.ID)
	}
	if ids, err := f.store.Unsent(t.Context(), t0.Add(time.Hour), 10); err != nil || len(ids) != 0 {
		t.Errorf("Unsent after Emit = %v, %v; want none", ids, err)
	}
	if _, ok, err := f.store.Event(t.Context(), e.ID); !ok || err != nil {
		t.Errorf("Event after Emit = %v, %v", ok, err)
	}
}

// Emit of an event already recorded sends nothing: whoever recorded it
// sends it, or the relay does.
func TestEmitOfARecordedEventSendsNothing(t *testing.T) {
	f := newFixture(t)
	q := &queue{}
	em := &Emitter{Store: f.store, Queue: q, QueueURL: queueURL}
	e := event(1, t0)
	if _, err := f.store.RecordEvent(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	if err := em.Emit(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	if ids := q.ids(t); len(ids) != 0 {
		t.Errorf("sent %v, want nothing", ids)
	}
}

// An Emitter without a queue URL (a tool function's) records only; the
// event waits in the index for the relay.
func TestEmitWithoutAQueueRecordsOnly(t *testing.T) {
	f := newFixture(t)
	em := &Emitter{Store: f.store}
	e := event(1, t0)
	if err := em.Emit(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	if ids, err := f.store.Unsent(t.Context(), t0.Add(time.Hour), 10); err != nil || !slices.Equal(ids, []string{e.ID}) {
		t.Errorf("Unsent = %v, %v; want %s", ids, err, e.ID)
	}
}

// A producer that stops between the record and the send (here: its send
// fails) leaves the event to the relay, which sends it once: not before
// the bound, once after it, and not again.
func TestRelaySendsACrashedProducersEventOnce(t *testing.T) {
	f := newFixture(t)
	q := &queue{err: errors.New("connection reset")}
	em := &Emitter{Store: f.store, Queue: q, QueueURL: queueURL}
	e := event(1, t0)
	if err := em.Emit(t.Context(), e); !errors.Is(err, ErrLeftToRelay) {
		t.Fatalf("Emit with a failing queue = %v, want ErrLeftToRelay", err)
	}
	q.err = nil
	after := time.Minute
	if n, err := Relay(t.Context(), f.store, q, queueURL, t0.Add(30*time.Second), after); err != nil || n != 0 {
		t.Fatalf("Relay within the bound = %d, %v; want 0", n, err)
	}
	if n, err := Relay(t.Context(), f.store, q, queueURL, t0.Add(2*after), after); err != nil || n != 1 {
		t.Fatalf("Relay after the bound = %d, %v; want 1", n, err)
	}
	if n, err := Relay(t.Context(), f.store, q, queueURL, t0.Add(3*after), after); err != nil || n != 0 {
		t.Fatalf("second Relay = %d, %v; want 0", n, err)
	}
	if ids := q.ids(t); !slices.Equal(ids, []string{e.ID}) {
		t.Errorf("sent %v, want %s once", ids, e.ID)
	}
}

// A failed send leaves the event unsent, and Relay reports it and sends
// it at its next run.
func TestRelayRetriesAFailedSend(t *testing.T) {
	f := newFixture(t)
	if _, err := f.store.RecordEvent(t.Context(), event(1, t0)); err != nil {
		t.Fatal(err)
	}
	q := &queue{err: errors.New("throttled")}
	if n, err := Relay(t.Context(), f.store, q, queueURL, t0.Add(time.Hour), time.Minute); err == nil || n != 0 {
		t.Fatalf("Relay with a failing queue = %d, %v; want 0 and the error", n, err)
	}
	q.err = nil
	if n, err := Relay(t.Context(), f.store, q, queueURL, t0.Add(time.Hour), time.Minute); err != nil || n != 1 {
		t.Fatalf("Relay = %d, %v; want 1", n, err)
	}
}

// Attempts are recorded per subscription and attempt number, and read
// back in that order with their status, latency, outcome and class.
func TestAttemptsAreRecordedAndReadBack(t *testing.T) {
	f := newFixture(t)
	e := evtID(1)
	a, b := subID(t), subID(t)
	if a > b {
		a, b = b, a
	}
	records := []struct {
		sub string
		n   int
		at  webhook.Attempt
	}{
		{b, 1, webhook.Attempt{Status: 200, Latency: 87 * time.Millisecond, Outcome: "delivered"}},
		{a, 2, webhook.Attempt{Status: 503, Latency: 1200 * time.Millisecond, Outcome: "retry"}},
		{a, 1, webhook.Attempt{Latency: 10 * time.Second, Outcome: "retry", ErrorClass: "timeout"}},
		{a, 10, webhook.Attempt{Status: 410, Latency: 5 * time.Millisecond, Outcome: "gone"}},
	}
	for i, r := range records {
		f.clock.Add(time.Second)
		if err := f.store.RecordAttempt(t.Context(), e, r.sub, r.n, r.at); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	got, err := f.store.Attempts(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	want := []AttemptRow{
		{SubscriptionID: a, N: 1, At: t0.Add(3 * time.Second), Attempt: records[2].at},
		{SubscriptionID: a, N: 2, At: t0.Add(2 * time.Second), Attempt: records[1].at},
		{SubscriptionID: a, N: 10, At: t0.Add(4 * time.Second), Attempt: records[3].at},
		{SubscriptionID: b, N: 1, At: t0.Add(1 * time.Second), Attempt: records[0].at},
	}
	if !slices.EqualFunc(got, want, func(x, y AttemptRow) bool {
		return x.At.Equal(y.At) && x.SubscriptionID == y.SubscriptionID && x.N == y.N && x.Attempt == y.Attempt
	}) {
		t.Errorf("Attempts =\n%+v\nwant\n%+v", got, want)
	}
	if err := f.store.RecordAttempt(t.Context(), e, a, 0, webhook.Attempt{}); err == nil {
		t.Error("RecordAttempt of attempt 0 gave no error")
	}
}

// A secret sealed for one subscription opens for it only: copied into
// another subscription, it does not open, and the error quotes no byte of
// it.
func TestASealedSecretMovedToAnotherSubscriptionDoesNotOpen(t *testing.T) {
	srv := localkms.StartForTest(t, "test")
	k := srv.Client()
	key := bytes.Repeat([]byte("k"), 32)
	a, b := subID(t), subID(t)
	sealed, err := SealSecret(t.Context(), k, srv.Alias, a, key)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed.Ciphertext, key) || sealed.KeyID != srv.KeyARN {
		t.Errorf("sealed %+v", sealed)
	}
	got, err := OpenSecret(t.Context(), k, a, sealed)
	if err != nil || !bytes.Equal(got, key) {
		t.Fatalf("OpenSecret for its subscription = %q, %v", got, err)
	}
	_, err = OpenSecret(t.Context(), k, b, sealed)
	if err == nil {
		t.Fatal("a secret sealed for one subscription opened for another")
	}
	if strings.Contains(err.Error(), "kkkk") {
		t.Errorf("error quotes the key: %v", err)
	}
	if _, err := SealSecret(t.Context(), k, srv.Alias, a, key[:8]); err == nil {
		t.Error("SealSecret sealed an 8-byte key")
	}
}
