// Package credential stores the credentials a toolset's targets are
// presented (an MCP server, an exact http host entry), envelope-encrypted
// with KMS, and resolves and injects them at call time
// (docs/credentials.md).
//
// A credential is stored for (toolset name, target, origin, scope) and is
// used only by the toolset ids allowed for it. Its plaintext is sealed
// with AES-256-GCM under a data key from KMS GenerateDataKey; the
// encrypted data key is kept beside it, and the encryption context
// {purpose, toolset_name, target, origin, scope} is also the GCM
// additional data, so a ciphertext moved to another scope, target or
// purpose does not decrypt. At call time the first scope that holds one
// (run, end user, toolset) is used whole, never merged, and Transport adds
// it to requests for its exact origin only.
//
// Nothing here logs, records or quotes a credential: errors name the
// scope kind and the target, never a value.
package credential
