package delivery_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolgate/toolgate/functions/webhook-delivery/delivery"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhook/store"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

// The fakes below stand in for the table, SQS and the endpoints: the
// webhook store and the SQS stand-in are tested with dynalite and the
// local SQS where they are built; these tests check only the handler's
// decisions (which subscriptions, which records fail, which visibility,
// which disable).

const (
	eventsARN     = "arn:aws:sqs:eu-west-1:000000000000:toolgate-dev-webhook-events"
	deliveriesARN = "arn:aws:sqs:eu-west-1:000000000000:toolgate-dev-webhook-deliveries"
	deliveriesURL = "https://sqs.eu-west-1.amazonaws.com/000000000000/toolgate-dev-webhook-deliveries"
)

var now = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

type fakeStore struct {
	mu     sync.Mutex
	events map[string]webhook.Event
	// callEvents are the items under the call events' prefix
	// (table.WebhookCallEvent), read when events has none of the id.
	callEvents map[string]webhook.Event
	subs       map[string]store.Subscription
	recorded   []webhook.Event
	marked     []string
	attempts   []string // "event sub n outcome"
	disabled   map[string]string
}

func newStore(subs ...store.Subscription) *fakeStore {
	s := &fakeStore{events: map[string]webhook.Event{}, callEvents: map[string]webhook.Event{}, subs: map[string]store.Subscription{}, disabled: map[string]string{}}
	for _, sub := range subs {
		s.subs[sub.ID] = sub
	}
	return s
}

func (s *fakeStore) Event(_ context.Context, id string) (webhook.Event, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.events[id]; ok {
		return e, true, nil
	}
	// Then a call's event, checked as store.Store.Event checks it.
	e, ok := s.callEvents[id]
	if ok {
		if err := webhook.CheckCallEvent(e); err != nil {
			return webhook.Event{}, false, fmt.Errorf("%w: %w", store.ErrRefusedCallEvent, err)
		}
	}
	return e, ok, nil
}

func (s *fakeStore) RecordEvent(_ context.Context, e webhook.Event) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recorded = append(s.recorded, e)
	_, had := s.events[e.ID]
	s.events[e.ID] = e
	return !had, nil
}

func (s *fakeStore) MarkSent(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.marked = append(s.marked, id)
	return nil
}

