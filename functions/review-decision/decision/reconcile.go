package decision

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/reviewer"
	"github.com/toolgate/toolgate/shared/tool"
)

// ReconcileStore is the ledger as the reconcile action reads and writes
// it (shared/ledger Store): ReconcileTarget reads the call (never its
// result; an error wrapping ledger.ErrNotFound for no record), and
// PutReconciliation records a reconciliation once (an error wrapping
// ledger.ErrReconciled, with the first one, for a call reconciled
// already).
type ReconcileStore interface {
	ReconcileTarget(ctx context.Context, key string) (*ledger.ReconcileTarget, error)
	PutReconciliation(ctx context.Context, r ledger.Reconciliation) (*ledger.Reconciliation, error)
	Now() time.Time
}

// MaxReconcileResultBytes bounds a reconciliation's result: the largest
// result a tool function may return inline (tool.MaxInlineLimit, under
// Step Functions' 256 KiB state); the dispatcher checks it again against
// the call's own limits before it replays it.
const MaxReconcileResultBytes = tool.MaxInlineLimit

// reconcile runs review.ActionLedgerReconcile (docs/fork.md,
// "Reconciling"): for a caller whose proof binds the key, outcome,
// result digest and reason, who matches the reconcilers and is neither
// the run's starter nor an approver of the call, it records the
// reconciliation of a call whose outcome is unknown, once. It answers a
// review.ReconcileResult, never the result; REVIEW_INVALID_REQUEST for a
// request that is not one, REVIEW_FORBIDDEN for a caller who may not,
// REVIEW_NOT_FOUND for a key without a record, REVIEW_CONFLICT for a call
// whose outcome is known or that was reconciled already (naming who did).
func (s *Service) reconcile(ctx context.Context, req Request) (review.Caller, any, error) {
	if s.reconciles == nil || s.parks == nil {
		return review.Caller{}, nil, review.Errorf(review.CodeInvalid, "this function records no reconciliations")
	}
	digest, err := review.ReconcileResultDigest(req.Result)
	if err != nil {
		return review.Caller{}, nil, review.Errorf(review.CodeInvalid, "the result is not JSON")
	}
	who, err := s.verifyCaller(ctx, req.Proof, review.ReconcileBinding(req.Key, req.Outcome, digest, req.Reason))
	if err != nil {
		return who, nil, err
	}
	if err := checkReconcile(req); err != nil {
		return who, nil, err
	}
	if !reviewer.IsAdmin(s.reconcilers, who.Principal) {
		return who, nil, review.Errorf(review.CodeForbidden, "%s matches no reconciler: only they may reconcile a call (TOOLGATE_RECONCILERS; docs/fork.md, \"Reconciling\")", who.Principal)
	}
	t, err := s.reconciles.ReconcileTarget(ctx, req.Key)
	if errors.Is(err, ledger.ErrNotFound) {
		return who, nil, review.Errorf(review.CodeNotFound, "%s has no ledger record (or its time ended long ago)", req.Key)
	}
	if err != nil {
		return who, nil, review.Wrap(review.CodeUnavailable, err, "the table is unavailable")
	}
	runID := runOf(req.Key)
	starter, err := s.starterOf(ctx, runID)
	if err != nil {
		return who, nil, err
	}
	switch {
	case starter != "" && who.Principal == starter:
		return who, nil, review.Errorf(review.CodeForbidden, "you started the run of %s: its starter never reconciles its calls", req.Key)
	case slices.Contains(t.Approvers, who.Principal):
		return who, nil, review.Errorf(review.CodeForbidden, "you approved %s: its approver never reconciles it", req.Key)
	}
	now := s.reconciles.Now()
	if !t.Unknown(now) {
		state := string(t.State)
		if t.State == ledger.StateInProgress {
			state = "IN_PROGRESS with its lease until " + t.LeaseUntil.UTC().Format(time.RFC3339)
		}
		return who, nil, review.Errorf(review.CodeConflict, "the outcome of %s is not unknown (%s): only an UNKNOWN call, or one IN_PROGRESS whose lease has passed, is reconciled", req.Key, state)
	}
	rc := ledger.Reconciliation{Key: req.Key, Outcome: ledger.ReconcileOutcome(req.Outcome), Result: req.Result, Reason: req.Reason,
		ReconciledBy: who.Principal, ReconciledAt: now, StateBefore: t.State, Attempts: t.Attempts}
	first, err := s.reconciles.PutReconciliation(ctx, rc)
	if errors.Is(err, ledger.ErrReconciled) {
		if first == nil {
			return who, nil, review.Errorf(review.CodeConflict, "%s was reconciled already", req.Key)
		}
		return who, nil, review.Errorf(review.CodeConflict, "%s was reconciled already, %s by %s at %s: a call is reconciled once",
			req.Key, first.Outcome, first.ReconciledBy, first.ReconciledAt.UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	if err != nil {
		return who, nil, review.Wrap(review.CodeUnavailable, err, "the table is unavailable")
	}
	s.log.InfoContext(ctx, "call reconciled", "key", req.Key, "outcome", req.Outcome, "reconciled_by", who.Principal,
		"with_result", len(req.Result) > 0, "state_before", string(t.State))
	return who, review.ReconcileResult{Key: req.Key, Outcome: req.Outcome, ReconciledBy: who.Principal,
		ReconciledAt: now.UTC().Format("2006-01-02T15:04:05.000Z")}, nil
}

// checkReconcile refuses a reconcile request that is not one: a key that
// is not run_id/seq, an outcome other than applied or not_applied, a
// result with not_applied or over MaxReconcileResultBytes, not_applied
// without a reason, a reason over ledger.MaxReconcileReason characters,
// not UTF-8 or holding a character ledger.HiddenInReason refuses. No message
// quotes the result.
func checkReconcile(req Request) error {
	i := strings.LastIndexByte(req.Key, '/')
	switch {
	case i <= 0 || tool.Seq(req.Key[i+1:]).Valid() != nil:
		return review.Errorf(review.CodeInvalid, "key %q is not an idempotency key, <run_id>/<seq>", excerpt.Bytes(req.Key, 80, "..."))
	case !ledger.ReconcileOutcome(req.Outcome).Valid():
		return review.Errorf(review.CodeInvalid, "outcome %q is not applied or not_applied", excerpt.Bytes(req.Outcome, 40, "..."))
	case req.Outcome == string(ledger.NotApplied) && len(req.Result) > 0:
		return review.Errorf(review.CodeInvalid, "a call not applied has no result: drop the result, or reconcile it applied")
	case len(req.Result) > MaxReconcileResultBytes:
		return review.Errorf(review.CodeInvalid, "the result is %d bytes, over %d: a tool function returns no larger result inline", len(req.Result), MaxReconcileResultBytes)
	case req.Outcome == string(ledger.NotApplied) && strings.TrimSpace(req.Reason) == "":
		return review.Errorf(review.CodeInvalid, "not_applied needs a reason: say how you know the call had no effect")
	case !utf8.ValidString(req.Reason):
		return review.Errorf(review.CodeInvalid, "the reason is not valid UTF-8")
	case utf8.RuneCountInString(req.Reason) > ledger.MaxReconcileReason:
		return review.Errorf(review.CodeInvalid, "the reason is %d characters, over %d", utf8.RuneCountInString(req.Reason), ledger.MaxReconcileReason)
	case strings.ContainsFunc(req.Reason, ledger.HiddenInReason):
		return review.Errorf(review.CodeInvalid, "the reason holds control or bidirectional formatting characters (U+%04X): write it as plain text", []rune(req.Reason)[strings.IndexFunc(req.Reason, ledger.HiddenInReason)])
	case len(req.Result) > 0 && !json.Valid(req.Result):
		return review.Errorf(review.CodeInvalid, "the result is not JSON")
	}
	return nil
}

// starterOf is the starter of runID: the caller whose namespace a
// direct-lane run id is in (lane.DirectRunPrefix), else the run's start
// record's starter ("" when it has none).
func (s *Service) starterOf(ctx context.Context, runID string) (string, error) {
	if lane.IsDirectRunID(runID) {
		esc, _, _ := strings.Cut(strings.TrimPrefix(runID, "direct/"), "/")
		arn, err := url.PathUnescape(esc)
		if err != nil {
			return "", review.Errorf(review.CodeInvalid, "run id %q is not a direct-lane run id", excerpt.Bytes(runID, 80, "..."))
		}
		return arn, nil
	}
	starter, err := s.parks.Starter(ctx, runID)
	if err != nil {
		return "", review.Wrap(review.CodeUnavailable, err, "the table is unavailable")
	}
	return starter, nil
}

// runOf is the run id of idempotency key key ("<run_id>/<seq>").
func runOf(key string) string {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return key
	}
	return key[:i]
}
