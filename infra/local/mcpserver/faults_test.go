package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/shared/mcpmeta"
)

func TestBrokenOutputReachesTheClient(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := start(t, m.opts)
			cs := connect(t, srv, "", nil)
			if err := srv.BreakOutput(CreateTicket, 1); err != nil {
				t.Fatal(err)
			}
			args := map[string]any{"title": "Printer on fire", "priority": "high"}
			broken := call(t, cs, CreateTicket, args, nil)
			// The SDK client does not check structuredContent against the
			// tool's output schema: the caller must.
			if broken.IsError || !cmp.Equal(map[string]any{"unexpected": true}, broken.StructuredContent) {
				t.Errorf("broken result: isError %v, structuredContent %v", broken.IsError, broken.StructuredContent)
			}
			next := call(t, cs, CreateTicket, args, nil)
			if !cmp.Equal(map[string]any{"ticket_id": "T-2", "created": true}, next.StructuredContent) {
				t.Errorf("next result: %v", next.StructuredContent)
			}
			if got := len(srv.Tickets()); got != 2 {
				t.Errorf("tickets: got %d, want 2 (the tool ran both times)", got)
			}
		})
	}
}

func TestFailCallsAnswersIsErrorWithoutRunningTheTool(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := start(t, m.opts)
			cs := connect(t, srv, "", nil)
			if err := srv.FailCalls(SendSMS, "carrier unreachable", 2); err != nil {
				t.Fatal(err)
			}
			args := map[string]any{"to": "+15550100", "text": "hi"}
			for range 2 {
				res := call(t, cs, SendSMS, args, nil)
				if !res.IsError || text(res) != "carrier unreachable" {
					t.Errorf("isError %v, text %q", res.IsError, text(res))
				}
			}
			if res := call(t, cs, SendSMS, args, nil); res.IsError {
				t.Errorf("third call: %q", text(res))
			}
			if got := len(srv.SMSSent()); got != 1 {
				t.Errorf("sent: got %d, want 1", got)
			}
		})
	}
}

func TestDelayEndsWhenTheClientGivesUp(t *testing.T) {
	tests := []struct {
		name     string
		opts     Options
		revision string
	}{
		// The client's notifications/cancelled ends the handler's context.
		{"sessions", Options{}, "2025-11-25"},
		// PropagateRequestCancellation ties the handler to the POST.
		{"stateless 2026-07-28", Options{Stateless: true}, "2026-07-28"},
		// Neither reaches the handler; the delay watches the POST itself.
		{"stateless 2025-11-25", Options{Stateless: true}, "2025-11-25"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The client gives up as soon as the server has the call.
			ctx, giveUp := context.WithCancel(t.Context())
			defer giveUp()
			opts := tt.opts
			opts.OnCall = func(Call) { giveUp() }
			srv := start(t, opts)
			cs := connect(t, srv, tt.revision, nil)
			ended, err := srv.Delay(CreateTicket, time.Hour, 1)
			if err != nil {
				t.Fatal(err)
			}
			args := map[string]any{"title": "Printer on fire", "priority": "high"}
			key := mcp.Meta{mcpmeta.IdempotencyKey: "key-1"}

			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: CreateTicket, Arguments: args, Meta: key})
			// The SDK returns the context's own error, unwrapped
			// (context.DeadlineExceeded when a timeout ends it).
			if err != context.Canceled {
				t.Errorf("error: %#v, want context.Canceled", err)
			}
			select {
			case err := <-ended:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("delay ended with %v, want context.Canceled", err)
				}
			case <-time.After(guard):
				t.Fatal("the delay did not end when the client gave up")
			}

			// The ticket was created before the answer was held back; the
			// retry with the same key finds it.
			res := call(t, cs, CreateTicket, args, key)
			if !cmp.Equal(map[string]any{"ticket_id": "T-1", "created": false}, res.StructuredContent) {
				t.Errorf("retry: %v", res.StructuredContent)
			}
		})
	}
}

func TestDelayRunsItsLength(t *testing.T) {
	srv := start(t, Options{})
	cs := connect(t, srv, "", nil)
	ended, err := srv.Delay(LookupCustomer, time.Millisecond, 1)
	if err != nil {
		t.Fatal(err)
	}
	res := call(t, cs, LookupCustomer, map[string]any{"customer_id": "C-1"}, nil)
	if res.IsError {
		t.Errorf("result: %q", text(res))
	}
	if err := <-ended; err != nil {
		t.Errorf("delay ended with %v, want nil", err)
	}
}

