package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/shared/tracing"
)

// Options configures a Server. The zero value serves every protocol revision
// the SDK supports, with sessions, the SDK's default page size and no cache
// hint.
type Options struct {
	// ProtocolVersions, if not empty, limits the protocol revisions the server
	// negotiates to these, e.g. []string{"2025-11-25"}. Each must be one of
	// mcp.SupportedProtocolVersions(). It is the SDK's
	// ServerOptions.SupportedProtocolVersions.
	ProtocolVersions []string
	// Stateless serves without sessions: no Mcp-Session-Id header, every
	// POST handled by a temporary session (StreamableHTTPOptions.Stateless).
	// The SDK serves revision 2026-07-28 only this way; with sessions it
	// negotiates 2025-11-25 at most.
	Stateless bool
	// PageSize is the most tools one tools/list page holds; 0 means the
	// SDK's default (mcp.DefaultPageSize, 1000).
	PageSize int
	// ListTTL is the ttlMs hint on tools/list results (SEP-2549), rounded
	// down to milliseconds. A client on revision 2026-07-28 or later serves
	// tools/list from its own cache while the hint lasts; 0 (the default)
	// means no caching.
	ListTTL time.Duration
	// OnCall, if set, is called with each tools/call request as it is
	// recorded (see Calls), before a tool runs or a refusal is sent. It runs
	// on the request's goroutine and should not block; tests use it to learn
	// that a call has arrived.
	OnCall func(Call)
	// Hosts are names, besides loopback ones (localhost, 127.0.0.0/8,
	// ::1), that the server answers to in a request's Host header. The
	// SDK's DNS rebinding protection refuses, with 403, a request to a
	// loopback server whose Host is not a loopback name; a client that
	// reaches this server by another name resolving to 127.0.0.1 (the
	// local stack's mcp.internal.test) needs it listed here. Every other
	// Host is refused as the SDK refuses it.
	Hosts []string
	// Logger receives the SDK's logs; nil discards them.
	Logger *slog.Logger
	// BearerTokens, if not empty, makes the server require a bearer
	// token (RFC 6750) on every request: one of these, until
	// SetBearerTokens replaces them. A request without an Authorization
	// header is answered 401 with `WWW-Authenticate: Bearer
	// realm="mcpserver"`; one with another token, 401 with
	// `error="invalid_token"` (RFC 6750 §3.1: expired, revoked or
	// malformed). Empty: the open mode, which asks for nothing.
	BearerTokens []string
	// Tracer, if set, opens one server span per tools/call under the W3C
	// trace context the call carried (its _meta's traceparent and
	// tracestate, else its POST's headers), and flushes it before the
	// call is answered. nil: no spans; the context is still recorded
	// (Call.Traceparent).
	Tracer *tracing.Tracer
}

// newestRevision is the first MCP revision (SEP-2575, sessionless) that the
// SDK serves over streamable HTTP only when StreamableHTTPOptions.Stateless
// is set; revisions compare as strings.
const newestRevision = "2026-07-28"

// Server is a running MCP server on 127.0.0.1. Its methods are safe for
// concurrent use.
type Server struct {
	mcp    *mcp.Server
	http   *http.Server
	url    string
	onCall func(Call)
	tracer *tracing.Tracer
	logger *slog.Logger

	// stopping ends every pending delay when Stop is called.
	stopping context.Context
	stop     context.CancelFunc
	served   chan struct{}
	stopOnce sync.Once
	stopErr  error

	// handlers counts the HTTP handlers running; idle is closed when it is
	// 0 after Stop began (closing).
	hmu      sync.Mutex
	handlers int
	closing  bool
	idle     chan struct{}

	mu       sync.Mutex
	tools    map[string]*tool
	refusals []Refusal
	// bearer holds the accepted bearer tokens; nil: the open mode.
	bearer   []string
	calls    []Call
	requests []Request
	lists    int
	tickets  []Ticket
	sms      []SMS
	extra    []*mcp.Tool // listed, not registered (ListAlso)
	// emptyCursors counts the tools/list answers still to carry an empty
	// nextCursor (AnswerEmptyCursor).
	emptyCursors int
}

