// Package dispatch is the governed dispatcher every tool Lambda runs its
// tool through: the tool contract and the pinned toolsets and policies of
// docs/design.md. Dispatcher.Invoke reads as its phases, one file each:
//
//   - admit (dispatch.go, lane.go): decode the envelope strictly and check
//     the caller's lane; a call that fails either writes nothing.
//   - load and validate (input.go): the run's pinned toolset (checked again
//     on every load) and the input against its pinned schema, digested once
//     in its RFC 8785 form.
//   - approve (approval.go): a gated tool's approval, before the key is
//     claimed.
//   - credentials (credentials.go): the credential of a target that
//     declares auth (Deps.Credentials), resolved before the check and the
//     claim and handed to both; an expired one PARKS the call, none
//     refuses it, nothing claimed. After the claim, a server refusing it
//     as an invalid token is the one CALL_PARKED a tool may answer: the
//     record FAILED, not applied (execute.go).
//   - check (check.go): the tool's own check before the claim
//     (Config.Check: an MCP tool's definition on its server); a call it
//     stops is PARKED (CALL_PARKED) or REFUSED, its key left unclaimed.
//   - claim (claim.go): the call's idempotency record, with the attempt cap
//     and the at_most_once rule.
//   - execute (execute.go): the tool under the Lambda deadline and its
//     lease (toolDeadline), the code its end gets (classifyEnd), and its
//     output against the pinned schema and the inline limit.
//   - record (record.go): every phase after admit ends in an outcome, which
//     record writes to the ledger (a row of its own, or the claimed
//     record's finish with the attempt's row) and the log, in one place.
//   - learn (learn.go): after a success is recorded, the shape of its
//     result (Deps.Shapes, shared/observed), within LearnTimeout; never
//     the answer's business, never a value (docs/declarations.md,
//     "Observed shapes").
//
// New builds a Dispatcher from its Config (what it serves, its Mode:
// OneTool, PlatformTools or MCPTools; its limits) and its Deps, the
// stores and verifier behind the interfaces this package declares
// (stores.go, lane.go); shared/toolfunction wires the DynamoDB, SSM and
// STS adapters at a tool function's cold start, and the function's main
// starts the Lambda runtime with Dispatcher.Handle.
//
// docs/ledger.md walks through the record states and the DynamoDB
// requests each outcome costs.
package dispatch
