// Package mcpserver is a local MCP server to test toolgate's MCP tool
// sources against (issue 16): a real server built with
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
// each call as it arrives.
//
// # Controls
//
// Methods on *Server, for tests; none is reachable over the network.
//
//   - SetInputSchema, SetOutputSchema, SetAnnotations, RemoveTool change the
//     tool list while running; the SDK sends notifications/tools/list_changed.
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
// revision, the session, and the HTTP status if refused), ToolsListed (the
// tools/list requests that reached the server, one per page), Tickets and
// SMSSent.
//
// Stop. http.Server.Shutdown would wait up to 5 s for a connection a
// client opened but never used, so Stop closes every connection and waits
// for the handlers instead.
package mcpserver
