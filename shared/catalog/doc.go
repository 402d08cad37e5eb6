// Package catalog holds the platform's admitted tools: the data in
// catalog.json, written into Go data (builtin.go) by go generate, so that
// a function's cold start neither decodes nor checks it; a test holds
// builtin.go to catalog.json.
//
// Each entry is a tool contract (docs/design.md, "The tool contract"): its
// input and output JSON Schema (draft 2020-12), whether it honours the
// idempotency key, its delivery policy (at_least_once or at_most_once),
// whether a human review must precede it (Gate A), its default retry and
// Task timeout, and the Lambda function it runs in. A tool that is not in
// the catalog is never admitted, and is never treated as something else.
package catalog
