package schemashape

import "strings"

// TypeSet is a set of JSON types (RFC 8259 values, named as JSON Schema
// names them, draft 2020-12 "type"). Integer is a number: a set holding
// Number holds the integers too, and a set holding only Integer holds the
// numbers without a fractional part.
type TypeSet uint8

// The JSON types.
const (
	String TypeSet = 1 << iota
	Integer
	Number // any number; Number without Integer is a number with a fraction
	Boolean
	Null
	Object
	Array

	// Any is every type: what a schema that says nothing allows.
	Any = String | Integer | Number | Boolean | Null | Object | Array
)

// typeNames are the JSON Schema type names, in the order String writes them.
var typeNames = []struct {
	name string
	set  TypeSet
}{
	{"string", String}, {"number", Number}, {"integer", Integer}, {"boolean", Boolean},
	{"null", Null}, {"object", Object}, {"array", Array},
}

// typeOfName is the set a JSON Schema "type" name allows ("number" allows
// the integers too); ok is false for a name JSON Schema does not have.
func typeOfName(name string) (TypeSet, bool) {
	switch name {
	case "number":
		return Number | Integer, true
	}
	for _, t := range typeNames {
		if t.name == name {
			return t.set, true
		}
	}
	return 0, false
}

// Overlaps reports whether a value of one of the types of t may be a value
// of one of the types of u: an integer is a number, and a number may be an
// integer.
func (t TypeSet) Overlaps(u TypeSet) bool {
	const numeric = Integer | Number
	if t&numeric != 0 && u&numeric != 0 {
		return true
	}
	return t&u != 0
}

// String writes the set as JSON Schema type names joined by " or "
// ("string or null"); "number" stands for integers too; an empty set is
// "nothing", Any is "any type".
func (t TypeSet) String() string {
	switch t {
	case 0:
		return "nothing"
	case Any:
		return "any type"
	}
	var names []string
	for _, n := range typeNames {
		if t&n.set == 0 || n.set == Integer && t&Number != 0 {
			continue
		}
		names = append(names, n.name)
	}
	return strings.Join(names, " or ")
}
