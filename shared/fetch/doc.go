// Package fetch is the structured-data-fetch tool (docs/design.md, "The
// http tool"): a GET of one http or https URL on an allow-listed host,
// whose body is returned parsed as JSON, CSV or text, optionally narrowed by
// an RFC 6901 JSON Pointer.
//
// # Decision
//
// Every URL, the first and each redirect target, goes through Decide before
// any connection is made (stripe/smokescreen's model: data plus a pure
// decision with a reason; no rule means deny):
//
//  1. Syntax (fetchurl.Parse, shared with the resolver and the publish
//     function). The URL must read the same under Go's net/url
//     (RFC 3986) and the WHATWG URL Standard, so only a strict subset is
//     accepted: scheme http or https followed by "//"; no userinfo; no
//     blanks, control or format characters, backslashes or non-ASCII outside
//     the host; no percent-encoding in the host; "[" and "]" only around an
//     IPv6 literal; no zone identifier; a port of 1–65535 in plain decimal;
//     only characters both readings leave unchanged in the path and query;
//     no dot segments ("." and "..", plain or percent-encoded).
//  2. Host (package hostlist, through fetchurl.Listed). The host is
//     normalised as hostlist does and must match an entry on both the
//     platform's allow-list (Config.Allow, validated at cold start) and the
//     run's pinned toolset (fetch_hosts). An entry without a port allows
//     only 80 for http and 443 for https. With either list empty there is
//     no fetch at all. Nothing is looked up before this step passes; an IP
//     literal's address is checked as in step 3 (Precheck, which the
//     publish function also runs on a Solution's literal URLs).
//  3. Addresses. A host name is resolved once; the host is refused if any
//     answer fails CheckAddr. CheckAddr allows IPv4 outside the IANA IPv4
//     special-purpose registry and multicast, and IPv6 only inside global
//     unicast 2000::/3 outside the IANA IPv6 special-purpose registry (both
//     from code.dny.dev/ssrf, plus 5f00::/16 of RFC 9602, which it lacks);
//     IPv4-mapped, IPv4-compatible, NAT64, 6to4 and Teredo forms are refused
//     whatever they embed; cloud metadata addresses are refused even when
//     Config.AllowAddresses would exempt them.
//
// # Connection
//
// Fetch dials the checked addresses only (no second lookup, so DNS
// rebinding cannot move the connection), with no proxy and no connection
// reuse across hops. TLS verifies the certificate against the URL's host.
// Redirects (301, 302, 303, 307, 308) are followed as GETs, each through
// Decide again, relative ones resolved against the previous URL; at most
// Config.MaxRedirects (5) are followed and one more is refused. The whole
// fetch, redirects and body included, is bounded by Config.Timeout (30 s);
// the body by Config.MaxBytes (5 MiB, counted after content decoding, so a
// gzip bomb stops at the bound): at most MaxBytes+1 bytes are read, and a
// larger body is refused, never truncated.
//
// The http tool (shared/httptool) decides with DecideFor, sends with
// RoundTrip and reads a success's body with ReadBody: the same rules,
// connection and parser, for every method.
//
// Config.Transport gives the same decision and connection, one request at
// a time, to a client of another protocol over HTTP: the MCP tools' client
// (shared/mcptool) sends every request of the MCP Go SDK through it, with
// the platform's MCP allow-list as Allow and the pinned server's host as the
// pinned list.
//
// # Body
//
// json: one JSON text (RFC 8259; a leading BOM is ignored, §8.1), read as a
// stream by jsontext (github.com/go-json-experiment/json): a window of a
// few KiB, grown to fit the longest single string or number, the names of
// the objects open above the current value, and the value at Select are
// held, so a 5 MiB body of many values with a small select allocates well
// under 1 MiB. A body that is mostly one long string takes about three
// times its size while it is read, as Select "" does for any body; deeply
// nested long member names ending in a syntax error, whose location spells
// them out again, take under twelve times (docs/performance.md). csv: RFC 4180 through encoding/csv, as a list
// of objects keyed by the header row. text: a string. Every body must be
// UTF-8.
//
// # Outcomes
//
// Every failure is a *tool.Error, never marked MaybeApplied (a GET has no
// side effect):
//
//	TOOL_PERMISSION_DENIED     refused by Decide; a body over the bound; a redirect over the limit;
//	                           a header name outside AllowedHeaders
//	TOOL_RATE_LIMITED          429, with RetryAfter from Retry-After
//	TOOL_UPSTREAM_UNAVAILABLE  5xx (with RetryAfter); a failed look-up or connection; a connection lost mid-body
//	TOOL_PERMANENT_FAILURE     other 4xx; other 3xx, or a redirect without Location; a body that does not
//	                           parse as the accept type or is not UTF-8; a select that does not resolve;
//	                           an untrusted TLS certificate; a name that does not exist
//	TOOL_TIMEOUT               Config.Timeout or the caller's deadline passed
//	TOOL_INPUT_INVALID         a bad accept, select or header value
//
// # Dry run
//
// Decide makes no connection; with a FixedResolver (from ParseResolve, the
// `toolgate check-url --resolve HOST=IP` form) it makes no lookup either,
// and gives the same answer the Lambda would.
package fetch
