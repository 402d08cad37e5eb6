// Command mcp-call is the MCP tools' Lambda function: the governed
// dispatcher for every tool a run's pinned toolset takes from an MCP
// server (dispatch.Config.MCP), which checks the tool's definition on its
// server against the pin before the call is claimed, then sends tools/call
// with the idempotency key in _meta (docs/tools.md, "MCP tools", lists its
// environment).
package main

import (
	"os"

	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/mcptool"
)

func main() {
	log := coldstart.Logger()
	cfg, err := mcptool.ConfigFromEnv(os.Getenv)
	cfg = coldstart.Must(log, "bad configuration", cfg, err)
	c := mcptool.New(cfg, log)
	dispatch.MCPMain(log, c.Check, c.Call)
}
