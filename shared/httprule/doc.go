// Package httprule holds the rules of the http tool (docs/tools.md, "http")
// that more than one part of toolgate applies: which methods it sends and
// which of them are reads, which request headers a call may set or a
// toolset's host entry may name, the idempotency key formats a host entry
// may declare, and the contract a call gets from its method (Decide). The
// resolver applies them at compile time to literal methods and URLs, the
// toolset check to pinned host entries, the dispatcher again at run time
// to the method in the call's actual input, and the tool to every request.
// It depends on the standard library, golang.org/x/net's httpguts and the
// catalog's policy names only.
package httprule
