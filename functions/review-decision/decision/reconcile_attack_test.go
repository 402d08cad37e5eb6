package decision_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/functions/review-decision/decision"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
)

// crashedCall records a call of a run started by starter whose only
// attempt, claimed under an approval by approver, never ended (its
// function crashed): IN_PROGRESS, its lease passed, no row. It returns the
// call's idempotency key.
func (s *reconcileStack) crashedCall(t *testing.T, starter, approver string) string {
	t.Helper()
	ctx := context.Background()
	run := runARN()
	if err := s.store.RecordStart(ctx, run, starter); err != nil {
		t.Fatal(err)
	}
	key := run + "/2"
	c := &ledger.Record{Key: key, Step: "send", Tool: "send-email", ToolsetID: "ts_00000000000000000000000000000000",
		InputDigest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", LeaseUntil: time.Now().Add(-time.Second),
		ExternalKey: "AAAAAAAAAAAAAAAAAAAAAA/2", Approver: approver}
	if ok, _, err := s.ledger.Claim(ctx, c); !ok || err != nil {
		t.Fatal(ok, err)
	}
	return key
}

// The approver of an attempt that never ended (no row names it: its
// function crashed and its lease passed) does not reconcile the call: its
// claim recorded who approved it. Another reconciler does.
func TestReconcileRefusesTheApproverOfAnAttemptThatNeverEnded(t *testing.T) {
	t.Parallel()
	s := newReconcileStack(t, principal("*"))
	key := s.crashedCall(t, principal("bob"), principal("alice"))
	if _, err := s.reconcile(t, "alice", key, "not_applied", "", "the mail server has no trace of it"); codeOf(err) != review.CodeForbidden {
		t.Fatalf("alice, who approved the call, reconciles it: %v, want %s", err, review.CodeForbidden)
	}
	if _, err := s.ledger.Reconciliation(context.Background(), key); err == nil {
		t.Fatal("the approver's reconciliation was recorded")
	}
	if _, err := s.reconcile(t, "ops", key, "not_applied", "", "the mail server has no trace of it"); err != nil {
		t.Fatalf("ops reconciles: %v", err)
	}
}

// A call whose claim is IN_PROGRESS with a live lease is not reconciled:
// its attempt may still be running.
func TestReconcileRefusesACallInFlight(t *testing.T) {
	t.Parallel()
	s := newReconcileStack(t, principal("*"))
	ctx := context.Background()
	run := runARN()
	if err := s.store.RecordStart(ctx, run, principal("bob")); err != nil {
		t.Fatal(err)
	}
	key := run + "/2"
	c := &ledger.Record{Key: key, Step: "send", Tool: "send-email", ToolsetID: "ts_00000000000000000000000000000000",
		InputDigest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", LeaseUntil: time.Now().Add(time.Minute),
		ExternalKey: "AAAAAAAAAAAAAAAAAAAAAA/2"}
	if ok, _, err := s.ledger.Claim(ctx, c); !ok || err != nil {
		t.Fatal(ok, err)
	}
	_, err := s.reconcile(t, "ops", key, "not_applied", "", "no trace")
	if codeOf(err) != review.CodeConflict || !strings.Contains(err.Error(), "IN_PROGRESS") {
		t.Fatalf("a call in flight: %v, want %s", err, review.CodeConflict)
	}
}

// A reason holding control characters (a terminal's escape sequences) or
// bidirectional formatting characters, which change what a person reading
// it sees, is refused REVIEW_INVALID_REQUEST, nothing recorded; newlines,
// tabs and right-to-left scripts are kept.
func TestReconcileRefusesAReasonThatHidesWhatItSays(t *testing.T) {
	t.Parallel()
	s := newReconcileStack(t, principal("*"))
	key := s.call(t, principal("bob"), "", true)
	for name, reason := range map[string]string{
		"escape sequence": "applied\x1b[2K\rnot applied",
		"NUL":             "no trace\x00",
		"C1 control":      "no trace\u009b2K",
		"bidi override":   "no trace \u202eof it",
		"bidi isolate":    "no trace \u2067of it",
	} {
		if _, err := s.reconcile(t, "ops", key, "not_applied", "", reason); codeOf(err) != review.CodeInvalid {
			t.Errorf("%s: %v, want %s", name, err, review.CodeInvalid)
		}
	}
	if _, err := s.ledger.Reconciliation(context.Background(), key); err == nil {
		t.Fatal("a refused reconcile was recorded")
	}
	if _, err := s.reconcile(t, "ops", key, "not_applied", "", "checked:\n\tno trace, לא נשלח"); err != nil {
		t.Fatalf("a plain multi-line reason in two scripts: %v", err)
	}
}

