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
