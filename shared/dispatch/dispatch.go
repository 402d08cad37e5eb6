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
	"sync"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/envelope"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Limits of the dispatcher, with their sources.
const (
	// MaxAttempts caps the attempts per idempotency key (ADR-0013).
	MaxAttempts = 10
	// DefaultInlineLimit bounds a tool's result returned inline. Step
	// Functions limits a whole execution's state to 256 KiB (AWS quota) and
	// every step's result accumulates in it.
	DefaultInlineLimit = 64 << 10
	// MaxInlineLimit is the largest configurable inline limit.
	MaxInlineLimit = 200 << 10
	// DefaultDeadlineMargin is kept from the Lambda deadline to finish the
	// record and write the row after the tool returns.
	DefaultDeadlineMargin = 2 * time.Second
	// DefaultLeaseMargin is added to the function timeout for the lease.
	DefaultLeaseMargin = 30 * time.Second
)

// Call is what a tool's Run receives.
type Call struct {
	Envelope *envelope.Envelope
	// Input is the validated input object.
	Input json.RawMessage
	// Pinned is the tool's contract in the run's toolset.
	Pinned toolset.Tool
	// Toolset is the run's pinned toolset (fetch_hosts for the http tool).
	Toolset *toolset.Toolset
	// Attempt is the ledger's attempt number for this key, from 1.
	Attempt int
}

// Func runs a tool. It returns the result object, or an error that is a
// *tool.Error (anything else is classified as TOOL_INTERNAL). A tool sets
// MaybeApplied on errors raised after its side-effecting call began.
type Func func(ctx context.Context, call *Call) (json.RawMessage, error)

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
	// InlineLimit bounds the result in bytes; default DefaultInlineLimit,
	// at most MaxInlineLimit.
	InlineLimit int
	// DeadlineMargin is subtracted from the Lambda deadline for the tool.
	DeadlineMargin time.Duration
	// MemoryMB is the function's configured memory, written on each row.
	MemoryMB int
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
		c.InlineLimit = DefaultInlineLimit
	}
	if c.InlineLimit < 1 || c.InlineLimit > MaxInlineLimit {
		return fmt.Errorf("dispatch config: inline limit %d bytes is outside 1..%d", c.InlineLimit, MaxInlineLimit)
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
	run      Func
	log      *slog.Logger
	toolsets sync.Map // id -> *toolset.Toolset, immutable, cached per container
}

// New returns a Dispatcher, or an error for a bad config.
func New(cfg Config, store *ledger.Store, run Func, log *slog.Logger) (*Dispatcher, error) {
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
	env     *envelope.Envelope
	ts      *toolset.Toolset
	pinned  toolset.Tool
	digest  string
	inBytes int
	claimed bool // this invocation holds the record's claim
	attempt int
	running bool // the tool's Run has started
	rowDone bool
}

