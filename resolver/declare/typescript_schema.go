package declare

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// prec is how tightly a type's text binds, for parenthesising it inside
// another: a union, an intersection, or a primary type (a name, a
// literal, an object, tuple or array type).
type prec int

const (
	precUnion prec = iota
	precIntersection
	precPrimary
)

// tsType is a TypeScript type's text and how tightly it binds. Text that
// spans lines is indented for the place it is rendered at.
type tsType struct {
	text string
	prec prec
}

var (
	tUnknown = tsType{"unknown", precPrimary}
	tNever   = tsType{"never", precPrimary}
	// tAnyObject is an object type with no constraint: the part an
	// applicator's subschema contributes when it adds nothing.
	tAnyObject = tsType{"{}", precPrimary}
)

// in is t's text where a type binding at least p is needed.
func (t tsType) in(p prec) string {
	if t.prec < p {
		return "(" + t.text + ")"
	}
	return t.text
}

func (t tsType) multiline() bool { return strings.Contains(t.text, "\n") }

// union is the union of ts: unknown if one is unknown, never if there
// are none; never members and repeated members are dropped.
func union(ts []tsType) tsType {
	var parts []string
	seen := map[string]bool{}
	for _, t := range ts {
		switch {
		case t == tUnknown:
			return tUnknown
		case t == tNever:
			continue
		}
		s := t.text
		if t.prec > precUnion {
			s = t.in(precIntersection)
		}
		if !seen[s] {
			seen[s] = true
			parts = append(parts, s)
		}
	}
	switch len(parts) {
	case 0:
		return tNever
	case 1:
		for _, t := range ts {
			if t.text == parts[0] {
				return t
			}
		}
	}
	return tsType{strings.Join(parts, " | "), precUnion}
}

// intersect is the intersection of ts: never if one is never, unknown if
// there are none; unknown members, and "{}" beside another member, are
// dropped.
func intersect(ts []tsType) tsType {
	var kept []tsType
	for _, t := range ts {
		switch t {
		case tNever:
			return tNever
		case tUnknown:
			continue
		}
		if !slices.Contains(kept, t) {
			kept = append(kept, t)
		}
	}
	if len(kept) > 1 {
		kept = slices.DeleteFunc(kept, func(t tsType) bool { return t == tAnyObject })
	}
	switch len(kept) {
	case 0:
		return tUnknown
	case 1:
		return kept[0]
	}
	parts := make([]string, len(kept))
	for i, t := range kept {
		parts[i] = t.in(precIntersection)
	}
	return tsType{strings.Join(parts, " & "), precIntersection}
}

// alias is a named type the rendering declares after the Tools
// interface: the schema a local reference names.
type alias struct {
	name string
	body tsType
	doc  []note
	// direct are the aliases body names outside any object or array
	// type: a cycle of them is a type alias that refers to itself, which
	// TypeScript refuses.
	direct []*alias
}

// fileRenderer holds what the rendering of one toolset shares across
// its schemas: the aliases, in the order they were named, and the names
// taken.
type fileRenderer struct {
	used    map[string]bool
	aliases []*alias
}

