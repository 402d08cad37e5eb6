package mcpmeta

// Prefix is the reverse DNS prefix of every _meta key toolgate defines.
const Prefix = "io.toolgate/"

// IdempotencyKey is the _meta key of a tools/call request that carries the
// call's external idempotency key, a string of at most 64 visible ASCII
// characters that tells nothing of the run (docs/ledger.md, "The external
// key"). A server that honours it performs the
// side effect of the first request with a given key and answers later
// requests with the same key without repeating it; a server that ignores it
// performs every request. MCP itself defines no such key.
const IdempotencyKey = Prefix + "idempotency-key"

// Traceparent and Tracestate are the _meta keys of a request's W3C trace
// context (https://www.w3.org/TR/trace-context/): the values of the HTTP
// headers of the same names, a version-00 traceparent of 55 characters
// and a tracestate list of at most 32 members. They are not toolgate's
// own: the MCP specification (basic protocol, "_meta", trace context
// propagation; SEP-414, from the 2026-07-28 revision) reserves
// "traceparent", "tracestate" and "baggage" as bare keys, an exception to
// the prefix rule, at the top level of params._meta. toolgate sends
// Traceparent on every tools/call, and Tracestate when the context has
// one (docs/tools.md, "MCP tools"); it never sends baggage, which could
// carry anything a caller put in it.
const (
	Traceparent = "traceparent"
	Tracestate  = "tracestate"
)
