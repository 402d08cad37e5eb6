package store

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/inboundapi"
)

func srcKey(id string) EventKey {
	return EventKey{Origin: inboundapi.OriginSource, Name: "billing", ID: id}
}

var expires = t0.Add(90 * 24 * time.Hour)

func delivery(id string, at time.Time) Event {
	return Event{Key: srcKey(id), EventType: "invoice.paid", Body: []byte(`{"id":"` + id + `","amount":42}`), ReceivedAt: at}
}

// Receive records a delivery once: the first is RECEIVED with its body;
// a second of the same key writes nothing and answers the first as read,
// without its body.
func TestReceiveRecordsAnEventOnce(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	e := delivery("evt_1", t0.Add(500*time.Millisecond))
	existing, err := st.Receive(ctx, e, expires)
	if err != nil || existing != nil {
		t.Fatalf("first Receive = %+v, %v", existing, err)
	}
	got, err := st.Event(ctx, e.Key)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusReceived || string(got.Body) != string(e.Body) || got.BodySHA256 != BodyDigest(e.Body) ||
		got.EventType != "invoice.paid" || !got.ReceivedAt.Equal(t0) || got.Key != e.Key {
		t.Errorf("Event = %+v", got)
	}
	replay := delivery("evt_1", t0.Add(time.Minute))
	replay.Body = []byte(`{"id":"evt_1","amount":1000000}`)
	existing, err = st.Receive(ctx, replay, expires)
	if err != nil || existing == nil {
		t.Fatalf("second Receive = %+v, %v", existing, err)
	}
	if existing.Status != StatusReceived || existing.Body != nil || existing.BodySHA256 != BodyDigest(e.Body) || !existing.ReceivedAt.Equal(t0) {
		t.Errorf("existing = %+v", existing)
	}
	if again, _ := st.Event(ctx, e.Key); string(again.Body) != string(e.Body) {
		t.Errorf("the replay changed the body: %s", again.Body)
	}
}

// Receive refuses a key or body that breaks the rules, writing nothing,
// and its error quotes no byte of the body.
func TestReceiveRefusesABadEvent(t *testing.T) {
	st := newStore(t)
	for _, c := range []struct {
		name string
		edit func(*Event)
	}{
		{"a schedule's key", func(e *Event) {
			e.Key = EventKey{Origin: inboundapi.OriginSchedule, Name: "n", ID: "2026-12-03T17:00:00Z"}
		}},
		{"an unknown origin", func(e *Event) { e.Key.Origin = "github" }},
		{"a bad name", func(e *Event) { e.Key.Name = "Billing" }},
		{"an id with a space", func(e *Event) { e.Key.ID = "evt 1" }},
		{"no body", func(e *Event) { e.Body = nil }},
		{"a body over the cap", func(e *Event) { e.Body = make([]byte, inboundapi.MaxBodyBytes+1) }},
		{"another body's digest", func(e *Event) { e.BodySHA256 = BodyDigest([]byte("other")) }},
		{"no time", func(e *Event) { e.ReceivedAt = time.Time{} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := delivery("evt_1", t0)
			e.Body = []byte(`{"canary":"sk_live_canary"}`)
			c.edit(&e)
			_, err := st.Receive(t.Context(), e, expires)
			if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "sk_live") {
				t.Fatalf("Receive = %v, want ErrInvalid quoting nothing of the body", err)
			}
		})
	}
	if _, err := st.Event(t.Context(), srcKey("evt_1")); !errors.Is(err, ErrNotFound) {
		t.Errorf("a refused event was recorded: %v", err)
	}
}

