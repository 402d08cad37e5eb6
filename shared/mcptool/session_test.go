package mcptool

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionServer is an MCP server with sessions (2025-11-25) whose one
// tool, echo, answers at once, and whose answer to the DELETE that ends a
// session is held back until the test ends: a server slow, or unwilling,
// to end a session.
func sessionServer(t *testing.T) *httptest.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "slow-delete", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	ended := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			select {
			case <-ended:
			case <-r.Context().Done():
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(ended); srv.Close() })
	return srv
}

// The end of a session is not part of a listing or a call: a server that
// does not answer the DELETE ending its session holds neither List nor
// Call (the SDK waits up to 5 s for that answer, detached from the
// caller's deadline), so that a call answered within its deadline is not
// turned into the dispatcher's TOOL_TIMEOUT, maybe applied, by the wait.
func TestASessionsEndHoldsNeitherAListingNorACall(t *testing.T) {
	srv := sessionServer(t)
	c := New(config(t, hostOf(t, srv.URL)), nil)
	const bound = 2 * time.Second // well under the SDK's 5 s DELETE timeout

	start := time.Now()
	pinned := pinURL(t, c, srv.URL, "echo")
	if d := time.Since(start); d > bound {
		t.Errorf("List took %s: it waited for the session's end", d)
	}
	start = time.Now()
	out, err := c.Call(t.Context(), callOf(pinned, `{}`, "run-1/1", 1))
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > bound {
		t.Errorf("Call took %s: it waited for the session's end", d)
	}
	if want := `{"content":[{"type":"text","text":"done"}],"dropped":0}`; string(out) != want {
		t.Errorf("result %s, want %s", out, want)
	}
}