func (s *fakeStore) Subscriptions(context.Context) ([]store.Subscription, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Subscription
	for _, sub := range s.subs {
		out = append(out, sub)
	}
	slices.SortFunc(out, func(a, b store.Subscription) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (s *fakeStore) Subscription(_ context.Context, id string) (store.Subscription, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.subs[id]
	return sub, ok, nil
}

func (s *fakeStore) Disable(_ context.Context, id, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.disabled[id] = reason
	return nil
}

func (s *fakeStore) RecordAttempt(_ context.Context, eventID, subID string, n int, a webhook.Attempt) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts = append(s.attempts, eventID+" "+subID+" "+strconv.Itoa(n)+" "+string(a.Outcome))
	return nil
}

type fakeQueue struct {
	mu         sync.Mutex
	sent       []webhookapi.DeliveryMessage
	visibility map[string]int32 // receipt handle → seconds
}

func (q *fakeQueue) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	var m webhookapi.DeliveryMessage
	if err := json.Unmarshal([]byte(aws.ToString(in.MessageBody)), &m); err != nil || aws.ToString(in.QueueUrl) != deliveriesURL {
		return nil, errors.New("not a delivery message to the deliveries queue")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sent = append(q.sent, m)
	return &sqs.SendMessageOutput{}, nil
}

func (q *fakeQueue) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.visibility == nil {
		q.visibility = map[string]int32{}
	}
	q.visibility[aws.ToString(in.ReceiptHandle)] = in.VisibilityTimeout
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

// fakeSender answers each subscription's endpoint with a fixed attempt
// and records the headers it was sent.
type fakeSender struct {
	mu      sync.Mutex
	answers map[string]webhook.Attempt // by endpoint
	headers map[string]http.Header
}

func (f *fakeSender) Send(_ context.Context, endpoint string, h http.Header, _ []byte) webhook.Attempt {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.headers == nil {
		f.headers = map[string]http.Header{}
	}
	f.headers[endpoint] = h
	return f.answers[endpoint]
}

func sub(id, events, solution, status string) store.Subscription {
	return store.Subscription{ID: id, URL: "https://" + id + ".example.org/hook", Events: strings.Split(events, ","), Solution: solution, Status: status,
		Secrets: []store.SealedSecret{{Sealed: vault.Sealed{KeyID: "k1"}, CreatedAt: now.Add(-time.Hour)}}}
}

// runEvent is a run.started event of id with a payload its schema admits.
func runEvent(id string) webhook.Event {
	data := `{"execution_arn":"arn:aws:states:us-east-1:000000000000:execution:toolgate-test_digest:run-1",` +
		`"state_machine_arn":"arn:aws:states:us-east-1:000000000000:stateMachine:toolgate-test_digest","name":"run-1",` +
		`"status":"RUNNING","start_date":"2026-12-01T00:00:00Z"}`
	// Stored under key id, the event itself has an id of the pattern, as
	// a delivery holds it to its schema.
	return webhook.Event{ID: webhook.EventID(webhook.RunStarted, id), Type: webhook.RunStarted, Timestamp: now, Data: json.RawMessage(data)}
}

func newHandler(st *fakeStore, q *fakeQueue, s *fakeSender) *delivery.Handler {
	return delivery.New(delivery.Config{Store: st, Queue: q, Sender: s, DeliveriesQueue: deliveriesURL, Schedule: webhook.DefaultSchedule,
		Now: func() time.Time { return now },
		Open: func(_ context.Context, subID string, s vault.Sealed) ([]byte, error) {
			return []byte(subID + "/" + s.KeyID + "-key-of-32-bytes-padding"), nil
		},
		Relay: func(context.Context, time.Time) (int, error) { return 0, errors.New("no relay in this test") }})
}

// A Step Functions status change is recorded as its run.* event once per
// execution and status, and fanned out to exactly the active
// subscriptions whose patterns match its type and whose Solution filter,
// if any, is its Solution.
func TestFanOutSendsOneDeliveryPerMatchingActiveSubscription(t *testing.T) {
	st := newStore(
		sub("sub_runs", "run.*", "", "active"),
		sub("sub_reviews", "review.requested", "", "active"),
		sub("sub_disabled", "run.*", "", "disabled"),
		sub("sub_other", "run.succeeded", "other", "active"),
		sub("sub_digest", "run.succeeded,review.*", "digest", "active"),
	)
	q := &fakeQueue{}
	h := newHandler(st, q, &fakeSender{})
	arn := "arn:aws:states:eu-west-1:000000000000:execution:toolgate-dev_digest:run-1"
	change := `{"source":"aws.states","execution_arn":"` + arn + `","state_machine_arn":"arn:aws:states:eu-west-1:000000000000:stateMachine:toolgate-dev_digest",` +
		`"name":"run-1","status":"SUCCEEDED","start_date":1764669600000,"stop_date":1764669660000}`
	resp := h.Batch(t.Context(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", EventSourceARN: eventsARN, Body: change}}})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	wantID := webhook.EventID(webhook.RunSucceeded, arn+"\nSUCCEEDED")
	if len(st.recorded) != 1 || st.recorded[0].ID != wantID || st.recorded[0].Solution != "digest" || st.recorded[0].Type != webhook.RunSucceeded {
		t.Fatalf("recorded %+v, want one run.succeeded %s of Solution digest", st.recorded, wantID)
	}
	if !slices.Equal(st.marked, []string{wantID}) {
		t.Fatalf("marked sent %v, want the event once fanned out: the relay must not send it again", st.marked)
	}
	var data webhook.RunData
	if err := json.Unmarshal(st.recorded[0].Data, &data); err != nil || data.StartDate != "2025-12-02T10:00:00.000Z" || data.StopDate != "2025-12-02T10:01:00.000Z" {
		t.Fatalf("data %s: want the dates as RFC 3339", st.recorded[0].Data)
	}
	var got []string
	for _, m := range q.sent {
		if m.EventID != wantID {
			t.Errorf("delivery of %s, want %s", m.EventID, wantID)
		}
		got = append(got, m.SubscriptionID)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"sub_digest", "sub_runs"}) {
		t.Fatalf("deliveries to %v, want sub_digest and sub_runs", got)
	}
}

// An event id message fans out the recorded event; one naming no event
// is dropped (it would never succeed), not retried.
func TestFanOutOfAnEventIDLoadsTheRecordedEvent(t *testing.T) {
	st := newStore(sub("sub_reviews", "review.requested", "", "active"))
	// As review-request records it: its payload passes its schema.
	e, err := webhook.NewEvent(webhook.ReviewRequested, "rv_a", "refunds", webhook.ReviewRequestedData{ReviewID: "rv_a", Solution: "refunds", Version: 1,
		Run: "run-1", Step: "approve", Tool: "send-email", ExpiresAt: "2026-12-03T20:00:00Z", DecideCommand: "toolgate review approve rv_a"}, now)
	if err != nil {
		t.Fatal(err)
	}
	st.events[e.ID] = e
	q := &fakeQueue{}
	h := newHandler(st, q, &fakeSender{})
	resp := h.Batch(t.Context(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", EventSourceARN: eventsARN, Body: `{"event_id":"` + e.ID + `"}`},
		{MessageId: "m2", EventSourceARN: eventsARN, Body: `{"event_id":"evt_missing"}`},
	}})
	if len(resp.BatchItemFailures) != 0 || len(q.sent) != 1 || q.sent[0] != (webhookapi.DeliveryMessage{EventID: e.ID, SubscriptionID: "sub_reviews"}) {
		t.Fatalf("failures %+v, sent %+v", resp.BatchItemFailures, q.sent)
	}
	if len(st.marked) != 0 {
		t.Fatalf("marked %v: a producer's event is its producer's to mark", st.marked)
	}
}

func deliveryRecord(id, event, subID string, receiveCount int) events.SQSMessage {
	body, _ := json.Marshal(webhookapi.DeliveryMessage{EventID: event, SubscriptionID: subID})
	return events.SQSMessage{MessageId: id, ReceiptHandle: "rh-" + id, EventSourceARN: deliveriesARN, Body: string(body),
		Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(receiveCount)}}
}