// Call is one tools/call request the server received.
type Call struct {
	// Tool is the requested tool's name (params.name).
	Tool string
	// Arguments is params.arguments as sent.
	Arguments json.RawMessage
	// Meta is the whole params._meta object, nil if absent. On revision
	// 2026-07-28 the SDK client adds its own io.modelcontextprotocol/ keys.
	Meta map[string]any
	// ProtocolVersion is the revision the request was made under: the
	// negotiated one for a call that reached the MCP layer, the
	// Mcp-Protocol-Version header for a refused one.
	ProtocolVersion string
	// SessionID is the Mcp-Session-Id of the call, "" without sessions.
	SessionID string
	// Refused is the HTTP status the call was refused with before reaching
	// the MCP layer (see RefuseCalls); 0 if it reached it.
	Refused int
	// Traceparent and Tracestate are the W3C trace context the call
	// carried, as received, valid or not: its _meta's "traceparent" and
	// "tracestate" (the bare keys the MCP specification reserves,
	// SEP-414) when _meta has a traceparent, else the traceparent and
	// tracestate headers of the POST that carried it; "" when absent.
	Traceparent string
	Tracestate  string
	// TraceHeaders are the traceparent, tracestate and baggage headers of
	// the POST that carried the call, as received; nil when it had none.
	TraceHeaders http.Header
	// Span is the context of the server span opened for the call
	// (Options.Tracer); invalid without a tracer, and for a refused call.
	Span trace.SpanContext
}

// Start starts a server on a free 127.0.0.1 port, serving the tools
// create_ticket, send_sms and lookup_customer over streamable HTTP at URL.
// Stop it with Stop.
func Start(opts Options) (*Server, error) {
	for _, v := range opts.ProtocolVersions {
		if !slices.Contains(mcp.SupportedProtocolVersions(), v) {
			return nil, fmt.Errorf("protocol version %q: not one the SDK supports (%v)", v, mcp.SupportedProtocolVersions())
		}
	}
	if !opts.Stateless && len(opts.ProtocolVersions) > 0 && !slices.ContainsFunc(opts.ProtocolVersions, func(v string) bool { return v < newestRevision }) {
		return nil, fmt.Errorf("protocol versions %v: the SDK serves %s and later only without sessions; set Stateless", opts.ProtocolVersions, newestRevision)
	}
	if opts.PageSize < 0 {
		return nil, fmt.Errorf("page size %d: negative", opts.PageSize)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		onCall: opts.OnCall,
		tracer: opts.Tracer,
		logger: logger,
		tools:  map[string]*tool{},
		bearer: slices.Clone(opts.BearerTokens),
		served: make(chan struct{}),
		idle:   make(chan struct{}),
	}
	s.stopping, s.stop = context.WithCancel(context.Background())
	ttl := int(opts.ListTTL / time.Millisecond)
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "toolgate-local-mcpserver", Version: "1"}, &mcp.ServerOptions{
		Logger:                    logger,
		PageSize:                  opts.PageSize,
		SupportedProtocolVersions: opts.ProtocolVersions,
		SetCacheable: func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
			if _, ok := req.(*mcp.ListToolsRequest); ok {
				c.TTLMs = ttl
			}
		},
	})
	s.mcp.AddReceivingMiddleware(s.record)
	for _, t := range defaultTools(s) {
		if err := s.register(t); err != nil {
			return nil, fmt.Errorf("register %s: %w", t.def.Name, err)
		}
	}

	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:                    opts.Stateless,
		Logger:                       logger,
		PropagateRequestCancellation: true,
		// hostsOnly below does the SDK's check, with opts.Hosts allowed.
		DisableLocalhostProtection: len(opts.Hosts) > 0,
	})
	mux := http.NewServeMux()
	var h http.Handler = handler
	if opts.Stateless {
		h = withRequestDone(h)
	}
	if len(opts.Hosts) > 0 {
		h = hostsOnly(opts.Hosts, h)
	}
	mux.Handle("/mcp", s.track(s.refuse(h)))
	// The same endpoint with the credential in its path (PathURL).
	mux.Handle("/s/{secret}/mcp", s.track(s.refuse(h)))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("listen: %w", err)
	}
	s.url = "http://" + ln.Addr().String() + "/mcp"
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.served)
		if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			logger.Error("mcpserver: serve", "error", err)
		}
	}()
	return s, nil
}

// URL is the streamable HTTP endpoint, http://127.0.0.1:<port>/mcp.
func (s *Server) URL() string { return s.url }

