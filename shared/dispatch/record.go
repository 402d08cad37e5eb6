package dispatch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/webhook"
)

// write names the one ledger write that records an invocation's outcome
// (docs/ledger.md).
type write int

const (
	// writeRow: the invocation holds no claim, and its row is an item of
	// its own (PutRow): a refusal, or the UNKNOWN verdict on another
	// attempt's record.
	writeRow write = iota
	// writeFinish: the invocation holds the claim; one conditional
	// UpdateItem records the record's state and the attempt's row
	// (ledger.Store.Finish).
	writeFinish
	// writeNone: a replay of a completed call; the request that read the
	// record counted the invocation on the call's item, and nothing more
	// is written.
	writeNone
	// writeDone: the row was written with the release of a claim whose
	// request failed (claimFailed); only the log line is left.
	writeDone
)

// outcome is how an invocation ends: the answer its caller gets and what
// the ledger records. Every phase after the lane check either goes on or
// returns one; record writes it, in one place.
type outcome struct {
	write  write
	status ledger.Status // the row's status
	state  ledger.State  // the record's state (writeFinish)
	// result is the tool's result (a success) or the recorded one (a
	// replay).
	result json.RawMessage
	err    *tool.Error
	row    *ledger.Row // the row already written (writeDone)
	// reason is the row's reason word (ledger.Row.Reason), if any.
	reason string
	// event is the webhook event the outcome records after its ledger
	// write (events.go); "" for none, as on every success and replay.
	event webhook.Type
	// park is what a PARKED row records of its cause (parked, parkRow),
	// for a call parked before its claim (writeRow) or after it
	// (writeFinish: the attempt's PARKED row is written after the
	// finish); nil on every other outcome.
	park *park.Detail
	// reusedFrom is, on a fork's call that took its parent's recorded
	// result (reuse.go), the parent call's idempotency key, which its
	// REUSED row names; "" otherwise.
	reusedFrom string
}

// refused is the outcome of an invocation refused before it held a claim.
func refused(err error) *outcome {
	return &outcome{write: writeRow, status: ledger.StatusRefused, err: tool.Classify(err)}
}

// replayed is the outcome of a call whose key holds its completed record.
func replayed(result json.RawMessage) *outcome {
	return &outcome{write: writeNone, result: result}
}

// succeeded is the outcome of a claimed attempt whose result passed.
func succeeded(out json.RawMessage) *outcome {
	return &outcome{write: writeFinish, state: ledger.StateCompleted, status: ledger.StatusSucceeded, result: out}
}

// failed is the outcome of a failure at any point: with the claim held,
// the record ends FAILED, or UNKNOWN when the effect may have happened;
// without it, the invocation is refused.
func (inv *invocation) failed(err error) *outcome {
	te := tool.Classify(err)
	switch {
	case !inv.claimed:
		return refused(te)
	case te.MaybeApplied:
		return &outcome{write: writeFinish, state: ledger.StateUnknown, status: ledger.StatusUnknown, err: te, event: inv.unknownEvent()}
	case te.Code == tool.CallParked:
		// Only a server refusing the call's credential parks a call after
		// its claim (classifyEnd): the attempt ends FAILED, and a PARKED
		// row of that attempt says why, as a park before the claim does
		// (record), so that the park Task finds it.
		o := parked(te, webhook.CredentialsExpired)
		o.write, o.state, o.status = writeFinish, ledger.StateFailed, ledger.StatusFailed
		o.park = inv.credentialPark()
		return o
	}
	return &outcome{write: writeFinish, state: ledger.StateFailed, status: ledger.StatusFailed, err: te}
}

