// Package httptool is the http tool (docs/tools.md, "http"): one request
// of GET, HEAD, POST, PUT, PATCH or DELETE to a host the run's toolset
// pins for that method (http_hosts) and the http function's platform
// allow-list allows, with the call's headers and body, returning the
// status, a few response headers and the body parsed as
// structured-data-fetch parses it. It is built on package fetch: every
// URL, the first and each redirect's, goes through fetch's Decide (the
// five address rules) and is sent over fetch's checked transport, and a
// success's body is read by fetch's ReadBody (5 MiB, UTF-8, json/csv/text,
// select).
//
// # Checks before anything is sent
//
// In order, each refusal with nothing sent and no look-up made:
//
//  1. method is one of httprule.Methods (TOOL_INPUT_INVALID); accept and
//     select as structured-data-fetch reads them (TOOL_INPUT_INVALID);
//  2. the URL passes fetchurl.Parse (TOOL_PERMISSION_DENIED);
//  3. its host and port match an http_hosts entry (EntryFor, rule
//     http-host) that pins the method (rule http-method), both
//     TOOL_PERMISSION_DENIED naming the rule and the host;
//  4. every header is a standard one (httprule.Standard) or named by the
//     entry, never httprule.Forbidden, the entry's auth header (the tool
//     presents the credential) nor the entry's idempotency header
//     (rule http-header, TOOL_PERMISSION_DENIED naming the header), with
//     a valid value (httprule.CheckHeaderValue, TOOL_INPUT_INVALID);
//  5. a body only with POST, PUT and PATCH, encoded by its Content-Type
//     (JSON text by default; a JSON string's bytes with a non-JSON media
//     type), at most Config.MaxRequestBytes (TOOL_INPUT_INVALID).
//
// Contract runs checks 2 and 3 in the dispatcher, before any approval,
// and gives the call its review requirement and policy from its method
// (httprule.Decide).
//
// # Sending
//
// With a method that is not a read, the entry's idempotency header (when
// it declares one) carries the call's external key (KeyHeaderValue).
// Every request (each redirect hop, and a sending after a Retry-After
// wait) carries the call's W3C trace context (toolcall.Call.Trace) as
// the traceparent and, when not empty, tracestate headers, set after the
// call's own headers, which may not name them (httprule.Forbidden);
// never baggage. A
// read follows up to Config.MaxRedirects (5) redirects as fetch does, each
// decided again, against the entries that pin its method, and carrying
// custom headers only where that host's entry names them too. Any other
// method follows none: 303 is a success (data null), 301, 302, 307 and
// 308 are TOOL_PERMANENT_FAILURE naming only the Location's host. Each
// sending, its look-ups, redirects and body included, is bounded by
// Config.Timeout (30 s); a Retry-After wait and the sending after it by
// the caller's deadline too (the step's timeout, the function's).
//
// # Outcomes
//
// Every failure is a *tool.Error. MaybeApplied marks a request the host
// may have applied (the dispatcher makes an at_most_once call UNKNOWN):
//
//	status or failure                        code                       maybe applied
//	refused by a check or by Decide          TOOL_PERMISSION_DENIED /   no
//	                                         TOOL_INPUT_INVALID
//	look-up failed, connection refused       TOOL_UPSTREAM_UNAVAILABLE  no
//	time bound passed before the request     TOOL_TIMEOUT               no
//	was written
//	time bound passed, or the connection     TOOL_TIMEOUT /             yes
//	ended, after it was written              TOOL_UPSTREAM_UNAVAILABLE
//	408                                      TOOL_TIMEOUT               no
//	429                                      TOOL_RATE_LIMITED          no
//	503                                      TOOL_UPSTREAM_UNAVAILABLE  for methods that are not reads
//	500, 502, 504, any other 5xx             TOOL_UPSTREAM_UNAVAILABLE  yes
//	501, 505                                 TOOL_PERMANENT_FAILURE     no
//	401 error="invalid_token" to a request   CALL_PARKED, cause         no
//	that carried a credential (RFC 6750)     credentials.expired
//	401 otherwise, 403                       TOOL_PERMISSION_DENIED     no
//	other 4xx                                TOOL_PERMANENT_FAILURE     no
//	301, 302, 307, 308 (not a read)          TOOL_PERMANENT_FAILURE     no
//	a success whose body fails fetch's       fetch's codes              for methods that are not reads
//	ReadBody
//
// 429, 503 and other 5xx carry RetryAfter from Retry-After. For a read,
// and for a host whose entry declares an idempotency key, a 429 whose
// Retry-After is at most MaxRetryAfterWait and ends a second before the
// caller's deadline is waited out (Config.Sleep) and the request sent once
// more, under the same key; a second 429 fails as above.
//
// Request and response bodies, and header values, never appear in an
// error's message.
//
// # Credentials
//
// A call whose host entry declares auth carries the credential the
// dispatcher resolved for it (toolcall.Call.Credential;
// docs/credentials.md). credential.Transport, under every sending,
// presents it on each request whose origin (scheme, host, port) is the
// entry's, checked on every hop: a redirect a read follows to another
// allowed host carries none. Every message of a failure, and the data of
// a success, is passed through the credential's Redact.
package httptool
