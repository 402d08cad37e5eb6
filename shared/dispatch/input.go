package dispatch

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// load finds the pinned toolset and the tool's contract in it.
func (inv *invocation) load(ctx context.Context) error {
	d, env := inv.d, inv.env
	mode := d.cfg.Mode
	if !mode.Platform() && !mode.MCP() && env.Tool != mode.Tool() {
		return tool.Errorf(tool.PermissionDenied, "this function runs %s, not %s", mode.Tool(), env.Tool)
	}
	ts, err := d.toolset(ctx, env.ToolsetID)
	if err != nil {
		return err
	}
	pinned, ok := ts.Tools[env.Tool]
	if !ok {
		return tool.Errorf(tool.PermissionDenied, "tool %s is not in toolset %s", env.Tool, env.ToolsetID)
	}
	if mode.Platform() && !pinned.Platform() {
		// The proxy runs only what the toolset pins as a platform tool: a
		// catalog tool has its own function, and a tool without a function
		// is run by none.
		return tool.Errorf(tool.PermissionDenied, "tool %s is not a platform tool of toolset %s (it names no function), so the platform tools' proxy does not run it", env.Tool, env.ToolsetID)
	}
	if mode.MCP() && pinned.MCP == nil {
		// mcp-call runs only what the toolset pins from an MCP server.
		return tool.Errorf(tool.PermissionDenied, "tool %s is not an MCP tool of toolset %s, so the MCP tools' function does not run it", env.Tool, env.ToolsetID)
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
	if err := inv.matchPinnedInput(canonical, "input"); err != nil {
		return nil, err
	}
	// The tool gets exactly what was validated and digested.
	return canonical, nil
}

// matchPinnedInput checks input, JSON, against the pinned input schema:
// TOOL_INPUT_INVALID naming what (the input, or the input an approval's
// edits give) and the schema problems without their values, or
// TOOL_INTERNAL when the pinned schema does not compile.
func (inv *invocation) matchPinnedInput(input json.RawMessage, what string) error {
	s, err := schema.Compile(inv.pinned.InputSchema)
	if err != nil {
		return tool.Wrap(tool.Internal, err, "the pinned input schema does not compile")
	}
	var v any
	if err := json.Unmarshal(input, &v); err != nil {
		return tool.Wrap(tool.InputInvalid, err, "%s is not valid JSON", what)
	}
	if err := s.Validate(v); err != nil {
		return tool.Errorf(tool.InputInvalid, "%s does not match the pinned schema of %s: %s", what, inv.env.Tool, redactedProblems("input", err))
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
	return strings.Join(schema.RedactedLines(schema.Problems(err, nil), root, maxProblems), "; ")
}
