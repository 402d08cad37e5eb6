// Package toolcall is what the dispatcher hands a tool (Call) and what a
// tool implements (Func). It is apart from shared/tool, the envelope and
// error contract, so that what only reads the contract (the review
// functions) does not link the pinned toolset and its JSON Schema compiler.
//
// It is also the agreement between the dispatcher and a tool on a
// credential the server refused after the call was sent (expired.go): the
// one CALL_PARKED a tool may answer once the key is claimed.
package toolcall