// newAlias names an alias base (an identifier), made unique with a
// numeric suffix.
func (f *fileRenderer) newAlias(base string) *alias {
	name := base
	for i := 2; f.used[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	f.used[name] = true
	a := &alias{name: name}
	f.aliases = append(f.aliases, a)
	return a
}

// docRenderer renders one schema document (a tool's input or output
// schema).
type docRenderer struct {
	file         *fileRenderer
	tool, member string
	root         any
	prefix       string
	// legacy: the document is draft-07 or older ($schema): siblings of
	// "$ref" are ignored and an array "items" is a tuple.
	legacy  bool
	refs    map[string]*alias
	pending []pendingAlias
	err     error
}

type pendingAlias struct {
	a      *alias
	target any
	ptr    string
}

// ctx is where a schema is rendered.
type ctx struct {
	// ptr is the schema's JSON Pointer in its document.
	ptr   string
	depth int
	// indent is the indent level of the line the type starts on.
	indent int
	// direct is the alias whose body this schema is, outside any object
	// or array type (nil: none).
	direct *alias
	// notes collect the JSDoc of the member being declared; at is this
	// schema's location relative to that member's schema.
	notes *[]note
	at    string
	// inObject: the schema is an applicator's subschema (allOf, anyOf,
	// oneOf) beside an object type, or an object type beside a "$ref",
	// either of which declares the other members: an object type here
	// gets no index signature of unknown members.
	inObject bool
	// admit, when not nil, are the only member names a conjunct of the
	// same value admits: a closed object schema ("additionalProperties":
	// false, no patternProperties) beside this one, or this one's own,
	// refuses every other name. An object type here declares other
	// names never and adds no index signature of unknown members.
	admit map[string]bool
	// scoped: the schema is inside a subschema with its own "$id", a
	// resource of its own against whose URI its references resolve
	// (JSON Schema 2020-12 Core §8.2.1): such a reference is not a
	// pointer into the tool's schema, and is unknown.
	scoped bool
}

func (c ctx) add(tag, text string) { *c.notes = append(*c.notes, note{at: c.at, tag: tag, text: text}) }

// sub is the context of the subschema at keyword path rel (already
// JSON-Pointer escaped) in the same member's JSDoc.
func (c ctx) sub(rel string) ctx {
	c.ptr += "/" + rel
	c.depth++
	if c.at == "" {
		c.at = rel
	} else {
		c.at += "/" + rel
	}
	c.inObject = false
	c.admit = nil
	return c
}

// document renders one schema document of tool name at member
// ("input_schema", "output_schema"): its type, written for indent level
// 2, and the JSDoc notes of its top.
func (f *fileRenderer) document(name, member string, raw json.RawMessage) (tsType, []note, error) {
	root, err := decodeJSON(raw)
	if err != nil {
		return tUnknown, nil, fmt.Errorf("tool %s: %s: %v", tsString(name), member, err)
	}
	d := &docRenderer{file: f, tool: name, member: member, root: root, refs: map[string]*alias{}}
	d.prefix = identifier(name) + "_" + map[string]string{"input_schema": "Input", "output_schema": "Output", "observed_output": "Observed", "observed_data": "ObservedData"}[member]
	if m, ok := root.(map[string]any); ok {
		if s, ok := m["$schema"].(string); ok {
			d.legacy = strings.Contains(s, "draft-07") || strings.Contains(s, "draft-06") || strings.Contains(s, "draft-04")
		}
	}
	var notes []note
	t := d.render(root, ctx{indent: 2, notes: &notes})
	for len(d.pending) > 0 && d.err == nil {
		p := d.pending[0]
		d.pending = d.pending[1:]
		doc := []note{{text: fmt.Sprintf("The schema at %s of %s's %s.", tsString("#"+p.ptr), tsString(name), strings.ReplaceAll(member, "_", " "))}}
		p.a.body = d.render(p.target, ctx{ptr: p.ptr, direct: p.a, notes: &doc})
		p.a.doc = doc
	}
	if d.err != nil {
		return tUnknown, nil, d.err
	}
	breakCycles(slices.Collect(maps.Values(d.refs)))
	return t, notes, nil
}

// breakCycles declares unknown each alias that refers to itself through
// aliases alone (a schema whose "$ref" leads back to it with no object or
// array between): TypeScript refuses such an alias.
func breakCycles(as []*alias) {
	var cyclic []*alias
	for _, a := range as {
		seen := map[*alias]bool{}
		var reaches func(x *alias) bool
		reaches = func(x *alias) bool {
			for _, y := range x.direct {
				if y == a {
					return true
				}
				if !seen[y] {
					seen[y] = true
					if reaches(y) {
						return true
					}
				}
			}
			return false
		}
		if reaches(a) {
			cyclic = append(cyclic, a)
		}
	}
	for _, a := range cyclic {
		a.body = tUnknown
		a.doc = append(a.doc, note{text: "Not expressed: the schema refers to itself through references alone (unknown)."})
	}
}

// decodeJSON decodes one JSON value, numbers kept as written.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if dec.More() {
		return nil, errors.New("not JSON: data after the schema")
	}
	return v, nil
}

