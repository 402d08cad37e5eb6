// Package credential is what a credential is and how it is presented:
// the credentials a toolset's targets (an MCP server, an exact http host
// entry) are presented, their scopes and secrets' grammar, and the
// transport that adds one to a connection (docs/credentials.md). Storing
// and resolving them, with KMS and the ledger table, is package vault.
//
// A credential is stored for (toolset name, target, origin, scope) and is
// used only by the toolset ids allowed for it. Its secret is checked when
// set (CheckSecret) so that no transport error can quote it later. A
// scope is the toolset's, an end user's (EndUserScope, an HMAC of the id)
// or one run's (RunScope).
//
// At call time a resolved Credential is presented by Transport, on
// requests to its exact origin only; InvalidToken and Credential.Refused
// turn a server's RFC 6750 invalid_token refusal into CALL_PARKED
// (CauseExpired); Credential.Redact takes it out of error text.
//
// Nothing here logs, records or quotes a credential: errors name the
// scope kind and the target, never a value. The package links no AWS
// service client, so the compiler, the CDK app and every tool may use it.
package credential
