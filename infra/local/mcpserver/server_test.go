package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/shared/mcpmeta"
)

// guard bounds every wait on a channel, so that a broken test fails rather
// than hangs; nothing is ordered by it.
const guard = 10 * time.Second

// mode is a server configuration and the revision the SDK client negotiates
// with it when it asks for its default (the newest).
type mode struct {
	name     string
	opts     Options
	revision string
}

// modes are the two ways the server is used: with sessions the SDK serves
// revisions up to 2025-11-25; without, 2026-07-28 as well.
var modes = []mode{
	{"sessions", Options{}, "2025-11-25"},
	{"stateless", Options{Stateless: true}, "2026-07-28"},
}

func start(t *testing.T, opts Options) *Server {
	t.Helper()
	srv, err := Start(opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return srv
}

// connect opens a client session to srv, asking for revision ("" for the
// SDK's newest); it is closed when the test ends.
func connect(t *testing.T, srv *Server, revision string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectVia(t, &mcp.StreamableClientTransport{Endpoint: srv.URL()}, revision, opts)
}

func connectVia(t *testing.T, transport mcp.Transport, revision string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), transport, &mcp.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls a tool and fails the test on a Go error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, meta mcp.Meta) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("CallTool %s: %v", name, err)
	}
	return res
}

// text is the text of a result's first content block.
func text(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// asJSON re-encodes v (a schema as the client decoded it) as a generic JSON
// value, so that tests can compare parts of it.
func asJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func listTools(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		tools[tl.Name] = tl
	}
	return tools
}

func TestListToolsShowsSchemasAndAnnotations(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := start(t, m.opts)
			tools := listTools(t, connect(t, srv, "", nil))
			if len(tools) != 3 {
				t.Fatalf("tools: got %d, want 3", len(tools))
			}

			ct := tools[CreateTicket]
			in := asJSON(t, ct.InputSchema)
			props := in["properties"].(map[string]any)
			if diff := cmp.Diff(map[string]any{"type": "string", "minLength": 1.0, "maxLength": 200.0}, props["title"]); diff != "" {
				t.Errorf("create_ticket title (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]any{"type": "string", "enum": []any{"low", "normal", "high"}}, props["priority"]); diff != "" {
				t.Errorf("create_ticket priority (-want +got):\n%s", diff)
			}
			out := asJSON(t, ct.OutputSchema)
			if diff := cmp.Diff([]any{"ticket_id", "created"}, out["required"]); diff != "" {
				t.Errorf("create_ticket output required (-want +got):\n%s", diff)
			}
			if ct.Annotations == nil || ct.Annotations.ReadOnlyHint || ct.Annotations.IdempotentHint {
				t.Errorf("create_ticket annotations: %+v, want neither read-only nor idempotent", ct.Annotations)
			}

			sms := tools[SendSMS]
			props = asJSON(t, sms.InputSchema)["properties"].(map[string]any)
			if got := props["to"].(map[string]any)["pattern"]; got != `^\+?[0-9]+$` {
				t.Errorf("send_sms to pattern: %v", got)
			}
			if got := props["text"].(map[string]any)["maxLength"]; got != 160.0 {
				t.Errorf("send_sms text maxLength: %v", got)
			}
			if sms.OutputSchema != nil {
				t.Errorf("send_sms output schema: %v, want none", sms.OutputSchema)
			}

			lc := tools[LookupCustomer]
			if lc.Annotations == nil || !lc.Annotations.ReadOnlyHint || !lc.Annotations.IdempotentHint {
				t.Errorf("lookup_customer annotations: %+v, want readOnlyHint and idempotentHint", lc.Annotations)
			}
			out = asJSON(t, lc.OutputSchema)
			if diff := cmp.Diff([]any{"customer_id", "name", "tier"}, out["required"]); diff != "" {
				t.Errorf("lookup_customer output required (-want +got):\n%s", diff)
			}
			tier := out["properties"].(map[string]any)["tier"].(map[string]any)
			if diff := cmp.Diff([]any{"basic", "gold", "platinum"}, tier["enum"]); diff != "" {
				t.Errorf("lookup_customer tier enum (-want +got):\n%s", diff)
			}

			res := call(t, connect(t, srv, "", nil), LookupCustomer, map[string]any{"customer_id": "C-2"}, nil)
			want := map[string]any{"customer_id": "C-2", "name": "Grace Hopper", "tier": "gold"}
			if diff := cmp.Diff(want, res.StructuredContent); diff != "" || res.IsError {
				t.Errorf("lookup_customer C-2: isError %v, structuredContent (-want +got):\n%s", res.IsError, diff)
			}
		})
	}
}

