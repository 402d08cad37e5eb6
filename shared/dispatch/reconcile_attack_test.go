package dispatch

// What an insider can do to a reconciliation: a reconciler gives a result
// of their choosing, and review-decision must know who approved a call
// even when its attempt never ended (docs/fork.md, "Reconciling").

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review/reviewtest"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// A reconciled result the pinned output schema refuses never reaches the
// call's error message, a row or the log, neither its values nor its
// member names; the record stays UNKNOWN and the tool does not run.
func TestARefusedReconciledResultIsQuotedNowhere(t *testing.T) {
	e := newEnv(t)
	var logs bytes.Buffer
	d, payload, sends := unknownCall(t, e, func(dp *Deps) { dp.Log = slog.New(slog.NewJSONHandler(&logs, nil)) })
	key := keyOf(t, payload)
	reconcileAs(t, e, key, ledger.Applied, `{"message_id":{"canary-k7":"canary-v7"},"canary-k8":"canary-v8"}`)
	_, err := d.Handle(context.Background(), payload)
	if codeOf(t, err) != string(tool.OutputInvalid) {
		t.Fatalf("answer %v, want %s", err, tool.OutputInvalid)
	}
	if bytes.Contains([]byte(err.Error()), []byte("canary")) || bytes.Contains(logs.Bytes(), []byte("canary")) {
		t.Fatalf("the reconciled result was quoted: %v / %s", err, logs.Bytes())
	}
	for _, r := range mustKeyRows(t, e.store, runIDOf(t, payload), "1") {
		if b, _ := json.Marshal(r); bytes.Contains(b, []byte("canary")) {
			t.Fatalf("the reconciled result reached a row: %s", b)
		}
	}
	if rec := mustRecord(t, e.store, key); rec.State != ledger.StateUnknown || sends.Load() != 1 {
		t.Fatalf("record %s, %d sends; want UNKNOWN, the first send only", rec.State, sends.Load())
	}
}

// While a gated call's tool runs, before any row of its attempt exists,
// its call item already names the approver of the approval it runs under
// (the claim recorded it on the attempt's entry): should the function
// crash there, review-decision still refuses that approver a
// reconciliation of the call (docs/fork.md, "Reconciling", "Who may").
func TestAGatedClaimNamesItsApproverBeforeTheAttemptEnds(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var during []string
	d := e.dispatcher(t, "test-gated", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		tgt, err := e.store.ReconcileTarget(ctx, c.Envelope.IdempotencyKey)
		if err != nil {
			return nil, err
		}
		during = tgt.Approvers
		return json.RawMessage(`{"message_id":"m"}`), nil
	})
	payload := reviewtest.Approve(t, e.reviews(), envelopeFor("test-gated", e.ts.ID, "", 2, `{"text":"once"}`))
	if _, err := d.Handle(ctx, payload); err != nil {
		t.Fatal(err)
	}
	if len(during) != 1 || during[0] != reviewtest.Approver {
		t.Fatalf("approvers while the tool ran: %q, want [%s]", during, reviewtest.Approver)
	}
}
