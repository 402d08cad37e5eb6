package dispatch

import (
	"bytes"
	"context"
	"errors"

	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// An approval of a changed tool definition covers the later calls of that
// tool in its run (docs/parking.md, "Approvals that cover later calls"):
// a call sent under an APPROVED tool.schema_changed park records a cover
// (recordCover), and a later call of the same tool in the same run whose
// check would park it for the same current definition reads that cover
// and goes on as under the approval (underCover). A loop of twenty calls
// to a changed tool parks once.

// recordCover records the cover of the approved definition a call sent
// under its own APPROVED tool.schema_changed park passed its check with
// (inv.approvedDigest): one PutItem of a cover item in the run's
// partition, sealed with the function's own key (ledger.Store.PutCover).
// A call without an approved definition, or covered itself, records
// none. A failed write is logged and the call goes on: the cover only
// spares later calls a park, which a person can still decide.
func (inv *invocation) recordCover(ctx context.Context) {
	d, env := inv.d, inv.env
	if inv.parkID == "" || inv.approvedDigest == "" || inv.covered || d.parks == nil {
		return
	}
	dbCtx, cancel := d.ledgerContext(ctx)
	defer cancel()
	err := d.parks.PutCover(dbCtx, ledger.Cover{RunID: env.RunID, Tool: env.Tool, ParkID: inv.parkID,
		PinnedDigest: inv.pinnedDigest, CurrentDigest: inv.approvedDigest, DecidedBy: inv.parkDecider})
	if err != nil {
		d.log.WarnContext(ctx, "the approved definition's cover was not recorded: later calls of the tool in the run park again", "tool", env.Tool,
			"run_id", env.RunID, "park_id", inv.parkID, "error", err)
	}
}

// underCover is given the error of a call's check and returns the error
// the call ends with: nil when a cover of the definition the check parks
// it for lets it go on, else err itself or the check's error under the
// cover.
//
// Only an ungated call (gated) on the sfn lane that names no park, whose
// check parks it for tool.schema_changed with a current definition (its
// *park.Detail's CurrentDigest), reads a cover: one consistent GetItem
// of the cover of the call's run, tool and that digest
// (ledger.Store.Cover). No other
// call, and so no call in the steady state, makes the request. A cover
// goes on only when its seal is the function's own over the run, the
// tool, both digests, the park and its decider (a cover another role
// wrote, or copied from another run or definition, approves nothing),
// and it approved the definition against the same pinned one. The check
// then runs again with the cover's digest approved (toolcall.Call
// ApprovedDigest): the server's definition must digest to exactly it,
// and the input must match its input schema. The call goes on with
// inv.parkID, the digests and the decider of the cover, which its row
// records as a call sent under that park's approval.
//
// No cover, or one that does not hold, leaves err: the call parks as
// before. A table that cannot be read is TOOL_UPSTREAM_UNAVAILABLE, which
// the Task retries.
func (inv *invocation) underCover(ctx context.Context, input []byte, err error) error {
	d, env := inv.d, inv.env
	if inv.parkID != "" || inv.lane != lane.SFN || d.parks == nil || inv.gated() {
		return err
	}
	var detail *park.Detail
	if te := tool.Classify(err); te.Code != tool.CallParked || !errors.As(err, &detail) || detail == nil ||
		detail.Cause != park.SchemaChanged || detail.CurrentDigest == "" {
		return err
	}
	dbCtx, cancel := d.ledgerContext(ctx)
	c, gerr := d.parks.Cover(dbCtx, env.RunID, env.Tool, detail.CurrentDigest)
	cancel()
	switch {
	case errors.Is(gerr, ledger.ErrNotFound):
		return err
	case gerr != nil:
		return tool.Wrap(tool.UpstreamUnavailable, gerr, "the ledger table is unavailable")
	case c.Seal != seal.Valid:
		d.log.WarnContext(ctx, "a cover whose seal is not this function's approves nothing: the call parks", "tool", env.Tool,
			"run_id", env.RunID, "seal", c.Seal.String())
		return err
	case c.PinnedDigest != detail.PinnedDigest || c.ParkID == "":
		d.log.WarnContext(ctx, "a cover of another pinned definition approves nothing: the call parks", "tool", env.Tool, "run_id", env.RunID)
		return err
	}
	inv.parkID, inv.pinnedDigest, inv.approvedDigest, inv.parkDecider, inv.covered = c.ParkID, c.PinnedDigest, c.CurrentDigest, c.DecidedBy, true
	if again := d.cfg.Check(ctx, inv.checkCall(input)); again != nil {
		// The definition changed again since the first listing, or the
		// input does not match the approved one's input schema.
		inv.parkID, inv.pinnedDigest, inv.approvedDigest, inv.parkDecider, inv.covered = "", "", "", "", false
		return again
	}
	d.log.InfoContext(ctx, "the call goes on under the cover of an approved definition", "tool", env.Tool, "run_id", env.RunID,
		"park_id", c.ParkID, "current_digest", c.CurrentDigest)
	return nil
}

// gated reports whether the call is a reviewed step's: its tool needs an
// approval (review_required), or its envelope carries one. Such a call's
// park is its own reviewers' to decide, never the run's starter's
// (docs/parking.md, "Who may"), and a cover records an approval another
// step's park got, from other reviewers or from the starter: no cover
// lets a gated call go on.
func (inv *invocation) gated() bool {
	a := bytes.TrimSpace(inv.env.Approval)
	return inv.pinned.ReviewRequired || len(a) > 0 && !bytes.Equal(a, []byte("null"))
}

// checkCall is the call as Config.Check gets it, with the definition its
// approval (or its cover's) approved.
// The last one built is kept (inv.checked): what the check that passed
// recorded on it is the call's.
func (inv *invocation) checkCall(input []byte) *toolcall.Call {
	inv.checked = &toolcall.Call{Envelope: inv.env, Input: input, Pinned: inv.pinned, Toolset: inv.ts, Credential: inv.cred, ApprovedDigest: inv.approvedDigest}
	return inv.checked
}