func (inv *invocation) run(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	d := inv.d
	env, err := envelope.Decode(payload)
	if err != nil {
		d.log.WarnContext(ctx, "envelope refused", "error", err)
		return nil, err // no run to write a row for
	}
	inv.env = env
	if err := inv.load(ctx); err != nil {
		return nil, inv.refuse(ctx, err)
	}
	input, err := inv.validateInput()
	if err != nil {
		return nil, inv.refuse(ctx, err)
	}
	if err := inv.claim(ctx); err != nil {
		var rep *replay
		if errors.As(err, &rep) {
			inv.row(ctx, ledger.Deduplicated, nil, rep.result)
			return rep.result, nil
		}
		return nil, err
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

func (d *Dispatcher) toolset(ctx context.Context, id string) (*toolset.Toolset, error) {
	if ts, ok := d.toolsets.Load(id); ok {
		return ts.(*toolset.Toolset), nil
	}
	ts, err := d.store.Toolset(ctx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil, tool.Errorf(tool.PermissionDenied, "toolset %s is not registered", id)
	}
	if err != nil {
		return nil, tool.Wrap(tool.UpstreamUnavailable, err, "the ledger is unavailable")
	}
	d.toolsets.Store(id, ts)
	return ts, nil
}

// validateInput checks the input against the pinned schema (the run-time
// half of "validated twice") and computes its RFC 8785 digest.
func (inv *invocation) validateInput() (json.RawMessage, error) {
	raw := inv.env.Input
	inv.inBytes = len(raw)
	canonical, err := jcs.Transform(raw)
	if err != nil {
		return nil, tool.Wrap(tool.InputInvalid, err, "input is not valid JSON")
	}
	sum := sha256.Sum256(canonical)
	inv.digest = "sha256:" + hex.EncodeToString(sum[:])
	s, err := schema.Compile(inv.pinned.InputSchema)
	if err != nil {
		return nil, tool.Wrap(tool.Internal, err, "the pinned input schema does not compile")
	}
	var v any
	if err := json.Unmarshal(canonical, &v); err != nil {
		return nil, tool.Wrap(tool.InputInvalid, err, "input is not valid JSON")
	}
	if err := s.Validate(v); err != nil {
		var msgs []string
		for _, p := range schema.Problems(err, nil) {
			loc := p.Location
			if loc == "" {
				loc = "/"
			}
			msgs = append(msgs, "input"+loc+": "+p.Message)
		}
		return nil, tool.Errorf(tool.InputInvalid, "input does not match the pinned schema of %s: %s", inv.env.Tool, strings.Join(msgs, "; "))
	}
	return raw, nil
}

// claim takes the idempotency record for this attempt, or ends the
// invocation with the recorded result or a refusal.
func (inv *invocation) claim(ctx context.Context) error {
	d, env := inv.d, inv.env
	now := d.store.Now()
	rec := &ledger.Record{
		Key: env.IdempotencyKey, RunID: env.RunID, Seq: env.Seq, Step: env.Step, Tool: env.Tool,
		InputDigest: inv.digest, LeaseUntil: now.Add(d.cfg.Lease),
	}
	claimed, old, err := d.store.Claim(ctx, rec)
	if err != nil {
		return inv.refuse(ctx, tool.Wrap(tool.UpstreamUnavailable, err, "the ledger is unavailable"))
	}
	if claimed {
		inv.claimed, inv.attempt = true, 1
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
		return inv.reclaim(ctx, old, now)
	default: // IN_PROGRESS with an expired lease, or UNKNOWN: the effect may have happened
		if inv.pinned.Policy == catalog.AtMostOnce && !env.TolerateDuplicates {
			te := tool.Errorf(tool.RetryRequiresIdempotency, "an earlier attempt with this key may have run %s, which must run at most once; reconcile it by hand", env.Tool)
			if old.State != ledger.Unknown {
				if _, err := d.store.MarkUnknown(ctx, old, string(tool.RetryRequiresIdempotency)); err != nil {
					d.log.ErrorContext(ctx, "mark record unknown", "key", env.IdempotencyKey, "error", err)
				}
			}
			return inv.row(ctx, ledger.UnknownRow, te, nil)
		}
		return inv.reclaim(ctx, old, now)
	}
}

func (inv *invocation) reclaim(ctx context.Context, old *ledger.Record, now time.Time) error {
	d := inv.d
	if old.Attempts >= MaxAttempts {
		return inv.refuse(ctx, tool.Errorf(tool.PermanentFailure, "%d attempts were already made with this idempotency key, the most allowed", old.Attempts))
	}
	ok, err := d.store.Reclaim(ctx, old, now.Add(d.cfg.Lease))
	if err != nil {
		return inv.refuse(ctx, tool.Wrap(tool.UpstreamUnavailable, err, "the ledger is unavailable"))
	}
	if !ok {
		return inv.refuse(ctx, tool.Errorf(tool.UpstreamUnavailable, "an attempt with this key is in flight"))
	}
	inv.claimed, inv.attempt = true, old.Attempts
	return nil
}

// replay carries a recorded result out of claim.
type replay struct{ result json.RawMessage }

func (r *replay) Error() string { return "replay" }

// execute runs the tool with the claim held.
func (inv *invocation) execute(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
	d, env := inv.d, inv.env
	runCtx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithDeadline(ctx, dl.Add(-d.cfg.DeadlineMargin))
		defer cancel()
	}
	inv.running = true
	out, err := d.run(runCtx, &Call{Envelope: env, Input: input, Pinned: inv.pinned, Toolset: inv.ts, Attempt: inv.attempt})
	inv.running = false
	if err == nil && runCtx.Err() != nil {
		err = tool.Errorf(tool.Timeout, "the tool did not finish within its deadline").Applied()
	}
	if err != nil {
		return nil, inv.fail(ctx, err)
	}
	if err := inv.checkOutput(out); err != nil {
		// The tool ran: its effect happened, so the outcome is recorded as
		// FAILED only for tools whose effect is safe to repeat.
		return nil, inv.fail(ctx, err)
	}
	if _, err := d.store.Finish(ctx, env.IdempotencyKey, inv.attempt, ledger.Completed, out, ""); err != nil {
		d.log.ErrorContext(ctx, "finish record", "key", env.IdempotencyKey, "error", err)
	}
	inv.row(ctx, ledger.Succeeded, nil, out)
	return out, nil
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
		var msgs []string
		for _, p := range schema.Problems(err, nil) {
			msgs = append(msgs, "output"+p.Location+": "+p.Message)
		}
		return tool.Errorf(tool.OutputInvalid, "the result does not match the pinned output schema: %s", strings.Join(msgs, "; "))
	}
	return nil
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
	if te.Code == tool.OutputInvalid && !inv.pinned.Idempotent {
		te.MaybeApplied = true
	}
	state, status := ledger.Failed, ledger.FailedStatus
	if te.MaybeApplied {
		state, status = ledger.Unknown, ledger.UnknownRow
	}
	if _, ferr := inv.d.store.Finish(ctx, inv.env.IdempotencyKey, inv.attempt, state, nil, string(te.Code)); ferr != nil {
		inv.d.log.ErrorContext(ctx, "finish record", "key", inv.env.IdempotencyKey, "error", ferr)
	}
	return inv.row(ctx, status, te, nil)
}

