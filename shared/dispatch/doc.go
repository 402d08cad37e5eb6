// Package dispatch is the governed dispatcher every tool Lambda runs its
// tool through. Per invocation it decodes the envelope strictly, loads the
// run's pinned toolset, validates the input against the pinned schema,
// claims the idempotency record, enforces the attempt cap, runs the tool
// under the Lambda deadline, checks the output, finishes the record and
// writes a ToolInvocation ledger row: the tool contract and the pinned
// toolsets and policies of docs/design.md.
//
// docs/ledger.md walks through the record states and the DynamoDB
// requests each outcome costs.
package dispatch