func TestClientFollowingCursorsSeesEveryTool(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			opts := m.opts
			opts.PageSize = 1
			srv := start(t, opts)
			cs := connect(t, srv, "", nil)

			first, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(first.Tools) != 1 || first.NextCursor == "" {
				t.Fatalf("first page: %d tools, nextCursor %q; want 1 and a cursor", len(first.Tools), first.NextCursor)
			}

			var names []string
			for tl, err := range cs.Tools(t.Context(), nil) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tl.Name)
			}
			if diff := cmp.Diff([]string{CreateTicket, LookupCustomer, SendSMS}, names); diff != "" {
				t.Errorf("tools over all pages (-want +got):\n%s", diff)
			}
			// One page per request, the first page twice.
			if got := srv.ToolsListed(); got != 4 {
				t.Errorf("tools/list requests: got %d, want 4", got)
			}
		})
	}
}

func TestIdempotencyKeyArrivesInMeta(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := start(t, m.opts)
			cs := connect(t, srv, "", nil)
			args := map[string]any{"title": "Printer on fire", "priority": "high"}
			call(t, cs, CreateTicket, args, mcp.Meta{mcpmeta.IdempotencyKey: "key-1", "com.example/trace": "t-9"})

			calls := srv.Calls()
			if len(calls) != 1 {
				t.Fatalf("calls: %+v", calls)
			}
			c := calls[0]
			if c.Tool != CreateTicket || c.Meta[mcpmeta.IdempotencyKey] != "key-1" || c.Meta["com.example/trace"] != "t-9" {
				t.Errorf("call: %+v", c)
			}
			var gotArgs map[string]any
			if err := json.Unmarshal(c.Arguments, &gotArgs); err != nil || !cmp.Equal(args, gotArgs) {
				t.Errorf("arguments: %s (%v), want %v", c.Arguments, err, args)
			}
			if c.ProtocolVersion != m.revision {
				t.Errorf("protocol version: got %q, want %q", c.ProtocolVersion, m.revision)
			}
			// Under 2026-07-28 the SDK client adds its own keys to _meta.
			_, sdkKey := c.Meta[mcp.MetaKeyProtocolVersion]
			if sdkKey != (m.revision >= newestRevision) {
				t.Errorf("_meta has %s: %v under %s", mcp.MetaKeyProtocolVersion, sdkKey, m.revision)
			}
		})
	}
}

