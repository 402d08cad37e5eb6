package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/shared/mcpmeta"
	"github.com/toolgate/toolgate/shared/tool"
)

const ticket = `{"priority":"high","title":"Printer on fire"}`

func TestCallSendsTheSameKeyInMetaOnEveryAttempt(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := start(t, m.opts)
			c := clientFor(t, srv)
			pinned := pin(t, c, srv, mcpserver.SendSMS)
			for attempt := 1; attempt <= 2; attempt++ {
				if _, err := c.Call(t.Context(), callOf(pinned, `{"text":"hi","to":"+15550100"}`, "run-1/3", attempt)); err != nil {
					t.Fatalf("attempt %d: %v", attempt, err)
				}
			}
			calls := srv.Calls()
			if len(calls) != 2 {
				t.Fatalf("calls: %d, want 2", len(calls))
			}
			for i, got := range calls {
				if got.Meta[mcpmeta.IdempotencyKey] != "run-1/3" || got.ProtocolVersion != m.revision {
					t.Errorf("call %d: _meta %v, revision %q", i+1, got.Meta, got.ProtocolVersion)
				}
				if string(got.Arguments) != `{"text":"hi","to":"+15550100"}` {
					t.Errorf("call %d: arguments %s", i+1, got.Arguments)
				}
			}
		})
	}
}

func TestCreateTicketIsHonouredOncePerKey(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := start(t, m.opts)
			c := clientFor(t, srv)
			pinned := pin(t, c, srv, mcpserver.CreateTicket)
			var results []string
			for attempt := 1; attempt <= 2; attempt++ {
				out, err := c.Call(t.Context(), callOf(pinned, ticket, "run-1/1", attempt))
				if err != nil {
					t.Fatalf("attempt %d: %v", attempt, err)
				}
				results = append(results, string(out))
			}
			want := []string{`{"created":true,"ticket_id":"T-1"}`, `{"created":false,"ticket_id":"T-1"}`}
			if diff := cmp.Diff(want, results); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			if n := len(srv.Tickets()); n != 1 {
				t.Errorf("tickets: %d, want 1", n)
			}
		})
	}
}

