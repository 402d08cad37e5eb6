// Package ledger keeps toolgate's records in one DynamoDB table (single-
// table design, docs/ledger.md): pinned toolsets, one item per call (its
// idempotency record, attempts and invocations), and row items of
// invocations that claimed nothing ("every invocation writes a
// ToolInvocation ledger row carrying its error class", docs/design.md),
// Solutions' published versions, and accepted caller proofs (ProofTable,
// the store shared/caller records proofs in).
//
// It uses only item-level actions that dynalite implements (PutItem,
// GetItem, UpdateItem, Query with condition expressions): no transactions,
// no UpdateTimeToLive (the table's TTL setting on expires_at belongs to
// the infrastructure). A failed conditional write is followed by a
// consistent GetItem; only ProofTable asks for
// ReturnValuesOnConditionCheckFailure, and reads the item when the answer
// lacks it, as dynalite's does.
package ledger
