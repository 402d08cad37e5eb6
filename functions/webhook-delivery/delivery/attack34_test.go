package delivery_test

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"

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
