package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// callOptions are the call's options as its options digest covers them
// (ledger.OptionsDigest): the envelope's keep and output_limit_bytes,
// the presented credential's scope and target, never its secret, and the
// digest of the input an approval's edits give (approve runs first).
func (inv *invocation) callOptions() ledger.CallOptions {
	o := ledger.CallOptions{Keep: inv.env.Keep, OutputLimitBytes: inv.env.OutputLimitBytes, Edited: inv.editedDigest}
	if c := inv.cred; c != nil {
		o.Scope = &ledger.CallScope{Kind: c.Scope.Kind(), Target: c.Target.Name, Origin: c.Target.Origin}
		if o.Scope.Kind == credential.KindEndUser {
			o.Scope.EndUser = string(c.Scope)
		}
	}
	return o
}

// reuse matches a fork's call against its parent run's calls, once the
// call's claim is held (docs/fork.md, "Matching"), and returns nil when
// the tool is to run. It matches only when the run is a fork (the
// envelope's start.forked_from, which the Starter check answered from
// the start record, never the input), the claim is a first attempt or
// follows a FAILED one (inv.matchable), the call presents no run-scope
// credential (a run's credential is its own), and not when the fork reruns
// reads (start.rerun_reads) and the call's contract needs no review.
//
// The parent's candidates are its calls of the same step and input digest
// (ledger.Store.ParentCalls: one Query) at the same loop index path, in
// its seq order; the call takes the first whose reuse claim it gets or
// holds (one conditional PutItem each: the k-th such call of the fork
// takes the k-th of the parent; a claim held by another key whose seal is
// not this function's fails the call TOOL_INTERNAL, not sent), and reads
// that parent call's record (one consistent GetItem). A record this
// function did not seal (acceptRecord, the parent run's start unknown) is
// passed over for the next candidate: another function's call (a
// forked_from naming a run of another function) is never used, and an
// item another role put in the parent's partition hides none of its real
// calls; with no candidate left the call runs. A ledger failure fails the call, retryable,
// nothing run: its record is FAILED, and its next attempt matches again.
func (inv *invocation) reuse(ctx context.Context) *outcome {
	d, env := inv.d, inv.env
	switch {
	case !inv.matchable || env.Start == nil || env.Start.ForkedFrom == "" || env.Start.ForkedFrom == env.RunID:
		return nil
	case env.Start.RerunReads && !inv.pinned.ReviewRequired:
		return nil
	case inv.cred != nil && inv.cred.Scope.Kind() == credential.KindRun:
		return nil
	case inv.edited != nil:
		// An approval with edits: the parent's calls are matched by the
		// input sent, not the one the tool runs with, so none is taken.
		return nil
	}
	parent, path := env.Start.ForkedFrom, env.Seq.LoopPath()
	dbCtx, cancel := d.ledgerContext(ctx)
	defer cancel()
	seqs, err := d.store.ParentCalls(dbCtx, parent, env.Step, inv.digest)
	if err != nil {
		return inv.failed(tool.Wrap(tool.UpstreamUnavailable, err, "the ledger is unavailable"))
	}
	for _, seq := range seqs {
		if !slices.Equal(seq.LoopPath(), path) {
			continue
		}
		ours, err := d.store.ClaimReuse(dbCtx, env.IdempotencyKey, seq)
		if errors.Is(err, ledger.ErrForged) {
			// Another writer put the claim: taking it as another call's
			// would send again what the parent sent.
			d.log.ErrorContext(ctx, "fork: a reuse claim's seal does not verify; the call is not sent", tool.LogFieldRefusalReason, seal.ReasonReuseClaimForged,
				"key", env.IdempotencyKey, "parent_key", seq.KeyIn(parent))
			return inv.failed(tool.Errorf(tool.Internal,
				"the reuse claim of the parent run's call %s was not written by this function: the call is neither sent nor given that call's result; a person must look at it (docs/fork.md, \"The reuse claim\")", seq.KeyIn(parent)))
		}
		if err != nil {
			return inv.failed(tool.Wrap(tool.UpstreamUnavailable, err, "the ledger is unavailable"))
		}
		if !ours {
			continue // another call of the fork took it
		}
		rec, err := d.store.Record(dbCtx, seq.KeyIn(parent))
		if err != nil {
			return inv.failed(tool.Wrap(tool.UpstreamUnavailable, err, "the ledger is unavailable"))
		}
		if !acceptRecord(rec, time.Time{}, false, d.cfg.LedgerSince, d.cfg.CompactSince) {
			// Not this function's record: another function's call (a
			// parent whose step another tool served), or an item another
			// role put in the parent's partition, which must neither give
			// its result nor hide the parent's real call behind it.
			d.log.WarnContext(ctx, "fork: a parent call's record was not sealed by this function; it is passed over", "key", env.IdempotencyKey,
				"parent_key", rec.Key, "seal", rec.Seal.String())
			continue
		}
		return inv.reuseFrom(ctx, rec)
	}
	return nil
}

