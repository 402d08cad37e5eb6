// Package toolfunction builds a tool function's governed dispatcher at
// cold start, for the function's main to start: the dispatcher's
// configuration from the environment (dispatch.ConfigFromEnv), the
// function's ledger secrets from SSM (shared/secrets), the DynamoDB
// adapters it keeps its records with (shared/ledger's and
// shared/review/dynamo's stores, sealed with the function's own key) and
// the caller verifier (shared/caller). It is the wiring the tool
// functions share, so that shared/dispatch links none of these adapters
// and each functions/<name>/main.go stays a dozen lines
// (docs/ledger.md, "Configuration of a tool function").
package toolfunction
