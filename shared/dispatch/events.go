package dispatch

import (
	"context"
	"errors"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/webhook"
)

// Emitter records a webhook event once (docs/webhooks.md): a tool
// function's is shared/webhook/outbox's Recorder, which records only and
// leaves the sending to the relay, so that tool roles hold no queue
// permission. An event already recorded is not an error.
type Emitter interface {
	Emit(ctx context.Context, ev webhook.Event) error
}

// The webhook events a call's outcome may produce (docs/webhooks.md,
// "Events"): a call parked before its claim (a PARKED row), a call parked
// after it because its server refused the credential (a PARKED row of
// that attempt), and an
// at_most_once call whose outcome is unknown and needs a person. Nothing
// else a call ends with produces one: a success, a replay, a refusal or a
// failure that may be retried write no event and make no request for one.

// unknownEvent is the call.unknown event of an at_most_once call (one
// TolerateDuplicates does not let run again) whose outcome is unknown, ""
// for any other call: a person must find out whether it took effect and
// say so with toolgate ledger reconcile (docs/fork.md, "Reconciling").
func (inv *invocation) unknownEvent() webhook.Type {
	if inv.pinned.Policy == catalog.AtMostOnce && !inv.env.TolerateDuplicates {
		return webhook.CallUnknown
	}
	return ""
}

// emit records o's webhook event (o.event; none: nothing), after the
// outcome's ledger write; r is the outcome's row. The event's id derives
// from what the ledger holds (webhook.EventID):
//
//   - tool.schema_changed and credentials.expired: the PARKED row's key,
//     its partition key, a newline and its sort key (ledger.Row.ItemSK),
//     so that each park is one event, and a second record of the same
//     row none. A call parked after its claim (its server refused the
//     credential) has a PARKED row of its attempt too, and r is that
//     row;
//   - call.unknown: the call's item's key, so that the attempt whose
//     outcome became unknown and every later attempt refused for it are
//     one event.
//
// A call whose envelope has the park_id member (tool.Envelope.Parkable,
// null included) records neither park event: its state machine parks it,
// and review-request's park route records the event under the same id
// (docs/parking.md, "The dispatcher"). An envelope without the member
// (a state machine published before parking) still records it here.
//
// The payload (webhook.CallData) holds the run, the idempotency key, the
// tool, the cause code and the names of the scope or target concerned:
// never an input, an output or a secret. A run that is not a Step
// Functions execution (the direct lane, whose caller has the answer) gets
// no event. Failing to build or record the event, or a panic while doing
// it, never changes the call's answer: it is logged with the event's type
// and id, never an error text.
func (inv *invocation) emit(ctx context.Context, o *outcome, r *ledger.Row) {
	d, env := inv.d, inv.env
	if o.event == "" || d.webhooks == nil {
		return
	}
	defer func() {
		// The call's answer is set: a panic here must not become Invoke's
		// TOOL_INTERNAL.
		if p := recover(); p != nil {
			d.log.ErrorContext(ctx, "webhook event not recorded: the dispatcher panicked", "event_type", string(o.event), "tool", env.Tool)
		}
	}()
	solution, run, ok := webhook.RunOf(env.RunID)
	if !ok {
		return
	}
	callKey := table.Call.Key(env.RunID) + "\n" + table.CallSK(env.Seq.SortKey())
	var source, cause, detail string
	switch o.event {
	case webhook.CallUnknown:
		source, cause, detail = callKey, string(o.err.Code), "step "+env.Step
	case webhook.ToolSchemaChanged, webhook.CredentialsExpired:
		if env.Parkable {
			// The state machine parks the call: its park Task records the
			// park and this event, with this id (docs/parking.md).
			return
		}
		cause, detail = string(o.event), inv.parkedDetail(o.event)
		switch {
		case r != nil && r.ItemSK != "":
			source = table.Row.Key(env.RunID) + "\n" + r.ItemSK
		default:
			d.log.WarnContext(ctx, "webhook event not recorded: the parked row has no key", "event_type", string(o.event), "tool", env.Tool)
			return
		}
	default:
		return
	}
	data := webhook.CallData{Run: run, Key: env.IdempotencyKey, Tool: env.Tool, Cause: cause, Detail: detail}
	ev, err := webhook.NewEvent(o.event, source, solution, data, d.store.Now())
	if err != nil {
		d.log.WarnContext(ctx, "webhook event not recorded: it does not match its schema", "event_type", string(o.event), "event_id", ev.ID, "tool", env.Tool)
		return
	}
	dbCtx, cancel := d.ledgerContext(ctx)
	defer cancel()
	if err := d.webhooks.Emit(dbCtx, ev); err != nil {
		d.log.ErrorContext(ctx, "webhook event not recorded", "event_type", string(o.event), "event_id", ev.ID, "tool", env.Tool)
	}
}

// parkedDetail names what a parked call waits on, names only: the MCP
// tool whose definition changed, or the target and toolset whose
// credential expired.
func (inv *invocation) parkedDetail(t webhook.Type) string {
	if t == webhook.CredentialsExpired {
		if target, ok := inv.authTarget(); ok {
			return "target " + target.Name + " of toolset " + target.ToolsetName
		}
		return ""
	}
	if m := inv.pinned.MCP; m != nil {
		return "MCP tool " + m.Server + "." + m.Name
	}
	return "tool " + inv.env.Tool
}

// parked is the outcome of a call parked before its claim: a PARKED row,
// CALL_PARKED, and event t (failed makes it the outcome of an attempt
// parked after its claim: the record FAILED, then the PARKED row). The row records the *park.Detail te carries
// (the check's digests and pointers, the resolver's target and scope),
// and its cause t in any case (parkRow).
func parked(te *tool.Error, t webhook.Type) *outcome {
	d := &park.Detail{}
	if !errors.As(te, &d) || d == nil {
		d = &park.Detail{}
	}
	return &outcome{write: writeRow, status: ledger.StatusParked, err: te, event: t, park: d}
}

// parkRow writes d on r, a PARKED row, with cause t (docs/parking.md, "The
// PARKED row"): names and digests only, each bounded as the row kind
// declares it.
func parkRow(r *ledger.Row, t webhook.Type, d *park.Detail) {
	r.ParkCause = string(t)
	switch park.Cause(t) {
	case park.SchemaChanged:
		r.PinnedDigest, r.CurrentDigest = d.PinnedDigest, d.CurrentDigest
		if len(d.ChangedPointers) > 0 {
			r.ChangedPointers = park.SortedPointers(d.ChangedPointers)
			r.AdditivePointers = park.AdditiveOf(r.ChangedPointers, d.AdditivePointers)
		}
	case park.CredentialsExpired:
		r.ParkTarget, r.ParkScope = d.Target, d.Scope
	}
}