// refuse writes a REFUSED row for an invocation that did not run the tool.
func (inv *invocation) refuse(ctx context.Context, err error) error {
	return inv.row(ctx, ledger.Refused, tool.Classify(err), nil)
}

// row writes the invocation's ledger row and returns te (nil on success).
func (inv *invocation) row(ctx context.Context, status ledger.Status, te *tool.Error, out json.RawMessage) error {
	d, env := inv.d, inv.env
	if inv.rowDone {
		if te == nil {
			return nil
		}
		return te
	}
	inv.rowDone = true
	ended := d.store.Now()
	r := &ledger.Row{
		RunID: env.RunID, Seq: env.Seq, Attempt: inv.attempt, Step: env.Step, Tool: env.Tool,
		ToolsetID: env.ToolsetID, IdempotencyKey: env.IdempotencyKey, Status: status,
		StartedAt: inv.started, EndedAt: ended, DurationMS: ended.Sub(inv.started).Milliseconds(),
		InputDigest: inv.digest, InputBytes: inv.inBytes, MemoryMB: d.cfg.MemoryMB,
	}
	if out != nil {
		sum := sha256.Sum256(out)
		r.OutputDigest, r.OutputBytes = "sha256:"+hex.EncodeToString(sum[:]), len(out)
	}
	level := slog.LevelInfo
	if te != nil {
		r.ErrorCode, r.Retryable = string(te.Code), te.Retryable()
		level = slog.LevelWarn
	}
	if err := d.store.PutRow(ctx, r); err != nil {
		d.log.ErrorContext(ctx, "ledger row lost", "key", env.IdempotencyKey, "status", status, "error", err)
	}
	// The UNKNOWN log line is what the infrastructure's alarm filters on.
	d.log.Log(ctx, level, "tool invocation", "ledger_status", string(status), "tool", env.Tool, "run_id", env.RunID,
		"seq", env.Seq, "attempt", inv.attempt, "error_code", r.ErrorCode, "duration_ms", r.DurationMS)
	if te == nil {
		return nil
	}
	return te
}
