package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/shared/tool"
)

// A page whose result has "nextCursor": "" neither ends the listing nor
// gives a cursor to ask for the next page: the listing is refused, naming
// the server, whether the empty cursor hides later pages or sits on the
// last one. The SDK reads it as the end (mcpserver's AnswerEmptyCursor).
func TestListRefusesAnEmptyCursor(t *testing.T) {
	for _, m := range modes {
		for _, c := range []struct {
			name     string
			pageSize int
			page     string
		}{
			{"in place of a cursor", 1, "page 1"},
			{"on the last page", 0, "page 1"},
		} {
			t.Run(m.name+"/"+c.name, func(t *testing.T) {
				opts := m.opts
				opts.PageSize = c.pageSize
				srv := start(t, opts)
				srv.AnswerEmptyCursor(1)
				_, err := clientFor(t, srv).List(t.Context(), srv.URL())
				var le *ListError
				if !errors.As(err, &le) || le.Code != tool.PermanentFailure {
					t.Fatalf("error %v, want a ListError", err)
				}
				for _, s := range []string{"tools/list of " + hostOf(t, srv.URL()), c.page + ` gives nextCursor ""`, "neither a cursor nor absent"} {
					if !strings.Contains(le.Message, s) {
						t.Errorf("message %q does not say %q", le.Message, s)
					}
				}
				if got := srv.ToolsListed(); got != 1 {
					t.Errorf("tools/list requests: %d, want 1", got)
				}
			})
		}
	}
}

// A pinned tool that an empty cursor hides is not reported as missing
// (which would park its calls as changed): the listing's failure is
// Check's.
func TestCheckOfAToolBehindAnEmptyCursor(t *testing.T) {
	srv := start(t, mcpserver.Options{Stateless: true, PageSize: 1})
	c := clientFor(t, srv)
	pinned := pin(t, c, srv, mcpserver.SendSMS) // the last of three pages
	srv.AnswerEmptyCursor(1)
	err := c.Check(t.Context(), callOf(pinned, `{}`, "k", 1))
	wantError(t, err, tool.PermanentFailure, false, `page 1 gives nextCursor ""`)
}

// A server answering tools/list with application/json (the SDK's
// JSONResponse) is listed page by page, the last page's absent nextCursor
// read from the JSON body as the end.
func TestListOfJSONAnswers(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "json", Version: "1"}, &mcp.ServerOptions{PageSize: 1})
	for _, name := range []string{"tool_a", "tool_b"} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	t.Cleanup(srv.Close)
	l, err := New(config(t, hostOf(t, srv.URL)), nil).List(t.Context(), srv.URL)
	if err != nil || len(l.Tools) != 2 {
		t.Fatalf("List: %+v, %v; want two tools", l, err)
	}
}

// rawNextCursor reads the member itself: absent, empty or a cursor, in a
// JSON answer, a batch, or server-sent events, for the page's own request
// id only.
func TestRawNextCursor(t *testing.T) {
	ids := []json.RawMessage{json.RawMessage(`3`)}
	const sse = "text/event-stream"
	for _, c := range []struct {
		name, contentType, body string
		cursor                  string // "-": absent
		found                   bool
	}{
		{"JSON, absent", "application/json", `{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}`, "-", true},
		{"JSON, empty", "application/json; charset=utf-8", `{"jsonrpc":"2.0","id":3,"result":{"tools":[],"nextCursor":""}}`, `""`, true},
		{"JSON, null", "application/json", `{"jsonrpc":"2.0","id":3,"result":{"nextCursor":null}}`, `null`, true},
		{"JSON, a cursor", "application/json", `{"jsonrpc":"2.0","id":3,"result":{"nextCursor":"c2"}}`, `"c2"`, true},
		{"JSON, another letter case is not the member", "application/json", `{"jsonrpc":"2.0","id":3,"result":{"NextCursor":""}}`, "-", true},
		{"JSON, another id", "application/json", `{"jsonrpc":"2.0","id":4,"result":{"nextCursor":""}}`, "-", false},
		{"JSON, an error", "application/json", `{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"x"}}`, "-", false},
		{"JSON batch", "application/json", `[{"jsonrpc":"2.0","id":4,"result":{}},{"jsonrpc":"2.0","id":3,"result":{"nextCursor":""}}]`, `""`, true},
		{"events, empty", sse, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"nextCursor\":\"\"}}\n\n", `""`, true},
		{"events, CRLF and a comment, absent", sse, ": hi\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\r\n\r\n", "-", true},
		{"events, data over two lines", sse, "data: {\"jsonrpc\":\"2.0\",\"id\":3,\ndata: \"result\":{\"nextCursor\":\"\"}}\n\n", `""`, true},
		{"events, a notification before the answer", sse, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"nextCursor\":\"c\"}}\n\n", `"c"`, true},
		{"events, cut before its end", sse, "data: {\"jsonrpc\":\"2.0\",\"id\":3,\"res", "-", false},
		{"another content type", "text/plain", `{"jsonrpc":"2.0","id":3,"result":{"nextCursor":""}}`, "-", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cursor, found := rawNextCursor(c.contentType, []byte(c.body), ids)
			got := string(cursor)
			if cursor == nil {
				got = "-"
			}
			if found != c.found || got != c.cursor {
				t.Errorf("cursor %s, found %v; want %s, %v", got, found, c.cursor, c.found)
			}
		})
	}
}

// FuzzRawNextCursor: any body, of either content type, is read without
// panicking, and a member found is JSON.
func FuzzRawNextCursor(f *testing.F) {
	f.Add("application/json", []byte(`{"jsonrpc":"2.0","id":1,"result":{"nextCursor":""}}`))
	f.Add("text/event-stream", []byte("event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\r\ndata: \"result\":{}}\r\r"))
	f.Add("application/json", []byte(`[{"id":1,"result":{"nextCursor":"x"}}]`))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		cursor, found := rawNextCursor(contentType, body, []json.RawMessage{json.RawMessage(`1`)})
		if cursor != nil && (!found || !json.Valid(cursor)) {
			t.Fatalf("cursor %q (found %v) is not a JSON member", cursor, found)
		}
	})
}
