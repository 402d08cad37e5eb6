// Package fetchurl holds the structured-data-fetch tool's rules for a URL
// that need no network: its syntax, its host's normal form, and whether a
// host list allows its host and port. It has no I/O and links no AWS SDK
// and no HTTP client, so that the tool (package fetch, before every request
// and redirect), the resolver (literal URLs of a Solution, at compile time)
// and the publish function (literal URLs against the platform's list) call
// the same functions and never disagree.
//
// # Syntax
//
// Parse accepts only URLs that Go's net/url (RFC 3986) and the WHATWG URL
// Standard read the same way, a strict subset of both:
//
//   - scheme http or https (any case) followed by "//" (without it, RFC
//     3986 reads no authority where WHATWG reads one);
//   - no userinfo (RFC 3986 §3.2.1; credentials in a URL can hide the real
//     host, and RFC 3986 §7.5 advises against them);
//   - no blanks, control or format characters, anywhere: WHATWG strips
//     leading and trailing C0 controls and spaces and removes tabs and
//     newlines inside the URL, RFC 3986 parsers keep or refuse them
//     (CPython CVE-2023-24329); format characters vanish under IDNA
//     mapping (UTS #46);
//   - no backslash: WHATWG reads it as "/" in http and https URLs, RFC
//     3986 does not;
//   - a host of ASCII letters, digits, "-" and ".", or a non-ASCII name
//     that IDNA2008 registers as written (hostlist.NormalizeHost); no
//     percent-encoding in the host; "[" and "]" only around an IPv6 literal
//     (RFC 3986 §3.2.2); no zone identifier (RFC 6874);
//   - a port of 1–65535 in plain decimal without leading zeros;
//   - in the path, query and fragment, only RFC 3986 unreserved and
//     sub-delims characters, ":", "@" and "/" (and "?" after the path),
//     "%" only before two hex digits, no "'" in the query (WHATWG
//     percent-encodes it there), non-ASCII percent-encoded, and no dot
//     segments ("." and "..", plain or encoded: WHATWG removes them,
//     RFC 3986 parsers keep them);
//   - at most MaxBytes bytes (the catalog's maxLength).
//
// A fragment is accepted and never sent.
//
// # Reasons
//
// A refusal says what to change. It quotes a piece of the URL (the
// scheme, the host) only when the piece holds no run of more than 19
// letters, digits, "_" and "-", and never the port, whose length it names
// instead: a URL may carry a key where a port or a host should be, and
// reasons are shown and logged (an MCP server's URL is checked by Parse
// too, and must not show a secret: shared/toolset, ParseMCPURL).
//
// # Hosts
//
// Parse gives the host in hostlist's comparison form, and Listed says
// whether a hostlist.List allows the host and port, with the reason when it
// does not. Addresses are not this package's: a host name's addresses are
// known only by looking it up, and the address rules (package fetch,
// CheckAddr) depend on the deployment's exemptions.
package fetchurl
