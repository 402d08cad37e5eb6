// Package schema compiles and applies the JSON Schema (draft 2020-12)
// documents of the tool contract and of a Solution's run input with
// santhosh-tekuri/jsonschema/v6, and turns a validation failure into a
// flat list of problems, each naming the JSON Pointer (RFC 6901) of the
// value at fault, the failing keyword and its location in the schema
// (Problem.Redacted never quotes the instance).
//
// The resolver uses it at compile time on a tool step's literal inputs and
// on a Solution's input schema, the dispatcher at run time on the bound
// inputs (the same schema, validated twice: docs/design.md, "Toolsets"),
// and shared/inputrecord on a run's input before toolgate run starts the
// run, or review-request lets a parent's workflow step start a child run.
//
// Patterns ("pattern", JSON Schema 2020-12 Validation §6.3.3, and the keys
// of "patternProperties") are ECMA-262 regular expressions (Core §6.4). A
// pattern compiles with Go's regexp (RE2) when RE2 accepts it, else with
// dlclark/regexp2 in ECMAScript mode with the "u" flag; matches on that
// backtracking engine are bounded per match (MatchTimeout) and per
// validation (ValidationBudget), and a match that does not finish refuses
// the value (PatternLimitError). docs/solutions.md, "Patterns in JSON
// Schemas", is the reference for authors.
package schema
