// Package vault keeps credentials (package credential) sealed in the
// ledger table and resolves them at call time (docs/credentials.md).
//
// A credential's secret is sealed (Seal) with AES-256-GCM under a data key
// from KMS GenerateDataKey; the encrypted data key is kept beside it, and
// the encryption context {purpose, toolset_name, target, origin, scope}
// (EncryptionContext) is also the GCM additional data, so a ciphertext
// moved to another scope, target or purpose does not decrypt (Open).
// SealWith and OpenWith are that envelope for any encryption context and
// additional data (ContextAAD): webhook signing secrets are sealed with
// them (shared/webhook/store).
//
// The pieces, in the order a credential meets them:
//
//   - Store keeps the sealed credentials and each toolset id's marker in
//     the ledger table (table.Credential, table.CredentialToolset): Put,
//     Delete, List, Origins, MarkToolset, Allow, AllowRegistered and
//     ToolsetCredential for the publish function; Lookup, one
//     BatchGetItem, for a call.
//   - Resolver.Resolve chooses, before the claim, the first scope that
//     holds a credential (run, end user, toolset), used whole, never
//     merged; it keeps what it read for CacheTTL and decrypts each stored
//     value once, and returns a credential.Credential to present.
//
// Nothing here logs, records or quotes a credential: errors name the
// scope kind and the target, never a value.
package vault
