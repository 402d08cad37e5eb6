package decision_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/functions/review-decision/decision"
	"github.com/toolgate/toolgate/shared/ledger"
	parkdynamo "github.com/toolgate/toolgate/shared/park/dynamo"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/tool"
)

// reconcileStack is a stack whose Service records reconciliations on the
// test's table, for the reconcilers given; its log is kept.
type reconcileStack struct {
	*stack
	ledger *ledger.Store
	logs   *bytes.Buffer
}

func newReconcileStack(t *testing.T, reconcilers ...string) *reconcileStack {
	t.Helper()
	s := newStack(t)
	var logs bytes.Buffer
	d := s.deps
	d.Parks = parkdynamo.New(s.db, s.table, nil)
	l := ledger.New(s.db, s.table)
	d.Reconciles, d.Reconcilers, d.Log = l, reconcilers, slog.New(slog.NewJSONHandler(&logs, nil))
	s.svc, s.deps = decision.NewService(d), d
	return &reconcileStack{stack: s, ledger: l, logs: &logs}
}

// call records a call of a run started by starter whose first attempt,
// approved by approver, ended UNKNOWN (unknown true) or COMPLETED; it
// returns the call's idempotency key.
func (s *reconcileStack) call(t *testing.T, starter, approver string, unknown bool) string {
	t.Helper()
	ctx := context.Background()
	run := runARN()
	if err := s.store.RecordStart(ctx, run, starter); err != nil {
		t.Fatal(err)
	}
	key := run + "/2"
	c := &ledger.Record{Key: key, Step: "send", Tool: "send-email", ToolsetID: "ts_00000000000000000000000000000000",
		InputDigest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", LeaseUntil: time.Now().Add(-time.Second),
		ExternalKey: "AAAAAAAAAAAAAAAAAAAAAA/2"}
	if ok, _, err := s.ledger.Claim(ctx, c); !ok || err != nil {
		t.Fatal(ok, err)
	}
	now := time.Now()
	row := &ledger.Row{Attempt: 1, Status: ledger.StatusUnknown, ErrorCode: string(tool.Timeout), StartedAt: now, EndedAt: now,
		ExternalKey: c.ExternalKey, ReviewID: "rv_1", Approver: approver}
	state := ledger.StateUnknown
	var result json.RawMessage
	if !unknown {
		row.Status, row.ErrorCode, state, result = ledger.StatusSucceeded, "", ledger.StateCompleted, json.RawMessage(`{}`)
	}
	if ok, err := s.ledger.Finish(ctx, key, c.Token, state, result, row); !ok || err != nil {
		t.Fatal(ok, err)
	}
	return key
}

// reconcile runs a reconcile as the local identity as, its proof bound to
// the request.
func (s *reconcileStack) reconcile(t *testing.T, as, key, outcome, result, reason string) (*review.ReconcileResult, error) {
	t.Helper()
	req := decision.Request{Action: review.ActionLedgerReconcile, Key: key, Outcome: outcome, Reason: reason}
	if result != "" {
		req.Result = json.RawMessage(result)
	}
	digest, err := review.ReconcileResultDigest(req.Result)
	if err != nil {
		digest = ""
	}
	req.Proof = s.callers.Proof(t, as, review.ReconcileBinding(key, outcome, digest, reason))
	_, res, err := s.svc.Do(context.Background(), req)
	if err != nil {
		return nil, err
	}
	r := res.(review.ReconcileResult)
	return &r, nil
}

