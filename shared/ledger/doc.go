// Package ledger keeps toolgate's records in one DynamoDB table (single-
// table design, docs/ledger.md): pinned toolsets, one idempotency record per
// idempotency key, and one ToolInvocation row per invocation attempt (the
// second design seed: "every invocation writes a ToolInvocation ledger row
// carrying its error class").
//
// It uses only item-level actions that dynalite implements (PutItem,
// GetItem, UpdateItem, Query with condition expressions): no transactions,
// no ReturnValuesOnConditionCheckFailure (a failed conditional write is
// followed by a consistent GetItem), no UpdateTimeToLive (the table's TTL
// setting on expires_at belongs to the infrastructure).
package ledger
