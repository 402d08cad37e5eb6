// Package schemashape reads a JSON Schema document as the shape of the
// values it accepts, for checks made before any value exists: which
// members a path may reach, and which JSON types may sit there
// (docs/declarations.md, "Binding checks").
//
// Parse reads a document of draft 2020-12 or draft-07 (both spellings:
// $defs and definitions, prefixItems and items as an array; prefixItems is
// read only where the $schema is not of an earlier draft); Shape.At
// walks a path of member names and array indexes and returns a Result:
// the types a value there may have (a TypeSet; an integer is a number),
// whether the path cannot exist (closed objects, additionalProperties:
// false, in every alternative), whether a schema names it, and the member
// names declared where it stops. Keywords it does not read leave the
// place open: it never says a path cannot exist unless the schema says so.
// Local $ref ("#…") is followed (in a draft-07 or older document, as its
// $schema says, the keywords beside a $ref are ignored, as that draft
// says), except in a document where a subschema has an $id of its own,
// which the walk does not resolve against (no $ref is followed there).
// Each schema object is evaluated once per depth of the path, and cycles
// and deep alternatives are bounded by a count of visited nodes, past
// which the rest is unknown.
package schemashape
