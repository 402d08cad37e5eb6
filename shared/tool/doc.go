// Package tool is the tool contract (docs/design.md, "The tool contract"):
// the invocation envelope and its strict decoding, the input digest, Call
// and Func that every tool implements, the review Task and decision, the
// limits, the log line's field names, and the typed error codes every tool
// failure is classified into, which of them a caller may retry, and the
// Error value that carries a code, a message safe to show, an optional
// retry-after, whether the side effect may have happened, and the cause.
//
// At the Lambda edge (Edge), an Error becomes a messages.InvokeResponse_Error
// whose Type is exactly the code, because Step Functions matches Retry and
// Catch ErrorEquals against it. Nothing else (a Go type name, an internal
// error's text) ever reaches a caller.
package tool
