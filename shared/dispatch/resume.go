package dispatch

import (
	"context"
	"errors"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/tool"
)

// Parks reads the park a call is sent again under, and records and reads
// the covers of approved definition changes (shared/ledger's Store).
// Review-request records parks and review-decision decides them; a tool
// function only reads them.
type Parks interface {
	// Sealed reports whether PutCover seals the cover it writes with the
	// function's own key and Cover checks the seal it finds
	// (ledger.Store.WithMAC); New refuses a store that does not.
	Sealed() bool
	// Park is one consistent GetItem of the park item of id, projecting
	// its status, run, idempotency key, tool, pinned and current digests
	// and decider (ledger.Store.Park); ledger.ErrNotFound when there is
	// none.
	Park(ctx context.Context, id string) (park.State, error)
	// PutCover records, sealed with the function's own key, that a call
	// of the run was sent under an APPROVED tool.schema_changed park
	// (ledger.Store.PutCover: one PutItem in the run's partition, sort
	// key naming the tool and the approved digest; cover.go).
	PutCover(ctx context.Context, c ledger.Cover) error
	// Cover is one consistent GetItem of the cover of tool's definition
	// digest in run runID (ledger.Store.Cover), its seal checked against
	// the function's own key (ledger.Cover.Seal); ledger.ErrNotFound when
	// there is none.
	Cover(ctx context.Context, runID, tool, digest string) (ledger.Cover, error)
}

// ReasonParkRefused is the refusal_reason of the REFUSED row of a call
// sent under a park it may not use (park.CheckResume): not its own, not
// decided, or not approved or resumed.
const ReasonParkRefused = "park-refused"

// resumePark checks the park a call names (the envelope's park_id, not
// null), once its input is validated and before its approval, credential
// and check: nil, go on, with inv.parkID set and, for an approved
// definition change, inv.approvedDigest (which the check accepts the
// server's definition by, and validates the input against;
// docs/parking.md, "The dispatcher"). A call without a park id, null
// included, makes no request here.
//
// A park that does not exist, parked another call, or is not APPROVED or
// RESUMED refuses the call TOOL_PERMISSION_DENIED with a REFUSED row
// (refusal_reason park-refused) whose message says why; a table that
// cannot be read, TOOL_UPSTREAM_UNAVAILABLE. As every refusal before the
// claim, a key that holds this call's COMPLETED record replays it.
func (inv *invocation) resumePark(ctx context.Context) *outcome {
	d, env := inv.d, inv.env
	if env.ParkID == nil {
		return nil
	}
	id := *env.ParkID
	deny := func(format string, args ...any) *outcome {
		o := inv.replayOr(ctx, tool.Errorf(tool.PermissionDenied, format, args...))
		if o.write == writeRow && o.status == ledger.StatusRefused {
			o.reason = ReasonParkRefused
		}
		return o
	}
	if d.parks == nil {
		d.log.ErrorContext(ctx, "a call names a park, and this function cannot read parks", "tool", env.Tool)
		return deny("the call names park %s, and this function cannot read parks", id)
	}
	dbCtx, cancel := d.ledgerContext(ctx)
	defer cancel()
	st, err := d.parks.Park(dbCtx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return deny("park %s does not exist (or its retention has ended)", id)
	}
	if err != nil {
		return refused(tool.Wrap(tool.UpstreamUnavailable, err, "the park table is unavailable"))
	}
	r := park.CheckResume(st, park.Use{ParkID: id, RunID: env.RunID, IdempotencyKey: env.IdempotencyKey, Tool: env.Tool})
	if !r.Allowed {
		return deny("%s", r.Reason)
	}
	inv.parkID, inv.approvedDigest = id, r.ApprovedDigest
	if r.ApprovedDigest != "" {
		inv.pinnedDigest, inv.parkDecider = st.PinnedDigest, st.DecidedBy
	}
	return nil
}
