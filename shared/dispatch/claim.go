package dispatch

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/externalkey"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
)

// claim takes the idempotency record for this attempt (nil: the claim is
// held, go on), or ends the invocation: with the recorded result of a
// completed call, a refusal, or the UNKNOWN verdict on an at_most_once
// call whose earlier attempt may have run (docs/ledger.md).
func (inv *invocation) claim(ctx context.Context) *outcome {
	d, env := inv.d, inv.env
	now := d.store.Now()
	if err := ctx.Err(); err != nil {
		return refused(tool.Errorf(tool.UpstreamUnavailable, "the call was cancelled before it started"))
	}
	if dl, ok := ctx.Deadline(); ok && dl.Sub(now) <= d.cfg.DeadlineMargin {
		// Too little time to run the tool and record its outcome: refuse
		// before the claim, so that nothing is left in doubt.
		return refused(tool.Errorf(tool.Timeout, "too little time is left before the function's deadline to run the tool"))
	}
	ext, err := externalkey.New(d.cfg.ExternalKeySecret, env.RunID, env.Seq)
	if err != nil {
		// Its seq is too long for the key third parties get (only a
		// direct-lane caller names one); the message holds no secret.
		return refused(tool.Errorf(tool.InputInvalid, "the call can have no external idempotency key (docs/ledger.md, \"The external key\"): %v", err))
	}
	if inv.options, err = ledger.OptionsDigest(inv.callOptions()); err != nil {
		return refused(tool.Wrap(tool.Internal, err, "internal error"))
	}
	rec := &ledger.Record{
		Key: env.IdempotencyKey, RunID: env.RunID, Seq: env.Seq, Step: env.Step, Tool: env.Tool,
		ToolsetID: env.ToolsetID, InputDigest: inv.digest, InputBytes: inv.inBytes, LeaseUntil: now.Add(d.cfg.Lease), StartedAt: inv.started,
		ExternalKey: ext, Options: inv.options, Approver: inv.approver,
	}
	dbCtx, cancel := d.ledgerContext(ctx)
	defer cancel()
	claimed, old, err := d.store.Claim(dbCtx, rec)
	if err != nil {
		return inv.claimFailed(ctx, rec, err)
	}
	inv.claimRequested = true
	if claimed {
		inv.claimed, inv.attempt, inv.leaseUntil, inv.token, inv.externalKey = true, 1, rec.LeaseUntil, rec.Token, rec.ExternalKey
		inv.firstStarted, inv.matchable = rec.StartedAt, true
		inv.pointKey(ctx, dbCtx)
		return nil
	}
	if o := inv.unsealed(ctx, old); o != nil {
		return o // neither replayed nor run: attempt 0
	}
	inv.layout = old.Layout
	if o := inv.leftByEarlierRun(old); o != nil {
		return o // attempt 0: the old run's attempts are not this call's
	}
	inv.attempt = old.Attempts
	if !old.SameCall(rec) {
		return refused(tool.Errorf(tool.InputInvalid, "idempotency key reused with a different call"))
	}
	if !bytes.Equal(old.Options, rec.Options) && (inv.editedDigest != "" || old.Options != nil) {
		// The same input sent, and another run: the options digest holds
		// the input an approval's edits give (callOptions), so an attempt
		// that ran with edits and one with other edits, or none (a
		// re-review of a parked call carries no editable members), differ
		// here. A record claimed before options were recorded has none,
		// and a call without edits goes on with it.
		return refused(tool.Errorf(tool.InputInvalid, "idempotency key reused with a different call: an earlier attempt of this key ran with another input (its approval's edits, or none, differ from this approval's) or other options; a key runs one input (docs/reviews.md, \"Approve with edits\")"))
	}
	switch {
	case old.State == ledger.StateCompleted:
		return replayed(old.Result)
	case old.State == ledger.StateInProgress && old.LeaseUntil.After(now):
		return refused(tool.Errorf(tool.UpstreamUnavailable, "an attempt with this key is in flight"))
	case old.State == ledger.StateFailed:
		o := inv.reclaim(dbCtx, old, now)
		inv.matchable = o == nil // nothing of this call applied
		return o
	}
	// IN_PROGRESS with an expired lease, or UNKNOWN: the effect may have
	// happened.
	if inv.pinned.Policy == catalog.AtMostOnce && !env.TolerateDuplicates {
		// A person may have said what became of it (docs/fork.md,
		// "Reconciling"): only here is the reconciliation read.
		if o, handled := inv.reconcile(ctx, dbCtx, old, now); handled {
			return o
		}
		te := tool.Errorf(tool.RetryRequiresIdempotency,
			"an earlier attempt with this key may have run %s, which must run at most once: find out whether it was applied, then run toolgate ledger reconcile %s --applied [--result FILE] or --not-applied --reason TEXT (docs/fork.md, \"Reconciling\")",
			env.Tool, env.IdempotencyKey)
		if old.State != ledger.StateUnknown {
			if _, err := d.store.MarkUnknown(dbCtx, old, string(tool.RetryRequiresIdempotency)); err != nil {
				d.log.ErrorContext(ctx, "mark record unknown", "key", env.IdempotencyKey, "error", err)
			}
		}
		return &outcome{write: writeRow, status: ledger.StatusUnknown, err: te, event: inv.unknownEvent()}
	}
	return inv.reclaim(dbCtx, old, now)
}

