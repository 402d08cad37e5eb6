// Package schemashape reads a JSON Schema document as the shape of the
// values it accepts, for checks made before any value exists: which
// members a path may reach, and which JSON types may sit there
// (docs/declarations.md, "Binding checks").
package schemashape