// PathURL is the same endpoint for a client that presents its credential
// in the URL's path, as some hosted MCP servers take it:
// http://127.0.0.1:<port>/s/{secret}/mcp, its second path segment
// literally "{secret}" (toolset.SecretSegment), where the client puts the
// token. In the bearer-token mode such a request needs one of the
// accepted tokens there and no Authorization header.
func (s *Server) PathURL() string {
	return strings.TrimSuffix(s.url, "/mcp") + "/s/{secret}/mcp"
}

// Stop ends pending delays, closes the MCP sessions, the listener and every
// connection, and waits for the running handlers to return or ctx to end. It
// is safe to call more than once.
//
// It does not use http.Server.Shutdown: that waits up to 5 s for a
// connection a client has opened but not yet used (a spare one in its
// pool), and an SSE stream never becomes idle.
func (s *Server) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.stop()
		for ss := range s.mcp.Sessions() {
			_ = ss.Close()
		}
		s.hmu.Lock()
		s.closing = true
		if s.handlers == 0 {
			close(s.idle)
		}
		s.hmu.Unlock()
		_ = s.http.Close()
		select {
		case <-s.idle:
		case <-ctx.Done():
			s.stopErr = fmt.Errorf("wait for handlers: %w", ctx.Err())
		}
		<-s.served
	})
	return s.stopErr
}

// track counts running handlers for Stop, and refuses requests once Stop
// has begun.
func (s *Server) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hmu.Lock()
		if s.closing {
			s.hmu.Unlock()
			http.Error(w, "stopping", http.StatusServiceUnavailable)
			return
		}
		s.handlers++
		s.hmu.Unlock()
		defer func() {
			s.hmu.Lock()
			s.handlers--
			if s.handlers == 0 && s.closing {
				close(s.idle)
			}
			s.hmu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}

// record is the MCP receiving middleware that counts tools/list requests and
// records tools/call requests.
func (s *Server) record(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch r := req.(type) {
		case *mcp.ListToolsRequest:
			s.mu.Lock()
			s.lists++
			extra := slices.Clone(s.extra)
			s.mu.Unlock()
			res, err := next(ctx, method, req)
			lr, ok := res.(*mcp.ListToolsResult)
			if ok && err == nil && (r.Params == nil || r.Params.Cursor == "") {
				lr.Tools = append(lr.Tools, extra...)
			}
			if ok && err == nil {
				s.mu.Lock()
				if s.emptyCursors > 0 {
					s.emptyCursors--
					lr.NextCursor = emptyCursorMark // cursorRewriter writes it as ""
				}
				s.mu.Unlock()
			}
			return res, err
		case *mcp.CallToolRequest:
			c := Call{ProtocolVersion: r.ProtocolVersion()}
			// Under sessions, ProtocolVersion gives the revision the client
			// asked for in initialize; the header carries the negotiated one.
			if r.Extra != nil && r.Extra.Header.Get("Mcp-Protocol-Version") != "" {
				c.ProtocolVersion = r.Extra.Header.Get("Mcp-Protocol-Version")
			}
			if r.Params != nil {
				c.Tool = r.Params.Name
				c.Arguments = slices.Clone(r.Params.Arguments)
				c.Meta = cloneMeta(r.Params.Meta)
			}
			if r.Session != nil {
				c.SessionID = r.Session.ID()
			}
			var h http.Header
			if r.Extra != nil {
				h = r.Extra.Header
			}
			c.Traceparent, c.Tracestate = received(c.Meta, h)
			c.TraceHeaders = traceHeaders(h)
			ctx, span := s.startSpan(ctx, c)
			if span != nil {
				c.Span = span.SpanContext()
			}
			s.recordCall(c)
			res, err := next(ctx, method, req)
			s.endSpan(ctx, span, res, err)
			return res, err
		}
		return next(ctx, method, req)
	}
}

func (s *Server) recordCall(c Call) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
	if s.onCall != nil {
		s.onCall(c)
	}
}

func cloneMeta(m mcp.Meta) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// maxPeekBytes bounds the request body refuse reads; it is the SDK's own
// limit (mcp.DefaultMaxRequestBodyBytes).
const maxPeekBytes = mcp.DefaultMaxRequestBodyBytes

