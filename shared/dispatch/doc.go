// Package dispatch is the governed dispatcher every tool Lambda runs its
// tool through. Per invocation it decodes the envelope strictly, loads the
// run's pinned toolset, validates the input against the pinned schema,
// claims the idempotency record, enforces the attempt cap, runs the tool
// under the Lambda deadline, checks the output, finishes the record and
// writes a ToolInvocation ledger row: the tool contract of the second design
// seed (ADR-0013) and the pinned toolsets and policies of the first.
//
// docs/dispatcher.md walks through the record states and the DynamoDB
// requests each outcome costs.
package dispatch
