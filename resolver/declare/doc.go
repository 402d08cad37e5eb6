// Package declare renders a pinned toolset's declarations for authors, in
// two renderings (docs/declarations.md):
//
//   - tools.d.ts (TypeScript): one member of the Tools interface per tool,
//     under the tool's exact name as a quoted key, with its description as
//     JSDoc and the input and output types its pinned JSON Schemas give;
//   - solution.schema.json (JSON Schema draft-07): the Solution grammar
//     specialised to the toolset, for an editor's YAML language server.
//
// Both are generated in Go from the toolset alone, so the CLI needs no
// Node.js at run time.
//
// TypeScript renders the first for the JSON Schema subset toolgate's
// schemas use (draft 2020-12 and draft-07): types no looser on structure
// than the schema, value constraints and what the subset cannot express
// as JSDoc notes, local references as type aliases, and every name,
// description and schema string escaped so that it can end no comment or
// string (docs/declarations.md, "tools.d.ts"). Its tests type-check
// examples with npm typescript's tsc, the only use of Node.js.
package declare

// File names `toolgate declarations` writes in its output directory.
const (
	// TypeScriptFile is the TypeScript rendering.
	TypeScriptFile = "tools.d.ts"
	// SolutionSchemaFile is the editor's JSON Schema rendering.
	SolutionSchemaFile = "solution.schema.json"
)