// refuse answers a POSTed tools/call with the next queued Refusal, if any,
// before the SDK's handler sees it.
func (s *Server) refuse(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			s.recordRequest(Request{Method: r.Method, TraceHeaders: traceHeaders(r.Header), Header: r.Header.Clone(), PathSecret: r.PathValue("secret")})
			if s.authorized(w, r) {
				next.ServeHTTP(w, r)
			}
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxPeekBytes+1))
		_ = r.Body.Close()
		if err != nil {
			http.Error(w, "read body", http.StatusBadRequest)
			return
		}
		s.recordRequest(Request{Method: r.Method, RPCMethod: rpcMethod(body), TraceHeaders: traceHeaders(r.Header), Header: r.Header.Clone(), PathSecret: r.PathValue("secret")})
		if !s.authorized(w, r) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if isToolsList(body) {
			w = &cursorRewriter{ResponseWriter: w}
		}
		call, ok := toolsCall(body)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		s.mu.Lock()
		if len(s.refusals) == 0 {
			s.mu.Unlock()
			next.ServeHTTP(w, r)
			return
		}
		ref := s.refusals[0]
		s.refusals = s.refusals[1:]
		call.ProtocolVersion = r.Header.Get("Mcp-Protocol-Version")
		call.SessionID = r.Header.Get("Mcp-Session-Id")
		call.Refused = ref.Status
		call.Traceparent, call.Tracestate = received(call.Meta, r.Header)
		call.TraceHeaders = traceHeaders(r.Header)
		s.mu.Unlock()
		s.recordCall(call)

		if ref.RetryAfter != "" {
			w.Header().Set("Retry-After", ref.RetryAfter)
		}
		if ref.Status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcpserver"`)
		}
		http.Error(w, http.StatusText(ref.Status), ref.Status)
	})
}

// toolsCall reports whether body is a JSON-RPC tools/call request (or a
// batch holding one) and returns what it asks for.
func toolsCall(body []byte) (Call, bool) {
	type request struct {
		Method string `json:"method"`
		Params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
			Meta      map[string]any  `json:"_meta"`
		} `json:"params"`
	}
	var reqs []request
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if json.Unmarshal(trimmed, &reqs) != nil {
			return Call{}, false
		}
	} else {
		var one request
		if json.Unmarshal(trimmed, &one) != nil {
			return Call{}, false
		}
		reqs = []request{one}
	}
	for _, r := range reqs {
		if r.Method == "tools/call" {
			return Call{Tool: r.Params.Name, Arguments: r.Params.Arguments, Meta: r.Params.Meta}, true
		}
	}
	return Call{}, false
}

// hostsOnly refuses, with 403 as the SDK's DNS rebinding protection does,
// a request whose Host header names neither a loopback host nor one of
// hosts (compared without the port, case-insensitively).
func hostsOnly(hosts []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		a, err := netip.ParseAddr(strings.Trim(host, "[]"))
		loopback := strings.EqualFold(host, "localhost") || err == nil && a.IsLoopback()
		if !loopback && !slices.ContainsFunc(hosts, func(h string) bool { return strings.EqualFold(h, host) }) {
			http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requestDoneKey is the context key of the Done channel of the HTTP request
// that carried a tools/call; see withRequestDone.
type requestDoneKey struct{}

// withRequestDone puts the HTTP request's Done channel among its context's
// values. Without sessions the SDK serves each POST with a session built
// from that context, so the values reach the tool handler; under revisions
// before 2026-07-28 the handler's own context does not end when the client
// gives up, and a delay watches this channel instead. (With sessions the
// handler's context is the session's, so this would be the wrong request;
// the client's notifications/cancelled ends the handler's context there.)
func withRequestDone(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestDoneKey{}, r.Context().Done())))
	})
}

// Refusal is an HTTP answer to a tools/call request given before the MCP
// layer sees it; see RefuseCalls.
type Refusal struct {
	// Status is the HTTP status code, e.g. 503.
	Status int
	// RetryAfter, if not empty, is sent as the Retry-After header (seconds or
	// an HTTP date, RFC 9110 §10.2.3).
	RetryAfter string
}