func TestStopEndsDelaysAndStreams(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			received := make(chan Call, 10)
			opts := m.opts
			opts.OnCall = func(c Call) { received <- c }
			srv, err := Start(opts)
			if err != nil {
				t.Fatal(err)
			}
			// A session listening for notifications keeps a stream open.
			cs, _ := connectListening(t, srv)
			ended, err := srv.Delay(LookupCustomer, time.Hour, 1)
			if err != nil {
				t.Fatal(err)
			}
			answered := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: LookupCustomer, Arguments: map[string]any{"customer_id": "C-1"}})
				answered <- err
			}()
			select {
			case <-received:
			case <-time.After(guard):
				t.Fatal("the call never arrived")
			}

			ctx, cancel := context.WithTimeout(t.Context(), guard)
			defer cancel()
			if err := srv.Stop(ctx); err != nil {
				t.Errorf("Stop: %v", err)
			}
			if err := <-ended; !errors.Is(err, ErrStopped) {
				t.Errorf("delay ended with %v, want ErrStopped", err)
			}
			select {
			case err := <-answered:
				if err == nil {
					t.Error("the pending call got an answer")
				}
				t.Logf("the pending call ended with %v", err)
			case <-time.After(guard):
				t.Error("the pending call did not end")
			}
			if err := srv.Stop(ctx); err != nil {
				t.Errorf("second Stop: %v", err)
			}
		})
	}
}

func TestProtocolRevisions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		// ask is the revision the client asks for, "" for the SDK's newest.
		ask string
		// want is the negotiated revision; err, if set, Connect's error.
		want string
		err  string
	}{
		{
			name: "sessions, every revision: the newest needs stateless",
			opts: Options{},
			want: "2025-11-25",
		},
		{
			name: "sessions, limited to 2025-11-25",
			opts: Options{ProtocolVersions: []string{"2025-11-25"}},
			want: "2025-11-25",
		},
		{
			name: "stateless, every revision",
			opts: Options{Stateless: true},
			want: "2026-07-28",
		},
		{
			name: "stateless, limited to 2026-07-28",
			opts: Options{Stateless: true, ProtocolVersions: []string{"2026-07-28"}},
			want: "2026-07-28",
		},
		{
			name: "stateless, limited to 2025-11-25: server/discover refused, initialize",
			opts: Options{Stateless: true, ProtocolVersions: []string{"2025-11-25"}},
			want: "2025-11-25",
		},
		{
			name: "client asks for 2025-11-25",
			opts: Options{Stateless: true},
			ask:  "2025-11-25",
			want: "2025-11-25",
		},
		{
			name: "client asks for 2025-06-18 of a server limited to 2025-11-25: the server's answer stands",
			opts: Options{ProtocolVersions: []string{"2025-11-25"}},
			ask:  "2025-06-18",
			want: "2025-11-25",
		},
		{
			name: "client asks for 2025-11-25 of a server limited to 2026-07-28",
			opts: Options{Stateless: true, ProtocolVersions: []string{"2026-07-28"}},
			ask:  "2025-11-25",
			err:  `sending "notifications/initialized": Bad Request`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := start(t, tt.opts)
			c := mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "1"}, nil)
			cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL()}, &mcp.ClientSessionOptions{ProtocolVersion: tt.ask})
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Connect: got %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			defer cs.Close()
			// The client learns the revision from InitializeResult, which
			// Connect fills from server/discover or initialize.
			if got := cs.InitializeResult().ProtocolVersion; got != tt.want {
				t.Errorf("negotiated: got %q, want %q", got, tt.want)
			}
			call(t, cs, LookupCustomer, map[string]any{"customer_id": "C-1"}, nil)
			c0 := srv.Calls()[0]
			if c0.ProtocolVersion != tt.want {
				t.Errorf("server recorded %q, want %q", c0.ProtocolVersion, tt.want)
			}
			if hasSession := c0.SessionID != ""; hasSession != !tt.opts.Stateless || cs.ID() != c0.SessionID {
				t.Errorf("session: server %q, client %q; stateless %v", c0.SessionID, cs.ID(), tt.opts.Stateless)
			}
		})
	}
}

func TestStartRefusesOptionsItCannotServe(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		err  string
	}{
		{"unknown revision", Options{ProtocolVersions: []string{"2024-01-01"}}, "not one the SDK supports"},
		{"only 2026-07-28 with sessions", Options{ProtocolVersions: []string{"2026-07-28"}}, "set Stateless"},
		{"negative page size", Options{PageSize: -1}, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := Start(tt.opts)
			if err == nil {
				_ = srv.Stop(t.Context())
				t.Fatal("Start accepted the options")
			}
			if !strings.Contains(err.Error(), tt.err) {
				t.Errorf("error %q does not say %q", err, tt.err)
			}
		})
	}
}

