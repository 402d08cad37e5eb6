// Package platformtool is the platform tools' proxy (functions/lambda-tool,
// docs/tools.md "Platform tools"): a toolcall.Func that the dispatcher
// (shared/dispatch, Config.Platform) runs for every tool a run's pinned
// toolset names with a Lambda function. The dispatcher has already decoded
// the envelope, checked the lane, validated the input against the pinned
// schema, checked any approval and claimed the idempotency key; Tool then
// invokes the team's function (Lambda Invoke, RequestResponse) with a
// Request and maps its answer to a result or a *tool.Error, which the
// dispatcher checks against the pinned output schema and records as for
// any tool.
//
// A team's function needs no toolgate code: the Request and the error
// shape (Answer) are its whole contract, documented in docs/tools.md.
package platformtool
