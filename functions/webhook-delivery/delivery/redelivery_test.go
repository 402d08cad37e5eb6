package delivery_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/toolgate/toolgate/functions/webhook-delivery/delivery"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/webhook"
)

// A tool function's role may PutItem its call event items without a
// condition, so it may replace one after the fan-out validated it and
// before (or between) the deliveries: the delivery reads the event again
// by its id, and must hold it to its type's schema as the fan-out does.
// Otherwise data the schema refuses (a call's input, a recipient, a
// field no payload has) is signed and POSTed to every subscriber the
// valid version was fanned out to, on every retry.
func TestADeliveryOfAnEventFailingItsSchemaIsDropped(t *testing.T) {
	st := newStore(sub("sub_calls", "call.unknown", "", "active"))
	source := "RUN#arn\nCALL#1"
	id := webhook.EventID(webhook.CallUnknown, source)
	// The item as it reads after the tool role replaced it: still a call's
	// event whose id derives from its source (CheckCallEvent passes), its
	// data no longer what the schema admits.
	st.callEvents[id] = webhook.Event{ID: id, Type: webhook.CallUnknown, Timestamp: now, Source: source,
		Data: json.RawMessage(`{"run":"run-1","key":"k/1","tool":"http","cause":"TOOL_TIMEOUT","input":{"card":"4111111111111111"}}`)}
	if err := webhook.Validate(st.callEvents[id]); err == nil {
		t.Fatal("the replaced data passes the schema: the test needs data it refuses")
	}
	s := &fakeSender{}
	resp := newHandler(st, &fakeQueue{}, s).Batch(t.Context(), events.SQSEvent{Records: []events.SQSMessage{deliveryRecord("m1", id, "sub_calls", 1)}})
	if len(s.headers) != 0 {
		t.Errorf("an event whose data fails its schema was signed and sent to %v", s.headers)
	}
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("failures %+v: it never passes, so it is dropped, not retried", resp.BatchItemFailures)
	}
}

// SQS bounds a message's whole visibility at 12 hours from the
// ReceiveMessage that returned it: ChangeMessageVisibility asking more
// than what is left is refused (SQS API Reference,
// "ChangeMessageVisibility"). A schedule may hold 12 h delays
// (webhook.MaxDelay, allowed by ParseSchedule), but by the time a failed
// attempt sets its delay the message was received at least the attempt's
// latency ago (up to the 10 s timeout), so asking the full delay is
// refused on AWS: the message comes back after the queue's visibility
// timeout (minutes) instead of the schedule's hours, and spends an
// attempt. The visibility a failed attempt asks for must fit, with the
// time already spent since the receive, within 12 hours.
func TestARetryDelayFitsWithinSQSTwelveHoursFromTheReceive(t *testing.T) {
	st := newStore(sub("sub_down", "run.*", "", "active"))
	st.events["evt_a"] = runEvent("evt_a")
	q := &fakeQueue{}
	latency := 10 * time.Second
	s := &fakeSender{answers: map[string]webhook.Attempt{"https://sub_down.example.org/hook": {ErrorClass: "timeout", Outcome: "retry", Latency: latency}}}
	schedule, err := webhook.ParseSchedule("12h,12h")
	if err != nil {
		t.Fatalf("ParseSchedule: %v", err)
	}
	h := delivery.New(delivery.Config{Store: st, Queue: q, Sender: s, DeliveriesQueue: deliveriesURL, Schedule: schedule,
		Now: func() time.Time { return now },
		Open: func(_ context.Context, subID string, s vault.Sealed) ([]byte, error) {
			return []byte(subID + "/" + s.KeyID + "-key-of-32-bytes-padding"), nil
		},
		Relay: func(context.Context, time.Time) (int, error) { return 0, errors.New("no relay in this test") }})
	h.Batch(t.Context(), events.SQSEvent{Records: []events.SQSMessage{deliveryRecord("m", "evt_a", "sub_down", 1)}})
	v, ok := q.visibility["rh-m"]
	if !ok {
		t.Fatal("no visibility set after a failed attempt")
	}
	if time.Duration(v)*time.Second+latency > 12*time.Hour {
		t.Errorf("visibility %d s after an attempt of %s: %s from the receive, past SQS's 12 h, so SQS refuses it", v, latency, time.Duration(v)*time.Second+latency)
	}
}