// In one batch, a delivered attempt succeeds, a 410 disables its
// subscription and succeeds, and a failed attempt gets the schedule's
// delay for its attempt number as its visibility and is the only record
// reported failed.
func TestBatchReportsOnlyTheFailedAttemptAndDelaysItBySchedule(t *testing.T) {
	st := newStore(sub("sub_ok", "run.*", "", "active"), sub("sub_gone", "run.*", "", "active"), sub("sub_down", "run.*", "", "active"))
	st.events["evt_a"] = runEvent("evt_a")
	s := &fakeSender{answers: map[string]webhook.Attempt{
		"https://sub_ok.example.org/hook":   {Status: 204, Outcome: "delivered"},
		"https://sub_gone.example.org/hook": {Status: 410, Outcome: "gone"},
		"https://sub_down.example.org/hook": {Status: 503, Outcome: "retry"},
	}}
	q := &fakeQueue{}
	h := newHandler(st, q, s)
	resp := h.Batch(t.Context(), events.SQSEvent{Records: []events.SQSMessage{
		deliveryRecord("m-ok", "evt_a", "sub_ok", 1), deliveryRecord("m-gone", "evt_a", "sub_gone", 1), deliveryRecord("m-down", "evt_a", "sub_down", 2),
	}})
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m-down" {
		t.Fatalf("failures %+v, want m-down only", resp.BatchItemFailures)
	}
	want, _ := webhook.DefaultSchedule.Delay(2)
	if len(q.visibility) != 1 || q.visibility["rh-m-down"] != int32(want/time.Second) {
		t.Fatalf("visibility %v, want rh-m-down: %d s", q.visibility, int32(want/time.Second))
	}
	if len(st.disabled) != 1 || st.disabled["sub_gone"] != delivery.GoneReason {
		t.Fatalf("disabled %v, want sub_gone for %q", st.disabled, delivery.GoneReason)
	}
	slices.Sort(st.attempts)
	id := st.events["evt_a"].ID
	if want := []string{id + " sub_down 2 retry", id + " sub_gone 1 gone", id + " sub_ok 1 delivered"}; !slices.Equal(st.attempts, want) {
		t.Fatalf("attempts %v, want %v", st.attempts, want)
	}
}

// The last attempt's failure makes the message visible at once: SQS then
// moves it to the dead-letter queue at its next receive (maxReceiveCount
// = Attempts()), not after the queue's visibility timeout.
func TestLastFailedAttemptGoesToTheDeadLetterQueueAtOnce(t *testing.T) {
	st := newStore(sub("sub_down", "run.*", "", "active"))
	st.events["evt_a"] = runEvent("evt_a")
	q := &fakeQueue{}
	h := newHandler(st, q, &fakeSender{answers: map[string]webhook.Attempt{"https://sub_down.example.org/hook": {ErrorClass: "timeout", Outcome: "retry"}}})
	last := webhook.DefaultSchedule.Attempts()
	resp := h.Batch(t.Context(), events.SQSEvent{Records: []events.SQSMessage{deliveryRecord("m", "evt_a", "sub_down", last)}})
	if v, ok := q.visibility["rh-m"]; len(resp.BatchItemFailures) != 1 || !ok || v != 0 || len(q.visibility) != 1 {
		t.Fatalf("failures %+v, visibility %v: want the record failed and its visibility 0", resp.BatchItemFailures, q.visibility)
	}
}

