package dispatch

import (
	"context"
	"errors"
	"strings"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/tool"
)

// Callers verifies direct-lane caller proofs (shared/caller's Verifier).
type Callers interface {
	Verify(ctx context.Context, proof string, b caller.Binding) (caller.Identity, error)
}

// checkLane enforces the invocation's lane (docs/identity.md, "Lanes"),
// before anything is read or written for the call. On
// the sfn lane (a Solution's execution) the run id is the execution's and
// the envelope carries no caller proof. On the direct lane the envelope's
// caller proof must be bound to this call (its idempotency key and input
// digest), the run id must be in the caller's own namespace
// "direct/<principal>/", which no execution's run id can take, and the
// envelope names no parent run (a direct call is never a child run), no
// execution start (run_started_at), no verified start (start) and no
// park (park_id, even null: only a state machine parks a call). Refusals
// are TOOL_PERMISSION_DENIED (TOOL_UPSTREAM_UNAVAILABLE when STS or the
// proof table cannot be reached).
func (inv *invocation) checkLane(ctx context.Context) error {
	d, env := inv.d, inv.env
	l, err := lane.Of(ctx, d.cfg.Lane)
	if err != nil {
		return tool.Errorf(tool.PermissionDenied, "%s", err.Error())
	}
	inv.lane = l
	if l == lane.SFN {
		switch {
		case env.CallerProof != "":
			return tool.Errorf(tool.PermissionDenied, "a caller proof belongs to the %s alias; this is the %s alias", lane.Direct, lane.SFN)
		case lane.IsDirectRunID(env.RunID):
			return tool.Errorf(tool.PermissionDenied, "run id %q is a direct-lane run id; executions run under their execution ARN", excerpt.Bytes(env.RunID, 80, "..."))
		}
		return nil
	}
	if env.RunStartedAt != "" {
		// A direct call's run is no execution: run_started_at is
		// $$.Execution.StartTime, which only a compiled tool Task sends.
		return tool.Errorf(tool.PermissionDenied, "run_started_at belongs to an execution's call on the %s alias; a direct call's run is no execution", lane.SFN)
	}
	if env.Start != nil {
		// The start member is the Starter's verified answer, which only a
		// compiled tool Task sends: a direct call has no start record, and
		// resolves toolset-scope credentials only.
		return tool.Errorf(tool.PermissionDenied, "start belongs to an execution's call on the %s alias; a direct call has no start record", lane.SFN)
	}
	if env.Parkable {
		// park_id is the compiled state machine's: only its park Task
		// records a park, and a direct call has none (docs/parking.md).
		return tool.Errorf(tool.PermissionDenied, "park_id belongs to an execution's call on the %s alias; a direct call is never parked by a state machine", lane.SFN)
	}
	if env.ParentRunID != "" {
		// A direct call is never a child run: only a workflow step's child
		// execution names a parent, and only its own ledger rows may say so.
		return tool.Errorf(tool.PermissionDenied, "parent_run_id belongs to a child run on the %s alias; a direct call has no parent run", lane.SFN)
	}
	if d.callers == nil {
		return tool.Errorf(tool.PermissionDenied, "this function cannot verify callers")
	}
	if _, err := inv.canonicalInput(); err != nil {
		return err
	}
	who, err := d.callers.Verify(ctx, env.CallerProof, caller.Binding{Action: caller.ActionInvoke, Target: env.IdempotencyKey, InputDigest: inv.digest})
	var ce *caller.Error
	switch {
	case errors.As(err, &ce) && ce.Reason == caller.Unavailable:
		return tool.Wrap(tool.UpstreamUnavailable, err, "%s", ce.Message)
	case errors.As(err, &ce):
		return tool.Errorf(tool.PermissionDenied, "%s [%s]", ce.Message, ce.Reason)
	case err != nil:
		return tool.Wrap(tool.UpstreamUnavailable, err, "the caller could not be verified")
	}
	if prefix := lane.DirectRunPrefix(who.ARN); !strings.HasPrefix(env.RunID, prefix) || len(env.RunID) == len(prefix) {
		return tool.Errorf(tool.PermissionDenied, "run id %q is not in your direct-lane namespace %s<id>", excerpt.Bytes(env.RunID, 80, "..."), prefix)
	}
	return nil
}
