package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/tool"
)

// reconciledAs is what applyReconciliation made of a record whose outcome
// was unknown (docs/fork.md, "Reconciling").
type reconciledAs int

const (
	// reconciledNone: no reconciliation speaks for the record's last
	// attempt; the record is left as it is.
	reconciledNone reconciledAs = iota
	// reconciledCompleted: applied with a result; the record is now
	// COMPLETED with it (reconciled.result), to replay.
	reconciledCompleted
	// reconciledNoResult: applied without a result; the record is left
	// UNKNOWN, and the call fails CALL_RECONCILED_NO_RESULT.
	reconciledNoResult
	// reconciledNotApplied: not applied; the record is now FAILED, and
	// the normal re-claim may send the call again under the same key.
	reconciledNotApplied
)

// reconciled is applyReconciliation's answer: what it made of the record,
// the result to replay (reconciledCompleted), and who reconciled it.
type reconciled struct {
	as     reconciledAs
	result json.RawMessage
	by     string
}

// errReconcileRaced is applyReconciliation's error when another writer
// changed the record between its read and the finish: the call is
// refused retryable, and the next attempt reads the record as it now is.
var errReconcileRaced = errors.New("the record changed while its reconciliation was applied")

// applyReconciliation applies the reconciliation of the record rec read
// (UNKNOWN, or IN_PROGRESS whose lease has passed): one consistent GetItem
// of the reconciliation of rec.Key (ledger.Store.Reconciliation), then, by
// its outcome, one conditional UpdateItem (ledger.Store.FinishReconciled)
// on rec's item, sealed with this function's key:
//
//   - none, or one of another attempt than rec's last: reconciledNone,
//     nothing written;
//   - applied with a result: the result is first passed through check (the
//     call's pinned output schema, keep and output limit: the checks a
//     tool's own result passes, returning the result to record), and an
//     invalid one is refused TOOL_OUTPUT_INVALID naming the
//     reconciliation, the record untouched; then the record becomes
//     COMPLETED with the checked result: reconciledCompleted;
//   - applied without a result: reconciledNoResult, nothing written;
//   - not applied: the record becomes FAILED, keeping its code:
//     reconciledNotApplied.
//
// It takes any record this function may write, of this run or another
// (a parent run's, when a fork reuses its calls), so that every path that
// meets an unknown outcome applies a reconciliation the same way. A read
// or write that fails is an error the caller refuses retryable
// (TOOL_UPSTREAM_UNAVAILABLE); a record another writer changed first is
// errReconcileRaced.
func (d *Dispatcher) applyReconciliation(ctx context.Context, rec *ledger.Record, check func(json.RawMessage) (json.RawMessage, error)) (reconciled, error) {
	rc, err := d.store.Reconciliation(ctx, rec.Key)
	if errors.Is(err, ledger.ErrNotFound) {
		return reconciled{}, nil
	}
	if err != nil {
		return reconciled{}, fmt.Errorf("read the reconciliation: %w", err)
	}
	if rc.Attempts != rec.Attempts {
		// It spoke for an earlier attempt, which a not_applied one let
		// the call send again: this attempt's outcome is unknown afresh.
		return reconciled{}, nil
	}
	out := reconciled{by: rc.ReconciledBy}
	switch {
	case rc.Outcome == ledger.Applied && len(rc.Result) == 0:
		out.as = reconciledNoResult
		return out, nil
	case rc.Outcome == ledger.Applied:
		kept, err := check(rc.Result)
		if err != nil {
			te := tool.Classify(err)
			return reconciled{}, tool.Errorf(te.Code, "the reconciliation of %s by %s gives a result this call cannot return: %s", rec.Key, rc.ReconciledBy, te.Message)
		}
		rc.Result, out.as, out.result = kept, reconciledCompleted, kept
	default:
		out.as = reconciledNotApplied
	}
	ok, err := d.store.FinishReconciled(ctx, rec, rc)
	if err != nil {
		return reconciled{}, fmt.Errorf("finish the record by its reconciliation: %w", err)
	}
	if !ok {
		return reconciled{}, errReconcileRaced
	}
	return out, nil
}

// reconcile is claim's branch for an at_most_once call whose record's
// outcome is unknown (old: UNKNOWN, or IN_PROGRESS with its lease passed):
// handled false when no reconciliation speaks for it (the caller refuses
// it TOOL_RETRY_REQUIRES_IDEMPOTENCY as before); otherwise the outcome to
// end with (a replay of the reconciled result, CALL_RECONCILED_NO_RESULT,
// a refusal), or nil with the claim held: a not_applied reconciliation
// made the record FAILED and this invocation re-claimed it, under the
// same key. Only this branch reads the reconciliation: a call whose
// record is COMPLETED, FAILED or new makes no request more.
func (inv *invocation) reconcile(ctx, dbCtx context.Context, old *ledger.Record, now time.Time) (o *outcome, handled bool) {
	d, env := inv.d, inv.env
	r, err := d.applyReconciliation(dbCtx, old, inv.checkOutput)
	var te *tool.Error
	switch {
	case errors.As(err, &te):
		return refused(te), true
	case err != nil:
		d.log.ErrorContext(ctx, "apply reconciliation", "key", env.IdempotencyKey, "error", err)
		return refused(tool.Wrap(tool.UpstreamUnavailable, err, "the call's reconciliation could not be applied yet")), true
	}
	switch r.as {
	case reconciledCompleted:
		d.log.InfoContext(ctx, "call reconciled as applied: its result is replayed", "key", env.IdempotencyKey, "reconciled_by", r.by)
		return replayed(r.result), true
	case reconciledNoResult:
		return refused(tool.Errorf(tool.CallReconciledNoResult,
			"%s reconciled an earlier attempt of this call as applied, without its result: the call is not sent again, and has no result to return", r.by)), true
	case reconciledNotApplied:
		d.log.InfoContext(ctx, "call reconciled as not applied: it is sent again under the same key", "key", env.IdempotencyKey, "reconciled_by", r.by)
		return inv.reclaim(dbCtx, old, now), true
	}
	return nil, false
}