// MarkQueued moves RECEIVED to QUEUED once: marking again, or an event
// already started, is no error and changes nothing; no event is
// ErrNotFound.
func TestMarkQueuedIsIdempotent(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	e := delivery("evt_1", t0)
	if _, err := st.Receive(ctx, e, expires); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkQueued(ctx, e.Key, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkQueued(ctx, e.Key, t0.Add(time.Minute)); err != nil {
		t.Fatalf("second MarkQueued = %v", err)
	}
	got, err := st.Event(ctx, e.Key)
	if err != nil || got.Status != StatusQueued || !got.QueuedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("Event = %+v, %v", got, err)
	}
	if err := st.MarkStarted(ctx, e.Key, "arn:aws:states:eu-west-1:123456789012:execution:toolgate-dev_billing-sync:in-1", t0); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkQueued(ctx, e.Key, t0.Add(time.Hour)); err != nil {
		t.Errorf("MarkQueued of a started event = %v", err)
	}
	if got, _ := st.Event(ctx, e.Key); got.Status != StatusStarted {
		t.Errorf("MarkQueued moved a started event back: %+v", got)
	}
	if err := st.MarkQueued(ctx, srcKey("evt_none"), t0); !errors.Is(err, ErrNotFound) {
		t.Errorf("MarkQueued of no event = %v, want ErrNotFound", err)
	}
}

