package delivery_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/toolgate/toolgate/functions/webhook-delivery/delivery"
	"github.com/toolgate/toolgate/shared/webhook"
)

// Tests of messages a principal that may send to the webhook queues
// could craft: the queues' policies admit only the producers
// (infra/platform/webhooks.go), but a message's content must still not
// decide more than a legitimate one can, whoever sent it.

// keepFirstStore records an event once, as store.Store.RecordEvent's
// conditional put does: a second record of the id keeps the first.
type keepFirstStore struct{ *fakeStore }

func (s keepFirstStore) RecordEvent(_ context.Context, e webhook.Event) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recorded = append(s.recorded, e)
	if _, had := s.events[e.ID]; had {
		return false, nil
	}
	s.events[e.ID] = e
	return true, nil
}

// A delivery message pairs an event with a subscription; the function
// delivers it only if the subscription still matches the event (active,
// a pattern of its type, no Solution filter or the event's Solution), as
// the fan-out decided. A crafted message, or one redriven from the
// dead-letter queue, must not deliver a Solution's run to a subscriber of
// another Solution, nor a run.* event to a subscriber of review.* only.
func TestADeliveryMessageForASubscriptionTheEventDoesNotMatchIsDropped(t *testing.T) {
	st := newStore(sub("sub_reviews", "review.*", "", "active"), sub("sub_other", "run.*", "other", "active"))
	e := runEvent("evt_a")
	e.Solution = "digest"
	st.events["evt_a"] = e
	s := &fakeSender{}
	resp := newHandler(st, &fakeQueue{}, s).Batch(t.Context(), events.SQSEvent{Records: []events.SQSMessage{
		deliveryRecord("m1", "evt_a", "sub_reviews", 1), deliveryRecord("m2", "evt_a", "sub_other", 1)}})
	if len(resp.BatchItemFailures) != 0 || len(s.headers) != 0 {
		t.Fatalf("failures %+v; sent to %v, want nothing sent", resp.BatchItemFailures, s.headers)
	}
}

// A status change for an execution whose event is recorded already fans
// out the recorded event to the subscriptions matching it: a second
// message with the same execution ARN and status but another state
// machine (another Solution) must not send the first Solution's event to
// the other Solution's subscribers.
func TestARepeatedStatusChangeFansOutByTheRecordedEvent(t *testing.T) {
	st := keepFirstStore{newStore(sub("sub_digest", "run.*", "digest", "active"), sub("sub_other", "run.*", "other", "active"))}
	q := &fakeQueue{}
	h := delivery.New(delivery.Config{Store: st, Queue: q, Sender: &fakeSender{}, DeliveriesQueue: deliveriesURL, Schedule: webhook.DefaultSchedule,
		Now: func() time.Time { return now }})
	arn := "arn:aws:states:eu-west-1:000000000000:execution:toolgate-dev_digest:run-1"
	change := func(stateMachine string) string {
		return `{"source":"aws.states","execution_arn":"` + arn + `","state_machine_arn":"arn:aws:states:eu-west-1:000000000000:stateMachine:toolgate-dev_` +
			stateMachine + `","name":"run-1","status":"SUCCEEDED","start_date":1764669600000,"stop_date":1764669660000}`
	}
	for i, body := range []string{change("digest"), change("other")} {
		resp := h.Batch(t.Context(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m" + string(rune('1'+i)), EventSourceARN: eventsARN, Body: body}}})
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("failures %+v", resp.BatchItemFailures)
		}
	}
	for _, m := range q.sent {
		if m.SubscriptionID != "sub_digest" {
			t.Errorf("the run of Solution digest was fanned out to %s", m.SubscriptionID)
		}
	}
}

// The function produces the run.* events, so it validates each against
// its type's schema before recording it (docs/webhooks.md, "Payloads":
// "the producer validates each event against its schema before recording
// it"): a status change whose name is longer than an execution name may
// be, or holds control characters, is not recorded nor sent.
func TestAStatusChangeFailingItsSchemaIsNotRecorded(t *testing.T) {
	for name, runName := range map[string]string{"a long name": strings.Repeat("x", 4096), "a control character": `run\u0000-1`} {
		t.Run(name, func(t *testing.T) {
			st := newStore(sub("sub_runs", "run.*", "", "active"))
			q := &fakeQueue{}
			arn := "arn:aws:states:eu-west-1:000000000000:execution:toolgate-dev_digest:run-1"
			body := `{"source":"aws.states","execution_arn":"` + arn + `","state_machine_arn":"arn:aws:states:eu-west-1:000000000000:stateMachine:toolgate-dev_digest",` +
				`"name":"` + runName + `","status":"RUNNING","start_date":1764669600000}`
			newHandler(st, q, &fakeSender{}).Batch(t.Context(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m", EventSourceARN: eventsARN, Body: body}}})
			if len(st.recorded) != 0 || len(q.sent) != 0 {
				t.Fatalf("recorded %d, sent %d: want neither", len(st.recorded), len(q.sent))
			}
		})
	}
}