// record writes o to the ledger and the function's log, and returns the
// caller's answer: the result, or the *tool.Error. No outcome leaves the
// ledger: when the claimed record cannot be finished, the row is written
// as an item of its own.
func (inv *invocation) record(ctx context.Context, o *outcome) (json.RawMessage, error) {
	d, key := inv.d, inv.env.IdempotencyKey
	switch o.write {
	case writeNone:
		inv.log(ctx, &ledger.Row{Status: ledger.StatusDeduplicated, DurationMS: d.store.Now().Sub(inv.started).Milliseconds()})
	case writeDone:
		inv.log(ctx, o.row)
	case writeRow:
		r := inv.newRow(o.status, o.err, nil)
		r.Reason = o.reason
		if o.park != nil {
			parkRow(r, o.event, o.park)
		}
		dbCtx, cancel := d.ledgerContext(ctx)
		defer cancel()
		if err := d.store.PutRow(dbCtx, r); err != nil {
			d.log.ErrorContext(ctx, "ledger row lost", "key", key, "status", r.Status, "error", err)
		}
		inv.log(ctx, r)
		inv.emit(ctx, o, r)
	case writeFinish:
		out := o.result
		r := inv.newRow(o.status, o.err, out)
		r.FirstStartedAt, r.ReusedFrom = inv.firstStarted, o.reusedFrom
		dbCtx, cancel := d.ledgerContext(ctx)
		defer cancel()
		owned, err := d.store.Finish(dbCtx, key, inv.token, o.state, out, r)
		switch {
		case err != nil:
			if errors.Is(err, ledger.ErrForged) {
				// The tool ran and its result is its own; the record another
				// writer changed is refused on every later read.
				r.Reason = seal.ReasonRecordForged
			}
			d.log.ErrorContext(ctx, "finish record", "key", key, tool.LogFieldRefusalReason, r.Reason, "error", err)
			if err := d.store.PutRow(dbCtx, r); err != nil {
				d.log.ErrorContext(ctx, "ledger row lost", "key", key, "status", r.Status, "error", err)
			}
		case !owned:
			// The row is on the attempt's own entry; the record is another's.
			d.log.WarnContext(ctx, "claim lost before the record was finished", "key", key, "attempt", inv.attempt)
		}
		inv.log(ctx, r)
		if o.park != nil {
			// A server refused the call's credential after the claim: the
			// attempt's PARKED row, an item of its own as a park before
			// the claim writes, is what the park Task records the park
			// from, and what the park's event id derives from
			// (docs/parking.md, "The PARKED row").
			r = inv.newRow(ledger.StatusParked, o.err, nil)
			parkRow(r, o.event, o.park)
			if err := d.store.PutRow(dbCtx, r); err != nil {
				d.log.ErrorContext(ctx, "ledger row lost", "key", key, "status", r.Status, "error", err)
			}
		}
		inv.emit(ctx, o, r)
	}
	if o.err != nil {
		return nil, o.err
	}
	return o.result, nil
}

// newRow is the invocation's ToolInvocation row.
func (inv *invocation) newRow(status ledger.Status, te *tool.Error, out json.RawMessage) *ledger.Row {
	d, env := inv.d, inv.env
	ended := d.store.Now()
	r := &ledger.Row{
		RunID: env.RunID, Seq: env.Seq, Attempt: inv.attempt, Step: env.Step, Tool: env.Tool,
		ToolsetID: env.ToolsetID, IdempotencyKey: env.IdempotencyKey, ExternalKey: inv.externalKey, Status: status,
		StartedAt: inv.started, EndedAt: ended, DurationMS: ended.Sub(inv.started).Milliseconds(),
		InputDigest: inv.digest, InputBytes: inv.inBytes, MemoryMB: d.cfg.MemoryMB,
		AfterClaimRequest: inv.claimRequested && !inv.claimed,
		ReviewID:          inv.reviewID, Approver: inv.approver, ParentRunID: env.ParentRunID,
		EditedDigest: inv.editedDigest, Editor: inv.editor,
		Layout: inv.layout, Options: inv.options,
		// A call sent again under a decided park names it, and the
		// definitions it was sent between (resume.go).
		ParkID: inv.parkID, PinnedDigest: inv.pinnedDigest, CurrentDigest: inv.approvedDigest,
	}
	if sc := inv.schemaChange; sc != nil {
		// A call its toolset sent under an additive change, unparked
		// (docs/parking.md, "allow_additive_input").
		r.SchemaChange, r.PinnedDigest, r.CurrentDigest = sc.Class, sc.PinnedDigest, sc.CurrentDigest
	}
	if out != nil {
		sum := sha256.Sum256(out)
		r.OutputDigest, r.OutputBytes = "sha256:"+hex.EncodeToString(sum[:]), len(out)
	}
	if te != nil {
		r.ErrorCode, r.Retryable = string(te.Code), te.Retryable()
	}
	return r
}

// log writes the invocation's one "tool invocation" line from its row (a
// replay's writes none: its status and duration only); the UNKNOWN line
// is what the infrastructure's alarm filters on.
func (inv *invocation) log(ctx context.Context, r *ledger.Row) {
	env := inv.env
	level := slog.LevelInfo
	if r.ErrorCode != "" {
		level = slog.LevelWarn
	}
	args := []any{tool.LogFieldStatus, string(r.Status), tool.LogFieldTool, env.Tool,
		tool.LogFieldRunID, env.RunID, tool.LogFieldSeq, env.Seq, tool.LogFieldAttempt, inv.attempt,
		tool.LogFieldErrorCode, r.ErrorCode, tool.LogFieldDurationMS, r.DurationMS}
	if r.Reason != "" {
		args = append(args, tool.LogFieldRefusalReason, r.Reason)
	}
	inv.d.log.Log(ctx, level, tool.LogInvocation, args...)
}
