// Package schema compiles and applies the JSON Schema (draft 2020-12)
// documents of the tool contract with santhosh-tekuri/jsonschema/v6, and
// turns a validation failure into a flat list of problems, each naming the
// JSON Pointer (RFC 6901) of the value at fault.
//
// The resolver uses it at compile time on a tool step's literal inputs, the
// dispatcher at run time on the bound inputs: the same schema, validated
// twice (docs/design.md, "Toolsets").
package schema
