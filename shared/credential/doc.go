// Package credential stores the credentials a toolset's targets are
// presented (an MCP server, an exact http host entry), envelope-encrypted
// with KMS, and resolves and injects them at call time
// (docs/credentials.md).
//
// A credential is stored for (toolset name, target, origin, scope) and is
// used only by the toolset ids allowed for it. Its plaintext is checked
// (CheckSecret) and sealed (Seal) with AES-256-GCM under a data key from
// KMS GenerateDataKey; the encrypted data key is kept beside it, and the
// encryption context {purpose, toolset_name, target, origin, scope}
// (EncryptionContext) is also the GCM additional data, so a ciphertext
// moved to another scope, target or purpose does not decrypt (Open).
//
// The pieces, in the order a credential meets them:
//
//   - Store keeps the sealed credentials and each toolset id's marker in
//     the ledger table (table.Credential, table.CredentialToolset): Put,
//     Delete, List, Origins, MarkToolset, Allow, AllowRegistered for the
//     publish function; Lookup, one BatchGetItem, for a call.
//   - Resolver.Resolve chooses, before the claim, the first scope that
//     holds a credential (run, end user, toolset), used whole, never
//     merged; it keeps what it read for CacheTTL and decrypts each stored
//     value once.
//   - Transport presents it on the connection, on requests to its exact
//     origin only; InvalidToken and Credential.Refused turn a server's
//     RFC 6750 invalid_token refusal into CALL_PARKED; Credential.Redact
//     takes it out of error text.
//
// Nothing here logs, records or quotes a credential: errors name the
// scope kind and the target, never a value.
package credential
