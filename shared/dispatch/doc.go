// Package dispatch is the governed dispatcher every tool Lambda runs its
// tool through. Per invocation it decodes the envelope strictly, loads the
// run's pinned toolset (checked again on every load), validates the input
// against the pinned schema, checks a gated tool's approval before the
// key is claimed, claims the call's item, enforces the attempt cap, runs
// the tool under the Lambda deadline, checks the output, and finishes the
// record with the ToolInvocation row: the tool contract and the pinned
// toolsets and policies of docs/design.md.
//
// docs/ledger.md walks through the record states and the DynamoDB
// requests each outcome costs.
package dispatch