func TestCreateTicketCreatesOneTicketPerKey(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := start(t, m.opts)
			cs := connect(t, srv, "", nil)
			args := map[string]any{"title": "Printer on fire", "priority": "high"}
			key := mcp.Meta{mcpmeta.IdempotencyKey: "key-1"}

			first := call(t, cs, CreateTicket, args, key)
			again := call(t, connect(t, srv, "", nil), CreateTicket, args, key)
			if diff := cmp.Diff(map[string]any{"ticket_id": "T-1", "created": true}, first.StructuredContent); diff != "" {
				t.Errorf("first (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]any{"ticket_id": "T-1", "created": false}, again.StructuredContent); diff != "" {
				t.Errorf("same key again (-want +got):\n%s", diff)
			}

			other := call(t, cs, CreateTicket, args, mcp.Meta{mcpmeta.IdempotencyKey: "key-2"})
			call(t, cs, CreateTicket, args, nil)
			call(t, cs, CreateTicket, args, nil)
			if got := other.StructuredContent.(map[string]any)["ticket_id"]; got != "T-2" {
				t.Errorf("other key: ticket %v, want T-2", got)
			}

			reused := call(t, cs, CreateTicket, map[string]any{"title": "Other", "priority": "low"}, key)
			if !reused.IsError || !strings.Contains(text(reused), "other arguments") {
				t.Errorf("same key, other arguments: isError %v, %q", reused.IsError, text(reused))
			}

			want := []Ticket{
				{ID: "T-1", Title: "Printer on fire", Priority: "high", IdempotencyKey: "key-1"},
				{ID: "T-2", Title: "Printer on fire", Priority: "high", IdempotencyKey: "key-2"},
				{ID: "T-3", Title: "Printer on fire", Priority: "high"},
				{ID: "T-4", Title: "Printer on fire", Priority: "high"},
			}
			if diff := cmp.Diff(want, srv.Tickets()); diff != "" {
				t.Errorf("tickets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSendSMSSendsEveryCall(t *testing.T) {
	srv := start(t, Options{})
	cs := connect(t, srv, "", nil)
	args := map[string]any{"to": "+4915112345678", "text": "Your code is 1234"}
	key := mcp.Meta{mcpmeta.IdempotencyKey: "key-1"}
	first := call(t, cs, SendSMS, args, key)
	call(t, cs, SendSMS, args, key)
	if first.IsError || text(first) != "message 1 sent to +4915112345678" {
		t.Errorf("first: isError %v, %q", first.IsError, text(first))
	}
	want := []SMS{{To: "+4915112345678", Text: "Your code is 1234"}, {To: "+4915112345678", Text: "Your code is 1234"}}
	if diff := cmp.Diff(want, srv.SMSSent()); diff != "" {
		t.Errorf("sent (-want +got):\n%s", diff)
	}
}

// httpRecorder is an http.RoundTripper that keeps the status and
// Retry-After header of the last POST's response: what an MCP client can
// learn only below the SDK.
type httpRecorder struct {
	mu         sync.Mutex
	status     int
	retryAfter string
}

func (r *httpRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost {
		r.mu.Lock()
		r.status, r.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
		r.mu.Unlock()
	}
	return resp, err
}

func (r *httpRecorder) last() (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, r.retryAfter
}

func TestRefusalsAsTheSDKClientSeesThem(t *testing.T) {
	tests := []struct {
		name    string
		refusal Refusal
		// err is the CallTool error's text; rejected whether it holds a
		// *jsonrpc.Error with code -32005 ("rejected by transport").
		err      string
		rejected bool
		// next is the next call's error text, "" if it succeeds.
		next string
	}{
		{
			name:     "503",
			refusal:  Unavailable,
			err:      `calling "tools/call": rejected by transport: sending "tools/call": Service Unavailable`,
			rejected: true,
		},
		{
			name:     "429",
			refusal:  TooManyRequests(7 * time.Second),
			err:      `calling "tools/call": rejected by transport: sending "tools/call": Too Many Requests`,
			rejected: true,
		},
		{
			name:    "401 closes the session",
			refusal: Unauthorized,
			err:     `calling "tools/call": sending "tools/call": Unauthorized`,
			next:    `connection closed: calling "tools/call": client is closing: sending "tools/call": Unauthorized`,
		},
	}
	for _, m := range modes {
		for _, tt := range tests {
			t.Run(m.name+"/"+tt.name, func(t *testing.T) {
				srv := start(t, m.opts)
				rec := &httpRecorder{}
				cs := connectVia(t, &mcp.StreamableClientTransport{Endpoint: srv.URL(), HTTPClient: &http.Client{Transport: rec}}, "", nil)
				args := map[string]any{"customer_id": "C-1"}
				srv.RefuseCalls(1, tt.refusal)

				_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: LookupCustomer, Arguments: args})
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error: got %v, want %s", err, tt.err)
				}
				var werr *jsonrpc.Error
				rejected := errors.As(err, &werr) && werr.Code == -32005
				if rejected != tt.rejected {
					t.Errorf("error %v: rejected (-32005) %v, want %v", err, rejected, tt.rejected)
				}
				if status, retryAfter := rec.last(); status != tt.refusal.Status || retryAfter != tt.refusal.RetryAfter {
					t.Errorf("HTTP below the SDK: %d Retry-After %q, want %d %q", status, retryAfter, tt.refusal.Status, tt.refusal.RetryAfter)
				}

				_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: LookupCustomer, Arguments: args})
				switch {
				case tt.next == "" && err != nil:
					t.Errorf("next call: %v", err)
				case tt.next != "" && (err == nil || err.Error() != tt.next || !errors.Is(err, mcp.ErrConnectionClosed)):
					t.Errorf("next call: got %v, want %s (mcp.ErrConnectionClosed)", err, tt.next)
				}

				// The client did not retry: one refused call, then the next
				// one if the session survived.
				calls := srv.Calls()
				if len(calls) == 0 || calls[0].Refused != tt.refusal.Status || calls[0].Tool != LookupCustomer || calls[0].ProtocolVersion != m.revision {
					t.Fatalf("calls: %+v", calls)
				}
				wantCalls := 2
				if tt.next != "" {
					wantCalls = 1
				}
				if len(calls) != wantCalls {
					t.Errorf("calls: got %d, want %d: %+v", len(calls), wantCalls, calls)
				}
			})
		}
	}
}

