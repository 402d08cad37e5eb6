package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/toolgate/toolgate/shared/externalkey"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
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
	// tool are refused. Empty when Platform or MCP is set.
	Tool string
	// Platform makes the dispatcher the platform tools' proxy
	// (functions/lambda-tool, docs/tools.md "Platform tools"): it serves
	// any tool of the run's pinned toolset whose pinned entry names a
	// function (toolset.Tool.Platform), and refuses every other tool, the
	// catalog's and MCP tools included, with TOOL_PERMISSION_DENIED. Tool
	// must be empty.
	Platform bool
	// MCP makes the dispatcher the MCP tools' (functions/mcp-call,
	// docs/tools.md "MCP tools"): it serves any tool of the run's pinned
	// toolset that an MCP server defines (toolset.Tool.MCP), and refuses
	// every other tool, the catalog's and platform tools included, with
	// TOOL_PERMISSION_DENIED. The pinned tool's timeout_seconds bounds its
	// check, claim and call (and DeadlineMargin the record after them), so
	// that its Task, which waits that plus catalog.TaskTimeoutMargin,
	// never times out while the function runs. Tool must be empty,
	// Platform false.
	MCP bool
	// Check, when set, runs once the input is validated and any approval
	// checked, before the key is claimed (check.go), with the call as the
	// tool gets it but Attempt 0 (nothing is claimed yet): an error ends
	// the call unclaimed. tool.CallParked writes a PARKED row and answers
	// CALL_PARKED; any other error a REFUSED row with its code.
	Check toolcall.Check
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
	// LedgerMAC is the function's own sealing key (secrets.Ledger.MAC, at
	// least seal.MinKeyBytes): every state the dispatcher writes on a call
	// item is sealed with it, and every record it reads checked
	// (docs/ledger.md, "Records are sealed by the function that writes
	// them"). New refuses a key under seal.MinKeyBytes; Validate does not
	// check it, since serve fills it after the environment is read.
	LedgerMAC []byte
	// LedgerSince is the stage's first deploy with seals
	// (secrets.Ledger.Since): a record without a seal is accepted only for
	// a run that started before it (seal.Accept). Zero accepts none.
	LedgerSince time.Time
	// ExternalKeySecret is the stage's secret for external keys
	// (secrets.Ledger.ExternalKey; shared/externalkey; docs/ledger.md,
	// "The external key"): required, at least externalkey.MinSecretBytes
	// (32) bytes. New refuses a shorter one; Validate does not check it,
	// since serve fills it after the environment is read. A call's first
	// claim stores the key it gives, so that a new secret changes no
	// running call's key.
	ExternalKeySecret []byte
}

