// Package mcpserver is a local MCP server to test toolgate's MCP tool
// sources against: a real server built with
// github.com/modelcontextprotocol/go-sdk v1.8.0, run in-process on a free
// 127.0.0.1 port over streamable HTTP, with Go methods that make it
// misbehave on cue and record what it was sent.
//
//	srv, err := mcpserver.Start(mcpserver.Options{Stateless: true})
//	...
//	defer srv.Stop(ctx)
//	// connect an MCP client to srv.URL()
//
// # Tools
//
//   - create_ticket {title: string 1..200, priority: low|normal|high} →
//     structuredContent {ticket_id, created}. A side effect that honours the
//     idempotency key: a request whose _meta holds
//     mcpmeta.IdempotencyKey ("io.toolgate/idempotency-key") creates at
//     most one ticket per key; a repeat gets the same ticket_id with
//     created false, and a repeat with other arguments an isError result.
//     Without a key every call creates a ticket (T-1, T-2, …).
//   - send_sms {to: digits with an optional leading +, text: at most 160} →
//     text content. A side effect that ignores the key: every call sends.
//     No output schema.
//   - lookup_customer {customer_id: C-<digits>} → structuredContent
//     {customer_id, name, tier: basic|gold|platinum}; annotations
//     readOnlyHint and idempotentHint. C-1, C-2 and C-3 exist; others are an
//     isError result.
//
// Every input schema is required-complete with additionalProperties false;
// every output schema requires all its properties. The tools are the SDK's
// typed tools (mcp.AddTool), so arguments are validated by the SDK as any
// SDK server would.
//
// # Options
//
// Options.ProtocolVersions limits the revisions negotiated (the SDK's
// ServerOptions.SupportedProtocolVersions); Options.Stateless serves without
// sessions; Options.PageSize sets the tools/list page size; Options.ListTTL
// sets the ttlMs cache hint on tools/list results; Options.OnCall reports
// each call as it arrives; Options.Hosts names hosts, besides loopback
// ones, that the server answers to (the SDK's DNS rebinding protection
// refuses any other Host header with 403); Options.Tracer, when set, opens
// a server span per tools/call.
//
// # Trace context
//
// A tools/call carries its caller's W3C trace context in _meta, under the
// bare keys "traceparent" and "tracestate" the MCP specification reserves
// (SEP-414; mcpmeta.Traceparent), or in the HTTP headers of the same
// names; _meta wins when it has a traceparent. With Options.Tracer the
// server continues that context: one span per tools/call, named
// "tools/call <tool>" and of kind server as the OpenTelemetry semantic
// conventions for MCP name it, whose only attribute is the tool's name
// (gen_ai.tool.name), an error status for a JSON-RPC error or an isError
// result, and flushed before the call is answered. A call without a
// valid context gets a span of a new trace. Whatever the tracer,
// Calls records the context received (Call.Traceparent, Call.Tracestate,
// Call.TraceHeaders with any baggage header) and Requests the trace
// headers of every HTTP request.
//
// # Bearer tokens
//
// By default the server asks for no credential (the open mode). With
// Options.BearerTokens it requires "Authorization: Bearer <token>" on
// every request (RFC 6750): no header is answered 401 with a bare
// `WWW-Authenticate: Bearer realm="mcpserver"`, another token 401 with
// `error="invalid_token"`, the answer of a server whose token expired or
// was revoked. SetBearerTokens replaces the accepted tokens while it runs.
// The same endpoint at PathURL takes the token in its path instead
// (/s/<token>/mcp), as hosted servers that take a secret in the URL do;
// a wrong one there is answered like a wrong header.
// Requests records every header of every request (Request.Header) and
// the token in its path (Request.PathSecret), so a test can tell which
// requests carried a credential and how.
//
// # Controls
//
// Methods on *Server, for tests; none is reachable over the network.
//
//   - SetDescription, SetInputSchema, SetOutputSchema, SetAnnotations,
//     RemoveTool change the tool list while running; the SDK sends
//     notifications/tools/list_changed.
//   - ListAlso lists a tool without registering it: one the SDK's server
//     refuses to add and its client drops as invalid.
//   - AnswerEmptyCursor(n): the next n tools/list answers carry
//     "nextCursor": "" in place of their cursor, or in addition to none;
//     the SDK's client reads it as the end of the listing.
//   - RefuseCalls(n, Unavailable | Unauthorized | TooManyRequests(d)): the
//     next n tools/call POSTs get that HTTP status (with Retry-After for
//     429, WWW-Authenticate for 401) and a plain-text body before the SDK
//     sees them. Other requests (initialize, tools/list, notifications) pass.
//   - FailCalls(tool, text, n): the tool's next n calls answer isError with
//     text, without running.
//   - BreakOutput(tool, n): the tool runs, and its next n results carry
//     structuredContent {"unexpected": true}, against its output schema.
//   - Delay(tool, d, n): the tool runs, and its next n answers are held back
//     by d, or until the client gives up or Stop; the returned channel says
//     how each delay ended.
//
// Within one call a pending failure comes first (the tool does not run and
// a pending break waits); otherwise the tool runs, a break replaces its
// result, and a delay holds the answer back.
//
// Records: Calls (every tools/call: tool, arguments, the whole _meta, the
// revision, the session, the HTTP status if refused, the trace context
// received and the server span's context), Requests (every HTTP request:
// its method, its JSON-RPC method and its trace headers), ToolsListed (the
// tools/list requests that reached the server, one per page), Tickets and
// SMSSent.
//
// # What the SDK (v1.8.0) does, measured against this server
//
// Revisions. mcp.SupportedProtocolVersions() is 2026-07-28 (the newest and
// the client's default), 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05.
// Asking for 2026-07-28 (ClientSessionOptions.ProtocolVersion, empty means
// the newest), Client.Connect first sends server/discover (SEP-2575); if
// that fails it falls back to initialize with 2025-11-25. Over streamable
// HTTP the SDK serves 2026-07-28 only when StreamableHTTPOptions.Stateless
// is set: a server with sessions refuses server/discover and negotiates
// 2025-11-25 at most (so Start refuses Options asking for sessions and only
// 2026-07-28). The client learns the negotiated revision from
// ClientSession.InitializeResult().ProtocolVersion. A client asking for a
// revision the server lacks under initialize gets the server's newest
// handshake revision and accepts it if it knows it; a stateless server
// limited to 2026-07-28 fails a 2025-11-25 client's Connect with
// `sending "notifications/initialized": Bad Request`. On the server,
// ServerRequest.ProtocolVersion() under sessions gives the revision the
// client asked for in initialize, not the negotiated one; the
// Mcp-Protocol-Version header (which Calls records) carries the negotiated
// one.
//
// _meta. The client passes a call's _meta through untouched; under
// 2026-07-28 it adds io.modelcontextprotocol/protocolVersion, clientInfo and
// clientCapabilities to every request.
//
// Errors from ClientSession.CallTool (the dispatcher's mapping needs these):
//
//   - HTTP 503, 429 (and, by the SDK's source, 500, 502, 504):
//     `calling "tools/call": rejected by transport: sending "tools/call": Service Unavailable`
//     (`Too Many Requests` for 429), a *fmt.wrapError holding a
//     *jsonrpc.Error with Code -32005 and Message "rejected by transport"
//     (the SDK's internal jsonrpc2.ErrRejected; no exported constant). The
//     session stays usable and the SDK does not retry. The status code and
//     Retry-After are not in the error: a caller that needs them must read
//     them below the SDK, from an http.RoundTripper in the transport's
//     HTTPClient (TestRefusalsAsTheSDKClientSeesThem does).
//   - HTTP 401 without a JSON-RPC body and without
//     StreamableClientTransport.OAuthHandler:
//     `calling "tools/call": sending "tools/call": Unauthorized`, a plain
//     error with no *jsonrpc.Error. The session is then broken: every later
//     request fails with
//     `connection closed: calling "tools/call": client is closing: sending "tools/call": Unauthorized`
//     (errors.Is mcp.ErrConnectionClosed); the caller must connect again.
//   - Unknown tool: a *jsonrpc.Error with Code -32602
//     (jsonrpc.CodeInvalidParams), Message `unknown tool "name"`. With
//     sessions the error reads `calling "tools/call": unknown tool "name"`;
//     under 2026-07-28 the server sends it with HTTP 400 and the error reads
//     `calling "tools/call": sending "tools/call": unknown tool "name": rejected by transport: Bad Request`,
//     holding both -32602 and -32005 (errors.As finds -32602 first).
//   - Arguments failing the input schema: no Go error and no -32602, but a
//     result with IsError true and text
//     `validating "arguments": validating root: validating /properties/customer_id: type: 5 has type "integer", want "string"`
//     (the SDK's typed tools validate; the tool does not run).
//   - A tool's own failure: a result with IsError true.
//   - A result breaking the output schema: delivered as is. The client does
//     not check structuredContent against outputSchema; the caller must.
//   - The caller's context ending (timeout or cancel): ctx.Err() itself,
//     unwrapped (context.DeadlineExceeded, context.Canceled); the SDK does
//     not say whether the server got the call. The server's handler context
//     ends too with sessions (the client sends notifications/cancelled) and
//     under 2026-07-28 (this server sets PropagateRequestCancellation); under
//     older revisions without sessions it does not, so Delay also watches
//     the POST's own context.
//
// Invalid tools. ClientSession.ListTools, under every revision, drops from
// its result the tools it finds invalid, logging each at level Error to
// ClientOptions.Logger ("excluding tool from tools/list"): a null tool, and
// one whose x-mcp-header annotations are invalid (on a property that is not
// a string, integer or boolean, not a valid header name, or given twice).
// A sending middleware (Client.AddSendingMiddleware) sees the result before
// the filter (TestClientDropsToolsItFindsInvalid).
//
// Pages. ServerOptions.PageSize sets the page size; NextCursor is opaque;
// ClientSession.Tools follows the cursors.
//
// List cache. Under 2026-07-28 (only) ClientSession.ListTools, and the Tools
// iterator built on it, serve a page from a per-session cache, keyed by
// cursor, for the ttlMs the server put on it (SEP-2549). The SDK server's
// ttlMs is 0 unless ServerOptions.SetCacheable sets it (Options.ListTTL), so
// by default nothing is cached. There is no per-call bypass: a new
// ClientSession starts empty, and notifications/tools/list_changed empties
// the cache, but the client receives it only if
// ClientOptions.ToolListChangedHandler is set (Connect then opens a
// subscriptions/listen stream). Under 2025-11-25 and older every ListTools
// reaches the server.
//
// Notifications. The SDK server drops notifications/tools/list_changed for
// a client whose stream is not open yet (there is no EventStore here): the
// standalone GET stream with sessions, the subscriptions/listen stream under
// 2026-07-28. The tests wait for the GET's 200 or for
// notifications/subscriptions/acknowledged before changing a tool.
//
// Stop. http.Server.Shutdown would wait up to 5 s for a connection a
// client opened but never used, so Stop closes every connection and waits
// for the handlers instead.
package mcpserver
