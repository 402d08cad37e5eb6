package toolcall

import (
	"context"
	"encoding/json"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/httprule"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Call is what a tool's Func receives from the dispatcher (shared/dispatch)
// once the envelope is decoded, the toolset loaded and checked, the input
// validated against the pinned schema, any approval checked and the key
// claimed.
type Call struct {
	Envelope *tool.Envelope
	// Input is the validated input object, in its RFC 8785 form: exactly
	// what was validated and digested.
	Input json.RawMessage
	// Pinned is the tool's contract in the run's toolset.
	Pinned toolset.Tool
	// Toolset is the run's pinned toolset (fetch_hosts for the http tool).
	Toolset *toolset.Toolset
	// Attempt is the ledger's attempt number for this key, from 1.
	Attempt int
	// ExternalKey is the idempotency key a tool sends out of the account
	// (to an MCP server, a platform tool, a host): opaque, the same on
	// every attempt of the call, and never Envelope.IdempotencyKey, which
	// names the account, the execution and, on the direct lane, the
	// caller (docs/ledger.md, "The external key"). Empty in a Check, run
	// before the key is claimed.
	ExternalKey string
	// Trace is the W3C trace context of this attempt's span (the call
	// span; docs/tracing.md), which a tool sends with the call so that the
	// server's spans join the run's trace: to an MCP server in
	// params._meta and as HTTP headers, to an http host as headers, to a
	// platform tool in its event. Always a valid traceparent on a claimed
	// call, with tracing exported or not; empty in a Check.
	Trace tool.TraceContext
	// Credential is the credential the call presents to its target (an
	// MCP server or an http host entry whose toolset declares auth),
	// resolved by the dispatcher before the key is claimed
	// (docs/credentials.md, "At call time"); nil for a target that declares
	// none. A tool presents it only through credential.Transport, at the
	// bottom of its connection's RoundTripper chain, and passes every
	// error text built from a response to a request that carried it
	// through its Redact. It is never logged, recorded, traced or put in
	// a message: no field of it but its Target, Scope and Version may be
	// named.
	Credential *credential.Credential
	// ApprovedDigest is, on a call sent again after a person approved its
	// park for a changed tool definition (tool.Envelope.ParkID naming an
	// APPROVED park; docs/parking.md, "The dispatcher"), the digest of the
	// definition they approved: the park's current_digest, "sha256:" and
	// the hex SHA-256 of its RFC 8785 form. A Check accepts the server's
	// definition when it digests to exactly this (any further change
	// parks the call again) and validates the input against that
	// definition's input schema. "" on every other call.
	ApprovedDigest string
	// SchemaChange is set by a Check that lets the call go on although
	// its tool's definition changed on its server since the toolset
	// pinned it (on_schema_change allow_additive_input; docs/parking.md,
	// "allow_additive_input"), for the dispatcher to record on the call's
	// row; nil on every other call, and never set by a Check's caller.
	SchemaChange *SchemaChange
	// ApprovedOutputSchema is set by a Check that sends the call under the
	// definition a person approved (ApprovedDigest): that definition's
	// output schema, which the call's result is read and validated against
	// in place of the pinned one (docs/parking.md, "Sending a parked call
	// again"); the empty schema {} when that definition has none. nil on
	// every other call, and never set by a Check's caller.
	ApprovedOutputSchema json.RawMessage
}

// SchemaChange is what a Check records of a changed tool definition it
// sent a call under without parking it (docs/parking.md,
// "allow_additive_input").
type SchemaChange struct {
	// Class is the change's class: "additive" (shared/mcptool, Additive),
	// the only one a call is sent under.
	Class string
	// PinnedDigest and CurrentDigest are "sha256:" and the hex SHA-256 of
	// the RFC 8785 form of the definition the toolset pinned and of the
	// one the server listed (shared/mcptool, Check).
	PinnedDigest, CurrentDigest string
}

// Func runs a tool. It returns the result object, or an error that is a
// *tool.Error (anything else is classified as TOOL_INTERNAL). A tool sets
// MaybeApplied on errors raised after its side-effecting call began.
// Tools implement Func and import this package and shared/tool, never the
// dispatcher.
type Func func(ctx context.Context, call *Call) (json.RawMessage, error)

// Check runs before a call is claimed, once its input and approval are
// checked: a non-nil error (a *tool.Error) ends the call unclaimed, with
// no attempt made. The MCP tools' check parks a call whose tool changed
// on its server since the toolset pinned it (tool.CallParked).
type Check func(ctx context.Context, call *Call) error

// CallContract is one call's contract, as a Contract gives it: the
// review requirement, policy and idempotency (httprule.Decide), and the
// http_hosts entry that governs the call's URL, whose Auth says whether
// the call presents a credential (docs/credentials.md).
type CallContract struct {
	httprule.Contract
	// Host is the entry of the run's toolset's http_hosts the call is
	// sent to (httptool.EntryFor); nil for a tool that has none.
	Host *toolset.HTTPHost
}

// Contract returns the contract of one call where a tool's contract
// depends on its input: the http tool's on its method and host entry
// (httprule.Decide; docs/tools.md, "http"). It runs once the input is
// validated against the pinned schema and before any approval is checked,
// with the call as a Check gets it, so the dispatcher decides review,
// policy and idempotency from what is about to be sent, whatever the step
// was compiled for. An error (a *tool.Error) refuses the call with nothing
// claimed and nothing sent.
type Contract func(call *Call) (CallContract, error)
