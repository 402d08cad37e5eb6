package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
)

// approve enforces "what you approved is what is sent" for a tool the
// run's pinned toolset gates (review_required; never the current
// catalog). It runs before the key is claimed, so that a refused call
// never takes the key of the call that was approved: the envelope's
// approval must name a review that is approved, unexpired, for this run,
// this tool step, tool and toolset, and for exactly the inputs about to be
// sent (their RFC 8785 digest). An approval authorises one call: the first
// use binds it to the key with a conditional write; retries of the same
// key reuse it; any other key is refused. Refusals are
// TOOL_PERMISSION_DENIED.
//
// When the approval fails only because its time has ended, or its review
// item is gone (expired reviews leave the table by TTL), a call whose key
// holds a COMPLETED record of this very call is a replay: approve returns
// the replay of the recorded result, and nothing runs again. Anything else
// is refused: TOOL_PERMISSION_DENIED, or APPROVAL_EXPIRED for a call sent
// again under a decided park (expiredApproval). nil: the call is approved
// (or needs no approval), go on.
func (inv *invocation) approve(ctx context.Context) *outcome {
	if !inv.pinned.ReviewRequired {
		return nil
	}
	d, env := inv.d, inv.env
	if len(env.Approval) == 0 {
		return refused(tool.Errorf(tool.PermissionDenied, "%s needs an approved review before it runs, and this call carries no approval", env.Tool))
	}
	var ref tool.ReviewDecision // its review_id; the rest is checked against the stored review
	if err := json.Unmarshal(env.Approval, &ref); err != nil || !review.ValidID(ref.ReviewID) {
		return refused(tool.Errorf(tool.PermissionDenied, "the call's approval names no review (a rejected or failed review approves nothing)"))
	}
	if d.reviews == nil {
		d.log.ErrorContext(ctx, "gated tool without a review store", "tool", env.Tool)
		return refused(tool.Errorf(tool.PermissionDenied, "this function cannot check approvals"))
	}
	dbCtx, cancel := d.ledgerContext(ctx)
	defer cancel()
	r, err := d.reviews.GetApproval(dbCtx, ref.ReviewID)
	if errors.Is(err, review.ErrNotFound) {
		return inv.expiredApproval(ctx, fmt.Sprintf("review %s does not exist (or its time has ended)", ref.ReviewID))
	}
	if err != nil {
		return refused(tool.Wrap(tool.UpstreamUnavailable, err, "the review table is unavailable"))
	}
	use := review.Use{RunID: env.RunID, Step: env.Step, Tool: env.Tool, ToolsetID: env.ToolsetID,
		InputDigest: inv.digest, Key: env.IdempotencyKey, Now: d.store.Now()}
	check := review.CheckApproval(r, use)
	if check.Expired {
		return inv.expiredApproval(ctx, check.Reason)
	}
	if !check.Allowed {
		return refused(tool.Errorf(tool.PermissionDenied, "%s", check.Reason))
	}
	if o := inv.applyEdits(r); o != nil {
		return o
	}
	if check.Bound {
		inv.reviewID, inv.approver = r.ID, r.Approver
		return nil // a retry of the call the approval authorised
	}
	bound, cur, err := d.reviews.Bind(dbCtx, r, env.IdempotencyKey)
	if err != nil {
		return refused(tool.Wrap(tool.UpstreamUnavailable, err, "the review table is unavailable"))
	}
	if start, known := env.RunStart(); !seal.Accept(cur.BindingSeal, start, known, d.cfg.LedgerSince) {
		// Another function's role wrote or changed the binding: it binds
		// nothing (docs/ledger.md, "Records are sealed by the function that
		// writes them").
		d.log.ErrorContext(ctx, "call refused: its approval's binding does not verify", tool.LogFieldRefusalReason, seal.ReasonBindingForged,
			"seal", cur.BindingSeal.String(), "review_id", r.ID, "key", env.IdempotencyKey)
		o := refused(tool.Errorf(tool.PermissionDenied,
			"review %s's binding was not written by this function (its seal is %s): the approval authorises nothing; a person must look at it (docs/ledger.md)", r.ID, cur.BindingSeal))
		o.reason = seal.ReasonBindingForged
		return o
	}
	if !bound {
		if check := review.CheckApproval(cur, use); !check.Allowed {
			return refused(tool.Errorf(tool.PermissionDenied, "%s", check.Reason))
		}
		return refused(tool.Errorf(tool.PermissionDenied, "review %s could not be bound to this call", r.ID))
	}
	d.log.InfoContext(ctx, "approval bound", "review_id", r.ID, "key", env.IdempotencyKey, "approver", r.Approver)
	inv.reviewID, inv.approver = r.ID, r.Approver
	return nil
}

