package dispatch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Limits of the dispatcher, with their sources.
const (
	// DefaultDeadlineMargin is kept from the Lambda deadline to finish the
	// record and write the row after the tool returns.
	DefaultDeadlineMargin = 2 * time.Second
	// DefaultLeaseMargin is added to the function timeout for the lease.
	DefaultLeaseMargin = 30 * time.Second
)

// Config tunes a Dispatcher. Zero fields take the defaults in their comments.
type Config struct {
	// Tool is the name of the function's own tool; envelopes for another
	// tool are refused.
	Tool string
	// Lease is how long a claim keeps other attempts out; default: the
	// function timeout plus DefaultLeaseMargin.
	Lease time.Duration
	// FunctionTimeout is the Lambda timeout (AWS_LAMBDA_FUNCTION_TIMEOUT),
	// the base of the default lease. Default 30 s.
	FunctionTimeout time.Duration
	// InlineLimit bounds the result in bytes; default tool.DefaultInlineLimit,
	// at most tool.MaxInlineLimit.
	InlineLimit int
	// DeadlineMargin is subtracted from the Lambda deadline for the tool.
	DeadlineMargin time.Duration
	// MemoryMB is the function's configured memory, written on each row.
	MemoryMB int
	// Lane fixes the lane on the local stack (lane.EnvLane); empty: the
	// invoked alias decides.
	Lane lane.Lane
}

// Validate fills defaults and checks ranges.
func (c *Config) Validate() error {
	if c.Tool == "" {
		return errors.New("dispatch config: Tool is required")
	}
	if c.FunctionTimeout == 0 {
		c.FunctionTimeout = 30 * time.Second
	}
	if c.Lease == 0 {
		c.Lease = c.FunctionTimeout + DefaultLeaseMargin
	}
	if c.InlineLimit == 0 {
		c.InlineLimit = tool.DefaultInlineLimit
	}
	if c.DeadlineMargin < 0 || c.FunctionTimeout < 0 || c.Lease < 0 {
		return errors.New("dispatch config: durations may not be negative")
	}
	if c.InlineLimit < 1 || c.InlineLimit > tool.MaxInlineLimit {
		return fmt.Errorf("dispatch config: inline limit %d bytes is outside 1..%d", c.InlineLimit, tool.MaxInlineLimit)
	}
	if c.DeadlineMargin == 0 {
		c.DeadlineMargin = DefaultDeadlineMargin
	}
	if c.Lease < time.Second {
		return fmt.Errorf("dispatch config: lease %s is under one second", c.Lease)
	}
	return nil
}

// Dispatcher runs one tool under the contract.
type Dispatcher struct {
	cfg      Config
	store    *ledger.Store
	run      tool.Func
	log      *slog.Logger
	toolsets ledger.ToolsetCache
	reviews  Reviews // approvals of gated tools (approval.go)
	callers  Callers // direct-lane callers (lane.go)
}

// New returns a Dispatcher, or an error for a bad config.
func New(cfg Config, store *ledger.Store, run tool.Func, log *slog.Logger) (*Dispatcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	return &Dispatcher{cfg: cfg, store: store, run: run, log: log}, nil
}

// Handle is the Lambda handler: it returns the tool's result, or an error
// that tool.Edge has made into the caller-visible code.
func (d *Dispatcher) Handle(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	out, err := d.Invoke(ctx, payload)
	return out, tool.Edge(err)
}