func TestClientCachesToolsListUnder2026(t *testing.T) {
	srv := start(t, Options{Stateless: true, ListTTL: time.Minute})
	plain := connect(t, srv, "", nil)
	maxLength := func(cs *mcp.ClientSession) any {
		in := asJSON(t, listTools(t, cs)[CreateTicket].InputSchema)
		return in["properties"].(map[string]any)["title"].(map[string]any)["maxLength"]
	}

	maxLength(plain)
	maxLength(plain)
	if got := srv.ToolsListed(); got != 1 {
		t.Fatalf("tools/list requests after two lists: got %d, want 1 (the second from the client's cache)", got)
	}

	listening, changed := connectListening(t, srv)
	maxLength(listening)
	if err := srv.SetInputSchema(CreateTicket, []byte(`{"type":"object","properties":{"title":{"type":"string","maxLength":5}}}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(guard):
		t.Fatal("no notifications/tools/list_changed")
	}
	// The notification emptied the listening session's cache.
	if got := maxLength(listening); got != 5.0 {
		t.Errorf("listening session after the change: maxLength %v, want 5", got)
	}
	// The other session still answers from its cache until the TTL ends.
	if got := maxLength(plain); got != 200.0 {
		t.Errorf("plain session after the change: maxLength %v, want the cached 200", got)
	}
	// A new session has an empty cache.
	if got := maxLength(connect(t, srv, "", nil)); got != 5.0 {
		t.Errorf("new session: maxLength %v, want 5", got)
	}
	if got := srv.ToolsListed(); got != 4 {
		t.Errorf("tools/list requests: got %d, want 4", got)
	}
}

func TestClientDoesNotCacheToolsListUnder2025(t *testing.T) {
	srv := start(t, Options{ListTTL: time.Minute})
	cs := connect(t, srv, "", nil)
	for range 2 {
		if res, err := cs.ListTools(t.Context(), nil); err != nil || res.TTLMs != 60000 {
			t.Fatalf("ListTools: %v, %v", res, err)
		}
	}
	if got := srv.ToolsListed(); got != 2 {
		t.Errorf("tools/list requests: got %d, want 2", got)
	}
}

func TestCallsRecordsEveryCallInOrder(t *testing.T) {
	srv := start(t, Options{})
	cs := connect(t, srv, "", nil)
	srv.RefuseCalls(1, Unavailable)
	_, _ = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: SendSMS, Arguments: map[string]any{"to": "1", "text": "a"}})
	call(t, cs, SendSMS, map[string]any{"to": "1", "text": "b"}, nil)
	call(t, cs, LookupCustomer, map[string]any{"customer_id": "C-9"}, nil)
	var got []string
	for _, c := range srv.Calls() {
		got = append(got, fmt.Sprintf("%s %s refused=%d", c.Tool, c.Arguments, c.Refused))
	}
	want := []string{
		`send_sms {"text":"a","to":"1"} refused=503`,
		`send_sms {"text":"b","to":"1"} refused=0`,
		`lookup_customer {"customer_id":"C-9"} refused=0`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("calls:\ngot  %q\nwant %q", got, want)
	}
}

// bodies is an http.RoundTripper that keeps a copy of every response body
// the client reads.
type bodies struct {
	mu   sync.Mutex
	read bytes.Buffer
}

func (b *bodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(resp.Body, lockedWriter{b}), resp.Body}
	}
	return resp, err
}

type lockedWriter struct{ b *bodies }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	return w.b.read.Write(p)
}

// AnswerEmptyCursor: the next tools/list answer carries "nextCursor": ""
// on the wire in place of its cursor, which the SDK client reads as the
// end of the listing (the later pages' tools unseen); the answer after it
// has its cursor again.
func TestAnswerEmptyCursor(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			opts := m.opts
			opts.PageSize = 1
			srv := start(t, opts)
			seen := &bodies{}
			cs := connectVia(t, &mcp.StreamableClientTransport{Endpoint: srv.URL(), HTTPClient: &http.Client{Transport: seen}}, "", nil)
			srv.AnswerEmptyCursor(1)
			first, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(first.Tools) != 1 || first.NextCursor != "" {
				t.Fatalf("first page: %d tools, nextCursor %q; want 1 and none the SDK can tell", len(first.Tools), first.NextCursor)
			}
			seen.mu.Lock()
			wire := seen.read.String()
			seen.mu.Unlock()
			if !strings.Contains(wire, `"nextCursor":""`) {
				t.Fatalf("the answer does not carry an empty nextCursor:\n%s", wire)
			}
			again, err := cs.ListTools(t.Context(), nil)
			if err != nil || again.NextCursor == "" {
				t.Fatalf("the next answer: nextCursor %q, %v; want its cursor", again.NextCursor, err)
			}
		})
	}
}