func TestArgumentsFailingTheSchemaComeBackAsIsError(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := start(t, m.opts)
			cs := connect(t, srv, "", nil)
			res := call(t, cs, CreateTicket, map[string]any{"title": "", "priority": "urgent"}, nil)
			if !res.IsError || !strings.HasPrefix(text(res), `validating "arguments": `) {
				t.Errorf("isError %v, text %q", res.IsError, text(res))
			}
			if got := srv.Tickets(); len(got) != 0 {
				t.Errorf("tickets: %+v", got)
			}
		})
	}
}

func TestUnknownToolIsInvalidParams(t *testing.T) {
	wantErr := map[string]string{
		"sessions":  `calling "tools/call": unknown tool "create_ticket"`,
		"stateless": `calling "tools/call": sending "tools/call": unknown tool "create_ticket": rejected by transport: Bad Request`,
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := start(t, m.opts)
			cs := connect(t, srv, "", nil)
			if err := srv.RemoveTool(CreateTicket); err != nil {
				t.Fatal(err)
			}
			if _, ok := listTools(t, cs)[CreateTicket]; ok {
				t.Errorf("tools/list still has %s", CreateTicket)
			}
			_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: CreateTicket, Arguments: map[string]any{"title": "x", "priority": "low"}})
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || err.Error() != wantErr[m.name] {
				t.Errorf("error: %v (%#v), want -32602 %s", err, werr, wantErr[m.name])
			}
			if calls := srv.Calls(); len(calls) != 1 || calls[0].Tool != CreateTicket {
				t.Errorf("calls: %+v", calls)
			}
		})
	}
}