// Invoke runs one invocation and returns the result or a *tool.Error.
func (d *Dispatcher) Invoke(ctx context.Context, payload json.RawMessage) (out json.RawMessage, err error) {
	inv := &invocation{d: d, started: d.store.Now()}
	defer func() {
		if p := recover(); p != nil {
			d.log.ErrorContext(ctx, "tool panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			out, err = nil, inv.fail(ctx, &tool.Error{Code: tool.Internal, Message: "internal error", MaybeApplied: inv.running})
		}
	}()
	return inv.run(ctx, payload)
}

// invocation is the state of one Invoke.
type invocation struct {
	d       *Dispatcher
	started time.Time
	env     *tool.Envelope
	ts      *toolset.Toolset
	pinned  toolset.Tool
	digest  string
	inBytes int
	claimed bool // this invocation holds the record's claim
	// claimRequested: the call's item counted this invocation (a claim
	// request, or replayOr's read); a row of its own then says so.
	claimRequested bool
	token          string // the claim token this invocation holds
	attempt        int
	running        bool // the tool's Run has started
	ran            bool // the tool's Run has returned (or was given up on)
	rowDone        bool
	// leaseUntil is when this attempt's claim ends.
	leaseUntil time.Time
	// reviewID and approver name the approval a gated call runs under.
	reviewID, approver string
	// canonical and inputErr hold canonicalInput's one computation.
	canonical json.RawMessage
	inputErr  error
}

func (inv *invocation) run(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	d := inv.d
	env, err := tool.DecodeEnvelope(payload)
	if err != nil {
		d.log.WarnContext(ctx, "envelope refused", "error", err)
		return nil, err // no run to write a row for
	}
	inv.env = env
	// The lane comes first: a call whose caller is not proven for its run
	// (a direct call without a valid proof, or outside its namespace; a
	// proof or a direct run id on the sfn lane) writes nothing, not even a
	// REFUSED row, under a run it may not write to.
	if err := inv.checkLane(ctx); err != nil {
		d.log.WarnContext(ctx, "call refused: its caller is not proven for its run", "tool", env.Tool, "error", err)
		return nil, err
	}
	if err := inv.load(ctx); err != nil {
		return nil, inv.refuse(ctx, err)
	}
	input, err := inv.validateInput()
	if err != nil {
		return nil, inv.refuse(ctx, err)
	}
	// A gated call's approval is checked before the key is claimed: a
	// refused call leaves the key untouched for the call that was approved.
	err = inv.approve(ctx)
	if err == nil {
		err = inv.claim(ctx)
	}
	var rep *replay
	switch {
	case errors.As(err, &rep):
		// The claim request (or replayOr's) counted the invocation on the
		// call's item: a replay writes nothing more.
		inv.log(ctx, &ledger.Row{Status: ledger.Deduplicated, DurationMS: d.store.Now().Sub(inv.started).Milliseconds()})
		return rep.result, nil
	case err != nil:
		return nil, inv.refuse(ctx, err)
	}
	return inv.execute(ctx, input)
}

// load finds the pinned toolset and the tool's contract in it.
func (inv *invocation) load(ctx context.Context) error {
	d, env := inv.d, inv.env
	if env.Tool != d.cfg.Tool {
		return tool.Errorf(tool.PermissionDenied, "this function runs %s, not %s", d.cfg.Tool, env.Tool)
	}
	ts, err := d.toolset(ctx, env.ToolsetID)
	if err != nil {
		return err
	}
	pinned, ok := ts.Tools[env.Tool]
	if !ok {
		return tool.Errorf(tool.PermissionDenied, "tool %s is not in toolset %s", env.Tool, env.ToolsetID)
	}
	inv.ts, inv.pinned = ts, pinned
	return nil
}

// toolset returns the run's pinned toolset through the per-container
// cache (ledger.ToolsetCache: checked on every load, cached once it
// passes, refusals logged for the toolset-refused alarm).
func (d *Dispatcher) toolset(ctx context.Context, id string) (*toolset.Toolset, error) {
	dbCtx, cancel := d.ledgerContext(ctx)
	defer cancel()
	return d.toolsets.Load(dbCtx, d.store, id, d.log)
}

// canonicalInput is the input's RFC 8785 form, computed once per
// invocation with its digest (inv.digest): the direct lane's caller check
// binds the digest before validateInput needs the canonical input.
func (inv *invocation) canonicalInput() (json.RawMessage, error) {
	if inv.canonical == nil && inv.inputErr == nil {
		inv.inBytes = len(inv.env.Input)
		inv.canonical, inv.digest, inv.inputErr = tool.InputDigest(inv.env.Input)
	}
	return inv.canonical, inv.inputErr
}

// validateInput checks the input against the pinned schema (the run-time
// half of "validated twice") and computes its RFC 8785 digest.
func (inv *invocation) validateInput() (json.RawMessage, error) {
	canonical, err := inv.canonicalInput()
	if err != nil {
		return nil, err
	}
	s, err := schema.Compile(inv.pinned.InputSchema)
	if err != nil {
		return nil, tool.Wrap(tool.Internal, err, "the pinned input schema does not compile")
	}
	var v any
	if err := json.Unmarshal(canonical, &v); err != nil {
		return nil, tool.Wrap(tool.InputInvalid, err, "input is not valid JSON")
	}
	if err := s.Validate(v); err != nil {
		return nil, tool.Errorf(tool.InputInvalid, "input does not match the pinned schema of %s: %s", inv.env.Tool, redactedProblems("input", err))
	}
	// The tool gets exactly what was validated and digested.
	return canonical, nil
}

// claim takes the idempotency record for this attempt, or ends the
// invocation with the recorded result or a refusal.
func (inv *invocation) claim(ctx context.Context) error {
	d, env := inv.d, inv.env
	now := d.store.Now()
	if err := ctx.Err(); err != nil {
		return inv.refuse(ctx, tool.Errorf(tool.UpstreamUnavailable, "the call was cancelled before it started"))
	}
	if dl, ok := ctx.Deadline(); ok && dl.Sub(now) <= d.cfg.DeadlineMargin {
		// Too little time to run the tool and record its outcome: refuse
		// before the claim, so that nothing is left in doubt.
		return inv.refuse(ctx, tool.Errorf(tool.Timeout, "too little time is left before the function's deadline to run the tool"))
	}
	rec := &ledger.Record{
		Key: env.IdempotencyKey, RunID: env.RunID, Seq: env.Seq, Step: env.Step, Tool: env.Tool,
		ToolsetID: env.ToolsetID, InputDigest: inv.digest, LeaseUntil: now.Add(d.cfg.Lease), StartedAt: inv.started,
	}
	dbCtx, cancel := d.ledgerContext(ctx)
	defer cancel()
	claimed, old, err := d.store.Claim(dbCtx, rec)
	if err != nil {
		return inv.claimFailed(ctx, rec, err)
	}
	inv.claimRequested = true
	if claimed {
		inv.claimed, inv.attempt, inv.leaseUntil, inv.token = true, 1, rec.LeaseUntil, rec.Token
		return nil
	}
	inv.attempt = old.Attempts
	if !old.SameCall(rec) {
		return inv.refuse(ctx, tool.Errorf(tool.InputInvalid, "idempotency key reused with a different call"))
	}
	switch {
	case old.State == ledger.Completed:
		return &replay{result: old.Result}
	case old.State == ledger.InProgress && old.LeaseUntil.After(now):
		return inv.refuse(ctx, tool.Errorf(tool.UpstreamUnavailable, "an attempt with this key is in flight"))
	case old.State == ledger.Failed:
		return inv.reclaim(ctx, dbCtx, old, now)
	default: // IN_PROGRESS with an expired lease, or UNKNOWN: the effect may have happened
		if inv.pinned.Policy == catalog.AtMostOnce && !env.TolerateDuplicates {
			te := tool.Errorf(tool.RetryRequiresIdempotency, "an earlier attempt with this key may have run %s, which must run at most once; reconcile it by hand", env.Tool)
			if old.State != ledger.Unknown {
				if _, err := d.store.MarkUnknown(dbCtx, old, string(tool.RetryRequiresIdempotency)); err != nil {
					d.log.ErrorContext(ctx, "mark record unknown", "key", env.IdempotencyKey, "error", err)
				}
			}
			return inv.row(ctx, ledger.UnknownRow, te)
		}
		return inv.reclaim(ctx, dbCtx, old, now)
	}
}

func (inv *invocation) reclaim(ctx, dbCtx context.Context, old *ledger.Record, now time.Time) error {
	d := inv.d
	if old.Attempts >= tool.MaxAttempts {
		return inv.refuse(ctx, tool.Errorf(tool.PermanentFailure, "%d attempts were already made with this idempotency key, the most allowed", old.Attempts))
	}
	lease := now.Add(d.cfg.Lease)
	ok, err := d.store.Reclaim(dbCtx, old, lease)
	if err != nil {
		return inv.refuse(ctx, tool.Wrap(tool.UpstreamUnavailable, err, "the ledger is unavailable"))
	}
	if !ok {
		return inv.refuse(ctx, tool.Errorf(tool.UpstreamUnavailable, "an attempt with this key is in flight"))
	}
	inv.claimed, inv.attempt, inv.leaseUntil, inv.token = true, old.Attempts, lease, old.Token
	return nil
}

// claimFailed ends an invocation whose claim request failed. DynamoDB may
// have applied it all the same (its response lost, or the ledger's deadline
// reached while it was in flight): an at_most_once key would then read as
// a claim whose lease ran out, and be refused for ever although the tool
// never ran. So the claim is released if it is ours (the record FAILED, the
// attempt's entry REFUSED), and otherwise the REFUSED row is written as a
// row of its own, marked as possibly counted on the call's item.
func (inv *invocation) claimFailed(ctx context.Context, rec *ledger.Record, err error) error {
	d := inv.d
	te := tool.Wrap(tool.UpstreamUnavailable, err, "the ledger is unavailable")
	inv.claimRequested = true
	dbCtx, cancel := d.ledgerContext(ctx)
	defer cancel()
	r := inv.newRow(ledger.Refused, te, nil)
	r.Attempt = 1
	released, rerr := d.store.Release(dbCtx, rec.Key, rec.Token, string(te.Code), r)
	if rerr != nil || !released {
		return inv.refuse(ctx, te)
	}
	inv.rowDone, inv.attempt = true, 1
	inv.log(ctx, r)
	return te
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

// replay carries a recorded result out of claim.
type replay struct{ result json.RawMessage }

func (r *replay) Error() string { return "replay" }

// execute runs the tool with the claim held.
func (inv *invocation) execute(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
	d, env := inv.d, inv.env
	// The tool must be done before the Lambda deadline (less the margin to
	// record its outcome) and before its claim's lease ends, after which
	// another attempt may take the key over.
	deadline := inv.leaseUntil.Add(-min(d.cfg.DeadlineMargin, d.cfg.Lease/10))
	if dl, ok := ctx.Deadline(); ok && dl.Add(-d.cfg.DeadlineMargin).Before(deadline) {
		deadline = dl.Add(-d.cfg.DeadlineMargin)
	}
	runCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	type result struct {
		out json.RawMessage
		err error
	}
	done := make(chan result, 1)
	inv.running = true
	go func() {
		defer func() {
			if p := recover(); p != nil {
				d.log.ErrorContext(ctx, "tool panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				done <- result{err: &tool.Error{Code: tool.Internal, Message: "internal error", MaybeApplied: true}}
			}
		}()
		out, err := d.run(runCtx, &tool.Call{Envelope: env, Input: input, Pinned: inv.pinned, Toolset: inv.ts, Attempt: inv.attempt})
		done <- result{out, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-runCtx.Done():
		// A result that arrives within a short grace is still known; a tool
		// that ignores its context is not waited for longer: its outcome is
		// unknown, and the function must answer before its deadline.
		grace := time.NewTimer(min(d.cfg.DeadlineMargin/2, d.cfg.Lease/20, time.Second)) // ends before the lease
		select {
		case res = <-done:
		case <-grace.C:
			res.err = tool.Errorf(tool.Timeout, "the tool did not finish within its deadline").Applied()
		}
		grace.Stop()
	}
	inv.running, inv.ran = false, true
	if res.err != nil {
		te := tool.Classify(res.err)
		var typed *tool.Error
		if !errors.As(res.err, &typed) && !inv.pinned.Idempotent {
			// A failure the tool did not classify may have come after its
			// effect: for a tool that must not run twice, assume it did.
			te.MaybeApplied = true
		}
		return nil, inv.fail(ctx, te)
	}
	if err := inv.checkOutput(res.out); err != nil {
		te := tool.Classify(err)
		// The tool returned success, so its effect happened: for a tool that
		// must not run twice, the outcome is in doubt, not failed.
		te.MaybeApplied = te.MaybeApplied || !inv.pinned.Idempotent
		return nil, inv.fail(ctx, te)
	}
	inv.finish(ctx, ledger.Completed, res.out, inv.newRow(ledger.Succeeded, nil, res.out))
	return res.out, nil
}

// checkOutput validates the result against the pinned output schema and
// the inline limit.
func (inv *invocation) checkOutput(out json.RawMessage) error {
	if len(out) > inv.d.cfg.InlineLimit {
		return tool.Errorf(tool.OutputInvalid, "the result is %d bytes, over the %d-byte inline limit: Step Functions limits a whole execution's state to 256 KiB and every step's result accumulates in it, so select fewer fields", len(out), inv.d.cfg.InlineLimit)
	}
	s, err := schema.Compile(inv.pinned.OutputSchema)
	if err != nil {
		return tool.Wrap(tool.Internal, err, "the pinned output schema does not compile")
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		return tool.Wrap(tool.OutputInvalid, err, "the result is not JSON")
	}
	if err := s.Validate(v); err != nil {
		return tool.Errorf(tool.OutputInvalid, "the result does not match the pinned output schema: %s", redactedProblems("output", err))
	}
	return nil
}

// maxProblems bounds the schema problems a message lists.
const maxProblems = 10

// redactedProblems lists a validation error's problems by JSON Pointer and
// failing keyword under root ("input" or "output"), never quoting a value
// or a property name of the payload: the message reaches the caller, the
// function's log (aws-lambda-go logs every error it returns) and the
// execution's history.
func redactedProblems(root string, err error) string {
	ps := schema.Problems(err, nil)
	var msgs []string
	for i, p := range ps {
		if i == maxProblems {
			msgs = append(msgs, fmt.Sprintf("and %d more", len(ps)-maxProblems))
			break
		}
		msgs = append(msgs, root+p.Redacted())
	}
	return strings.Join(msgs, "; ")
}

// fail records a failure of a claimed attempt (FAILED, or UNKNOWN when the
// effect may have happened) and returns the classified error. An
// OutputInvalid after the tool ran counts as maybe applied for tools that
// are not idempotent.
func (inv *invocation) fail(ctx context.Context, err error) error {
	te := tool.Classify(err)
	if !inv.claimed || inv.env == nil {
		if inv.env != nil {
			return inv.refuse(ctx, te)
		}
		return te
	}

	state, status := ledger.Failed, ledger.FailedStatus
	if te.MaybeApplied {
		state, status = ledger.Unknown, ledger.UnknownRow
	}
	inv.finish(ctx, state, nil, inv.newRow(status, te, nil))
	return te
}

// finish ends the claimed attempt: one conditional UpdateItem records its
// outcome on the record and its row as the attempt's entry in the call's
// item. When the claim was lost meanwhile, the row goes on the attempt's
// own entry (ledger.Store.Finish); only when the writes fail is the row
// written as an item of its own, so that no outcome leaves the ledger.
func (inv *invocation) finish(ctx context.Context, state ledger.State, out json.RawMessage, r *ledger.Row) {
	d, env := inv.d, inv.env
	if inv.rowDone {
		return
	}
	inv.rowDone = true
	dbCtx, cancel := d.ledgerContext(ctx)
	defer cancel()
	owned, err := d.store.Finish(dbCtx, env.IdempotencyKey, inv.token, state, out, r)
	switch {
	case err != nil:
		d.log.ErrorContext(ctx, "finish record", "key", env.IdempotencyKey, "error", err)
	case !owned:
		// The row is on the attempt's own entry; the record is another's.
		d.log.WarnContext(ctx, "claim lost before the record was finished", "key", env.IdempotencyKey, "attempt", inv.attempt)
	}
	if err != nil {
		if err := d.store.PutRow(dbCtx, r); err != nil {
			d.log.ErrorContext(ctx, "ledger row lost", "key", env.IdempotencyKey, "status", r.Status, "error", err)
		}
	}
	inv.log(ctx, r)
}

// refuse writes a REFUSED row for an invocation that did not run the tool.
func (inv *invocation) refuse(ctx context.Context, err error) error {
	return inv.row(ctx, ledger.Refused, tool.Classify(err))
}

// row writes the ledger row of an invocation that holds no claim (a
// refusal, an UNKNOWN verdict on another attempt's record) as an item of
// its own, and returns te (nil on success).
func (inv *invocation) row(ctx context.Context, status ledger.Status, te *tool.Error) error {
	d, env := inv.d, inv.env
	if inv.rowDone {
		if te == nil {
			return nil
		}
		return te
	}
	inv.rowDone = true
	r := inv.newRow(status, te, nil)
	dbCtx, cancel := d.ledgerContext(ctx)
	defer cancel()
	if err := d.store.PutRow(dbCtx, r); err != nil {
		d.log.ErrorContext(ctx, "ledger row lost", "key", env.IdempotencyKey, "status", status, "error", err)
	}
	inv.log(ctx, r)
	if te == nil {
		return nil
	}
	return te
}

// newRow is the invocation's ToolInvocation row.
func (inv *invocation) newRow(status ledger.Status, te *tool.Error, out json.RawMessage) *ledger.Row {
	d, env := inv.d, inv.env
	ended := d.store.Now()
	r := &ledger.Row{
		RunID: env.RunID, Seq: env.Seq, Attempt: inv.attempt, Step: env.Step, Tool: env.Tool,
		ToolsetID: env.ToolsetID, IdempotencyKey: env.IdempotencyKey, Status: status,
		StartedAt: inv.started, EndedAt: ended, DurationMS: ended.Sub(inv.started).Milliseconds(),
		InputDigest: inv.digest, InputBytes: inv.inBytes, MemoryMB: d.cfg.MemoryMB,
		AfterClaimRequest: inv.claimRequested && !inv.claimed,
		ReviewID:          inv.reviewID, Approver: inv.approver,
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
	inv.d.log.Log(ctx, level, tool.LogInvocation, tool.LogFieldStatus, string(r.Status), tool.LogFieldTool, env.Tool,
		tool.LogFieldRunID, env.RunID, tool.LogFieldSeq, env.Seq, tool.LogFieldAttempt, inv.attempt,
		tool.LogFieldErrorCode, r.ErrorCode, tool.LogFieldDurationMS, r.DurationMS)
}
