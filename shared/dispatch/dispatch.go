package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/externalkey"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
	"github.com/toolgate/toolgate/shared/tracecontext"
	"github.com/toolgate/toolgate/shared/tracing"
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
	// Mode is what the dispatcher serves (OneTool, PlatformTools or
	// MCPTools); the zero Mode is refused.
	Mode Mode
	// Check, when set, runs once the input is validated and any approval
	// checked, before the key is claimed (check.go), with the call as the
	// tool gets it but Attempt 0 (nothing is claimed yet): an error ends
	// the call unclaimed. tool.CallParked writes a PARKED row and answers
	// CALL_PARKED; any other error a REFUSED row with its code.
	Check toolcall.Check
	// Contract, when set, gives each call its contract from its validated
	// input, before the approval is checked (toolcall.Contract): the
	// review requirement, policy and idempotency it returns replace the
	// pinned tool's for that call. The http tool's function sets it
	// (httptool.Contract), so that a call needs a review and runs at most
	// once by the method it actually sends. An error refuses the call:
	// a REFUSED row with its code, nothing claimed.
	Contract toolcall.Contract
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
	// LedgerSince is the stage's first deploy with seals
	// (secrets.Ledger.Since): a record without a seal is accepted only for
	// a run that started before it (seal.Accept). Zero accepts none.
	LedgerSince time.Time
	// CompactSince is the compact call layout's upgrade (docs/ledger.md,
	// "The call item on the wire"): a sealed record of the previous layout
	// is used only for a run that started before it (LayoutSwitchMargin
	// later at most) or a call without run_started_at. The function's
	// main sets it to its cold start (shared/toolfunction), which follows
	// the function's last invocation of the code that wrote that layout.
	// Zero accepts none.
	CompactSince time.Time
	// ExternalKeySecret is the stage's secret for external keys
	// (secrets.Ledger.ExternalKey; shared/externalkey; docs/ledger.md,
	// "The external key"): required, at least externalkey.MinSecretBytes
	// (32) bytes. New refuses a shorter one; Validate does not check it,
	// since it is read from SSM after the environment. A call's first
	// claim stores the key it gives, so that a new secret changes no
	// running call's key.
	ExternalKeySecret []byte
	// Tracer opens the call's spans and exports them when the deployment
	// exports (shared/tracing; docs/tracing.md); nil: none are exported,
	// and a call still carries its attempt's context to the tool. Invoke
	// flushes it before it returns, at most tracing.FlushTimeout.
	Tracer *tracing.Tracer
}

