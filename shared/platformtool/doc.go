// Package platformtool is the platform tools' proxy (functions/lambda-tool,
// docs/tools.md "Platform tools"): a toolcall.Check and a toolcall.Func
// that the dispatcher (shared/dispatch, dispatch.PlatformTools) runs for every
// tool a run's pinned toolset names with a Lambda function.
//
// Check runs before the idempotency key is claimed: it reads the function's
// floor, the tags its team sets on it (Floor, Floors: Lambda ListTags, kept
// for FloorTTL), and refuses a pin looser than the floor, so that the call
// ends unclaimed and nothing is invoked. Once the dispatcher has claimed
// the key, Tool invokes the team's function (Lambda Invoke,
// RequestResponse) with a Request and maps its answer to a result or a
// *tool.Error, which the dispatcher checks against the pinned output
// schema and records as for any tool.
//
// A team's function needs no toolgate code: the Request and the error
// shape (Answer) are its whole contract, documented in docs/tools.md.
package platformtool
