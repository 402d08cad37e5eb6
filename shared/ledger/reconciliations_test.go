package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
)

// unknownRecord claims key with a sealing store and marks it UNKNOWN, as
// the dispatcher does for an at_most_once call whose attempt may have run.
func unknownRecord(t *testing.T, s *Store, key string) *Record {
	t.Helper()
	ctx := context.Background()
	if ok, _, err := s.Claim(ctx, claimOf(key, time.Now().Add(-time.Second))); !ok || err != nil {
		t.Fatal(ok, err)
	}
	old := mustRecord(t, s, key)
	if ok, err := s.MarkUnknown(ctx, old, string(tool.RetryRequiresIdempotency)); !ok || err != nil {
		t.Fatal(ok, err)
	}
	return mustRecord(t, s, key)
}

// A call is reconciled once: the second PutReconciliation is refused
// ErrReconciled and answers with the first, which stays as it was.
func TestReconciliationIsRecordedOnce(t *testing.T) {
	plain, _ := newStore(t)
	ctx := context.Background()
	key := "run-recon-once/3"
	first := Reconciliation{Key: key, Outcome: Applied, Result: json.RawMessage(`{"id":"T-1"}`), Reason: "the ticket exists",
		ReconciledBy: "arn:aws:iam::123456789012:role/ops", StateBefore: StateUnknown, Attempts: 1}
	if _, err := plain.PutReconciliation(ctx, first); err != nil {
		t.Fatal(err)
	}
	second := Reconciliation{Key: key, Outcome: NotApplied, Reason: "no", ReconciledBy: "arn:aws:iam::123456789012:role/other", Attempts: 1}
	got, err := plain.PutReconciliation(ctx, second)
	if !errors.Is(err, ErrReconciled) || got == nil || got.ReconciledBy != first.ReconciledBy || got.Outcome != Applied {
		t.Fatalf("second reconcile: %+v %v, want ErrReconciled with the first", got, err)
	}
	r, err := plain.Reconciliation(ctx, key)
	if err != nil || r.Outcome != Applied || string(r.Result) != `{"id":"T-1"}` || r.Reason != first.Reason || r.Attempts != 1 || r.StateBefore != StateUnknown {
		t.Fatalf("reconciliation: %+v %v", r, err)
	}
	if _, err := plain.Reconciliation(ctx, "run-recon-once/4"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("no reconciliation: %v, want ErrNotFound", err)
	}
}

// A reconciliation that is not one is refused before anything is written:
// an unknown outcome, a result on a call not applied, a key that is not
// run_id/seq.
func TestPutReconciliationRefusesBadInput(t *testing.T) {
	plain, _ := newStore(t)
	ctx := context.Background()
	for name, r := range map[string]Reconciliation{
		"outcome":            {Key: "run-recon-bad/1", Outcome: "maybe"},
		"not applied result": {Key: "run-recon-bad/1", Outcome: NotApplied, Result: json.RawMessage(`{}`)},
		"key":                {Key: "no-seq", Outcome: Applied},
	} {
		if _, err := plain.PutReconciliation(ctx, r); err == nil {
			t.Errorf("%s: recorded", name)
		}
	}
	if _, err := plain.Reconciliation(ctx, "run-recon-bad/1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after refusals: %v, want nothing recorded", err)
	}
}

// Applied with a result, an UNKNOWN record becomes COMPLETED with it,
// sealed, saying who reconciled it; a second finish (the record changed)
// writes nothing.
func TestFinishReconciledAppliedCompletesTheRecord(t *testing.T) {
	plain, _ := newStore(t)
	s := plain.WithMAC(keyOf(t, 1))
	ctx := context.Background()
	key := "run-recon-applied/2"
	old := unknownRecord(t, s, key)
	rc := &Reconciliation{Key: key, Outcome: Applied, Result: json.RawMessage(`{"id":"T-9"}`), ReconciledBy: "arn:aws:iam::123456789012:role/ops",
		ReconciledAt: time.Now(), Attempts: old.Attempts}
	if ok, err := s.FinishReconciled(ctx, old, rc); !ok || err != nil {
		t.Fatal(ok, err)
	}
	r := mustRecord(t, s, key)
	if r.State != StateCompleted || string(r.Result) != `{"id":"T-9"}` || r.Seal != seal.Valid || r.ReconciledBy != rc.ReconciledBy {
		t.Fatalf("after applied: %+v", r)
	}
	stale := *old
	stale.State = StateUnknown
	if ok, err := s.FinishReconciled(ctx, &stale, rc); ok || err != nil {
		t.Fatalf("a second finish: %v %v, want false", ok, err)
	}
}

