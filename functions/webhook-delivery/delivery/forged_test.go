package delivery_test

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/toolgate/toolgate/shared/webhook"
)

// Every tool function's role may put any event item (table access
// RecordWebhookEvents: the kind, not the type), and the relay sends each
// unsent one by its id. The fan-out must therefore hold a recorded event
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
