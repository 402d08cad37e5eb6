// Package secrets names and reads the per-stage secrets of toolgate's
// tool functions (docs/ledger.md, "Records are sealed by the function
// that writes them"): each tool function's own ledger MAC key, the
// stage's external key (opaque idempotency keys sent to third parties),
// both SSM SecureString parameters of 32 random bytes, base64, and the
// stage's "since" time, a String parameter holding the RFC 3339 time the
// first deploy with seals had every tool function's new code live.
//
// Ensure creates them where absent and never overwrites one (the
// provisioning custom resource, functions/ledger-secrets, and the local
// stack share it); Load reads a function's three at cold start in one
// GetParameters request, and takes its own load time for a since time
// not written yet.
package secrets