// Not applied, an UNKNOWN record becomes FAILED (sealed), and the normal
// re-claim takes it again under the same key.
func TestFinishReconciledNotAppliedLetsTheCallBeClaimedAgain(t *testing.T) {
	plain, _ := newStore(t)
	s := plain.WithMAC(keyOf(t, 1))
	ctx := context.Background()
	key := "run-recon-not-applied/2"
	old := unknownRecord(t, s, key)
	rc := &Reconciliation{Key: key, Outcome: NotApplied, Reason: "never reached", ReconciledBy: "arn:aws:iam::123456789012:role/ops",
		ReconciledAt: time.Now(), Attempts: old.Attempts}
	if ok, err := s.FinishReconciled(ctx, old, rc); !ok || err != nil {
		t.Fatal(ok, err)
	}
	r := mustRecord(t, s, key)
	if r.State != StateFailed || r.Result != nil || r.Seal != seal.Valid || r.ErrorCode != string(tool.RetryRequiresIdempotency) {
		t.Fatalf("after not applied: %+v", r)
	}
	if ok, err := s.Reclaim(ctx, r, time.Now().Add(time.Minute)); !ok || err != nil {
		t.Fatalf("re-claim: %v %v", ok, err)
	}
	if r := mustRecord(t, s, key); r.State != StateInProgress || r.Attempts != 2 || r.Seal != seal.Valid {
		t.Fatalf("after the re-claim: %+v", r)
	}
}

// An IN_PROGRESS record whose lease has passed is finished by its
// reconciliation; one whose lease holds, or a reconciliation of another
// attempt, or applied without a result, is refused and the record left.
func TestFinishReconciledRefusesWhatItMayNotFinish(t *testing.T) {
	plain, _ := newStore(t)
	s := plain.WithMAC(keyOf(t, 1))
	ctx := context.Background()
	live := "run-recon-live/1"
	if ok, _, err := s.Claim(ctx, claimOf(live, time.Now().Add(time.Minute))); !ok || err != nil {
		t.Fatal(ok, err)
	}
	rec := mustRecord(t, s, live)
	by := "arn:aws:iam::123456789012:role/ops"
	for name, rc := range map[string]*Reconciliation{
		"live lease":    {Key: live, Outcome: NotApplied, ReconciledBy: by, Attempts: 1},
		"other attempt": {Key: live, Outcome: NotApplied, ReconciledBy: by, Attempts: 2},
		"no result":     {Key: live, Outcome: Applied, ReconciledBy: by, Attempts: 1},
		"other key":     {Key: "run-recon-live/2", Outcome: NotApplied, ReconciledBy: by, Attempts: 1},
	} {
		if ok, err := s.FinishReconciled(ctx, rec, rc); ok || err == nil {
			t.Errorf("%s: %v %v, want refused", name, ok, err)
		}
	}
	if r := mustRecord(t, s, live); r.State != StateInProgress || r.ReconciledBy != "" {
		t.Fatalf("after refusals: %+v", r)
	}
	expired := "run-recon-expired/1"
	if ok, _, err := s.Claim(ctx, claimOf(expired, time.Now().Add(-time.Second))); !ok || err != nil {
		t.Fatal(ok, err)
	}
	old := mustRecord(t, s, expired)
	rc := &Reconciliation{Key: expired, Outcome: Applied, Result: json.RawMessage(`[1]`), ReconciledBy: by, ReconciledAt: time.Now(), Attempts: 1}
	if ok, err := s.FinishReconciled(ctx, old, rc); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if r := mustRecord(t, s, expired); r.State != StateCompleted || string(r.Result) != `[1]` || r.Seal != seal.Valid {
		t.Fatalf("expired IN_PROGRESS after applied: %+v", r)
	}
}

// review-decision's read of the call names its state, lease, attempts
// and the approvers of its attempts, never its result.
func TestReconcileTargetReadsStateAndApprovers(t *testing.T) {
	plain, _ := newStore(t)
	s := plain.WithMAC(keyOf(t, 1))
	ctx := context.Background()
	key := "run-recon-target/5"
	c := claimOf(key, time.Now().Add(-time.Second))
	if ok, _, err := s.Claim(ctx, c); !ok || err != nil {
		t.Fatal(ok, err)
	}
	now := time.Now()
	row := &Row{Attempt: 1, Status: StatusUnknown, ErrorCode: string(tool.Timeout), StartedAt: now, EndedAt: now, ExternalKey: c.ExternalKey,
		Step: c.Step, Tool: c.Tool, ToolsetID: c.ToolsetID, InputDigest: c.InputDigest, ReviewID: "rv_1", Approver: "arn:aws:iam::123456789012:user/alice"}
	if ok, err := s.Finish(ctx, key, c.Token, StateUnknown, nil, row); !ok || err != nil {
		t.Fatal(ok, err)
	}
	got, err := plain.ReconcileTarget(ctx, key)
	if err != nil || got.State != StateUnknown || got.Attempts != 1 || got.Tool != "send-email" || len(got.Approvers) != 1 ||
		got.Approvers[0] != row.Approver || !got.Unknown(time.Now()) {
		t.Fatalf("target: %+v %v", got, err)
	}
	if _, err := plain.ReconcileTarget(ctx, "run-recon-target/6"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("no record: %v", err)
	}
}
