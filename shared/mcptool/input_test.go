package mcptool

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/shared/tool"
)

// A tool that answers a call asking for input first (revision 2026-07-28's
// multi round-trip requests: an input_required result) gets no input from
// toolgate, which has no one to ask (no elicitation, no sampling, no
// roots): the SDK's client would otherwise answer the requests it can
// (roots/list, empty) and send tools/call again under the same key, up to
// 10 times in one attempt, and report a request it cannot answer
// (elicitation) as the server's invalid params, TOOL_INPUT_INVALID. The
// call is sent once, and its outcome is TOOL_PERMANENT_FAILURE, not maybe
// applied: the server said it did not run.
func TestAToolAskingForInputIsSentOnceAndFails(t *testing.T) {
	for name, ask := range map[string]mcp.InputRequest{
		"roots":       &mcp.ListRootsParams{},
		"elicitation": &mcp.ElicitParams{Message: "Really?", RequestedSchema: map[string]any{"type": "object"}},
	} {
		t.Run(name, func(t *testing.T) {
			var calls atomic.Int32
			s := mcp.NewServer(&mcp.Implementation{Name: "asks", Version: "1"}, nil)
			s.AddTool(&mcp.Tool{Name: "send", InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					calls.Add(1)
					return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": ask}, RequestState: "s"}, nil
				})
			srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
			t.Cleanup(srv.Close)
			c := New(config(t, hostOf(t, srv.URL)), nil)
			pinned := pinURL(t, c, srv.URL, "send")
			_, err := c.Call(t.Context(), callOf(pinned, `{}`, "run-1/1", 1))
			wantError(t, err, tool.PermanentFailure, false, "asks for input")
			if n := calls.Load(); n != 1 {
				t.Errorf("tools/call sent %d times in one attempt, want 1", n)
			}
		})
	}
}
