// Package toolcall is what the dispatcher hands a tool (Call) and what a
// tool implements (Func). It is apart from shared/tool, the envelope and
// error contract, so that what only reads the contract (the review
// functions) does not link the pinned toolset and its JSON Schema compiler.
package toolcall
