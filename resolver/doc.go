// Package resolver checks authored Solutions and compiles them to AWS Step
// Functions state machines (Amazon States Language, JSONPath query
// language), together with the toolset they pin.
//
// It is the compile-time half of toolgate's rules (docs/design.md): tool
// steps and their admission, Gate A ("review before tool"), the tool
// contract's retry rules, "no tool fallback chain", and the pinned,
// content-addressed toolset. It also applies the tools' own input rules to
// the literal values of tool steps (recipients, subjects, fetch URLs), by
// calling the SDK-free functions the tools call (shared/recipient,
// shared/mailheader, shared/fetchurl), and lists the literals the
// deployment's allow-lists decide on (Result.Literals) for the publish
// function. docs/solutions.md is the authors' reference for the grammar,
// the rules and the state data layout.
//
// Every problem becomes a Diagnostic naming the file, line, column and rule;
// all of them are reported, not just the first. A Solution with any error
// compiles to nothing.
package resolver
