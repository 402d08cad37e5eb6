package dispatch

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/webhook"
)

// check runs the tool's Config.Check once the input is validated and any
// approval checked, before the key is claimed (nil: go on, with
// inv.schemaChange set when the check let the call go on under a changed
// definition: on_schema_change allow_additive_input). An error ends
// the call with nothing claimed, so that the key is left as it was and a
// later call under it is a first attempt (or, after earlier attempts, the
// claim decides as always):
//
//   - tool.CallParked (an MCP tool whose definition changed on its server
//     since the toolset pinned it): unless an approval of that very
//     definition in the run covers the call (underCover, cover.go), a
//     PARKED row, the answer CALL_PARKED with the check's message as its
//     cause, and a tool.schema_changed webhook event (events.go); when the
//     server refused the call's credential as an invalid token while it was
//     listed (refusedCredential), the PARKED row's cause is
//     credentials.expired, naming the credential's target and scope
//     (credentialPark), and so is the event;
//   - any other error: a REFUSED row with its code (anything that is not
//     a *tool.Error is TOOL_INTERNAL). Nothing was sent, so it is never
//     maybe applied; a retryable code (the server could not be listed) is
//     retried by the Task's Retry as a refusal is.
//
// Either way, a call whose key holds its COMPLETED record is a replay of
// that result, whatever the check says: the call was sent, and answered,
// before the tool changed. The record is read as replayOr reads it, with
// ledger.Store.Touch, which never claims the key.
//
// A call that passes its check under its own APPROVED definition change
// records the cover of that definition for the run's later calls
// (recordCover).
func (inv *invocation) check(ctx context.Context, input json.RawMessage) *outcome {
	d, env := inv.d, inv.env
	if d.cfg.Check == nil {
		return nil
	}
	err := d.cfg.Check(ctx, inv.checkCall(input))
	if err != nil {
		// A park an approval of the same definition in the run covers
		// goes on under it (cover.go).
		err = inv.underCover(ctx, input, err)
	}
	if err == nil {
		// A changed definition the toolset lets calls go on under is
		// recorded on the call's row (newRow); an approved one's output
		// schema is what the result is read and validated against.
		inv.schemaChange = inv.checked.SchemaChange
		if out := inv.checked.ApprovedOutputSchema; out != nil {
			inv.pinned.OutputSchema, inv.outputApproved = out, true
		}
		inv.recordCover(ctx)
		return nil
	}
	te := tool.Classify(err)
	if typed := (*tool.Error)(nil); !errors.As(err, &typed) || typed == nil {
		// The check gave no code: its cause is in the log only.
		d.log.WarnContext(ctx, "the check before the claim failed", "tool", env.Tool, "key", env.IdempotencyKey, "error", err)
	}
	if te.Code == tool.CallParked && inv.refusedCredential(te) {
		// The server refused the call's credential while the check
		// listed its tools: the call waits for a new credential.
		o := parked(te, webhook.CredentialsExpired)
		o.park = inv.credentialPark()
		return inv.replayOrEnd(ctx, o)
	}
	if te.Code == tool.CallParked {
		return inv.replayOrEnd(ctx, parked(te, webhook.ToolSchemaChanged))
	}
	return inv.replayOrEnd(ctx, &outcome{write: writeRow, status: ledger.StatusRefused, err: te})
}