// unsealed refuses a call whose key holds a record this function may not
// use (nil: the record may be used; acceptRecord): a seal that does not
// verify (another function's role wrote or changed the item), none on a
// compact record, none on a record of a run that started after the
// stage's first deploy with seals (seal.Accept), or a record of the
// previous call layout for a run that did not start before the compact
// layout's upgrade (docs/ledger.md, "Records are sealed by the function
// that writes them", "The call item on the wire"). Such a record is
// neither replayed nor run again: the call fails TOOL_INTERNAL, not
// retryable, and its row says record-forged.
func (inv *invocation) unsealed(ctx context.Context, old *ledger.Record) *outcome {
	start, known := inv.env.RunStart()
	if acceptRecord(old, start, known, inv.d.cfg.LedgerSince, inv.d.cfg.CompactSince) {
		return nil
	}
	inv.d.log.ErrorContext(ctx, "call refused: its record's seal does not verify", tool.LogFieldRefusalReason, seal.ReasonRecordForged,
		"seal", old.Seal.String(), "layout", old.Layout.String(), "key", inv.env.IdempotencyKey, "tool", inv.env.Tool)
	msg := fmt.Sprintf("this call's idempotency record was not written by this function (its seal is %s)", old.Seal)
	if old.Layout == ledger.LayoutNamed && old.Seal == seal.Valid {
		msg = "this call's idempotency record is in the call layout before the compact one, which is read only for a run that started before the upgrade or a call without run_started_at"
	}
	o := refused(tool.Errorf(tool.Internal, "%s: it is neither replayed nor run again; a person must look at it (docs/ledger.md)", msg))
	o.reason = seal.ReasonRecordForged
	return o
}

// acceptRecord is the upgrade rules (docs/ledger.md, "The upgrade rule",
// "The call item on the wire"): a compact record is used only when its
// seal verifies (a compact item was never written without one); a
// previous-layout record whose seal verifies, once compactSince (the
// compact layout's upgrade) is set, for a call without run_started_at
// (known false: the direct lane, a definition published before it), as
// the code before the upgrade used it, and for a run that started
// (runStart) before compactSince plus LayoutSwitchMargin; one without a
// seal only as seal.Accept says against since, the stage's first deploy
// with seals.
func acceptRecord(r *ledger.Record, runStart time.Time, known bool, since, compactSince time.Time) bool {
	switch {
	case r.Layout == ledger.LayoutCompact:
		return r.Seal == seal.Valid
	case r.Seal == seal.Valid:
		return !compactSince.IsZero() && (!known || runStart.Before(compactSince.Add(LayoutSwitchMargin)))
	}
	return seal.Accept(r.Seal, runStart, known, since)
}

// LayoutSwitchMargin is how long after a function's cold start
// (Config.CompactSince) a run may have started and still hold a
// previous-layout record: a function's aliases (the Step Functions, the
// direct-lane and the start ones) are separate CloudFormation resources,
// updated to the new version one after another, so for the seconds to
// minutes between them the previous code still serves one alias while a
// container of the new code has started for another (docs/ledger.md, "The
// call item on the wire"). A previous-layout record is accepted only with
// a seal that verifies, which only this function's code can write, so the
// margin lets no forged record in.
const LayoutSwitchMargin = 15 * time.Minute

// RunStartSkew is how much earlier than the execution's start
// (tool.Envelope.RunStartedAt, Step Functions' clock) an attempt of that
// execution may seem to start by the dispatcher's clock: the two clocks'
// disagreement, bounded generously, since Lambda's and Step Functions'
// clocks are synchronised (Amazon Time Sync) to well under a second.
const RunStartSkew = 5 * time.Minute

