package mcptool

import (
	"encoding/json"
	"slices"
	"strings"
)

// Class says what a change of a tool's definition does to the calls the
// toolset's reviewers checked (docs/parking.md, "Classifying a change").
type Class string

const (
	// Additive: every input the pinned definition accepts is still
	// accepted and means the same, and every result the server may now
	// send still passes the pinned output schema.
	Additive Class = "additive"
	// Breaking: anything else, and any change no rule recognises.
	Breaking Class = "breaking"
)

// Change is one changed JSON Pointer (RFC 6901) into a tool's definition,
// as Check's diff names it ("" is the whole definition), with its class
// and why, in fixed words: never text of the server's.
type Change struct {
	Pointer string
	Class   Class
	Why     string
}

// Definition is a tool's definition as Check compares it: its
// description, input schema, output schema and annotations (an absent
// input schema is null; an absent or null output schema or annotations
// {}).
type Definition struct {
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  json.RawMessage
}

// Classify compares a pinned definition with the server's current one
// (nil: the server lists the tool no more) and returns every changed JSON
// Pointer, in the order Check's diff visits them (object members sorted,
// array elements by index), with its class (docs/parking.md, "Classifying
// a change"):
//
//   - additive: a new input property that the schema holding it does not
//     list in required and that has no default ("/inputSchema/properties/<name>",
//     or nested under properties only), or a required list that lost names
//     and gained none; a new output property
//     ("/outputSchema/properties/<name>", nested likewise) where no pinned
//     schema from the output schema down to the one holding it may refuse
//     a property it does not list (openToNewProperties);
//   - breaking: the tool removed; a property removed or renamed; a new
//     required input; a new input property with a default; a type, enum, const, bound, pattern or format
//     changed (narrowed or not); the tool's or a property's description
//     changed (what reviewers and a model read as the tool's meaning); an
//     annotation changed; an output property added under a pinned
//     additionalProperties: false, or any other keyword that may refuse
//     it; and every change no rule above names.
//
// A definition whose schema or annotations are not JSON is an error.
// Equal definitions have no change.
func Classify(pinned Definition, current *Definition) ([]Change, error) {
	p, err := definition(pinned.Description, pinned.InputSchema, pinned.OutputSchema, pinned.Annotations)
	if err != nil {
		return nil, err
	}
	if current == nil {
		return []Change{removedTool}, nil
	}
	c, err := definition(current.Description, current.InputSchema, current.OutputSchema, current.Annotations)
	if err != nil {
		return nil, err
	}
	changes, _ := diff(p.value, c.value, maxChangesCounted)
	return classify(p.value, c.value, changes), nil
}

// removedTool is the one change of a tool its server lists no more.
var removedTool = Change{Pointer: "", Class: Breaking, Why: "the tool was removed"}

// AllAdditive reports whether changes is not empty and every change in it
// is Additive: what on_schema_change allow_additive_input lets run
// (docs/parking.md, "allow_additive_input").
func AllAdditive(changes []Change) bool {
	return len(changes) > 0 && !slices.ContainsFunc(changes, func(c Change) bool { return c.Class != Additive })
}

// classify classes each change diff found between the decoded
// definitions pinned and current.
func classify(pinned, current any, changes []change) []Change {
	out := make([]Change, len(changes))
	for i, ch := range changes {
		class, why := classOf(pinned, current, ch)
		out[i] = Change{Pointer: ch.path, Class: class, Why: why}
	}
	return out
}

// classOf is one change's class and why.
func classOf(pinned, current any, ch change) (Class, string) {
	tokens, ok := splitPointer(ch.path)
	if !ok || len(tokens) == 0 {
		return Breaking, "the whole definition changed"
	}
	switch tokens[0] {
	case "description":
		return Breaking, "the tool's description changed"
	case "annotations":
		return Breaking, "an annotation changed"
	case "inputSchema":
		return schemaChange(pinned, current, ch.op, tokens, true)
	case "outputSchema":
		return schemaChange(pinned, current, ch.op, tokens, false)
	}
	return Breaking, "an unknown member changed"
}

