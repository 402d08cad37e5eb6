// Package toolset implements the pinned, content-addressed toolset
// (docs/design.md, "Toolsets"): the list of what a run may call, with a policy per
// tool, the hosts structured-data-fetch may reach (fetch_hosts), and the
// hosts, methods and headers the http tool may use (http_hosts, http.go).
//
// A toolset's id is "ts_" followed by the first 32 hex digits of the
// SHA-256 of its RFC 8785 (JSON Canonicalization Scheme) form, the id field
// left out. The same tools and schemas therefore give the same id whatever
// the order of steps or which Solution uses them, and any change to a
// schema or policy gives a new id. A run keeps the toolset it started with
// for its whole life.
package toolset
