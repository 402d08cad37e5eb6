// Package mcpmeta names the keys toolgate itself puts in an MCP request's
// "_meta" object, so that the side that sends them (the dispatcher's MCP
// client) and the sides that read them (MCP servers, the local test server)
// spell them the same way.
//
// # Naming
//
// The MCP specification (basic protocol, "_meta", revisions 2025-06-18 and
// later) lets an implementation add its own keys under a prefix: labels
// separated by dots and followed by a slash, each label starting with a
// letter and ending with a letter or digit, with letters, digits and hyphens
// between. The name after the slash begins and ends with a letter or digit
// and may hold hyphens, underscores and dots between. From the 2025-11-25
// revision a prefix SHOULD be in reverse DNS notation, and a prefix whose
// second label is "modelcontextprotocol" or "mcp" is reserved for MCP
// itself.
//
// toolgate's prefix is therefore "io.toolgate/", its own reverse DNS name;
// keys without a prefix, and keys under "io.modelcontextprotocol/", belong
// to others. The one exception toolgate sends is the trace context: the
// specification reserves the bare keys "traceparent", "tracestate" and
// "baggage" for it (SEP-414), and toolgate puts the first two there
// (Traceparent, Tracestate) rather than under its own prefix, so that any
// server that continues traces finds them.
package mcpmeta
