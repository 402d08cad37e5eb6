package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// unknownCall runs an at_most_once call whose tool panics after its
// effect: its record is left UNKNOWN (TestPanicAfterPartialWork). It
// returns the dispatcher, the envelope and the count of sends.
func unknownCall(t *testing.T, e *env, mod ...any) (*Dispatcher, json.RawMessage, *atomic.Int64) {
	t.Helper()
	sends := new(atomic.Int64)
	d := e.dispatcher(t, "test-send", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		if sends.Add(1) == 1 {
			panic("after send")
		}
		return json.RawMessage(`{"message_id":"m-again"}`), nil
	}, mod...)
	payload := envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`)
	if _, err := d.Handle(context.Background(), payload); codeOf(t, err) != string(tool.Internal) {
		t.Fatalf("the attempt that panicked: %v", err)
	}
	if rec := mustRecord(t, e.store, keyOf(t, payload)); rec.State != ledger.StateUnknown {
		t.Fatalf("record %s, want UNKNOWN", rec.State)
	}
	return d, payload, sends
}

// reconcileAs records key's reconciliation, as review-decision does.
func reconcileAs(t *testing.T, e *env, key string, o ledger.ReconcileOutcome, result string) {
	t.Helper()
	r := ledger.Reconciliation{Key: key, Outcome: o, Reason: "checked the mail server", ReconciledBy: "arn:aws:iam::123456789012:role/ops",
		StateBefore: ledger.StateUnknown, Attempts: 1}
	if result != "" {
		r.Result = json.RawMessage(result)
	}
	if _, err := e.store.PutReconciliation(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

// Without a reconciliation an UNKNOWN at_most_once call is refused
// TOOL_RETRY_REQUIRES_IDEMPOTENCY, and the message names the command that
// reconciles it.
func TestUnknownCallWithoutReconciliationPointsAtTheCommand(t *testing.T) {
	e := newEnv(t)
	d, payload, sends := unknownCall(t, e)
	_, err := d.Handle(context.Background(), payload)
	if codeOf(t, err) != string(tool.RetryRequiresIdempotency) || !bytes.Contains([]byte(err.Error()), []byte("toolgate ledger reconcile "+keyOf(t, payload))) {
		t.Fatalf("answer %v, want TOOL_RETRY_REQUIRES_IDEMPOTENCY naming toolgate ledger reconcile", err)
	}
	if sends.Load() != 1 {
		t.Fatalf("%d sends", sends.Load())
	}
}

// Reconciled as applied with a result, the UNKNOWN call's record becomes
// COMPLETED with it (sealed), the retry returns it and every later replay
// does, and the tool never runs again; the result's bytes reach no log.
func TestReconciledAppliedReplaysTheResult(t *testing.T) {
	e := newEnv(t)
	var logs bytes.Buffer
	d, payload, sends := unknownCall(t, e, func(dp *Deps) { dp.Log = slog.New(slog.NewJSONHandler(&logs, nil)) })
	key := keyOf(t, payload)
	reconcileAs(t, e, key, ledger.Applied, `{"message_id":"canary-9f3b2"}`)
	for _, name := range []string{"the retry", "a later replay"} {
		out, err := d.Handle(context.Background(), payload)
		if err != nil || string(out) != `{"message_id":"canary-9f3b2"}` {
			t.Fatalf("%s: %s %v, want the reconciled result", name, out, err)
		}
	}
	rec := mustRecord(t, e.store.WithMAC(mustSealKey(t, testMAC)), key)
	if rec.State != ledger.StateCompleted || rec.Seal != seal.Valid || rec.ReconciledBy == "" {
		t.Fatalf("record %+v, want COMPLETED, sealed, reconciled", rec)
	}
	if sends.Load() != 1 {
		t.Fatalf("%d sends, want the first only", sends.Load())
	}
	if bytes.Contains(logs.Bytes(), []byte("canary-9f3b2")) {
		t.Fatal("the reconciled result reached the log")
	}
	for _, r := range mustKeyRows(t, e.store, runIDOf(t, payload), "1") {
		if b, _ := json.Marshal(r); bytes.Contains(b, []byte("canary-9f3b2")) {
			t.Fatalf("the reconciled result reached a row: %s", b)
		}
	}
}

// A reconciled result the pinned output schema refuses is refused
// TOOL_OUTPUT_INVALID naming the reconciliation, and the record stays
// UNKNOWN.
func TestReconciledResultMustMatchTheOutputSchema(t *testing.T) {
	e := newEnv(t)
	d, payload, _ := unknownCall(t, e)
	key := keyOf(t, payload)
	reconcileAs(t, e, key, ledger.Applied, `{"id":42}`)
	_, err := d.Handle(context.Background(), payload)
	if codeOf(t, err) != string(tool.OutputInvalid) || !bytes.Contains([]byte(err.Error()), []byte("reconciliation of "+key)) {
		t.Fatalf("answer %v, want TOOL_OUTPUT_INVALID naming the reconciliation", err)
	}
	if rec := mustRecord(t, e.store, key); rec.State != ledger.StateUnknown {
		t.Fatalf("record %s, want UNKNOWN untouched", rec.State)
	}
}

// Reconciled as applied without a result, the call fails
// CALL_RECONCILED_NO_RESULT at every retry, runs nothing, and the record
// stays UNKNOWN.
func TestReconciledAppliedWithoutResultFailsTheCall(t *testing.T) {
	e := newEnv(t)
	d, payload, sends := unknownCall(t, e)
	reconcileAs(t, e, keyOf(t, payload), ledger.Applied, "")
	for range 2 {
		if _, err := d.Handle(context.Background(), payload); codeOf(t, err) != string(tool.CallReconciledNoResult) {
			t.Fatalf("answer %v, want CALL_RECONCILED_NO_RESULT", err)
		}
	}
	if rec := mustRecord(t, e.store, keyOf(t, payload)); rec.State != ledger.StateUnknown || sends.Load() != 1 {
		t.Fatalf("record %s, %d sends", rec.State, sends.Load())
	}
}

// Reconciled as not applied, the record becomes FAILED and the retry
// claims it again under the same key: the tool runs once more and the call
// completes with attempt 2.
func TestReconciledNotAppliedSendsTheCallAgain(t *testing.T) {
	e := newEnv(t)
	d, payload, sends := unknownCall(t, e)
	key := keyOf(t, payload)
	reconcileAs(t, e, key, ledger.NotApplied, "")
	out, err := d.Handle(context.Background(), payload)
	if err != nil || string(out) != `{"message_id":"m-again"}` {
		t.Fatalf("the retry: %s %v, want the second send's result", out, err)
	}
	rec := mustRecord(t, e.store, key)
	if rec.State != ledger.StateCompleted || rec.Attempts != 2 || sends.Load() != 2 || rec.Key != key {
		t.Fatalf("record %+v, %d sends: want COMPLETED at attempt 2 under the same key", rec, sends.Load())
	}
}

// An IN_PROGRESS record whose lease has passed is reconciled as an
// UNKNOWN one is.
func TestReconciledExpiredLeaseReplaysTheResult(t *testing.T) {
	e := newEnv(t)
	var sends atomic.Int64
	release := make(chan struct{})
	defer close(release)
	d := e.dispatcher(t, "test-send", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		sends.Add(1)
		<-release
		return json.RawMessage(`{"message_id":"late"}`), nil
	}, func(c *Config) { c.Lease = time.Second })
	payload := envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`)
	if _, err := d.Handle(context.Background(), payload); codeOf(t, err) != string(tool.Timeout) {
		t.Fatalf("the attempt that outlived its lease: %v", err)
	}
	key := keyOf(t, payload)
	rec := mustRecord(t, e.store, key)
	r := ledger.Reconciliation{Key: key, Outcome: ledger.Applied, Result: json.RawMessage(`{"message_id":"seen"}`), ReconciledBy: "arn:aws:iam::123456789012:role/ops",
		StateBefore: rec.State, Attempts: rec.Attempts}
	if _, err := e.store.PutReconciliation(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	out, err := d.Handle(context.Background(), payload)
	if err != nil || string(out) != `{"message_id":"seen"}` || sends.Load() != 1 {
		t.Fatalf("after the reconciliation: %s %v, %d sends", out, err, sends.Load())
	}
}

// The success path reads no reconciliation: a first call makes the same
// requests as before (TestReplay's counts), and a replay no read.
func TestReconciliationCostsTheSuccessPathNothing(t *testing.T) {
	e := newEnv(t)
	d := e.dispatcher(t, "test-send", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		return json.RawMessage(`{"message_id":"m"}`), nil
	})
	payload := envelopeFor("test-send", e.ts.ID, "", 2, `{"text":"x"}`) // not the run's first call: no key pointer
	e.db.reset()
	if _, err := d.Handle(context.Background(), payload); err != nil {
		t.Fatal(err)
	}
	if w, r := e.db.writes(), e.db.gets.Load(); w != 2 || r != 1 {
		t.Fatalf("first success: %d writes, %d reads; want 2 and 1 (the toolset)", w, r)
	}
	e.db.reset()
	if _, err := d.Handle(context.Background(), payload); err != nil {
		t.Fatal(err)
	}
	if e.db.gets.Load() != 0 || e.db.writes() != 1 {
		t.Fatalf("replay: %d reads, %d writes", e.db.gets.Load(), e.db.writes())
	}
}
