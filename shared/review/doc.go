// Package review is the domain of the human reviews of gated tool calls
// (docs/design.md, "Review before tool (Gate A)"): the pending review a
// review Task asks for, the decision a reviewer makes on it, and the check
// the dispatcher makes before a gated tool runs ("what you approved is
// what is sent").
//
// It holds no I/O. The decision gates are pure functions returning a
// decision with a reason (Authorize for a reviewer, CheckApproval for a
// tool call), default deny. It also holds what both sides of the review
// functions share: the compiled Tasks' payloads (DecodeTask, DecodeStart),
// the request and answer shapes of review-request (LaneRequest, LaneStatus,
// RequestResult) and review-decision (DirectRequest, DecisionBody, View,
// ListResult, DecideResult), and one error vocabulary for both (Code,
// Error, Edge).
//
// The adapters are named after their technology: shared/review/dynamo
// keeps review items in the ledger table (docs/reviews.md; table.Review: pk
// REVIEW#<review_id>, sk "REVIEW", listed through the reviews-by-status
// index without a Scan), and shared/review/stepfunctions delivers a
// decision to the review Task waiting for it (TaskDelivery). Each
// function's handler lives next to it: functions/review-request/request
// and functions/review-decision/decision.
package review