// identifier is s as a TypeScript identifier's part: ASCII letters,
// digits and "_", others "_".
func identifier(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] >= '0' && b[0] <= '9' {
		return "_" + string(b)
	}
	return string(b)
}

func (d *docRenderer) fail(ptr, format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("tool %s: %s at %s: %s", tsString(d.tool), d.member, tsString("#"+ptr), fmt.Sprintf(format, a...))
	}
}

// render is the type of schema s.
func (d *docRenderer) render(s any, c ctx) tsType {
	if d.err != nil {
		return tUnknown
	}
	switch v := s.(type) {
	case bool:
		if v {
			return tUnknown
		}
		return tNever
	case map[string]any:
		return d.schema(v, c)
	}
	d.fail(c.ptr, "a schema must be an object or a boolean")
	return tUnknown
}

// unexpressed are the keywords whose rule no TypeScript type states: a
// JSDoc note names each.
var unexpressed = []string{"not", "if", "dependentSchemas", "dependencies", "dependentRequired", "unevaluatedProperties", "unevaluatedItems", "contains", "$dynamicRef", "$recursiveRef"}

func (d *docRenderer) schema(m map[string]any, c ctx) tsType {
	if c.depth > MaxTypeDepth {
		c.add("", fmt.Sprintf("Not expressed: nested deeper than %d schemas (unknown).", MaxTypeDepth))
		return tUnknown
	}
	if _, ok := m["$id"]; ok && c.ptr != "" {
		c.scoped = true
	}
	var parts []tsType
	if r, ok := m["$ref"]; ok {
		s, ok := r.(string)
		if !ok {
			d.fail(c.ptr, "$ref must be a string")
			return tUnknown
		}
		if c.scoped {
			c.add("", "Not expressed: the reference "+tsString(s)+", inside a schema with its own $id, against which it resolves (unknown).")
			parts = append(parts, tUnknown)
		} else {
			parts = append(parts, d.ref(s, c))
		}
		if d.legacy {
			return parts[0]
		}
	}
	d.describe(m, c)
	kinds := d.kinds(m, c)
	d.constraints(m, kinds, c)
	for _, k := range unexpressed {
		if _, ok := m[k]; ok {
			c.add("", "Not expressed in the type: "+k+".")
		}
	}
	admit := admitted(m, c.admit)
	bc := c
	bc.admit = admit
	if len(parts) > 0 {
		// Beside a reference, whose alias declares its own members,
		// an object type adds no index signature of unknown members.
		bc.inObject = true
	}
	parts = append(parts, d.base(m, kinds, bc))
	objectOnly := len(kinds) == 1 && kinds[0] == "object"
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		v, ok := m[kw]
		if !ok {
			continue
		}
		subs, ok := v.([]any)
		if !ok || len(subs) == 0 {
			d.fail(c.ptr+"/"+kw, "%s must be a non-empty array", kw)
			return tUnknown
		}
		if sets, ok := requiredSets(subs); kw == "oneOf" && objectOnly && ok {
			t, exact := exclusive(sets, admit)
			parts = append(parts, t)
			if !exact {
				c.add("", "Exactly one of the oneOf alternatives holds: the type accepts some values that match several, the tool's schema does not.")
			}
			continue
		}
		alts := make([]tsType, len(subs))
		for i, sub := range subs {
			sc := c.sub(kw + "/" + strconv.Itoa(i))
			sc.inObject = objectOnly
			sc.admit = admit
			alts[i] = d.render(sub, sc)
		}
		if kw == "allOf" {
			parts = append(parts, alts...)
			continue
		}
		parts = append(parts, union(alts))
		if kw == "oneOf" && len(subs) > 1 {
			c.add("", "Exactly one of the oneOf alternatives holds: the type accepts a value that matches several, the tool's schema does not.")
		}
	}
	return intersect(parts)
}