// Refusals for RefuseCalls. A 401 also carries
// `WWW-Authenticate: Bearer realm="mcpserver"`. Every refusal has a plain
// text body, not a JSON-RPC error.
var (
	Unavailable  = Refusal{Status: http.StatusServiceUnavailable}
	Unauthorized = Refusal{Status: http.StatusUnauthorized}
)

// TooManyRequests is a 429 refusal whose Retry-After header gives after in
// whole seconds.
func TooManyRequests(after time.Duration) Refusal {
	return Refusal{Status: http.StatusTooManyRequests, RetryAfter: strconv.Itoa(int(after / time.Second))}
}

// Request is one HTTP request the server received at its endpoint.
type Request struct {
	// Method is the HTTP method (POST, GET, DELETE).
	Method string
	// RPCMethod is the JSON-RPC method of a POSTed request or
	// notification ("initialize", "tools/call", …; a batch's first);
	// "" for a response, a GET or a DELETE.
	RPCMethod string
	// TraceHeaders are the request's traceparent, tracestate and baggage
	// headers as received; nil when it had none.
	TraceHeaders http.Header
	// Header is every header of the request as received: what tests
	// search for a credential that must or must not be there.
	Header http.Header
	// PathSecret is the token a request to PathURL carried in its path,
	// "" for a request to URL.
	PathSecret string
}

// SetBearerTokens replaces the bearer tokens the server accepts
// (Options.BearerTokens); none returns it to the open mode.
func (s *Server) SetBearerTokens(tokens ...string) {
	s.mu.Lock()
	s.bearer = slices.Clone(tokens)
	s.mu.Unlock()
}

// authorized reports whether r may go on: always in the open mode, else
// when its Authorization header is "Bearer <one of the tokens>", or, for
// a request to PathURL, when its path holds one of them and it has no
// Authorization header; otherwise it answers 401 as
// Options.BearerTokens says and returns false.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	tokens := s.bearer
	s.mu.Unlock()
	if len(tokens) == 0 {
		return true
	}
	got, present := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if seg := r.PathValue("secret"); seg != "" {
		got, present = seg, r.Header.Get("Authorization") == ""
	}
	if present && slices.Contains(tokens, got) {
		return true
	}
	if r.Header.Get("Authorization") == "" && r.PathValue("secret") == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcpserver"`)
	} else {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcpserver", error="invalid_token", error_description="the token is not one the server accepts"`)
	}
	http.Error(w, http.StatusText(http.StatusUnauthorized), http.StatusUnauthorized)
	return false
}

func (s *Server) recordRequest(r Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r)
	s.mu.Unlock()
}

// rpcMethod is the JSON-RPC method of body, a message or a batch (its
// first member's); "" when it has none.
func rpcMethod(body []byte) string {
	var one struct {
		Method string `json:"method"`
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil || len(batch) == 0 {
			return ""
		}
		trimmed = batch[0]
	}
	if json.Unmarshal(trimmed, &one) != nil {
		return ""
	}
	return one.Method
}

// isToolsList reports whether body is a JSON-RPC tools/list request.
func isToolsList(body []byte) bool {
	var r struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &r) == nil && r.Method == "tools/list"
}

// emptyCursorMark is the nextCursor record puts on a tools/list result
// that AnswerEmptyCursor says must carry an empty one: the SDK writes
// NextCursor with omitempty, so "" would leave the member out.
const emptyCursorMark = "toolgate-mcpserver-empty-cursor"

// cursorRewriter writes the answer to a tools/list request with
// emptyCursorMark replaced by the empty string. The SDK writes each
// server-sent event, and a JSON answer, in one Write.
type cursorRewriter struct {
	http.ResponseWriter
	wrote bool
}

var (
	markedCursor = []byte(`"nextCursor":"` + emptyCursorMark + `"`)
	emptyCursor  = []byte(`"nextCursor":""`)
)

func (c *cursorRewriter) WriteHeader(code int) {
	c.Header().Del("Content-Length") // the rewrite changes it
	c.wrote = true
	c.ResponseWriter.WriteHeader(code)
}

func (c *cursorRewriter) Write(p []byte) (int, error) {
	if !c.wrote {
		c.WriteHeader(http.StatusOK)
	}
	if _, err := c.ResponseWriter.Write(bytes.ReplaceAll(p, markedCursor, emptyCursor)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Unwrap lets http.ResponseController reach the connection's Flusher.
func (c *cursorRewriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
