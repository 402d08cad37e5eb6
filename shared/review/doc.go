// Package review keeps the human reviews of gated tool calls (docs/design.md,
// "Review before tool (Gate A)"): the pending review a review
// Task asks for, the decision a reviewer makes on it, and the check the
// dispatcher makes before a gated tool runs ("what you approved is what is
// sent").
//
// Reviews live in the ledger table (docs/reviews.md), apart from its
// records and rows: one item per review, pk "REVIEW#<review_id>", sk
// "REVIEW", listed through the table's reviews-by-status index without a
// Scan. Every read and write of those items is in this package (Store):
// a review holds the inputs it asks about, so only the review functions
// and the dispatcher touch it, and its TTL (expires_at, the end of the
// review's timeout) ends it.
//
// The decision gates are pure functions returning a decision with a reason
// (Authorize for a reviewer, CheckApproval for a tool call), default deny.
// Service is the review-decision function's logic (list, show, decide and
// delivery of the decision to Step Functions with SendTaskSuccess or
// SendTaskFailure); RequestHandler is the review-request function's.
package review
