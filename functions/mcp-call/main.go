// Command mcp-call is the MCP tools' Lambda function: the governed
// dispatcher for every tool a run's pinned toolset takes from an MCP
// server (dispatch.Config.MCP), which checks the tool's definition on its
// server against the pin before the call is claimed, then sends tools/call
// with the idempotency key in _meta (docs/tools.md, "MCP tools", lists its
// environment).
package main

import (
	"context"
	"encoding/json"

	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

func main() {
	log := coldstart.Logger()
	// The MCP client, shared/mcptool, is wired here when it is merged:
	//	cfg, err := mcptool.ConfigFromEnv(os.Getenv)
	//	cfg = coldstart.Must(log, "bad configuration", cfg, err)
	//	c := mcptool.New(cfg, log)
	//	dispatch.MCPMain(log, c.Check, c.Call)
	// Until then every call is refused before its claim: nothing is sent.
	dispatch.MCPMain(log, unwired, func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) { return nil, unwired(ctx, c) })
}

func unwired(context.Context, *toolcall.Call) error {
	return tool.Errorf(tool.Internal, "this mcp-call has no MCP client (shared/mcptool)")
}