func TestSchemaChangeShowsOnNextList(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := start(t, m.opts)
			cs, changed := connectListening(t, srv)

			input := json.RawMessage(`{"type":"object","properties":{"title":{"type":"string","maxLength":5},"priority":{"type":"string"}},"required":["title"]}`)
			output := json.RawMessage(`{"type":"object","properties":{"ticket_id":{"type":"string"}}}`)
			for _, err := range []error{
				srv.SetInputSchema(CreateTicket, input),
				srv.SetOutputSchema(CreateTicket, output),
				srv.SetAnnotations(CreateTicket, &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "changed"}),
			} {
				if err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-changed:
			case <-time.After(guard):
				t.Fatal("no notifications/tools/list_changed")
			}

			ct := listTools(t, cs)[CreateTicket]
			if diff := cmp.Diff(asJSON(t, input), asJSON(t, ct.InputSchema)); diff != "" {
				t.Errorf("input schema (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(asJSON(t, output), asJSON(t, ct.OutputSchema)); diff != "" {
				t.Errorf("output schema (-want +got):\n%s", diff)
			}
			if ct.Annotations == nil || !ct.Annotations.ReadOnlyHint || ct.Annotations.Title != "changed" {
				t.Errorf("annotations: %+v", ct.Annotations)
			}
			// Calls are checked against the new schema.
			res := call(t, cs, CreateTicket, map[string]any{"title": "too long"}, nil)
			if !res.IsError {
				t.Errorf("a title over the new maxLength: %+v", res)
			}

			if err := srv.SetInputSchema(CreateTicket, json.RawMessage(`{"type":"string"}`)); err == nil {
				t.Error("SetInputSchema accepted a schema not of type object")
			}
			if err := srv.SetOutputSchema(SendSMS, json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)); err != nil {
				t.Errorf("output schema for send_sms: %v", err)
			}
			if err := srv.SetOutputSchema(LookupCustomer, nil); err != nil {
				t.Fatal(err)
			}
			tools := listTools(t, cs)
			if tools[SendSMS].OutputSchema == nil || tools[LookupCustomer].OutputSchema != nil {
				t.Errorf("output schemas: send_sms %v, lookup_customer %v", tools[SendSMS].OutputSchema, tools[LookupCustomer].OutputSchema)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// connectListening opens a client session that listens for
// notifications/tools/list_changed, and returns once the server will deliver
// them, with a channel that receives one value per notification. With
// sessions they come on the standalone SSE stream (a GET), which the server
// has registered once the client has its 200; under 2026-07-28 they come on
// the subscriptions/listen stream that Connect opens, which the server
// acknowledges with notifications/subscriptions/acknowledged. A notification
// sent before either would be lost.
func connectListening(t *testing.T, srv *Server) (*mcp.ClientSession, <-chan struct{}) {
	t.Helper()
	changed := make(chan struct{}, 100)
	listening := make(chan struct{})
	var once sync.Once
	ready := func() { once.Do(func() { close(listening) }) }

	transport := &mcp.StreamableClientTransport{
		Endpoint: srv.URL(),
		HTTPClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := http.DefaultTransport.RoundTrip(r)
			if err == nil && r.Method == http.MethodGet && resp.StatusCode == http.StatusOK {
				ready()
			}
			return resp, err
		})},
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				ready()
			}
			return next(ctx, method, req)
		}
	})
	cs, err := c.Connect(t.Context(), transport, nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	select {
	case <-listening:
	case <-time.After(guard):
		t.Fatal("the client never started listening for notifications")
	}
	return cs, changed
}

func TestClientDropsToolsItFindsInvalid(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := start(t, m.opts)
			// x-mcp-header applies to primitive properties only; the SDK's
			// server panics on adding this tool, its client drops it.
			srv.ListAlso(&mcp.Tool{Name: "bad_header", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"A"}}}`)})
			srv.ListAlso(nil)
			var (
				mu       sync.Mutex
				rawCount int
			)
			c := mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "1"}, nil)
			// A sending middleware sees the result before ListTools filters it.
			c.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					res, err := next(ctx, method, req)
					if lr, ok := res.(*mcp.ListToolsResult); ok {
						mu.Lock()
						rawCount = len(lr.Tools)
						mu.Unlock()
					}
					return res, err
				}
			})
			cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL()}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(res.Tools) != 3 || rawCount != 5 {
				t.Errorf("ListTools returned %d tools (want 3), the wire held %d (want 5)", len(res.Tools), rawCount)
			}
		})
	}
}

// The SDK refuses a request to a loopback server whose Host header is not
// a loopback name (DNS rebinding protection); Options.Hosts lets the names
// it lists through, and only those.
func TestHostsTheServerAnswersTo(t *testing.T) {
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	status := func(srv *Server, host string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL(), strings.NewReader(initialize))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		name  string
		hosts []string
		host  string
		want  int
	}{
		{"loopback, no hosts", nil, "127.0.0.1", http.StatusOK},
		{"a name, no hosts", nil, "mcp.internal.test", http.StatusForbidden},
		{"a listed name", []string{"mcp.internal.test"}, "MCP.internal.test", http.StatusOK},
		{"loopback, with hosts", []string{"mcp.internal.test"}, "localhost", http.StatusOK},
		{"another name, with hosts", []string{"mcp.internal.test"}, "evil.test", http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := start(t, Options{Stateless: true, Hosts: c.hosts})
			host := c.host + strings.TrimSuffix(strings.TrimPrefix(srv.URL(), "http://127.0.0.1"), "/mcp") // and the port
			if got := status(srv, host); got != c.want {
				t.Fatalf("Host %s: HTTP %d, want %d", host, got, c.want)
			}
		})
	}
}