// applyEdits takes the edits of approval r, when it has any
// (docs/reviews.md, "Approve with edits"): the sent input, whose digest
// CheckApproval found to be the reviewed one, with the review item's
// edits merged (review.MergeEdits) must digest to the approved digest the
// review recorded, and pass the pinned input schema; the tool then runs
// with it (inv.edited), and the call's row names its digest and the
// approver as its editor. The call's record keeps the sent input's
// digest, which retries and replays compare. A mismatch is
// TOOL_PERMISSION_DENIED; nothing is claimed. An approval without edits
// changes nothing.
func (inv *invocation) applyEdits(r *review.Review) *outcome {
	if r.ApprovedDigest == "" && len(r.Edits) == 0 {
		return nil
	}
	merged, digest, err := review.MergeEdits(inv.canonical, r.Edits)
	if err != nil || r.ApprovedDigest == "" || digest != r.ApprovedDigest {
		return refused(tool.Errorf(tool.PermissionDenied, "review %s's edits do not give the input it approved: the approval authorises nothing", r.ID))
	}
	if err := inv.matchPinnedInput(merged, fmt.Sprintf("the input review %s's edits give", r.ID)); err != nil {
		return refused(err)
	}
	inv.edited, inv.editedDigest, inv.editor = merged, digest, r.Approver
	return nil
}

// expiredApproval is the outcome of a gated call whose approval failed
// only because its time ended (why: the check's reason), or whose review
// item is gone (expired reviews leave the table by TTL): the replay of
// the call's COMPLETED record, as for every refusal before the claim;
// else a REFUSED row and the refusal. A call sent again under a decided
// park (its envelope's park_id is not null) parked while its approval
// ran out: it is refused tool.ApprovalExpired, which the compiled state
// machine catches into a re-review of the same call, whose approval it
// then sends under the same seq and key (docs/parking.md, "A
// re-review"). Any other call is refused TOOL_PERMISSION_DENIED, as
// before. The row needs no refusal_reason: its error code says why.
func (inv *invocation) expiredApproval(ctx context.Context, reason string) *outcome {
	if inv.env.ParkID == nil {
		return inv.replayOr(ctx, tool.Errorf(tool.PermissionDenied, "%s", reason))
	}
	return inv.replayOr(ctx, tool.Errorf(tool.ApprovalExpired, "%s, while the call was parked: the call needs a new approval of the same input (a re-review)", reason))
}

// replayOr returns the replay of the call's recorded result when its key
// holds a COMPLETED record of this very call (the same run and seq by the
// key, and the same step, tool, toolset and input digest), and refusal
// otherwise; a record an earlier execution of the same name left is never
// replayed (leftByEarlierRun). It reads the record with ledger.Store.Touch, which counts the
// invocation on the call's item and never claims the key.
func (inv *invocation) replayOr(ctx context.Context, refusal error) *outcome {
	return inv.replayOrEnd(ctx, refused(refusal))
}

// replayOrEnd is replayOr with the outcome to end with when there is
// nothing to replay: a refusal, or a parked call (check.go).
func (inv *invocation) replayOrEnd(ctx context.Context, end *outcome) *outcome {
	d, env := inv.d, inv.env
	dbCtx, cancel := d.ledgerContext(ctx)
	defer cancel()
	rec, err := d.store.Touch(dbCtx, env.IdempotencyKey)
	if errors.Is(err, ledger.ErrNotFound) {
		return end
	}
	if err != nil {
		return refused(tool.Wrap(tool.UpstreamUnavailable, err, "the ledger is unavailable"))
	}
	inv.claimRequested = true // the item counted this invocation
	if o := inv.unsealed(ctx, rec); o != nil {
		return o
	}
	inv.attempt = rec.Attempts
	if o := inv.leftByEarlierRun(rec); o != nil {
		return o
	}
	this := &ledger.Record{RunID: env.RunID, Seq: env.Seq, Step: env.Step, Tool: env.Tool, ToolsetID: env.ToolsetID, InputDigest: inv.digest}
	if rec.State != ledger.StateCompleted || !rec.SameCall(this) { // the key names the run and seq
		return end
	}
	return replayed(rec.Result)
}
