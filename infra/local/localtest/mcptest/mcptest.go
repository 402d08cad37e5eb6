// Package mcptest starts the local MCP server for a test and lists it as
// registration does. It is apart from package localtest so that the
// packages the MCP client imports (shared/credential) can use localtest's
// shared dynalite in their own tests.
package mcptest

import (
	"context"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/shared/mcptool"
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

// ListMCP is a toolset.Lister for tests of registration: the deployment's
// own lister (shared/mcptool), allowed to reach exactly the server's
// host and port on loopback, as the local stack allows its MCP server
// (TOOLGATE_MCP_ALLOW, TOOLGATE_MCP_ALLOW_ADDRESSES 127.0.0.1/32).
func ListMCP(ctx context.Context, serverURL string) (toolset.Listed, error) {
	u, err := toolset.ParseMCPURL(serverURL)
	if err != nil {
		return toolset.Listed{}, err
	}
	env := map[string]string{mcptool.EnvAllow: u.Parsed.Host, mcptool.EnvAllowAddresses: "127.0.0.1/32"}
	cfg, err := mcptool.ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		return toolset.Listed{}, err
	}
	return mcptool.New(cfg, nil).List(ctx, serverURL)
}
