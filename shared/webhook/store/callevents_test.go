package store

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhook/outbox"
)

// callEvent is a call.unknown event as a dispatcher builds it.
func callEvent(t *testing.T, source string) webhook.Event {
	t.Helper()
	e, err := webhook.NewEvent(webhook.CallUnknown, source, "refunds",
		webhook.CallData{Run: "run-1", Key: "arn/1", Tool: "send-email", Cause: "TOOL_TIMEOUT"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// putCallItem puts an item under the call events' prefix as any tool
// function's role may: whatever its type, source and id.
func putCallItem(t *testing.T, f fixture, id string, typ webhook.Type, source string) {
	t.Helper()
	item, err := attributevalue.MarshalMap(callEventItem{Item: eventItem{PK: table.WebhookCallEvent.Key(id), SK: table.WebhookCallEvent.SKValue,
		Type: string(typ), Solution: "digest", Data: `{"review_id":"rv_forged"}`, ProducedAt: stamp(t0), Unsent: table.WebhookUnsentFlag}, Source: source})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(f.store.table), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// A dispatcher's event is recorded under the call events' prefix with
// its source, read back by its id, and sent by the relay, which marks
// that item sent.
func TestACallsEventIsRecordedApartAndRelayed(t *testing.T) {
	f := newFixture(t)
	e := callEvent(t, "RUN#arn\nCALL#1")
	if err := (&outbox.Recorder{DB: f.store.db, Table: f.store.table, Now: f.clock.Now}).Emit(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	out, err := f.store.db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(f.store.table), Key: eventKey(table.WebhookEvent, e.ID)})
	if err != nil || len(out.Item) != 0 {
		t.Fatalf("an item under %s: %v, %v", table.WebhookEvent.Prefix, out.Item, err)
	}
	got, ok, err := f.store.Event(t.Context(), e.ID)
	if err != nil || !ok || got.Type != webhook.CallUnknown || got.Source != e.Source || string(got.Data) != string(e.Data) {
		t.Fatalf("Event = %+v, %v, %v", got, ok, err)
	}
	q := &queue{}
	if n, err := Relay(t.Context(), f.store, q, queueURL, t0.Add(time.Hour), time.Minute); err != nil || n != 1 {
		t.Fatalf("Relay = %d, %v; want 1", n, err)
	}
	if ids := q.ids(t); !slices.Equal(ids, []string{e.ID}) {
		t.Errorf("sent %v, want %s", ids, e.ID)
	}
	if ids, err := f.store.Unsent(t.Context(), t0.Add(time.Hour), 10); err != nil || len(ids) != 0 {
		t.Errorf("unsent after the relay: %v, %v", ids, err)
	}
}

// A Recorder (a tool function's) records only a call's event whose id
// derives from its source: never a review's or a run's, nor an id chosen
// to equal another event's.
func TestARecorderRecordsNoOtherProducersEvent(t *testing.T) {
	f := newFixture(t)
	r := &outbox.Recorder{DB: f.store.db, Table: f.store.table, Now: f.clock.Now}
	call := callEvent(t, "RUN#arn\nCALL#1")
	for name, e := range map[string]webhook.Event{
		"a review.requested":       {ID: evtID(1), Type: webhook.ReviewRequested, Data: json.RawMessage(`{}`), Source: "rv_1"},
		"a run.succeeded":          {ID: webhook.EventID(webhook.RunSucceeded, "arn\nSUCCEEDED"), Type: webhook.RunSucceeded, Data: json.RawMessage(`{}`), Source: "arn\nSUCCEEDED"},
		"an id not of its source":  {ID: evtID(2), Type: webhook.CallUnknown, Data: call.Data, Source: call.Source},
		"a call event, no source":  {ID: call.ID, Type: webhook.CallUnknown, Data: call.Data},
		"another type's id reused": {ID: webhook.EventID(webhook.ReviewDecided, "rv_1"), Type: webhook.CallUnknown, Data: call.Data, Source: "rv_1"},
	} {
		if err := r.Emit(t.Context(), e); err == nil {
			t.Errorf("%s: recorded", name)
		}
	}
	if ids, err := f.store.Unsent(t.Context(), t0.Add(time.Hour), 10); err != nil || len(ids) != 0 {
		t.Errorf("recorded %v, %v", ids, err)
	}
}

// An item put under the call events' prefix by a role that may (any tool
// function's) is not read as an event unless it is a call's event whose
// id derives from its source; and an event of another producer of the
// same id is read before it.
func TestAnItemForgedUnderTheCallPrefixIsNotAnEvent(t *testing.T) {
	f := newFixture(t)
	forged := []struct {
		name, id, source string
		typ              webhook.Type
	}{
		{"a review.requested", evtID(1), "rv_1", webhook.ReviewRequested},
		{"a run.succeeded of its own id", webhook.EventID(webhook.RunSucceeded, "arn\nSUCCEEDED"), "arn\nSUCCEEDED", webhook.RunSucceeded},
		{"a call.unknown with another event's id", webhook.EventID(webhook.RunSucceeded, "arn2\nSUCCEEDED"), "arn2\nSUCCEEDED", webhook.CallUnknown},
		{"a call.unknown without a source", webhook.EventID(webhook.CallUnknown, "x"), "", webhook.CallUnknown},
	}
	for _, c := range forged {
		putCallItem(t, f, c.id, c.typ, c.source)
		if e, ok, err := f.store.Event(t.Context(), c.id); !errors.Is(err, ErrRefusedCallEvent) || ok {
			t.Errorf("%s: Event = %+v, %v, %v; want ErrRefusedCallEvent", c.name, e, ok, err)
		}
	}
	// The run's own event, recorded after the forged item of its id, is the
	// one read.
	own := webhook.Event{ID: forged[1].id, Type: webhook.RunSucceeded, Timestamp: t0, Solution: "digest", Data: json.RawMessage(`{"status":"SUCCEEDED"}`)}
	if recorded, err := f.store.RecordEvent(t.Context(), own); err != nil || !recorded {
		t.Fatalf("RecordEvent = %v, %v", recorded, err)
	}
	if e, ok, err := f.store.Event(t.Context(), own.ID); err != nil || !ok || e.Type != webhook.RunSucceeded || string(e.Data) != string(own.Data) {
		t.Errorf("Event = %+v, %v, %v; want the run's own", e, ok, err)
	}
}