// leftByEarlierRun refuses a call whose key holds a record that an
// earlier execution of the same name left (nil: the record may be this
// execution's). Step Functions accepts an execution name again 90 days
// after the execution that had it closed, so a new execution can have an
// old one's ARN, run id and keys while the old call items last
// (docs/ledger.md, "Execution names must not be reused"). No attempt of
// this execution can start before the execution did, and a Task retry or
// a redrive keeps the execution's start time, so a record whose first
// attempt started more than RunStartSkew before it is another
// execution's: its result is never replayed, and the call is refused
// with TOOL_PERMISSION_DENIED, not retryable, nothing run. An envelope
// without run_started_at (a definition published before it; the direct
// lane) is not checked.
func (inv *invocation) leftByEarlierRun(old *ledger.Record) *outcome {
	start, ok := inv.env.RunStart()
	if !ok || old.FirstStartedAt.IsZero() || !old.FirstStartedAt.Before(start.Add(-RunStartSkew)) {
		return nil
	}
	return refused(tool.Errorf(tool.PermissionDenied,
		"this call's idempotency key holds a record left by an earlier execution of the same name (its first attempt started %s, this execution %s); execution names must not be reused (docs/ledger.md): start the run under a new name",
		old.FirstStartedAt.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339)))
}

// reclaim takes over a record whose attempt failed, or whose outcome is
// unknown for a call that may run again (nil: the claim is held).
func (inv *invocation) reclaim(dbCtx context.Context, old *ledger.Record, now time.Time) *outcome {
	d := inv.d
	if old.Attempts >= tool.MaxAttempts {
		return refused(tool.Errorf(tool.PermanentFailure, "%d attempts were already made with this idempotency key, the most allowed", old.Attempts))
	}
	lease := now.Add(d.cfg.Lease)
	old.Approver = inv.approver // this attempt's, on its entry (a gated call)
	ok, err := d.store.Reclaim(dbCtx, old, lease)
	if err != nil {
		return refused(tool.Wrap(tool.UpstreamUnavailable, err, "the ledger is unavailable"))
	}
	if !ok {
		return refused(tool.Errorf(tool.UpstreamUnavailable, "an attempt with this key is in flight"))
	}
	inv.claimed, inv.attempt, inv.leaseUntil, inv.token, inv.externalKey = true, old.Attempts, lease, old.Token, old.ExternalKey
	inv.layout, inv.options = old.Layout, old.Options
	inv.firstStarted = old.FirstStartedAt
	return nil
}

// pointKey writes the run's key pointer (docs/ledger.md, "The key
// pointer") when this invocation's claim created the item of the run's
// first call (externalkey.IsFirstSeq): one conditional PutItem per run,
// none on any other call. A failure is logged and the call goes on: the
// pointer serves an operator's lookup, never the call.
func (inv *invocation) pointKey(ctx, dbCtx context.Context) {
	d, env := inv.d, inv.env
	if !externalkey.IsFirstSeq(env.Seq) {
		return
	}
	if err := d.store.PutKeyPointer(dbCtx, externalkey.RunID(d.cfg.ExternalKeySecret, env.RunID), env.RunID); err != nil {
		d.log.WarnContext(ctx, "the run's key pointer was not written", "seq", string(env.Seq), "error", err)
	}
}

// claimFailed ends an invocation whose claim request failed. DynamoDB may
// have applied it all the same (its response lost, or the ledger's deadline
// reached while it was in flight): an at_most_once key would then read as
// a claim whose lease ran out, and be refused for ever although the tool
// never ran. So the claim is released if it is ours (the record FAILED, the
// attempt's entry REFUSED, written by the release itself), and otherwise
// the REFUSED row is written as a row of its own, marked as possibly
// counted on the call's item.
func (inv *invocation) claimFailed(ctx context.Context, rec *ledger.Record, err error) *outcome {
	d := inv.d
	te := tool.Wrap(tool.UpstreamUnavailable, err, "the ledger is unavailable")
	inv.claimRequested = true
	dbCtx, cancel := d.ledgerContext(ctx)
	defer cancel()
	r := inv.newRow(ledger.StatusRefused, te, nil)
	r.Attempt, r.ExternalKey, r.FirstStartedAt = 1, rec.ExternalKey, rec.StartedAt // the key the claim would have given
	released, rerr := d.store.Release(dbCtx, rec.Key, rec.Token, string(te.Code), r)
	if rerr != nil || !released {
		return refused(te)
	}
	inv.attempt = 1
	return &outcome{write: writeDone, status: ledger.StatusRefused, err: te, row: r}
}

// ledgerTimeout bounds one ledger request, so that a hung DynamoDB still
// lets the function answer with a contract code before its deadline.
const ledgerTimeout = 5 * time.Second

// ledgerContext is the context of ledger requests: not cancelled with the
// caller's (a record claimed must be finished and its row written), and
// bounded by ledgerTimeout and by the function's deadline less 200 ms.
func (d *Dispatcher) ledgerContext(ctx context.Context) (context.Context, context.CancelFunc) {
	bound := time.Now().Add(ledgerTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Add(-200*time.Millisecond).Before(bound) {
		bound = dl.Add(-200 * time.Millisecond)
	}
	return context.WithDeadline(context.WithoutCancel(ctx), bound)
}
