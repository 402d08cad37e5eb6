package localtest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/shared/toolset"
)

// MCPServer starts the local MCP server (infra/local/mcpserver) with opts
// for t.
func MCPServer(t testing.TB, opts mcpserver.Options) *mcpserver.Server {
	t.Helper()
	srv, err := mcpserver.Start(opts)
	if err != nil {
		t.Fatalf("mcpserver: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("mcpserver: stop: %v", err)
		}
	})
	return srv
}

// ListMCP is a toolset.Lister for tests of registration: it connects to
// the MCP server at url with the go-sdk client (asking for its newest
// revision), lists every page of tools and reports the revision
// negotiated. It is a plain client: the address rules a deployment's
// lister applies (shared/mcptool) are not its business.
func ListMCP(ctx context.Context, url string) (toolset.Listed, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "toolgate-localtest", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return toolset.Listed{}, fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	out := toolset.Listed{Protocol: cs.InitializeResult().ProtocolVersion}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return toolset.Listed{}, fmt.Errorf("tools/list: %w", err)
		}
		lt := toolset.ListedTool{Name: tool.Name, Description: tool.Description}
		if lt.InputSchema, err = json.Marshal(tool.InputSchema); err != nil {
			return toolset.Listed{}, fmt.Errorf("tool %s: input schema: %w", tool.Name, err)
		}
		if tool.OutputSchema != nil {
			if lt.OutputSchema, err = json.Marshal(tool.OutputSchema); err != nil {
				return toolset.Listed{}, fmt.Errorf("tool %s: output schema: %w", tool.Name, err)
			}
		}
		if tool.Annotations != nil {
			if lt.Annotations, err = json.Marshal(tool.Annotations); err != nil {
				return toolset.Listed{}, fmt.Errorf("tool %s: annotations: %w", tool.Name, err)
			}
		}
		out.Tools = append(out.Tools, lt)
	}
	return out, nil
}
