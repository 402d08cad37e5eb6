// Package externalkey makes and parses the idempotency key toolgate sends
// out of the account: to MCP servers (the tools/call _meta key
// mcpmeta.IdempotencyKey), to platform tools (their request's
// idempotency_key) and to the hosts a tool calls. The ledger keys a call by
// "<run_id>/<seq>", whose run id is an execution ARN (account, region,
// stage, Solution and execution names) or, on the direct lane, names the
// caller's IAM principal; the external key stands for it without telling
// any of that (docs/ledger.md, "The external key").
package externalkey
