package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/externalkey"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
)

// preWrite writes a COMPLETED record of payload's call with store s, its
// result made up: with a store WithMAC, sealed with that key and with the
// stage's external key (testSecret), as today's code writes it; with a
// store without a key, in the layout before seals, which has neither seal
// nor external key (toPreviousLayout).
func preWrite(t *testing.T, e *env, s *ledger.Store, payload json.RawMessage, input string) {
	t.Helper()
	ctx := context.Background()
	run := runIDOf(t, payload)
	ext, err := externalkey.New(testSecret, run, "1")
	if err != nil {
		t.Fatal(err)
	}
	rec := &ledger.Record{Key: run + "/1", Step: "s", Tool: "test-echo", ToolsetID: e.ts.ID, InputDigest: digestOf(t, input), LeaseUntil: time.Now().Add(time.Minute), ExternalKey: ext}
	if !s.Sealed() {
		s = s.WithLayout(ledger.LayoutNamed)
	}
	if ok, _, err := s.Claim(ctx, rec); !ok || err != nil {
		t.Fatal(ok, err)
	}
	row := &ledger.Row{Attempt: 1, Status: ledger.StatusSucceeded, Step: "s", Tool: "test-echo", ToolsetID: e.ts.ID, InputDigest: rec.InputDigest, ExternalKey: ext, StartedAt: rec.StartedAt, EndedAt: time.Now(),
		FirstStartedAt: rec.FirstStartedAt, Layout: rec.Layout}
	if ok, err := s.Finish(ctx, rec.Key, rec.Token, ledger.StateCompleted, json.RawMessage(`{"text":"made up"}`), row); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if !s.Sealed() {
		toPreviousLayout(t, e, run, "1")
	}
}

// wantForgedRefusal checks that the call was refused TOOL_INTERNAL
// without running the tool or replaying the record, and that its row
// says record-forged.
func wantForgedRefusal(t *testing.T, e *env, payload json.RawMessage, out json.RawMessage, err error, calls *atomic.Int64) {
	t.Helper()
	var te *tool.Error
	if !errors.As(err, &te) || te.Code != tool.Internal || te.Retryable() {
		t.Fatalf("answer %s %v, want TOOL_INTERNAL, not retryable", out, err)
	}
	if calls.Load() != 0 {
		t.Fatalf("the tool ran %d times", calls.Load())
	}
	rows := mustKeyRows(t, e.store, runIDOf(t, payload), "1")
	last := rows[len(rows)-1]
	if last.Status != ledger.StatusRefused || last.ErrorCode != string(tool.Internal) || last.Reason != seal.ReasonRecordForged {
		t.Fatalf("rows %+v, want the last REFUSED TOOL_INTERNAL record-forged", rows)
	}
}

// The upgrade rule: a COMPLETED record in the previous layout (no seal)
// replays for a run that started before the stage's first deploy with
// seals, and is refused, neither replayed nor run, for a run started
// after it, or for a call that carries no run start.
func TestAnUnsealedRecordReplaysOnlyForARunStartedBeforeSince(t *testing.T) {
	e := newEnv(t)
	since := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	withSince := func(c *Config) { c.LedgerSince = since }
	input := `{"text":"hi"}`
	cases := []struct {
		name   string
		start  time.Time // zero: no run_started_at
		replay bool
	}{
		{"a run started before since replays it", since.Add(-time.Minute), true},
		{"a run started after since refuses it", since.Add(time.Minute), false},
		{"a call without a run start refuses it", time.Time{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int64
			payload := envelopeFor("test-echo", e.ts.ID, "", 1, input)
			preWrite(t, e, e.store, payload, input) // e.store has no key: the previous layout
			if !c.start.IsZero() {
				payload = withRunStart(payload, c.start)
			}
			out, err := e.dispatcher(t, "test-echo", echo(&calls), withSince).Invoke(context.Background(), payload)
			if !c.replay {
				wantForgedRefusal(t, e, payload, out, err, &calls)
				return
			}
			if err != nil || string(out) != `{"text":"made up"}` || calls.Load() != 0 {
				t.Fatalf("answer %s %v, tool ran %d times: want the recorded result replayed", out, err, calls.Load())
			}
		})
	}
}

// A record sealed with another function's key (its role can write the
// call item, not seal it with this function's secret) is refused, for
// any run, and so is a record whose result another writer changed.
func TestARecordSealedByAnotherFunctionIsRefused(t *testing.T) {
	e := newEnv(t)
	other, err := seal.NewKey(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	input := `{"text":"hi"}`
	var calls atomic.Int64
	payload := envelopeFor("test-echo", e.ts.ID, "", 1, input)
	preWrite(t, e, e.store.WithMAC(other), payload, input)
	payload = withRunStart(payload, time.Now()) // the seal, not the time, decides
	out, err := e.dispatcher(t, "test-echo", echo(&calls)).Invoke(context.Background(), payload)
	wantForgedRefusal(t, e, payload, out, err, &calls)

	// the function's own record replays
	own, _ := seal.NewKey(testMAC)
	payload = envelopeFor("test-echo", e.ts.ID, "", 1, input)
	preWrite(t, e, e.store.WithMAC(own), payload, input)
	if out, err := e.dispatcher(t, "test-echo", echo(&calls)).Handle(context.Background(), payload); err != nil || string(out) != `{"text":"made up"}` {
		t.Fatalf("the function's own record: %s %v, want it replayed", out, err)
	}
}