// schemaChange classes a change inside the input (input true) or output
// schema; tokens start with the schema's member name.
func schemaChange(pinned, current any, op string, tokens []string, input bool) (Class, string) {
	side := "output"
	if input {
		side = "input"
	}
	rest := tokens[1:]
	// Walk properties/<name> pairs: the schemas of nested properties.
	i := 0
	for i+1 < len(rest) && rest[i] == "properties" {
		i += 2
	}
	holder := tokens[:1+i] // the schema that holds the last properties pair
	switch {
	case len(rest) == 0:
		return Breaking, "the " + side + " schema changed"
	case i == len(rest):
		// The pointer names a property: <holder>/properties/<name>.
		holder = tokens[:len(tokens)-2]
		return propertyChange(pinned, current, op, holder, []string{rest[i-1]}, input)
	case i == len(rest)-1 && rest[i] == "properties" && op == "added":
		// A properties keyword where the schema had none: each member is a
		// new property.
		props, _ := at(current, tokens).(map[string]any)
		names := make([]string, 0, len(props))
		for n := range props {
			names = append(names, n)
		}
		return propertyChange(pinned, current, op, holder, names, input)
	case i >= len(rest)-2 && rest[i] == "required" && input:
		if subset(stringsAt(current, append(holder, "required")), stringsAt(pinned, append(holder, "required"))) {
			return Additive, "no input is newly required"
		}
		return Breaking, "a new required input"
	}
	switch keyword := rest[i]; keyword {
	case "type":
		return Breaking, "a type changed"
	case "enum", "const":
		return Breaking, "the allowed values changed"
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
		"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "uniqueItems":
		return Breaking, "a bound changed"
	case "pattern", "format":
		return Breaking, "a pattern or format changed"
	case "description", "title", "examples", "default", "$comment":
		return Breaking, "a property's description changed"
	case "required":
		return Breaking, "the required output properties changed"
	case "additionalProperties", "unevaluatedProperties":
		return Breaking, "the additional properties allowed changed"
	}
	return Breaking, "the " + side + " schema changed"
}

// propertyChange classes a change of the properties names of the schema
// at holder.
func propertyChange(pinned, current any, op string, holder, names []string, input bool) (Class, string) {
	switch {
	case op == "removed" && input:
		return Breaking, "an input property was removed or renamed"
	case op == "removed":
		return Breaking, "an output property was removed or renamed"
	case op != "added" && input:
		return Breaking, "an input property's schema changed"
	case op != "added":
		return Breaking, "an output property's schema changed"
	case input:
		required := stringsAt(current, append(slices.Clone(holder), "required"))
		for _, n := range names {
			if slices.Contains(required, n) {
				return Breaking, "a new required input"
			}
		}
		for _, n := range names {
			// A default says what a call that leaves the property out
			// means, and every pinned call leaves it out.
			if p, _ := at(current, append(slices.Clone(holder), "properties", n)).(map[string]any); p != nil {
				if _, ok := p["default"]; ok {
					return Breaking, "a new input property with a default, which changes what a call without it means"
				}
			}
		}
		return Additive, "a new optional input property"
	}
	h, _ := at(pinned, holder).(map[string]any)
	if h["additionalProperties"] == false || h["unevaluatedProperties"] == false {
		return Breaking, "a new output property, which the pinned output schema's additionalProperties: false refuses"
	}
	if !openToNewProperties(pinned, holder) {
		return Breaking, "a new output property, which the pinned output schema may refuse"
	}
	return Additive, "a new output property, which the pinned output schema allows"
}

// openKeywords are the keywords of a pinned output schema on the way to
// a new output property that cannot refuse a result carrying it (JSON
// Schema 2020-12, Core and Validation): annotations, and keywords that
// name listed properties only. Any other keyword (additionalProperties or
// unevaluatedProperties other than true on the schema holding the new
// property, patternProperties, propertyNames, maxProperties,
// dependentRequired, dependentSchemas, enum, const, a combinator, $ref,
// ...) may, so the change is breaking: the safe default.
var openKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "minProperties": true, "$defs": true,
	"title": true, "description": true, "$comment": true, "examples": true, "default": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "$schema": true, "$id": true,
	"additionalProperties": true, "unevaluatedProperties": true,
}

// openToNewProperties reports whether every pinned schema from the output
// schema down to holder (along its properties/<name> pairs) accepts a
// result whose object at holder carries a property it does not list:
// only openKeywords, and on holder itself additionalProperties and
// unevaluatedProperties absent or true. Those keywords on a schema above
// holder apply to members other than the one leading to it, so they
// refuse nothing there.
func openToNewProperties(pinned any, holder []string) bool {
	for n := 1; n <= len(holder); n += 2 {
		v := at(pinned, holder[:n])
		if v == true {
			return true // the boolean schema true: anything below it passes
		}
		s, ok := v.(map[string]any)
		if !ok {
			return false
		}
		for k, x := range s {
			if !openKeywords[k] {
				return false
			}
			if n == len(holder) && (k == "additionalProperties" || k == "unevaluatedProperties") && x != true {
				return false
			}
		}
	}
	return true
}

// splitPointer splits an RFC 6901 JSON Pointer into its unescaped
// reference tokens; "" is none.
func splitPointer(p string) ([]string, bool) {
	if p == "" {
		return nil, true
	}
	if !strings.HasPrefix(p, "/") {
		return nil, false
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, true
}

// at is the value at tokens (object members only) in v; nil when there is
// none.
func at(v any, tokens []string) any {
	for _, t := range tokens {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[t]
	}
	return v
}

// stringsAt is the strings of the array at tokens in v.
func stringsAt(v any, tokens []string) []string {
	a, _ := at(v, tokens).([]any)
	out := make([]string, 0, len(a))
	for _, x := range a {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// subset reports whether every string of a is in b.
func subset(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}