// describe notes a schema's title, description, deprecation, default
// and first examples.
func (d *docRenderer) describe(m map[string]any, c ctx) {
	for _, k := range []string{"title", "description"} {
		if s, ok := m[k].(string); ok && s != "" {
			c.add("", s)
		}
	}
	if m["deprecated"] == true {
		c.add("@deprecated", "")
	}
	if v, ok := m["default"]; ok {
		c.add("@default", compactJSON(v))
	}
	if vs, ok := m["examples"].([]any); ok {
		for _, v := range vs[:min(len(vs), maxExamples)] {
			c.add("@example", compactJSON(v))
		}
	}
}

// maxExamples is how many of a schema's examples its JSDoc shows.
const maxExamples = 3

func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// kindKeywords are the keywords that apply to one JSON type only: a
// schema without "type" is taken to be of the types its keywords name
// (docs/declarations.md, "tools.d.ts").
var kindKeywords = map[string][]string{
	"object": {"properties", "required", "additionalProperties", "patternProperties", "minProperties", "maxProperties", "propertyNames", "dependentRequired"},
	"array":  {"items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems"},
	"string": {"minLength", "maxLength", "pattern"},
	"number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
}

var jsonTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// kinds are the JSON types schema m admits, sorted ("integer" as is):
// its "type", else the types its keywords apply to; nil: any.
func (d *docRenderer) kinds(m map[string]any, c ctx) []string {
	var ks []string
	switch t := m["type"].(type) {
	case nil:
		if _, ok := m["type"]; ok {
			d.fail(c.ptr+"/type", "type must be a string or an array of strings")
			return nil
		}
		for _, k := range slices.Sorted(maps.Keys(kindKeywords)) {
			for _, kw := range kindKeywords[k] {
				if _, ok := m[kw]; ok {
					ks = append(ks, k)
					break
				}
			}
		}
		return ks
	case string:
		ks = []string{t}
	case []any:
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				d.fail(c.ptr+"/type", "type must be a string or an array of strings")
				return nil
			}
			ks = append(ks, s)
		}
		if len(ks) == 0 {
			return []string{}
		}
	default:
		d.fail(c.ptr+"/type", "type must be a string or an array of strings")
		return nil
	}
	for _, k := range ks {
		if !slices.Contains(jsonTypes, k) {
			d.fail(c.ptr+"/type", "%s is not a JSON Schema type", tsString(k))
			return nil
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(ks)))
}

// constraints notes the value constraints of schema m that apply to its
// kinds (or to any kind when nil).
func (d *docRenderer) constraints(m map[string]any, kinds []string, c ctx) {
	has := func(k string) bool { return kinds == nil || slices.Contains(kinds, k) }
	num := func(kws ...string) {
		for _, kw := range kws {
			switch v := m[kw].(type) {
			case json.Number:
				c.add("@"+kw, v.String())
			case bool: // draft-04's exclusive bounds
				if v {
					c.add("@"+kw, "")
				}
			}
		}
	}
	if has("string") {
		num("minLength", "maxLength")
		for _, kw := range []string{"pattern", "format", "contentMediaType", "contentEncoding"} {
			if s, ok := m[kw].(string); ok {
				c.add("@"+kw, s)
			}
		}
	}
	if slices.Contains(kinds, "integer") {
		c.add("@integer", "")
	}
	if has("number") || has("integer") {
		num("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf")
	}
	if has("array") {
		num("minItems", "maxItems")
		if m["uniqueItems"] == true {
			c.add("@uniqueItems", "")
		}
	}
	if has("object") {
		num("minProperties", "maxProperties")
		if pn, ok := m["propertyNames"].(map[string]any); ok {
			pc := c.sub("propertyNames")
			d.describe(pn, pc)
			d.constraints(pn, []string{"string"}, pc)
		}
	}
}

