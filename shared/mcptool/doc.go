// Package mcptool is toolgate's MCP client (docs/tools.md "MCP
// tools"), built on github.com/modelcontextprotocol/go-sdk v1.8.0 over
// streamable HTTP: List lists a server's tools for registration
// (toolset.Lister), Check compares a pinned tool with the server's current
// definition before a call is claimed (toolcall.Check), and Call calls it
// (toolcall.Func).
//
// # Configuration
//
// ConfigFromEnv reads, at cold start:
//
//	TOOLGATE_MCP_ALLOW               the platform's allow-list of MCP hosts (hostlist entries, as
//	                                 TOOLGATE_FETCH_ALLOW); empty: no server can be listed or called
//	TOOLGATE_MCP_ALLOW_ADDRESSES     addresses exempted from the address refusal (as
//	                                 TOOLGATE_FETCH_ALLOW_ADDRESSES); unset in production, 127.0.0.1/32
//	                                 on the local stack; cloud metadata addresses are never exempt
//	TOOLGATE_MCP_SCHEMA_TTL_SECONDS  how long a warm container reuses a server's tools/list for
//	                                 Check: 0..60, default 5; 0 lists before every call
//	TOOLGATE_MCP_TIMEOUT_SECONDS     bound of a listing (handshake and every page) and of a call's
//	                                 handshake: 1..60, default 10; the call itself is bounded by the
//	                                 dispatcher's deadline and the pinned timeout_seconds
//	TOOLGATE_MCP_RESOLVE_FILE        the local stack only: a file of "HOST=IP[,IP]" lines taken as those
//	                                 names' DNS answers, read at every request (fetch.FileResolver);
//	                                 never set by the CDK app
//
// Each HTTP response body is read up to 5 MiB (DefaultMaxBytes); one byte
// more fails the exchange, never truncating it. A listing's tool
// definitions (names, descriptions, schemas, annotations) are bounded the
// same in all, whatever its pages.
//
// # Addresses
//
// A server URL is one toolset.ParseMCPURL accepts (the http tool's URL
// rules, and no query string, fragment or secret-looking path segment,
// which could hold a credential), or nothing is sent:
// TOOL_PERMISSION_DENIED. Every HTTP request the SDK
// makes (the POSTs, and the DELETE that ends a session) goes through package fetch's Transport: the URL's host must be
// on the platform's MCP allow-list and be the pinned server URL's own host
// and port; a host name is resolved once per request and every answer
// checked with fetch.CheckAddr (private, special-purpose and metadata
// addresses refused, exemptions aside); the connection goes to a checked
// address only. No redirect is followed: an MCP endpoint is one URL, and
// following a redirect of a POST would send a call where no toolset pinned
// it. The same rules hold at registration (List, run by the publish
// function) and before every call.
//
// # Sessions and revisions
//
// Each listing and each call opens a new session (a new SDK client), with
// the SDK's default revision: 2026-07-28, stateless, when the server
// answers server/discover, otherwise initialize with sessions at the
// newest revision the server offers (2025-11-25 or older). The negotiated
// revision (InitializeResult().ProtocolVersion) is what List records. A
// new session is also what bypasses the SDK's own tools/list cache, which
// under 2026-07-28 serves a session's repeated ListTools for as long as
// the server's ttlMs says: the SDK has no per-call bypass. Check's reuse
// is this package's own cache, keyed by server URL and the credential the
// listing presented (its scope and version), for at most
// TOOLGATE_MCP_SCHEMA_TTL_SECONDS. The standalone SSE stream is not
// opened. A session with an id is ended (the SDK's DELETE, which it gives
// 5 s whatever the caller's deadline) in the background: a listing or a
// call waits for that end at most 250 ms, since its outcome is known
// before it.
//
// # Credentials
//
// A server whose toolset declares auth is presented the call's credential
// (toolcall.Call.Credential; docs/credentials.md) on every request of the
// session, by credential.Transport, the RoundTripper right above fetch's
// and below the trace headers and the recorder: nothing that records an
// exchange, logs or builds a message sees it. A URL pinned with a
// "{secret}" path segment is given to the SDK as pinned, and the segment
// is filled on the wire. Every message built from an answer to a session
// that carried a credential is passed through its Redact, the server's
// text before it is cut to MaxServerText (a cut through the secret would
// leave a part Redact no longer recognises), and so is a successful
// result (TOOL_OUTPUT_INVALID, maybe applied, when it is no longer JSON
// without the secret). Check's
// listing presents the credential too; List presents none, and
// ListWithCredential the one registration resolved (toolset scope).
//
// # Trace context
//
// A call carries the W3C trace context of its attempt's span
// (toolcall.Call.Trace) so that a server's spans join the run's trace
// (docs/tools.md, "MCP tools"): in the tools/call's params._meta under the
// bare keys "traceparent" and, when not empty, "tracestate", which the MCP
// specification reserves for it (SEP-414; mcpmeta.Traceparent), and as the
// traceparent and tracestate HTTP headers of every request of the call's
// session, for servers and gateways that read HTTP. The SDK has no hook
// for either: _meta is set with the call's parameters, the headers by a
// RoundTripper in the transport's HTTPClient. Never baggage, and nothing
// on a listing (Check, List) or a call without a traceparent.
//
// # Tools the SDK drops
//
// ClientSession.ListTools (v1.8.0, every revision) silently drops, logging
// only to its own logger, the tools it finds invalid: a null tool, and one
// whose x-mcp-header annotations are invalid. List sees each page before
// the SDK filters it (a sending middleware), so such tools are named in
// List's error and logged, and nothing of the listing is registered.
// Check treats a pinned tool dropped that way as missing.
//
// # Outcomes of a call
//
// The SDK hides HTTP statuses; a RoundTripper under it records the status
// and Retry-After of the tools/call POST, and whether the request was
// written (MaybeApplied: the server may have acted). Server text (an
// isError text, a JSON-RPC error message, a transport error holding one)
// is shown cut to MaxServerText bytes with control characters removed,
// never raw.
//
//	refused by the address rules            TOOL_PERMISSION_DENIED (a failed look-up: its fetch code)   not applied
//	HTTP 401 error="invalid_token" to a     CALL_PARKED, cause credentials.expired (RFC 6750 §3.1):      not applied
//	request that carried a credential       the server refused it; set a new one
//	HTTP 401 otherwise, 403 (also           TOOL_PERMISSION_DENIED: the server needs credentials (auth   not applied
//	insufficient_scope)                     in the toolset, toolgate credentials set), or refused them
//	HTTP 429                                TOOL_RATE_LIMITED, RetryAfter from Retry-After (no sleep)    not applied
//	HTTP 5xx                                TOOL_UPSTREAM_UNAVAILABLE, RetryAfter from Retry-After       applied if written
//	HTTP 3xx (a redirect)                   TOOL_PERMANENT_FAILURE                                       not applied
//	HTTP 404, session gone                  TOOL_UPSTREAM_UNAVAILABLE                                    not applied
//	JSON-RPC -32602 (an unknown tool too)   TOOL_INPUT_INVALID                                           not applied
//	JSON-RPC -32603                         TOOL_UPSTREAM_UNAVAILABLE                                    applied if written
//	JSON-RPC -32700, -32600, -32601         TOOL_PERMANENT_FAILURE                                       not applied
//	another JSON-RPC error                  TOOL_PERMANENT_FAILURE                                       applied if written
//	other HTTP 4xx                          TOOL_PERMANENT_FAILURE                                       not applied
//	the caller's deadline                   TOOL_TIMEOUT                                                 applied if written
//	cancelled                               TOOL_UPSTREAM_UNAVAILABLE                                    applied if written
//	an answer over the read limit           TOOL_OUTPUT_INVALID                                          applied
//	connection refused, reset, lost         TOOL_UPSTREAM_UNAVAILABLE                                    applied if written
//	the handshake failing or timing out     as above, by its last request; its own bound:               not applied
//	                                        TOOL_UPSTREAM_UNAVAILABLE
//	isError: true                           TOOL_PERMANENT_FAILURE, whatever its text                    not applied
//	input_required (the tool asks for       TOOL_PERMANENT_FAILURE: toolgate offers no client            not applied
//	input first)                            capability, and sends tools/call once
//	structuredContent missing or breaking   TOOL_OUTPUT_INVALID                                          applied
//	the pinned outputSchema
//
// "Applied if written": MaybeApplied is true once the whole tools/call
// request was written to the connection, and false when it was refused
// before (no connection, a refused address).
//
// A listing's failure, in Check or List, maps the same way but is never
// maybe applied; an answer over the read limit, and a redirect, are
// TOOL_PERMANENT_FAILURE there.
//
// # Results
//
// With a pinned output schema (any schema but {}), the result is the
// answer's structuredContent, checked against it. Without one, the result
// is {"content": [{"type": "text", "text": "..."}, ...], "dropped": n}:
// the text items in order, and the number of other items (images, audio,
// resources) left out. Numbers pass through the SDK's decoding as IEEE 754
// doubles.
package mcptool
