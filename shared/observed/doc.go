// Package observed learns the shape of a tool's successful results, never
// a value: for each path, the set of JSON types seen there, whether an
// object at that place always held a member, and one merged item shape per
// array (docs/declarations.md, "Observed shapes").
//
// A Shape is built from one result (Observe), merged with others (Merge:
// monotone, it reports whether anything was added), written and read as a
// compact, canonical JSON document (Marshal, Unmarshal: the attribute a
// table.Shape item holds), and rendered as a JSON Schema 2020-12 document
// (Schema) that accepts every result merged into it.
//
// What a shape never holds: a string, number or boolean value, a length,
// a count, an enum of values seen, or a key that looks like data. An object
// whose keys look like data (more than MaxKeys of them, or one that is no
// plain identifier, IdentifierPattern) becomes a map: only the merged shape
// of its values is kept. Shapes are bounded: MaxDepth levels and MaxPaths
// nodes, past which the subtree is unknown (any JSON value).
//
// Identity is how the dispatcher keys the shapes it learns (tool, the
// tool's own identity, the pinned output schema's digest, and the host
// for structured-data-fetch and http), and Key its digest. The package is
// pure: the store is shared/observed/dynamo, the learning hook
// shared/dispatch.
package observed