// reuseFrom is what the fork's call does with the parent call whose
// reuse claim it holds (nil: the tool runs), a record this function
// sealed (reuse passes over one it did not). A record of another call (its tool, destination, pinned schemas or
// options differ) makes it run too. Then by the parent call's state:
// COMPLETED is reused; FAILED (not applied) runs; IN_PROGRESS with a live
// lease is refused, retryable; UNKNOWN or IN_PROGRESS past its lease goes
// to parentUnknown.
func (inv *invocation) reuseFrom(ctx context.Context, rec *ledger.Record) *outcome {
	d, env := inv.d, inv.env
	if rec.Tool != env.Tool || rec.Step != env.Step || rec.InputDigest != inv.digest || !bytes.Equal(rec.Options, inv.options) {
		return nil
	}
	same, err := inv.sameTool(ctx, rec)
	if err != nil {
		return inv.failed(err)
	}
	if !same {
		return nil
	}
	switch {
	case rec.State == ledger.StateCompleted:
		return &outcome{write: writeFinish, state: ledger.StateCompleted, status: ledger.StatusReused, result: rec.Result, reusedFrom: rec.Key}
	case rec.State == ledger.StateFailed:
		return nil
	case rec.State == ledger.StateInProgress && rec.LeaseUntil.After(d.store.Now()):
		return inv.failed(tool.Errorf(tool.UpstreamUnavailable, "the parent run's call %s is in flight; this call is sent again once it ends (docs/fork.md, \"Matching\")", rec.Key))
	}
	return inv.parentUnknown(ctx, rec)
}

// parentUnknown is the outcome of a fork's call whose parent call's
// outcome is unknown (UNKNOWN, or IN_PROGRESS past its lease), by the
// parent call's reconciliation (applyReconciliation; docs/fork.md,
// "Matching", "Reconciling"): applied with a result, the parent's record
// is finished COMPLETED with it by this function, which wrote it, and the
// fork's call takes it (REUSED); applied without one, the call fails
// CALL_RECONCILED_NO_RESULT; not applied, the parent's record is finished
// FAILED and the call runs (nil). Without a reconciliation the call is
// refused, TOOL_PERMISSION_DENIED, not retryable, naming the parent's key
// and the command that reconciles it. Each refusal ends the fork call's
// own record FAILED, so that the call sent again matches again.
func (inv *invocation) parentUnknown(ctx context.Context, rec *ledger.Record) *outcome {
	d := inv.d
	dbCtx, cancel := d.ledgerContext(ctx)
	defer cancel()
	r, err := d.applyReconciliation(dbCtx, rec, inv.checkOutput)
	var te *tool.Error
	switch {
	case errors.As(err, &te):
		return inv.failed(te)
	case err != nil:
		d.log.ErrorContext(ctx, "fork: apply the parent call's reconciliation", "key", inv.env.IdempotencyKey, "parent_key", rec.Key, "error", err)
		return inv.failed(tool.Wrap(tool.UpstreamUnavailable, err, "the parent run's call's reconciliation could not be applied yet"))
	}
	switch r.as {
	case reconciledCompleted:
		return &outcome{write: writeFinish, state: ledger.StateCompleted, status: ledger.StatusReused, result: r.result, reusedFrom: rec.Key}
	case reconciledNoResult:
		return inv.failed(tool.Errorf(tool.CallReconciledNoResult,
			"%s reconciled the parent run's call %s as applied, without its result: the call is not sent again, and has no result to return", r.by, rec.Key))
	case reconciledNotApplied:
		return nil
	}
	return inv.failed(tool.Errorf(tool.PermissionDenied,
		"the parent run's call %s may or may not have applied (its record is %s): reconcile it with toolgate ledger reconcile %s, then send this call again (docs/fork.md, \"Matching\")",
		rec.Key, rec.State, rec.Key))
}

// sameTool reports whether the parent call's tool, as its own pinned
// toolset (the record's toolset id, loaded through the toolset cache)
// pins it, is this call's: the same destination and the same input and
// output schemas (their RFC 8785 digests). An error only when the ledger
// is unavailable; a toolset refused or a tool it does not pin is no match.
func (inv *invocation) sameTool(ctx context.Context, rec *ledger.Record) (bool, error) {
	mine, ok := inv.ts.Tools[inv.env.Tool]
	if !ok {
		return false, nil
	}
	pts, err := inv.d.toolset(ctx, rec.ToolsetID)
	var te *tool.Error
	if errors.As(err, &te) && te.Code == tool.UpstreamUnavailable {
		return false, err
	}
	if err != nil {
		return false, nil
	}
	theirs, ok := pts.Tools[rec.Tool]
	if !ok {
		return false, nil
	}
	return destination(rec.Tool, theirs) == destination(inv.env.Tool, mine) &&
		sameSchema(theirs.InputSchema, mine.InputSchema) && sameSchema(theirs.OutputSchema, mine.OutputSchema), nil
}

// destination is where a pinned tool's calls go: an MCP tool's server URL
// and its name there, a platform tool's function as pinned, or the
// catalog tool's name (its function is the stage's own). An http call's
// origin is in its input, which the input digest covers.
func destination(name string, t toolset.Tool) string {
	switch {
	case t.MCP != nil:
		return "mcp " + t.MCP.URL + " " + t.MCP.Name
	case t.Function != "":
		return "function " + t.Function
	}
	return "catalog " + name
}

// sameSchema reports whether two pinned schemas have one RFC 8785 form
// (or, for a schema that form cannot hold, the same bytes).
func sameSchema(a, b json.RawMessage) bool {
	_, da, errA := tool.InputDigest(a)
	_, db, errB := tool.InputDigest(b)
	if errA != nil || errB != nil {
		return bytes.Equal(a, b)
	}
	return da == db
}
