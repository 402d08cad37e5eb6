package delivery_test

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/toolgate/toolgate/shared/webhook"
)

// Every tool function's role may put any call's event item (table access
// RecordCallWebhookEvents: the kind, not the type), and the relay sends
// each unsent one by its id. The fan-out must therefore hold a recorded event
// to its type's schema, as it does a status change: an item whose data
// the schema refuses (a field no payload has, carrying a call's input, or
// a string past webhook.MaxString), written by a defective or subverted
// producer, is never delivered, signed, to a subscriber.
func TestARecordedEventFailingItsSchemaIsNotFannedOut(t *testing.T) {
	st := newStore(sub("sub_calls", "call.unknown", "", "active"))
	id := webhook.EventID(webhook.CallUnknown, "forged")
	st.events[id] = webhook.Event{ID: id, Type: webhook.CallUnknown, Timestamp: now, Solution: "refunds",
		Data: json.RawMessage(`{"run":"run-1","key":"k/1","tool":"http","cause":"TOOL_TIMEOUT","input":{"card":"4111111111111111"}}`)}
	q := &fakeQueue{}
	resp := newHandler(st, q, &fakeSender{}).Batch(t.Context(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", EventSourceARN: eventsARN, Body: `{"event_id":"` + id + `"}`}}})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v: an event that fails its schema never passes, so it is dropped, not retried", resp.BatchItemFailures)
	}
	if len(q.sent) != 0 {
		t.Fatalf("deliveries %+v of an event whose data fails its schema", q.sent)
	}
}

// An item under the call events' prefix that is no call's event as a
// dispatcher records it (store.ErrRefusedCallEvent: a review.requested
// put by a tool function's role, or an id that is another event's) is
// dropped at the fan-out and at a delivery, never retried or delivered.
func TestARefusedCallEventIsNeitherFannedOutNorDelivered(t *testing.T) {
	st := newStore(sub("sub_reviews", "review.requested", "", "active"))
	id := webhook.EventID(webhook.ReviewRequested, "rv_forged")
	st.callEvents[id] = webhook.Event{ID: id, Type: webhook.ReviewRequested, Timestamp: now, Solution: "refunds", Source: "rv_forged",
		Data: json.RawMessage(`{"review_id":"rv_forged"}`)}
	q, sender := &fakeQueue{}, &fakeSender{}
	resp := newHandler(st, q, sender).Batch(t.Context(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", EventSourceARN: eventsARN, Body: `{"event_id":"` + id + `"}`},
		deliveryRecord("m2", id, "sub_reviews", 1),
	}})
	if len(resp.BatchItemFailures) != 0 || len(q.sent) != 0 || len(st.attempts) != 0 {
		t.Fatalf("failures %+v, deliveries %+v, attempts %v: a refused event is dropped", resp.BatchItemFailures, q.sent, st.attempts)
	}
}