// A principal of another AWS account, with the same name as a reconciler
// and even where the reconcilers' pattern is "*", is refused; so is a
// proof made for one call's reconciliation and sent for another's, and a
// proof replayed with another reason. Nothing is recorded.
func TestReconcileRefusesAnotherAccountAndAProofOfAnotherRequest(t *testing.T) {
	t.Parallel()
	s := newReconcileStack(t, principal("*"))
	key, other := s.call(t, principal("bob"), "", true), s.call(t, principal("bob"), "", true)
	const reason = "the mail server has no trace of it"
	send := func(proof, key, reason string) error {
		req := decision.Request{Action: review.ActionLedgerReconcile, Key: key, Outcome: "not_applied", Reason: reason, Proof: proof}
		_, _, err := s.svc.Do(context.Background(), req)
		return err
	}
	refused := func(err error) bool {
		c := codeOf(err)
		return c == review.CodeForbidden || c == review.CodeUnauthenticated
	}
	foreign := s.callers.ProofIn(t, "210987654321", "ops", review.ReconcileBinding(key, "not_applied", "", reason))
	if err := send(foreign, key, reason); !refused(err) {
		t.Errorf("another account's ops: %v, want refused", err)
	}
	proof := s.callers.Proof(t, "ops", review.ReconcileBinding(other, "not_applied", "", reason))
	if err := send(proof, key, reason); !refused(err) {
		t.Errorf("a proof for another key: %v, want refused", err)
	}
	proof = s.callers.Proof(t, "ops", review.ReconcileBinding(key, "not_applied", "", reason))
	if err := send(proof, key, "another reason"); !refused(err) {
		t.Errorf("a proof for another reason: %v, want refused", err)
	}
	for _, k := range []string{key, other} {
		if _, err := s.ledger.Reconciliation(context.Background(), k); err == nil {
			t.Fatalf("a refused reconcile of %s was recorded", k)
		}
	}
}

// Two reconcilers racing on one call: exactly one reconciliation is
// recorded, and the other is refused REVIEW_CONFLICT naming who won.
func TestReconcileRacedRecordsOne(t *testing.T) {
	t.Parallel()
	s := newReconcileStack(t, principal("*"))
	key := s.call(t, principal("bob"), "", true)
	type answer struct {
		who string
		err error
	}
	const reason = "checked the mail server"
	answers := make(chan answer, 2)
	for who, outcome := range map[string]string{"ops": "applied", "carol": "not_applied"} {
		// Signed here: t.Fatal belongs to the test's goroutine.
		req := decision.Request{Action: review.ActionLedgerReconcile, Key: key, Outcome: outcome, Reason: reason,
			Proof: s.callers.Proof(t, who, review.ReconcileBinding(key, outcome, "", reason))}
		go func() {
			_, _, err := s.svc.Do(context.Background(), req)
			answers <- answer{who, err}
		}()
	}
	var won []string
	var lost []error
	for range 2 {
		a := <-answers
		if a.err == nil {
			won = append(won, a.who)
		} else {
			lost = append(lost, a.err)
		}
	}
	if len(won) != 1 || len(lost) != 1 || codeOf(lost[0]) != review.CodeConflict || !strings.Contains(lost[0].Error(), principal(won[0])) {
		t.Fatalf("won %v, lost %v: want one each, the loser told %s", won, lost, review.CodeConflict)
	}
	rc, err := s.ledger.Reconciliation(context.Background(), key)
	if err != nil || rc.ReconciledBy != principal(won[0]) {
		t.Fatalf("recorded %+v %v, want %s's", rc, err, won[0])
	}
}

// The operator whose direct-lane namespace a run id is in started it: they
// do not reconcile its calls; another reconciler does.
func TestReconcileRefusesTheDirectCaller(t *testing.T) {
	t.Parallel()
	s := newReconcileStack(t, principal("*"))
	ctx := context.Background()
	key := lane.DirectRunPrefix(principal("ops")) + "r1/1"
	c := &ledger.Record{Key: key, Step: "send", Tool: "send-email", ToolsetID: "ts_00000000000000000000000000000000",
		InputDigest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", LeaseUntil: time.Now().Add(-time.Second),
		ExternalKey: "AAAAAAAAAAAAAAAAAAAAAA/1"}
	if ok, _, err := s.ledger.Claim(ctx, c); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, err := s.reconcile(t, "ops", key, "not_applied", "", "no trace"); codeOf(err) != review.CodeForbidden {
		t.Fatalf("ops reconciles their own direct call: %v, want %s", err, review.CodeForbidden)
	}
	if _, err := s.reconcile(t, "carol", key, "not_applied", "", "no trace"); err != nil {
		t.Fatalf("carol reconciles: %v", err)
	}
}

// A result over the inline limit, or one that is not JSON, is refused
// REVIEW_INVALID_REQUEST, and neither the answer nor the log quotes it;
// nothing is recorded.
func TestReconcileRefusesABadResultWithoutQuotingIt(t *testing.T) {
	t.Parallel()
	s := newReconcileStack(t, principal("*"))
	key := s.call(t, principal("bob"), "", true)
	big := `{"message_id":"canary-big-` + strings.Repeat("x", decision.MaxReconcileResultBytes) + `"}`
	for name, result := range map[string]string{"over the limit": big, "not JSON": `{"message_id":"canary-bad"`} {
		req := decision.Request{Action: review.ActionLedgerReconcile, Key: key, Outcome: "applied", Result: []byte(result), Reason: "seen"}
		digest, _ := review.ReconcileResultDigest(req.Result) // "" for one that is not JSON
		req.Proof = s.callers.Proof(t, "ops", review.ReconcileBinding(key, "applied", digest, "seen"))
		_, _, err := s.svc.Do(context.Background(), req)
		if codeOf(err) != review.CodeInvalid || strings.Contains(err.Error(), "canary") {
			t.Errorf("%s: %v, want %s quoting nothing", name, err, review.CodeInvalid)
		}
	}
	if strings.Contains(s.logs.String(), "canary") {
		t.Fatal("a refused result reached the log")
	}
	if _, err := s.ledger.Reconciliation(context.Background(), key); err == nil {
		t.Fatal("a refused reconcile was recorded")
	}
}
