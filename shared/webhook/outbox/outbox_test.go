package outbox_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhook/outbox"
	"github.com/toolgate/toolgate/shared/webhook/store"
)

// The package's tests share one dynalite, each on a table of its own.
func TestMain(m *testing.M) { os.Exit(localtest.RunShared(m)) }

// A Recorder records an event once, unsent, for the relay: a second Emit
// of the same id is no error and changes nothing. An event without a
// valid id or JSON data is refused before any request.
func TestARecorderRecordsAnEventOnceForTheRelay(t *testing.T) {
	_, db, table := localtest.SharedTable(t, "outbox")
	at := time.Date(2026, 12, 2, 20, 0, 0, 0, time.UTC)
	r := &outbox.Recorder{DB: db, Table: table, Now: func() time.Time { return at }}
	ev, err := webhook.NewEvent(webhook.CallUnknown, "RUN#x\nCALL#1", "refunds",
		webhook.CallData{Run: "run-1", Key: "arn/1", Tool: "send-email", Cause: "TOOL_TIMEOUT"}, at)
	if err != nil {
		t.Fatal(err)
	}
	first := ev
	for range 2 {
		if err := r.Emit(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
		ev.Data = json.RawMessage(`{"run":"changed"}`) // a second Emit writes nothing
	}
	st := store.New(db, table, nil)
	got, ok, err := st.Event(t.Context(), first.ID)
	if err != nil || !ok || got.Type != webhook.CallUnknown || got.Solution != "refunds" || string(got.Data) != string(first.Data) || !got.Timestamp.Equal(at) {
		t.Fatalf("event %+v %v %v; want %+v", got, ok, err, first)
	}
	if ids, err := st.Unsent(t.Context(), at.Add(time.Second), 10); err != nil || len(ids) != 1 || ids[0] != first.ID {
		t.Fatalf("unsent %v %v", ids, err)
	}
	for name, bad := range map[string]webhook.Event{
		"no id":         {Type: webhook.CallUnknown, Data: first.Data},
		"no type":       {ID: first.ID, Data: first.Data},
		"data not JSON": {ID: webhook.EventID(webhook.CallUnknown, "other"), Type: webhook.CallUnknown, Data: json.RawMessage(`{`)},
	} {
		if err := r.Emit(t.Context(), bad); err == nil {
			t.Errorf("%s: recorded", name)
		}
	}
}