// base is the type schema m's own keywords give (not its applicators):
// its const, else its enum, else the union of its kinds' types.
func (d *docRenderer) base(m map[string]any, kinds []string, c ctx) tsType {
	if v, ok := m["const"]; ok {
		return literal(v, 0)
	}
	if v, ok := m["enum"]; ok {
		vs, ok := v.([]any)
		if !ok {
			d.fail(c.ptr+"/enum", "enum must be an array")
			return tUnknown
		}
		var lits []tsType
		for _, v := range vs {
			if kinds == nil || slices.Contains(kinds, kindOf(v)) || kindOf(v) == "number" && slices.Contains(kinds, "integer") {
				lits = append(lits, literal(v, 0))
			}
		}
		return union(lits)
	}
	if kinds == nil {
		return tUnknown
	}
	var ts []tsType
	for _, k := range kinds {
		switch k {
		case "string", "number", "boolean", "null":
			ts = append(ts, tsType{k, precPrimary})
		case "integer":
			ts = append(ts, tsType{"number", precPrimary})
		case "array":
			ts = append(ts, d.arrayType(m, c))
		case "object":
			ts = append(ts, d.objectType(m, c))
		}
	}
	return union(ts)
}

// kindOf is the JSON type of a decoded value.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// literal is the literal type of JSON value v: a string, number, boolean
// or null literal, a tuple of literals, an object type of literal
// members.
func literal(v any, depth int) tsType {
	if depth > MaxTypeDepth {
		return tUnknown
	}
	switch x := v.(type) {
	case nil:
		return tsType{"null", precPrimary}
	case bool:
		return tsType{strconv.FormatBool(x), precPrimary}
	case json.Number:
		return tsType{x.String(), precPrimary}
	case string:
		return tsType{tsString(x), precPrimary}
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = literal(e, depth+1).text
		}
		return tsType{"[" + strings.Join(parts, ", ") + "]", precPrimary}
	case map[string]any:
		if len(x) == 0 {
			return tsType{"Record<string, never>", precPrimary}
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(x)) {
			parts = append(parts, tsString(k)+": "+literal(x[k], depth+1).text+";")
		}
		return tsType{"{ " + strings.Join(parts, " ") + " }", precPrimary}
	}
	return tUnknown
}

// number is a non-negative integer keyword's value (minItems), -1 when
// absent or not one.
func number(v any) int {
	n, ok := v.(json.Number)
	if !ok {
		return -1
	}
	f, err := n.Float64()
	if err != nil || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		return -1
	}
	return int(f)
}

// maxTupleMinItems is the largest minItems an array of one item type
// states as a tuple's leading elements ("[string, ...string[]]" for 1).
const maxTupleMinItems = 4

// maxRepeatedType is the longest item type written more than once (as
// the leading elements of minItems): arrays of such arrays then grow the
// rendering by a bounded amount per level, not a power of their depth.
const maxRepeatedType = 40

