// Package envelope is the invocation envelope a compiled Step Functions
// Task (or `toolgate invoke`) sends to a tool function, and its strict
// decoding: an unknown field, a missing key or a wrong type is
// TOOL_INPUT_INVALID naming the field.
//
// The resolver writes the envelope (docs/solutions.md, "The tool Task");
// the dispatcher reads it.
package envelope