// Validate fills defaults and checks ranges.
func (c *Config) Validate() error {
	if err := c.Mode.validate(); err != nil {
		return fmt.Errorf("dispatch config: %w", err)
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

// Dispatcher runs one tool (or, in PlatformTools mode, every platform
// tool; in MCPTools mode, every MCP tool) under the contract.
type Dispatcher struct {
	cfg      Config
	store    Ledger
	run      toolcall.Func
	log      *slog.Logger
	toolsets ledger.ToolsetCache
	reviews  Reviews // approvals of gated tools (approval.go)
	callers  Callers // direct-lane callers (lane.go)
	// creds resolves the credentials of targets that declare auth
	// (credentials.go).
	creds Credentials
	// traces derives runs' trace ids under the external key secret
	// (trace.go).
	traces *tracecontext.Deriver
	// webhooks records the webhook events of parked and unknown calls
	// (events.go); nil records none.
	webhooks Emitter
	// parks reads the park a call is sent again under (resume.go).
	parks Parks
	// shapes learns result shapes (learn.go); nil learns none.
	shapes *learner
}

// Deps are a Dispatcher's collaborators, each behind the interface this
// package declares with only the methods it calls; the function's main
// wires the adapters (shared/toolfunction: shared/ledger's and
// shared/review/dynamo's stores, shared/caller's verifier).
type Deps struct {
	// Ledger holds the call items and ToolInvocation rows; required, and
	// sealed with the function's own key (Ledger.Sealed).
	Ledger Ledger
	// Reviews holds the approvals of gated tools, sealed with the same key
	// (Reviews.Sealed); nil: every call of a gated tool is refused.
	Reviews Reviews
	// Callers verifies direct-lane caller proofs; nil: every direct-lane
	// call is refused.
	Callers Callers
	// Credentials resolves the credential a call presents to a target
	// that declares auth (an MCP server, an http host entry;
	// docs/credentials.md); nil: a call to such a target is refused,
	// TOOL_PERMISSION_DENIED. Only the functions whose tools can declare
	// auth (mcp-call, http) have one.
	Credentials Credentials
	// Webhooks records the webhook event of a call that parks
	// (tool.schema_changed, credentials.expired) or of an at_most_once
	// call whose outcome becomes unknown (call.unknown), after the
	// outcome's ledger write (events.go; docs/webhooks.md); nil records
	// none. A tool function's is shared/webhook/outbox's Recorder, which
	// records only: the relay sends the event. Its failure never changes
	// the call's answer.
	Webhooks Emitter
	// Parks reads the park a call sent again after a person decided it
	// names (tool.Envelope.ParkID; resume.go, docs/parking.md); nil: every
	// call that names a park is refused, TOOL_PERMISSION_DENIED. A tool
	// function's is its ledger store (ledger.Store.Park), sealed with
	// the function's own key, which the covers of approved definitions
	// it records and reads are sealed with (cover.go; Parks.Sealed).
	Parks Parks
	// Shapes keeps the shapes learned of successful results (learn.go;
	// docs/declarations.md, "Observed shapes"): a tool function's is
	// shared/observed/dynamo's Store on the ledger table, for the
	// functions whose tools can return results of an undeclared shape.
	// nil learns nothing and makes no request for it. Learning never
	// changes a call's answer.
	Shapes Shapes
	// Run is the tool (or, for PlatformTools and MCPTools, the call of the
	// pinned tool).
	Run toolcall.Func
	// Log is the function's logger; nil: slog.Default.
	Log *slog.Logger
}

// New returns a Dispatcher, or an error for a bad config (an
// ExternalKeySecret under externalkey.MinSecretBytes included; the error
// gives its length, never a value) or for a store that is not sealed: a
// record or a binding written without the function's seal would be
// refused as forged on its next read (docs/ledger.md, "Records are sealed
// by the function that writes them"), and a cover without it would cover
// no call (docs/parking.md, "Approvals that cover later calls").
func New(cfg Config, deps Deps) (*Dispatcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.ExternalKeySecret) < externalkey.MinSecretBytes {
		return nil, fmt.Errorf("dispatch config: the external key secret is %d bytes, and must be at least %d (docs/ledger.md, \"The external key\")",
			len(cfg.ExternalKeySecret), externalkey.MinSecretBytes)
	}
	switch {
	case deps.Run == nil:
		return nil, errors.New("dispatch: no tool to run (Deps.Run)")
	case deps.Ledger == nil:
		return nil, errors.New("dispatch: no ledger store")
	case !deps.Ledger.Sealed():
		return nil, errors.New("dispatch: the ledger store does not seal what it writes: give it the function's own key (ledger.Store.WithMAC)")
	case deps.Reviews != nil && !deps.Reviews.Sealed():
		return nil, errors.New("dispatch: the review store does not seal the bindings it writes: give it the function's own key (dynamo.Store.WithMAC)")
	case deps.Parks != nil && !deps.Parks.Sealed():
		return nil, errors.New("dispatch: the park store does not seal the covers it writes: give it the function's own key (ledger.Store.WithMAC)")
	}
	log := deps.Log
	if log == nil {
		log = slog.Default()
	}
	d := &Dispatcher{cfg: cfg, store: deps.Ledger, run: deps.Run, log: log, reviews: deps.Reviews, callers: deps.Callers,
		creds: deps.Credentials, traces: tracecontext.NewDeriver(cfg.ExternalKeySecret), webhooks: deps.Webhooks, parks: deps.Parks}
	if deps.Shapes != nil {
		d.shapes = &learner{store: deps.Shapes, known: map[string]*learnedShape{}}
	}
	return d, nil
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
// input, check the park a call sent again names, check a gated call's
// approval, resolve the credential of a target that declares auth, check
// the call (Config.Check), claim the idempotency record and run the tool;
// the outcome is recorded in one place (record), and then, for a success
// whose tool's result shape is learned, the shape (learn.go), within
// LearnTimeout.
func (d *Dispatcher) Invoke(ctx context.Context, payload json.RawMessage) (out json.RawMessage, err error) {
	inv := &invocation{d: d, started: d.store.Now()}
	if err := inv.admit(ctx, payload); err != nil {
		return nil, err
	}
	inv.startAttempt(ctx)
	o := inv.phases(ctx)
	defer func() {
		inv.endAttempt(ctx, o)
		if err := d.cfg.Tracer.Flush(ctx); err != nil {
			d.log.WarnContext(ctx, "spans not exported", "error", err)
		}
	}()
	defer func() {
		if p := recover(); p != nil {
			// Recording failed half-way: the caller still gets a contract
			// code, and the log says the row may be lost.
			d.log.ErrorContext(ctx, "dispatcher panicked while recording the outcome; its ledger row may be lost", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			out, err = nil, &tool.Error{Code: tool.Internal, Message: "internal error", MaybeApplied: o.write == writeFinish}
		}
	}()
	out, err = inv.record(ctx, o)
	// The answer is decided and recorded: learning its shape, bounded,
	// changes neither (learn.go).
	inv.learn(ctx, o)
	return out, err
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
	// layout is the layout of the call's item this invocation's claim
	// holds (ledger.Record.Layout), which its finish writes in.
	layout  ledger.Layout
	running bool // the tool's Run has started: its effect may have happened
	// leaseUntil is when this attempt's claim ends.
	leaseUntil time.Time
	// reviewID and approver name the approval a gated call runs under.
	reviewID, approver string
	// edited is the input the tool runs with under an approval with
	// edits (approval.go applyEdits), editedDigest its digest and editor
	// who edited it; nil and "" otherwise.
	edited               json.RawMessage
	editedDigest, editor string
	// canonical and inputErr hold canonicalInput's one computation.
	canonical json.RawMessage
	inputErr  error
	// trace is the call's place in its run's trace; span is this
	// attempt's span when it is recorded (nil with export off), and
	// callSpan its context, which the tool sends on (trace.go).
	trace    tracecontext.Call
	span     trace.Span
	callSpan trace.SpanContext
	// lane is the call's lane, once admitted.
	lane lane.Lane
	// authHost is the http_hosts entry Config.Contract chose for the call
	// (nil: none); cred the credential the call presents (nil: its target
	// declares none), resolved before the check and the claim
	// (credentials.go). Neither is logged.
	authHost *toolset.HTTPHost
	cred     *credential.Credential
	// parkID is the park the call is sent again under, once resumePark
	// allowed it, or the park of the cover that covers it (cover.go);
	// approvedDigest the definition digest its approval approved and
	// pinnedDigest the pinned one's ("" for a resumed credential park);
	// parkDecider who approved it.
	parkID, approvedDigest, pinnedDigest, parkDecider string
	// covered: the call goes on under a cover (cover.go), not under a
	// park its envelope names, and so records no cover of its own.
	covered bool
	// schemaChange is what the check recorded of a changed tool
	// definition it let the call go on under (toolcall.SchemaChange;
	// on_schema_change allow_additive_input); nil otherwise.
	schemaChange *toolcall.SchemaChange
	// checked is the call the last check was given (checkCall);
	// outputApproved: its check approved another output schema than the
	// pinned one, which inv.pinned now holds.
	checked        *toolcall.Call
	outputApproved bool
	// options is the call's options digest (ledger.OptionsDigest; nil
	// for none), which its claim records, or the record's when the claim
	// is a re-claim.
	options []byte
	// ranInput is the input the tool ran with (execute), which a
	// structured-data-fetch or http result's shape is keyed by the host
	// of (learn.go).
	ranInput json.RawMessage
	// matchable: this invocation's claim is a first attempt or follows a
	// FAILED one (nothing of this call applied), so that a fork's call may
	// still take its parent's result (reuse.go).
	matchable bool
}

// contract applies Config.Contract to the call (nil: none is set, or the
// call's contract is set): the pinned review requirement, policy and
// idempotency become this call's.
func (inv *invocation) contract(input json.RawMessage) error {
	if inv.d.cfg.Contract == nil {
		return nil
	}
	c, err := inv.d.cfg.Contract(&toolcall.Call{Envelope: inv.env, Input: input, Pinned: inv.pinned, Toolset: inv.ts})
	if err != nil {
		return tool.Classify(err)
	}
	inv.pinned.ReviewRequired, inv.pinned.Policy, inv.pinned.Idempotent = c.Review, c.Policy, c.Idempotent
	inv.authHost = c.Host
	return nil
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
	if d := inv.d; d.cfg.Mode.MCP() && inv.pinned.TimeoutSeconds > 0 {
		// The pinned timeout bounds the check, the claim and the call
		// (MCPTools), and the deadline margin the record after them, as
		// the function's deadline does.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Duration(inv.pinned.TimeoutSeconds)*time.Second+d.cfg.DeadlineMargin))
		defer cancel()
	}
	input, err := inv.validateInput()
	if err != nil {
		return refused(err)
	}
	if err := inv.contract(input); err != nil {
		return refused(err)
	}
	// A call sent again under a decided park: its park must be its own and
	// approved or resumed (resume.go). A call without park_id reads nothing.
	if o := inv.resumePark(ctx); o != nil {
		return o
	}
	// A gated call's approval is checked before the key is claimed: a
	// refused call leaves the key untouched for the call that was approved.
	if o := inv.approve(ctx); o != nil {
		return o
	}
	if inv.edited != nil {
		// An approval with edits: the tool runs with the edited input,
		// which its contract and check see too.
		input = inv.edited
		if err := inv.contract(input); err != nil {
			return refused(err)
		}
	}
	// So is the credential the call presents, which the check needs too
	// (an MCP server that lists its tools only to an authenticated
	// client): an expired one parks the call, none refuses it.
	if o := inv.resolveCredential(ctx); o != nil {
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
	// A fork's call takes its parent's recorded result when they match
	// (reuse.go); a call of a run that is no fork sends no request here.
	if o := inv.reuse(ctx); o != nil {
		return o
	}
	return inv.execute(ctx, input)
}
