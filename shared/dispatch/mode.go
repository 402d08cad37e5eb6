package dispatch

import (
	"errors"
	"fmt"
)

// Mode is what a dispatcher serves, chosen once when its function starts:
// one tool by name (OneTool: a catalog tool's own function), every
// platform tool of the run's pinned toolset (PlatformTools:
// functions/lambda-tool, docs/tools.md "Platform tools"), or every MCP
// tool of it (MCPTools: functions/mcp-call, docs/tools.md "MCP tools").
// Any other tool is refused with TOOL_PERMISSION_DENIED (input.go). The
// zero Mode serves nothing, and Config.Validate refuses it.
type Mode struct {
	kind modeKind
	tool string // OneTool's name
}

// modeKind tells Mode's cases apart.
type modeKind uint8

const (
	modeUnset modeKind = iota
	modeOneTool
	modePlatform
	modeMCP
)

// OneTool is the mode of a function that serves the one tool name
// (send-email, structured-data-fetch, workflow-validator); envelopes for
// any other tool are refused. An empty name is refused by Config.Validate.
func OneTool(name string) Mode { return Mode{kind: modeOneTool, tool: name} }

var (
	// PlatformTools makes the dispatcher the platform tools' proxy: it
	// serves any tool of the run's pinned toolset whose pinned entry names
	// a function (toolset.Tool.Platform), and refuses every other tool, the
	// catalog's and MCP tools included.
	PlatformTools = Mode{kind: modePlatform}
	// MCPTools makes the dispatcher the MCP tools': it serves any tool of
	// the run's pinned toolset that an MCP server defines (toolset.Tool.MCP),
	// and refuses every other tool, the catalog's and platform tools
	// included. The pinned tool's timeout_seconds bounds its check, claim
	// and call (and DeadlineMargin the record after them), so that its
	// Task, which waits that plus catalog.TaskTimeoutMargin, never times
	// out while the function runs.
	MCPTools = Mode{kind: modeMCP}
)

// Tool is OneTool's name; "" in the other modes.
func (m Mode) Tool() string { return m.tool }

// Platform reports whether m is PlatformTools.
func (m Mode) Platform() bool { return m.kind == modePlatform }

// MCP reports whether m is MCPTools.
func (m Mode) MCP() bool { return m.kind == modeMCP }

// String names the mode for messages: "tool NAME", "platform tools",
// "MCP tools" or "unset".
func (m Mode) String() string {
	switch m.kind {
	case modeOneTool:
		return "tool " + m.tool
	case modePlatform:
		return "platform tools"
	case modeMCP:
		return "MCP tools"
	}
	return "unset"
}

// validate refuses the zero Mode and OneTool("").
func (m Mode) validate() error {
	switch {
	case m.kind == modeUnset:
		return errors.New("the dispatcher's mode is unset: it serves one tool (OneTool), the platform tools or the MCP tools")
	case m.kind == modeOneTool && m.tool == "":
		return errors.New("the dispatcher serves one tool, and its name is empty")
	case m.kind > modeMCP:
		return fmt.Errorf("unknown dispatcher mode %d", m.kind)
	}
	return nil
}