// arrayType is the type of an array schema: an array of its items'
// type; a tuple for prefixItems (draft 2020-12) or an array of schemas in
// items (draft-07), closed when the rest ("items", "additionalItems") is
// false, with the elements past minItems optional; leading elements for
// a minItems up to maxTupleMinItems.
func (d *docRenderer) arrayType(m map[string]any, c ctx) tsType {
	var prefix []any
	restKW := "items"
	if v, ok := m["prefixItems"]; ok {
		if prefix, ok = v.([]any); !ok {
			d.fail(c.ptr+"/prefixItems", "prefixItems must be an array")
			return tUnknown
		}
	} else if v, ok := m["items"].([]any); ok {
		prefix, restKW = v, "additionalItems"
	}
	elemCtx := func(rel string) ctx {
		sc := c.sub(rel)
		sc.direct = nil
		return sc
	}
	rest, hasRest := m[restKW]
	restT := tUnknown
	if hasRest {
		restT = d.render(rest, elemCtx(restKW))
	}
	minItems := number(m["minItems"])
	if len(prefix) == 0 {
		if restT == tNever {
			return tsType{"[]", precPrimary}
		}
		el := restT.in(precPrimary)
		if minItems >= 1 && minItems <= maxTupleMinItems && len(restT.text) <= maxRepeatedType && !restT.multiline() {
			return tsType{"[" + strings.Repeat(restT.text+", ", minItems) + "..." + el + "[]]", precPrimary}
		}
		return tsType{el + "[]", precPrimary}
	}
	var elems []string
	for i, p := range prefix {
		kw := "prefixItems"
		if restKW == "additionalItems" {
			kw = "items"
		}
		t := d.render(p, elemCtx(kw+"/"+strconv.Itoa(i)))
		if i >= minItems {
			elems = append(elems, t.in(precPrimary)+"?")
		} else {
			elems = append(elems, t.text)
		}
	}
	if restT != tNever {
		elems = append(elems, "..."+restT.in(precPrimary)+"[]")
	}
	return tsType{"[" + strings.Join(elems, ", ") + "]", precPrimary}
}

