// Package seal is the message authentication code that a tool function
// puts on the ledger items it writes (call items, table.Call; binding
// items, table.Binding) and checks on every one it reads, so that one tool
// function's role, which DynamoDB lets write any item of those kinds,
// cannot forge another function's records (docs/ledger.md, "Records are
// sealed by the function that writes them").
//
// A seal is HMAC-SHA256 (RFC 2104, FIPS 198-1) under the function's own
// secret (shared/secrets) over a domain-separated, versioned, length-
// prefixed encoding of the item's fields, written base64 (RFC 4648 §4) in
// the item's "mac" attribute. Check says whether an item's seal is valid,
// absent (an item written before seals) or forged; Accept applies the
// upgrade rule to an absent one.
package seal