// A delivery to a disabled or deleted subscription is skipped and
// succeeds: nothing is sent.
func TestDeliveryToADisabledSubscriptionIsDropped(t *testing.T) {
	st := newStore(sub("sub_off", "run.*", "", "disabled"))
	st.events["evt_a"] = runEvent("evt_a")
	s := &fakeSender{}
	resp := newHandler(st, &fakeQueue{}, s).Batch(t.Context(), events.SQSEvent{Records: []events.SQSMessage{
		deliveryRecord("m1", "evt_a", "sub_off", 1), deliveryRecord("m2", "evt_a", "sub_none", 1)}})
	if len(resp.BatchItemFailures) != 0 || len(s.headers) != 0 {
		t.Fatalf("failures %+v, sent to %v", resp.BatchItemFailures, s.headers)
	}
}

var traceparent = regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`)

// A delivery carries webhook-id (the event id), webhook-timestamp (the
// attempt's time), one signature per secret that has not retired, a new
// traceparent and Content-Type application/json.
func TestDeliveryHeadersSignWithEveryCurrentSecret(t *testing.T) {
	for _, c := range []struct {
		name    string
		retires time.Time
		sigs    int
	}{
		{"during the rotation's grace period", now.Add(time.Hour), 2},
		{"after it", now.Add(-time.Second), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := sub("sub_a", "run.*", "", "active")
			s.Secrets = append([]store.SealedSecret{{Sealed: vault.Sealed{KeyID: "old"}, RetiresAt: c.retires}}, s.Secrets...)
			st := newStore(s)
			st.events["evt_a"] = runEvent("evt_a")
			snd := &fakeSender{answers: map[string]webhook.Attempt{s.URL: {Status: 200, Outcome: "delivered"}}}
			newHandler(st, &fakeQueue{}, snd).Batch(t.Context(), events.SQSEvent{Records: []events.SQSMessage{deliveryRecord("m", "evt_a", "sub_a", 1)}})
			h := snd.headers[s.URL]
			if h.Get("webhook-id") != st.events["evt_a"].ID || h.Get("webhook-timestamp") != strconv.FormatInt(now.Unix(), 10) || h.Get("Content-Type") != "application/json" {
				t.Fatalf("headers %v", h)
			}
			if n := len(strings.Fields(h.Get("webhook-signature"))); n != c.sigs {
				t.Fatalf("%d signatures in %q, want %d", n, h.Get("webhook-signature"), c.sigs)
			}
			if !traceparent.MatchString(h.Get("traceparent")) {
				t.Fatalf("traceparent %q", h.Get("traceparent"))
			}
		})
	}
}

// A record of a queue that is neither webhook queue fails; a scheduled
// event runs the relay; any other invocation is an error.
func TestHandleRoutesByInvocation(t *testing.T) {
	relayed := 0
	h := delivery.New(delivery.Config{Store: newStore(), Queue: &fakeQueue{}, Sender: &fakeSender{}, Schedule: webhook.DefaultSchedule,
		Relay: func(context.Context, time.Time) (int, error) { relayed++; return 3, nil }})
	out, err := h.Handle(t.Context(), json.RawMessage(`{"Records":[{"messageId":"m","eventSourceARN":"arn:aws:sqs:eu-west-1:000000000000:other","body":"{}"}]}`))
	if err != nil || len(out.(events.SQSEventResponse).BatchItemFailures) != 1 {
		t.Fatalf("%v, %v: want the record failed", out, err)
	}
	if _, err := h.Handle(t.Context(), json.RawMessage(`{"detail-type":"Scheduled Event","source":"aws.events"}`)); err != nil || relayed != 1 {
		t.Fatalf("%v, relayed %d", err, relayed)
	}
	if _, err := h.Handle(t.Context(), json.RawMessage(`{"hello":1}`)); err == nil {
		t.Fatal("an unknown invocation was accepted")
	}
}

// Execution statuses map to run.* types; PENDING_REDRIVE names none.
func TestRunEventTypes(t *testing.T) {
	for status, want := range map[string]webhook.Type{"RUNNING": webhook.RunStarted, "SUCCEEDED": webhook.RunSucceeded, "FAILED": webhook.RunFailed,
		"TIMED_OUT": webhook.RunTimedOut, "ABORTED": webhook.RunAborted} {
		e, ok := delivery.RunEvent(webhookapi.StatusChange{Status: status, ExecutionARN: "x"}, now)
		if !ok || e.Type != want {
			t.Errorf("%s: %v %v, want %s", status, e.Type, ok, want)
		}
	}
	if _, ok := delivery.RunEvent(webhookapi.StatusChange{Status: "PENDING_REDRIVE"}, now); ok {
		t.Error("PENDING_REDRIVE made an event")
	}
}