func TestCallWithoutOutputSchemaReturnsTheTextContent(t *testing.T) {
	srv := start(t, mcpserver.Options{Stateless: true})
	c := clientFor(t, srv)
	pinned := pin(t, c, srv, mcpserver.SendSMS)
	out, err := c.Call(t.Context(), callOf(pinned, `{"text":"hi","to":"+15550100"}`, "run-1/1", 1))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"content":[{"type":"text","text":"message 1 sent to +15550100"}],"dropped":0}`; string(out) != want {
		t.Errorf("result %s, want %s", out, want)
	}
}

func TestCallOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		tool    string
		input   string
		fault   func(t *testing.T, srv *mcpserver.Server)
		code    tool.Code
		applied bool
		says    []string
		retry   time.Duration
	}{
		{
			name: "503", tool: mcpserver.CreateTicket, input: ticket,
			fault: func(_ *testing.T, srv *mcpserver.Server) { srv.RefuseCalls(1, mcpserver.Unavailable) },
			code:  tool.UpstreamUnavailable, applied: true, says: []string{"HTTP 503 Service Unavailable"},
		},
		{
			name: "429 with Retry-After", tool: mcpserver.CreateTicket, input: ticket,
			fault: func(_ *testing.T, srv *mcpserver.Server) {
				srv.RefuseCalls(1, mcpserver.TooManyRequests(30*time.Second))
			},
			code: tool.RateLimited, says: []string{"HTTP 429 Too Many Requests"}, retry: 30 * time.Second,
		},
		{
			name: "401", tool: mcpserver.CreateTicket, input: ticket,
			fault: func(_ *testing.T, srv *mcpserver.Server) { srv.RefuseCalls(1, mcpserver.Unauthorized) },
			code:  tool.PermissionDenied, says: []string{"HTTP 401 Unauthorized", "declare them with auth on the server in the toolset", "toolgate credentials set"},
		},
		{
			name: "isError, its text cut and cleaned", tool: mcpserver.SendSMS, input: `{"text":"hi","to":"+15550100"}`,
			fault: func(t *testing.T, srv *mcpserver.Server) {
				if err := srv.FailCalls(mcpserver.SendSMS, "carrier\x1b[31m unreachable\n"+string(make([]byte, 300)), 1); err != nil {
					t.Fatal(err)
				}
			},
			code: tool.PermanentFailure, says: []string{"answered isError: carrier [31m unreachable"},
		},
		{
			name: "structuredContent breaking the output schema", tool: mcpserver.LookupCustomer, input: `{"customer_id":"C-1"}`,
			fault: func(t *testing.T, srv *mcpserver.Server) {
				if err := srv.BreakOutput(mcpserver.LookupCustomer, 1); err != nil {
					t.Fatal(err)
				}
			},
			code: tool.OutputInvalid, applied: true, says: []string{"does not match its pinned outputSchema", `/ fails "required"`},
		},
		{
			name: "arguments the server's schema refuses", tool: mcpserver.LookupCustomer, input: `{"customer_id":5}`,
			code: tool.PermanentFailure, says: []string{`validating "arguments"`},
		},
		{
			name: "the tool removed after the check", tool: mcpserver.LookupCustomer, input: `{"customer_id":"C-1"}`,
			fault: func(t *testing.T, srv *mcpserver.Server) {
				if err := srv.RemoveTool(mcpserver.LookupCustomer); err != nil {
					t.Fatal(err)
				}
			},
			code: tool.InputInvalid, says: []string{"JSON-RPC -32602", `unknown tool "lookup_customer"`},
		},
	}
	for _, m := range modes {
		for _, tt := range tests {
			t.Run(m.name+"/"+tt.name, func(t *testing.T) {
				srv := start(t, m.opts)
				c := clientFor(t, srv)
				pinned := pin(t, c, srv, tt.tool)
				if tt.fault != nil {
					tt.fault(t, srv)
				}
				_, err := c.Call(t.Context(), callOf(pinned, tt.input, "run-1/1", 1))
				te := wantError(t, err, tt.code, tt.applied, tt.says...)
				if te.RetryAfter != tt.retry {
					t.Errorf("RetryAfter %s, want %s", te.RetryAfter, tt.retry)
				}
				if len(te.Message) > 600 {
					t.Errorf("message of %d bytes", len(te.Message))
				}
			})
		}
	}
}

func TestCallPastItsDeadlineIsATimeoutMaybeApplied(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			ctx := newDeadline(t.Context())
			opts := m.opts
			opts.OnCall = func(mcpserver.Call) { ctx.pass() } // the deadline passes once the server has the call
			srv := start(t, opts)
			c := clientFor(t, srv)
			pinned := pin(t, c, srv, mcpserver.CreateTicket)
			ended, err := srv.Delay(mcpserver.CreateTicket, time.Hour, 1)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Call(ctx, callOf(pinned, ticket, "run-1/1", 1))
			wantError(t, err, tool.Timeout, true, "did not finish within the call's deadline")
			select {
			case <-ended:
			case <-time.After(guard):
				t.Fatal("the server's delay did not end when the client gave up")
			}
			if n := len(srv.Tickets()); n != 1 {
				t.Errorf("tickets: %d, want 1 (the tool ran; its answer was late)", n)
			}
		})
	}
}

func TestCallRefusedByTheAddressRules(t *testing.T) {
	srv := start(t, mcpserver.Options{Stateless: true})
	c := clientFor(t, srv)
	pinned := pin(t, c, srv, mcpserver.LookupCustomer)
	tests := []struct {
		name, url, reason string
		cfg               Config
	}{
		{"host no longer on the allow-list", srv.URL(), "is not on the platform's MCP allow-list", config(t, "mcp.example.com")},
		{"a name resolving to the metadata address", "http://mcp.example.com/mcp", "169.254.169.254 is the instance metadata service",
			resolving("169.254.169.254")(config(t, "mcp.example.com"))},
		{"a name resolving to a private address", "http://mcp.example.com/mcp", "10.0.0.1 is private-use",
			resolving("10.0.0.1")(config(t, "mcp.example.com"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pinned
			mcp := *p.MCP
			mcp.URL = tt.url
			p.MCP = &mcp
			_, err := New(tt.cfg, nil).Call(t.Context(), callOf(p, `{"customer_id":"C-1"}`, "run-1/1", 1))
			wantError(t, err, tool.PermissionDenied, false, tt.reason)
			if n := len(srv.Calls()); n != 0 {
				t.Errorf("the server got %d calls", n)
			}
		})
	}
}

func TestCallNotSentIsNotMaybeApplied(t *testing.T) {
	srv := start(t, mcpserver.Options{Stateless: true})
	pinned := pin(t, clientFor(t, srv), srv, mcpserver.CreateTicket)
	// Every request has its own connection. Under 2026-07-28 the handshake
	// is one request (server/discover); the connection of the next, the
	// tools/call, is refused.
	var dials atomic.Int32
	cfg := config(t, hostOf(t, srv.URL()))
	cfg.Net.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) > 1 {
			return nil, errors.New("connection refused (test)")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	_, err := New(cfg, nil).Call(t.Context(), callOf(pinned, ticket, "run-1/1", 1))
	wantError(t, err, tool.UpstreamUnavailable, false, "tools/call of crm.create_ticket on", "failed before the request was sent")
	if n := len(srv.Calls()); n != 0 {
		t.Errorf("the server got %d calls", n)
	}
}

func TestCallToAnUnreachableServerIsNotMaybeApplied(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := start(t, mcpserver.Options{Stateless: true})
	p := pin(t, clientFor(t, srv), srv, mcpserver.CreateTicket)
	m := *p.MCP
	m.URL = "http://" + addr + "/mcp"
	p.MCP = &m
	_, err = New(config(t, addr), nil).Call(t.Context(), callOf(p, ticket, "run-1/1", 1))
	wantError(t, err, tool.UpstreamUnavailable, false, "the handshake with "+addr+" failed")
}

func TestCallAnswerOverTheReadLimit(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := start(t, m.opts)
			pinned := pin(t, clientFor(t, srv), srv, mcpserver.SendSMS)
			if err := srv.FailCalls(mcpserver.SendSMS, strings.Repeat("x", 64<<10), 1); err != nil {
				t.Fatal(err)
			}
			cfg := config(t, hostOf(t, srv.URL()))
			cfg.MaxBytes = 16 << 10 // over every answer of the handshake, under this one
			_, err := New(cfg, nil).Call(t.Context(), callOf(pinned, `{"text":"hi","to":"+15550100"}`, "run-1/1", 1))
			wantError(t, err, tool.OutputInvalid, true, "larger than the 16384-byte read limit")
		})
	}
}

func TestTextResultShape(t *testing.T) {
	out, err := json.Marshal(TextResult{Content: []TextItem{{Type: "text", Text: "a"}}, Dropped: 2})
	if err != nil || string(out) != `{"content":[{"type":"text","text":"a"}],"dropped":2}` {
		t.Errorf("%s, %v", out, err)
	}
}