// MarkStarted and MarkFailed remove the body; each is idempotent, and an
// event ended one way is not ended the other.
func TestMarkStartedAndMarkFailedRemoveTheBody(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	arn := "arn:aws:states:eu-west-1:123456789012:execution:toolgate-dev_billing-sync:in-1"
	started, failed := delivery("evt_s", t0), delivery("evt_f", t0)
	for _, e := range []Event{started, failed} {
		if _, err := st.Receive(ctx, e, expires); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.MarkQueued(ctx, started.Key, t0); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkStarted(ctx, started.Key, arn, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	// A consumer that beat MarkQueued fails the event still RECEIVED.
	problems := []string{"/amount: must be an integer", "input over the Solution's input_limit_bytes"}
	if err := st.MarkFailed(ctx, failed.Key, problems, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	s, err := st.Event(ctx, started.Key)
	if err != nil || s.Status != StatusStarted || s.ExecutionARN != arn || s.Body != nil || s.BodySHA256 != BodyDigest(started.Body) {
		t.Errorf("started = %+v, %v", s, err)
	}
	f, err := st.Event(ctx, failed.Key)
	if err != nil || f.Status != StatusFailed || f.Body != nil || !slices.Equal(f.Problems, problems) {
		t.Errorf("failed = %+v, %v", f, err)
	}
	if err := st.MarkStarted(ctx, started.Key, arn, t0.Add(time.Minute)); err != nil {
		t.Errorf("MarkStarted again = %v", err)
	}
	if err := st.MarkStarted(ctx, started.Key, arn+"-other", t0); !errors.Is(err, ErrConflict) {
		t.Errorf("MarkStarted as another execution = %v, want ErrConflict", err)
	}
	if err := st.MarkFailed(ctx, started.Key, []string{"late"}, t0); !errors.Is(err, ErrConflict) {
		t.Errorf("MarkFailed of a started event = %v, want ErrConflict", err)
	}
	if err := st.MarkFailed(ctx, failed.Key, []string{"again"}, t0); err != nil {
		t.Errorf("MarkFailed again = %v", err)
	}
	if f, _ := st.Event(ctx, failed.Key); !slices.Equal(f.Problems, problems) {
		t.Errorf("a second MarkFailed replaced the problems: %v", f.Problems)
	}
	if err := st.MarkStarted(ctx, failed.Key, arn, t0); !errors.Is(err, ErrConflict) {
		t.Errorf("MarkStarted of a failed event = %v, want ErrConflict", err)
	}
	for _, bad := range [][]string{nil, {""}, {strings.Repeat("p", MaxProblemBytes+1)}, make([]string, MaxProblems+1)} {
		if err := st.MarkFailed(ctx, srcKey("evt_x"), bad, t0); !errors.Is(err, ErrInvalid) {
			t.Errorf("MarkFailed(%d problems) = %v, want ErrInvalid", len(bad), err)
		}
	}
	if err := st.MarkStarted(ctx, srcKey("evt_none"), arn, t0); !errors.Is(err, ErrNotFound) {
		t.Errorf("MarkStarted of no event = %v, want ErrNotFound", err)
	}
}

// Unqueued lists RECEIVED events received before the cut, oldest first,
// up to the limit: an event once queued, started or failed is not in the
// sparse index.
func TestUnqueuedListsReceivedEventsOldestFirst(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	ids := []string{"evt_c", "evt_a", "evt_q", "evt_b", "evt_f", "evt_late"}
	at := map[string]time.Time{
		"evt_a": t0, "evt_b": t0.Add(time.Second), "evt_c": t0.Add(2 * time.Second),
		"evt_q": t0.Add(-time.Minute), "evt_f": t0.Add(-time.Minute), "evt_late": t0.Add(time.Hour),
	}
	for _, id := range ids {
		if _, err := st.Receive(ctx, delivery(id, at[id]), expires); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.MarkQueued(ctx, srcKey("evt_q"), t0); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkFailed(ctx, srcKey("evt_f"), []string{"refused"}, t0); err != nil {
		t.Fatal(err)
	}
	firing := EventKey{Origin: inboundapi.OriginSchedule, Name: "nightly", ID: "2026-12-03T16:00:00Z"}
	if _, err := st.PutFiring(ctx, firing, t0.Add(-time.Hour), expires); err != nil {
		t.Fatal(err)
	}
	cut := t0.Add(time.Minute)
	got, err := st.Unqueued(ctx, cut, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []EventKey{srcKey("evt_a"), srcKey("evt_b"), srcKey("evt_c")}
	if !slices.Equal(got, want) {
		t.Errorf("Unqueued = %v, want %v", got, want)
	}
	if got, err := st.Unqueued(ctx, cut, 2); err != nil || !slices.Equal(got, want[:2]) {
		t.Errorf("Unqueued limit 2 = %v, %v", got, err)
	}
}

// PutFiring records a firing once, QUEUED without a body; a redelivered
// firing writes nothing and answers the first; a started firing stays
// started.
func TestPutFiringRecordsAFiringOnce(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	k := EventKey{Origin: inboundapi.OriginSchedule, Name: "nightly", ID: "2026-12-03T17:00:00Z"}
	existing, err := st.PutFiring(ctx, k, t0.Add(3*time.Second), expires)
	if err != nil || existing != nil {
		t.Fatalf("PutFiring = %+v, %v", existing, err)
	}
	got, err := st.Event(ctx, k)
	if err != nil || got.Status != StatusQueued || got.Body != nil || !got.ReceivedAt.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("Event = %+v, %v", got, err)
	}
	arn := "arn:aws:states:eu-west-1:123456789012:execution:toolgate-dev_nightly-report:sc-1"
	if err := st.MarkStarted(ctx, k, arn, t0.Add(4*time.Second)); err != nil {
		t.Fatal(err)
	}
	existing, err = st.PutFiring(ctx, k, t0.Add(time.Minute), expires)
	if err != nil || existing == nil || existing.Status != StatusStarted || existing.ExecutionARN != arn {
		t.Fatalf("redelivered PutFiring = %+v, %v", existing, err)
	}
	for _, bad := range []EventKey{
		srcKey("evt_1"),
		{Origin: inboundapi.OriginSchedule, Name: "nightly", ID: "2026-12-03T17:00:00+00:00"},
		{Origin: inboundapi.OriginSchedule, Name: "nightly", ID: "tomorrow"},
	} {
		if _, err := st.PutFiring(ctx, bad, t0, expires); !errors.Is(err, ErrInvalid) {
			t.Errorf("PutFiring(%v) = %v, want ErrInvalid", bad, err)
		}
	}
}

// An event id may hold "/": the key keeps it whole.
func TestAnEventIDWithSlashesKeepsItsKey(t *testing.T) {
	st := newStore(t)
	e := delivery("a/b/c", t0)
	if _, err := st.Receive(t.Context(), e, expires); err != nil {
		t.Fatal(err)
	}
	got, err := st.Unqueued(t.Context(), t0.Add(time.Second), 10)
	if err != nil || len(got) != 1 || got[0] != e.Key {
		t.Fatalf("Unqueued = %v, %v", got, err)
	}
	if ev, err := st.Event(t.Context(), got[0]); err != nil || ev.Key.ID != "a/b/c" {
		t.Errorf("Event = %+v, %v", ev, err)
	}
}