// objectType is the type of an object schema: a member per property and
// per required name, optional unless required, and an index signature
// for the other members: none under "additionalProperties": false (but
// for patternProperties), the union of the additional and pattern
// properties' types and the members' types (so that TypeScript accepts
// the members) when they are schemas, unknown when neither is set (but in
// an applicator's subschema beside an object type, which declares the
// object's other members).
func (d *docRenderer) objectType(m map[string]any, c ctx) tsType {
	props := map[string]any{}
	if v, ok := m["properties"]; ok {
		if props, ok = v.(map[string]any); !ok {
			d.fail(c.ptr+"/properties", "properties must be an object")
			return tUnknown
		}
	}
	required := map[string]bool{}
	if v, ok := m["required"]; ok {
		names, ok := v.([]any)
		if !ok {
			d.fail(c.ptr+"/required", "required must be an array of strings")
			return tUnknown
		}
		for _, n := range names {
			s, ok := n.(string)
			if !ok {
				d.fail(c.ptr+"/required", "required must be an array of strings")
				return tUnknown
			}
			required[s] = true
		}
	}
	ap, hasAP := m["additionalProperties"]
	if ap == true {
		hasAP = false
	}
	closed := hasAP && ap == false
	var patterns map[string]any
	if v, ok := m["patternProperties"]; ok {
		if patterns, ok = v.(map[string]any); !ok {
			d.fail(c.ptr+"/patternProperties", "patternProperties must be an object")
			return tUnknown
		}
	}

	var members []string
	var memberTypes []tsType
	anyDoc, anyOptional := false, false
	names := slices.Sorted(maps.Keys(props))
	for n := range required {
		if _, ok := props[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		var notes []note
		mc := ctx{ptr: c.ptr + "/properties/" + schemaPointerToken(name), depth: c.depth + 1, indent: c.indent + 1, notes: &notes, scoped: c.scoped}
		var t tsType
		if c.admit != nil && !c.admit[name] {
			t = tNever
			notes = append(notes, note{text: "Not a member the schema admits: a closed object schema beside this one does not name it."})
		} else if sub, ok := props[name]; ok {
			t = d.render(sub, mc)
		} else if closed && len(patterns) == 0 {
			t = tNever
			notes = append(notes, note{text: "Required, but not a property the schema admits."})
		} else {
			t = tUnknown
		}
		opt := "?"
		if required[name] {
			opt = ""
		} else {
			anyOptional = true
		}
		var b strings.Builder
		writeDoc(&b, c.indent+1, notes)
		anyDoc = anyDoc || len(notes) > 0
		b.WriteString(indentOf(c.indent+1) + tsString(name) + opt + ": " + t.text + ";\n")
		members = append(members, b.String())
		memberTypes = append(memberTypes, t)
	}

	var values []tsType
	for _, p := range slices.Sorted(maps.Keys(patterns)) {
		pc := c.sub("patternProperties/" + schemaPointerToken(p))
		pc.direct = nil
		values = append(values, d.render(patterns[p], pc))
		c.add("", "Members whose names match "+tsString(p)+" are of its type; the type does not check the names.")
	}
	if hasAP && !closed {
		ac := c.sub("additionalProperties")
		ac.direct = nil
		values = append(values, d.render(ap, ac))
	}
	index := ""
	switch {
	case c.admit != nil && len(patterns) == 0:
		// Only the admitted names can be members, and the closed
		// schema that admits them declares each: an admitted name this
		// schema does not declare is of its additional properties' type.
		if hasAP && !closed {
			at := values[len(values)-1]
			for _, n := range slices.Sorted(maps.Keys(c.admit)) {
				if _, ok := props[n]; ok || required[n] {
					continue
				}
				members = append(members, indentOf(c.indent+1)+tsString(n)+"?: "+at.text+";\n")
			}
		}
	case !hasAP && !c.inObject:
		index = "unknown"
	case !hasAP && c.inObject, closed && len(patterns) == 0:
	default:
		all := union(append(slices.Clone(values), memberTypes...))
		if anyOptional && all != tUnknown {
			// TypeScript reads an optional member as possibly undefined
			// and requires the index signature to admit that.
			all = union([]tsType{all, {"undefined", precPrimary}})
		}
		if all.multiline() {
			all = tUnknown
			c.add("", "Not expressed: the type of the members the properties do not name (their object types make the index signature unknown).")
		}
		index = all.text
	}
	if index != "" {
		var b strings.Builder
		b.WriteString(indentOf(c.indent+1) + "[key: string]: " + index + ";\n")
		members = append(members, b.String())
	}
	switch {
	case len(members) == 0 && closed && len(patterns) == 0:
		return tsType{"Record<string, never>", precPrimary}
	case len(members) == 0:
		return tAnyObject
	case len(members) == 1 && index == "unknown":
		return tsType{"{ [key: string]: unknown }", precPrimary}
	}
	if !anyDoc && len(members) <= 3 {
		one := "{ "
		for _, mem := range members {
			one += strings.TrimSpace(mem) + " "
		}
		one += "}"
		if len(one) <= 60 && !strings.Contains(one, "\n") {
			return tsType{one, precPrimary}
		}
	}
	return tsType{"{\n" + strings.Join(members, "") + indentOf(c.indent) + "}", precPrimary}
}

// schemaPointerToken escapes a name as a JSON Pointer token (RFC 6901).
func schemaPointerToken(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// ref is the alias of the local reference r ("#" and a JSON Pointer,
// percent-encoded as a URI fragment); any other reference is unknown,
// noted.
func (d *docRenderer) ref(r string, c ctx) tsType {
	frag, ok := strings.CutPrefix(r, "#")
	ptr, err := url.PathUnescape(frag)
	if !ok || err != nil || ptr != "" && !strings.HasPrefix(ptr, "/") {
		c.add("", "Not expressed: the reference "+tsString(r)+", which is not a JSON Pointer into this schema (unknown).")
		return tUnknown
	}
	a, ok := d.refs[ptr]
	if !ok {
		target, ok := resolvePointer(d.root, ptr)
		if !ok {
			d.fail(c.ptr+"/$ref", "the reference %s names no schema", tsString(r))
			return tUnknown
		}
		name := d.prefix
		if ptr != "" {
			name += "_" + identifier(ptr[strings.LastIndex(ptr, "/")+1:])
		}
		a = d.file.newAlias(name)
		d.refs[ptr] = a
		d.pending = append(d.pending, pendingAlias{a: a, target: target, ptr: ptr})
	}
	if c.direct != nil {
		c.direct.direct = append(c.direct.direct, a)
	}
	return tsType{a.name, precPrimary}
}

// resolvePointer is the value at JSON Pointer ptr (RFC 6901) in doc.
func resolvePointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch v := doc.(type) {
		case map[string]any:
			var ok bool
			if doc, ok = v[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) || strconv.Itoa(i) != tok {
				return nil, false
			}
			doc = v[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// requiredSets are the member names each alternative requires, when
// every alternative only requires members (besides annotations).
func requiredSets(subs []any) ([][]string, bool) {
	sets := make([][]string, len(subs))
	for i, sub := range subs {
		m, ok := sub.(map[string]any)
		if !ok {
			return nil, false
		}
		for k := range m {
			if k != "required" && k != "description" && k != "title" && k != "$comment" {
				return nil, false
			}
		}
		names, ok := m["required"].([]any)
		if !ok {
			return nil, false
		}
		for _, n := range names {
			s, ok := n.(string)
			if !ok {
				return nil, false
			}
			sets[i] = append(sets[i], s)
		}
		sets[i] = slices.Compact(slices.Sorted(slices.Values(sets[i])))
	}
	return sets, true
}

// exclusive is the type of a oneOf of required sets beside an object
// type: alternative i requires its members and, for each other
// alternative that requires exactly one member more, forbids that member
// ("b"?: never), so that the value cannot match that one too; an
// alternative another's set is within can never match alone and is
// dropped. exact reports whether every alternative's exclusion was so
// stated (none requires two members or more beyond another's).
func exclusive(sets [][]string, admit map[string]bool) (tsType, bool) {
	exact := true
	var alts []tsType
	for i, set := range sets {
		absent := map[string]bool{}
		possible := true
		for j, other := range sets {
			if j == i {
				continue
			}
			var extra []string
			for _, n := range other {
				if !slices.Contains(set, n) {
					extra = append(extra, n)
				}
			}
			switch len(extra) {
			case 0:
				possible = false
			case 1:
				absent[extra[0]] = true
			default:
				exact = false
			}
		}
		if !possible {
			continue
		}
		var members []string
		for _, n := range set {
			if admit != nil && !admit[n] {
				members = append(members, tsString(n)+": never;")
				continue
			}
			members = append(members, tsString(n)+": unknown;")
		}
		for _, n := range slices.Sorted(maps.Keys(absent)) {
			members = append(members, tsString(n)+"?: never;")
		}
		if len(members) == 0 {
			alts = append(alts, tAnyObject)
			continue
		}
		alts = append(alts, tsType{"{ " + strings.Join(members, " ") + " }", precPrimary})
	}
	return union(alts), exact
}

// admitted are the member names an object may hold under schema m and
// the names outer admits (nil: any): when m, or one of m's allOf
// subschemas, is a closed object schema ("additionalProperties": false
// and no patternProperties) its properties' names, intersected; else
// outer. A closed schema refuses any other member, whichever conjunct
// declares it (JSON Schema 2020-12 Core §10.3.2.3: additionalProperties
// sees only its own schema's properties).
func admitted(m map[string]any, outer map[string]bool) map[string]bool {
	admit := outer
	conjuncts := []any{m}
	if all, ok := m["allOf"].([]any); ok {
		conjuncts = append(conjuncts, all...)
	}
	for _, s := range conjuncts {
		x, ok := s.(map[string]any)
		if !ok || x["additionalProperties"] != false {
			continue
		}
		if _, ok := x["patternProperties"]; ok {
			continue
		}
		props, _ := x["properties"].(map[string]any)
		names := map[string]bool{}
		for n := range props {
			if admit == nil || admit[n] {
				names[n] = true
			}
		}
		admit = names
	}
	return admit
}