// Validate fills defaults and checks ranges.
func (c *Config) Validate() error {
	switch {
	case c.Platform && c.MCP:
		return errors.New("dispatch config: a dispatcher serves the platform tools or the MCP tools, not both")
	case c.Platform && c.Tool != "":
		return errors.New("dispatch config: a Platform dispatcher serves the pinned platform tools, so Tool must be empty")
	case c.MCP && c.Tool != "":
		return errors.New("dispatch config: an MCP dispatcher serves the pinned MCP tools, so Tool must be empty")
	case !c.Platform && !c.MCP && c.Tool == "":
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

// Dispatcher runs one tool (or, with Config.Platform, every platform
// tool; with Config.MCP, every MCP tool) under the contract.
type Dispatcher struct {
	cfg      Config
	store    *ledger.Store
	key      seal.Key // Config.LedgerMAC, sealing store and reviews (SetReviews)
	run      toolcall.Func
	log      *slog.Logger
	toolsets ledger.ToolsetCache
	reviews  *dynamo.Store // approvals of gated tools, sealed with key (approval.go)
	callers  Callers       // direct-lane callers (lane.go)
}

// New returns a Dispatcher, or an error for a bad config (a LedgerMAC
// under seal.MinKeyBytes and an ExternalKeySecret under
// externalkey.MinSecretBytes included; the error gives their lengths,
// never a value). The store is used sealed with LedgerMAC
// (ledger.Store.WithMAC).
func New(cfg Config, store *ledger.Store, run toolcall.Func, log *slog.Logger) (*Dispatcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.ExternalKeySecret) < externalkey.MinSecretBytes {
		return nil, fmt.Errorf("dispatch config: the external key secret is %d bytes, and must be at least %d (docs/ledger.md, \"The external key\")",
			len(cfg.ExternalKeySecret), externalkey.MinSecretBytes)
	}
	if log == nil {
		log = slog.Default()
	}
	key, err := seal.NewKey(cfg.LedgerMAC)
	if err != nil {
		return nil, fmt.Errorf("dispatch config: %w", err)
	}
	return &Dispatcher{cfg: cfg, store: store.WithMAC(key), key: key, run: run, log: log}, nil
}

// Handle is the Lambda handler: it returns the tool's result, or an error
// that tool.Edge has made into the caller-visible code.
func (d *Dispatcher) Handle(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
	out, err := d.Invoke(ctx, payload)
	return out, tool.Edge(err)
}

// Invoke runs one invocation and returns the result or a *tool.Error, in
// phases: decode the envelope and check the caller's lane (a call that
// fails either writes nothing), then load the pinned toolset, validate the
// input, check a gated call's approval, claim the idempotency record and
// check the call (Config.Check), claim the idempotency record and run the
// tool; the outcome is recorded in one place (record).
func (d *Dispatcher) Invoke(ctx context.Context, payload json.RawMessage) (out json.RawMessage, err error) {
	inv := &invocation{d: d, started: d.store.Now()}
	if err := inv.admit(ctx, payload); err != nil {
		return nil, err
	}
	o := inv.phases(ctx)
	defer func() {
		if p := recover(); p != nil {
			// Recording failed half-way: the caller still gets a contract
			// code, and the log says the row may be lost.
			d.log.ErrorContext(ctx, "dispatcher panicked while recording the outcome; its ledger row may be lost", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			out, err = nil, &tool.Error{Code: tool.Internal, Message: "internal error", MaybeApplied: o.write == writeFinish}
		}
	}()
	return inv.record(ctx, o)
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
	// firstStarted is the start of the call's first attempt (the
	// record's FirstStartedAt), which the seal of this attempt's finish
	// covers; set with the claim.
	firstStarted time.Time
	// externalKey is the key the tool sends out (Record.ExternalKey),
	// once the claim is held.
	externalKey string
	attempt     int
	running     bool // the tool's Run has started: its effect may have happened
	// leaseUntil is when this attempt's claim ends.
	leaseUntil time.Time
	// reviewID and approver name the approval a gated call runs under.
	reviewID, approver string
	// canonical and inputErr hold canonicalInput's one computation.
	canonical json.RawMessage
	inputErr  error
}

// admit decodes the envelope and checks the lane. The lane comes first: a
// call whose caller is not proven for its run (a direct call without a
// valid proof, or outside its namespace; a proof or a direct run id on the
// sfn lane) writes nothing, not even a REFUSED row, under a run it may not
// write to.
func (inv *invocation) admit(ctx context.Context, payload json.RawMessage) (err error) {
	d := inv.d
	defer func() {
		if p := recover(); p != nil {
			d.log.ErrorContext(ctx, "dispatcher panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = &tool.Error{Code: tool.Internal, Message: "internal error"}
		}
	}()
	env, err := tool.DecodeEnvelope(payload)
	if err != nil {
		d.log.WarnContext(ctx, "envelope refused", "error", err)
		return err // no run to write a row for
	}
	inv.env = env
	if err := inv.checkLane(ctx); err != nil {
		d.log.WarnContext(ctx, "call refused: its caller is not proven for its run", "tool", env.Tool, "error", err)
		return err
	}
	return nil
}

// phases runs an admitted call to its outcome. A panic anywhere is an
// internal error: UNKNOWN when the tool had started (its effect may have
// happened), FAILED with the claim held, else a refusal.
func (inv *invocation) phases(ctx context.Context) (o *outcome) {
	defer func() {
		if p := recover(); p != nil {
			inv.d.log.ErrorContext(ctx, "dispatcher panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			o = inv.failed(&tool.Error{Code: tool.Internal, Message: "internal error", MaybeApplied: inv.running})
		}
	}()
	if err := inv.load(ctx); err != nil {
		return refused(err)
	}
	if d := inv.d; d.cfg.MCP && inv.pinned.TimeoutSeconds > 0 {
		// The pinned timeout bounds the check, the claim and the call
		// (Config.MCP), and the deadline margin the record after them, as
		// the function's deadline does.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Duration(inv.pinned.TimeoutSeconds)*time.Second+d.cfg.DeadlineMargin))
		defer cancel()
	}
	input, err := inv.validateInput()
	if err != nil {
		return refused(err)
	}
	// A gated call's approval is checked before the key is claimed: a
	// refused call leaves the key untouched for the call that was approved.
	if o := inv.approve(ctx); o != nil {
		return o
	}
	// So is the tool's own check (an MCP tool's definition on its server):
	// a call it stops was not sent, and its key is left for a later call.
	if o := inv.check(ctx, input); o != nil {
		return o
	}
	if o := inv.claim(ctx); o != nil {
		return o
	}
	return inv.execute(ctx, input)
}