// A reconciler who neither started the run nor approved the call records
// an UNKNOWN call's reconciliation once; the starter, the approver and
// anyone the reconcilers do not match are refused, and so is a second
// reconciliation, naming who reconciled it first. The result never
// reaches the log or the answer.
func TestReconcileIsTheReconcilersOnceNeverTheStarterOrApprover(t *testing.T) {
	t.Parallel()
	s := newReconcileStack(t, principal("*"))
	key := s.call(t, principal("bob"), principal("alice"), true)
	for who, want := range map[string]review.Code{"bob": review.CodeForbidden, "alice": review.CodeForbidden} {
		if _, err := s.reconcile(t, who, key, "applied", `{"message_id":"x"}`, ""); codeOf(err) != want {
			t.Errorf("%s reconciles: %v, want %s", who, err, want)
		}
	}
	res, err := s.reconcile(t, "ops", key, "applied", `{"message_id":"canary-77c1"}`, "the mail server logged it")
	if err != nil || res.Key != key || res.Outcome != "applied" || res.ReconciledBy != principal("ops") || res.ReconciledAt == "" {
		t.Fatalf("ops reconciles: %+v %v", res, err)
	}
	rc, err := s.ledger.Reconciliation(context.Background(), key)
	if err != nil || rc.Outcome != ledger.Applied || string(rc.Result) != `{"message_id":"canary-77c1"}` || rc.StateBefore != ledger.StateUnknown || rc.Attempts != 1 {
		t.Fatalf("recorded: %+v %v", rc, err)
	}
	_, err = s.reconcile(t, "carol", key, "not_applied", "", "no trace of it")
	if codeOf(err) != review.CodeConflict || !strings.Contains(err.Error(), principal("ops")) {
		t.Fatalf("a second reconcile: %v, want %s naming ops", err, review.CodeConflict)
	}
	if strings.Contains(s.logs.String(), "canary-77c1") {
		t.Fatal("the result reached the log")
	}
}

// Only a principal the reconcilers match may reconcile.
func TestReconcileRefusesANonReconciler(t *testing.T) {
	t.Parallel()
	s := newReconcileStack(t, principal("ops"))
	key := s.call(t, principal("bob"), "", true)
	if _, err := s.reconcile(t, "carol", key, "not_applied", "", "no trace"); codeOf(err) != review.CodeForbidden {
		t.Fatalf("carol reconciles: %v, want %s", err, review.CodeForbidden)
	}
	if _, err := s.ledger.Reconciliation(context.Background(), key); err == nil {
		t.Fatal("a refused reconcile was recorded")
	}
}

// A call whose outcome is known (COMPLETED) is not reconciled, nor is a key
// without a record.
func TestReconcileRefusesACallWhoseOutcomeIsKnown(t *testing.T) {
	t.Parallel()
	s := newReconcileStack(t, principal("ops"))
	key := s.call(t, principal("bob"), "", false)
	if _, err := s.reconcile(t, "ops", key, "not_applied", "", "no trace"); codeOf(err) != review.CodeConflict {
		t.Fatalf("a COMPLETED call: %v, want %s", err, review.CodeConflict)
	}
	if _, err := s.reconcile(t, "ops", runARN()+"/4", "not_applied", "", "no trace"); codeOf(err) != review.CodeNotFound {
		t.Fatalf("no record: %v, want %s", err, review.CodeNotFound)
	}
}

// A request that is not a reconciliation is refused REVIEW_INVALID_REQUEST,
// nothing recorded: an unknown outcome, not_applied without a reason or
// with a result, a key that is not run_id/seq, a reason too long.
func TestReconcileRefusesBadRequests(t *testing.T) {
	t.Parallel()
	s := newReconcileStack(t, principal("ops"))
	key := s.call(t, principal("bob"), "", true)
	for name, c := range map[string]struct{ key, outcome, result, reason string }{
		"outcome":               {key, "maybe", "", "x"},
		"not applied no reason": {key, "not_applied", "", ""},
		"not applied result":    {key, "not_applied", `{}`, "x"},
		"key":                   {"no-seq", "applied", "", ""},
		"reason":                {key, "applied", "", strings.Repeat("x", ledger.MaxReconcileReason+1)},
	} {
		if _, err := s.reconcile(t, "ops", c.key, c.outcome, c.result, c.reason); codeOf(err) != review.CodeInvalid {
			t.Errorf("%s: %v, want %s", name, err, review.CodeInvalid)
		}
	}
	if _, err := s.ledger.Reconciliation(context.Background(), key); err == nil {
		t.Fatal("a refused reconcile was recorded")
	}
}

// The proof binds the request: one made for not_applied is refused for
// applied.
func TestReconcileProofBindsTheOutcome(t *testing.T) {
	t.Parallel()
	s := newReconcileStack(t, principal("ops"))
	key := s.call(t, principal("bob"), "", true)
	req := decision.Request{Action: review.ActionLedgerReconcile, Key: key, Outcome: "applied", Reason: "x",
		Proof: s.callers.Proof(t, "ops", review.ReconcileBinding(key, "not_applied", "", "x"))}
	if _, _, err := s.svc.Do(context.Background(), req); codeOf(err) != review.CodeUnauthenticated && codeOf(err) != review.CodeForbidden {
		t.Fatalf("a proof for another outcome: %v", err)
	}
}
