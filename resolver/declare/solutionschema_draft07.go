package declare

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A tool's input schema is JSON Schema 2020-12 or draft-07 (toolset
// pins either); solution.schema.json is draft-07, the draft the YAML
// language server knows. converter rewrites one tool's schema:
//
//   - $defs becomes definitions, and every $ref ("#..." only: a pinned
//     schema is self-contained) is rewritten to the converted schema's
//     place under #/definitions/tool:NAME;
//   - draft-04's boolean exclusiveMinimum and exclusiveMaximum become
//     draft-07's numbers (minimum's or maximum's value), or go when false;
//   - prefixItems becomes the array form of items, and items next to it
//     additionalItems; dependentRequired and dependentSchemas become
//     dependencies;
//   - a $ref with sibling keywords becomes an allOf of the $ref and the
//     siblings (draft-07 ignores a $ref's siblings), in a 2020-12 schema;
//     in a draft-07 or older one (its $schema) it stays as it is, its
//     siblings ignored by both drafts alike;
//   - $schema, $id, $anchor, $dynamicAnchor, $vocabulary and the
//     keywords draft-07 lacks (unevaluatedProperties, unevaluatedItems,
//     $dynamicRef, minContains, maxContains) are dropped: looser, never
//     stricter, than the pinned schema (docs/declarations.md);
//   - every value position (a property, an array item, additional or
//     pattern properties, contains) accepts a binding too:
//     {"anyOf": [S, {"$ref": "#/definitions/binding"}]}.
type converter struct {
	tool string // the tool's name, for errors
	base string // the pointer of the converted schema's root
	root any    // the schema as pinned, for $ref rewriting
	// scoped counts the subschemas with their own "$id" the conversion
	// is inside: a $ref there resolves against that $id (JSON Schema
	// 2020-12 Core §8.2.1), not the tool's schema, and is dropped
	// (looser, as a dropped keyword is).
	scoped int
	// legacy: the schema is draft-07 or older ($schema), where a $ref's
	// siblings are ignored (draft-07 Core §8.3), as solution.schema.json's
	// draft-07 ignores them: a $ref with siblings stays as it is.
	legacy bool
}

// dropped are the keywords left out of a converted schema.
var dropped = []string{"$schema", "$id", "$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveRef", "$recursiveAnchor", "$vocabulary",
	"unevaluatedProperties", "unevaluatedItems", "minContains", "maxContains"}

// schema converts n, at JSON Pointer at of the pinned schema; wrap: n is
// at a value position, where a binding is allowed too.
func (c *converter) schema(n any, wrap bool, at string) (any, error) {
	m, ok := n.(map[string]any)
	if !ok {
		return n, nil // true, false, or not a schema (the resolver refuses it)
	}
	if _, ok := m["$id"]; ok && at != "" {
		c.scoped++
		defer func() { c.scoped-- }()
	}
	out := map[string]any{}
	sub := func(v any, wrap bool, at string) (any, error) { return c.schema(v, wrap, at) }
	list := func(v any, wrap bool, at string) (any, error) {
		items, ok := v.([]any)
		if !ok {
			return v, nil
		}
		res := make([]any, len(items))
		for i, it := range items {
			r, err := sub(it, wrap, at+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			res[i] = r
		}
		return res, nil
	}
	named := func(v any, wrap bool, at string) (map[string]any, error) {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil, nil
		}
		res := map[string]any{}
		for k, s := range mm {
			r, err := sub(s, wrap, at+"/"+pointerToken(k))
			if err != nil {
				return nil, err
			}
			res[k] = r
		}
		return res, nil
	}
	deps := map[string]any{}
	defs := map[string]any{}
	_, hasPrefix := m["prefixItems"]
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := m[k]
		kat := at + "/" + pointerToken(k)
		var err error
		switch {
		case slices.Contains(dropped, k):
		case k == "$defs" || k == "definitions":
			var r map[string]any
			if r, err = named(v, false, kat); r != nil {
				for dk, dv := range r {
					defs[dk] = dv
				}
			}
		case k == "properties" || k == "patternProperties":
			var r map[string]any
			if r, err = named(v, true, kat); r != nil {
				out[k] = r
			}
		case k == "additionalProperties" || k == "additionalItems" || k == "contains":
			out[k], err = sub(v, true, kat)
		case k == "items" && hasPrefix:
			out["additionalItems"], err = sub(v, true, kat)
		case k == "items":
			if _, isList := v.([]any); isList {
				out[k], err = list(v, true, kat)
			} else {
				out[k], err = sub(v, true, kat)
			}
		case k == "prefixItems":
			out["items"], err = list(v, true, kat)
		case k == "allOf" || k == "anyOf" || k == "oneOf":
			out[k], err = list(v, false, kat)
		case k == "not" || k == "if" || k == "then" || k == "else" || k == "propertyNames":
			out[k], err = sub(v, false, kat)
		case k == "dependentRequired":
			for dk, dv := range asMap(v) {
				deps[dk] = dv
			}
		case k == "dependentSchemas" || k == "dependencies":
			for dk, dv := range asMap(v) {
				if _, isList := dv.([]any); isList {
					deps[dk] = dv
					continue
				}
				if deps[dk], err = sub(dv, false, kat+"/"+pointerToken(dk)); err != nil {
					break
				}
			}
		case k == "exclusiveMinimum" || k == "exclusiveMaximum":
			// draft-04's boolean form: the bound is minimum's or
			// maximum's value, exclusive when true.
			if b, isBool := v.(bool); !isBool {
				out[k] = v
			} else if bound, ok := m[map[string]string{"exclusiveMinimum": "minimum", "exclusiveMaximum": "maximum"}[k]]; ok && b {
				out[k] = bound
			}
		case k == "$ref" && c.scoped > 0:
		case k == "$ref":
			s, _ := v.(string)
			out[k], err = c.ref(s, kat)
		default:
			out[k] = v
		}
		if err != nil {
			return nil, err
		}
	}
	if len(deps) > 0 {
		out["dependencies"] = deps
	}
	if len(defs) > 0 {
		out["definitions"] = defs
	}
	if r, ok := out["$ref"]; ok && c.scoped == 0 && !c.legacy && refWithSiblings(m) {
		delete(out, "$ref")
		d, hasDefs := out["definitions"]
		delete(out, "definitions")
		out = map[string]any{"allOf": []any{map[string]any{"$ref": r}, out}}
		if hasDefs {
			out["definitions"] = d
		}
	}
	if wrap {
		return map[string]any{"anyOf": []any{out, map[string]any{"$ref": "#/definitions/" + bindingDef}}}, nil
	}
	return out, nil
}

// refWithSiblings reports whether the pinned schema m has a $ref and
// keywords beside it that its conversion keeps (definitions stay where
// they are): then it is written as an allOf of the $ref and them.
func refWithSiblings(m map[string]any) bool {
	if _, ok := m["$ref"].(string); !ok {
		return false
	}
	for k, v := range m {
		switch {
		case k == "$ref" || k == "$defs" || k == "definitions" || slices.Contains(dropped, k):
		case k == "properties" || k == "patternProperties" || k == "dependentRequired" || k == "dependentSchemas" || k == "dependencies":
			if len(asMap(v)) > 0 || (asMap(v) != nil && (k == "properties" || k == "patternProperties")) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// ref rewrites a $ref of the pinned schema, written at location at, to
// the converted schema's place: only references into the same schema
// ("#" and a JSON Pointer) have one.
func (c *converter) ref(s, at string) (string, error) {
	frag, ok := strings.CutPrefix(s, "#")
	if !ok || (frag != "" && !strings.HasPrefix(frag, "/")) {
		return "", fmt.Errorf("tool %q input schema%s: $ref %q is not a JSON Pointer into the same schema, which solution.schema.json cannot carry", c.tool, at, s)
	}
	if frag == "" {
		return c.base, nil
	}
	tokens := strings.Split(frag[1:], "/")
	for i, t := range tokens {
		u, err := unescapeFragment(t)
		if err != nil {
			return "", fmt.Errorf("tool %q input schema%s: $ref %q: %v", c.tool, at, s, err)
		}
		tokens[i] = u
	}
	var out []string
	n := c.root
	for i := 0; i < len(tokens); i++ {
		m, isMap := n.(map[string]any)
		t := tokens[i]
		next := func() (string, bool) {
			if i+1 < len(tokens) {
				i++
				return tokens[i], true
			}
			return "", false
		}
		wrapped := false
		if isMap && t != "$defs" && t != "definitions" && !c.legacy && refWithSiblings(m) {
			// The converted node is {"allOf": [{"$ref": …}, siblings]}.
			out = append(out, "allOf", "1")
		}
		switch {
		case !isMap:
			// Inside a keyword's plain value: kept as written.
			out = append(out, t)
			if l, ok := n.([]any); ok {
				if k, err := strconv.Atoi(t); err == nil && k >= 0 && k < len(l) {
					n = l[k]
					continue
				}
			}
			n = nil
			continue
		case t == "$defs" || t == "definitions":
			name, ok := next()
			out = append(out, "definitions")
			n = asMap(m[t])
			if ok {
				out = append(out, name)
				n = asMap(m[t])[name]
			}
		case t == "properties" || t == "patternProperties" || t == "dependentSchemas" || t == "dependencies":
			name, ok := next()
			key := t
			if t == "dependentSchemas" {
				key = "dependencies"
			}
			out = append(out, key)
			n = asMap(m[t])
			if ok {
				out = append(out, name)
				n = asMap(m[t])[name]
				wrapped = t == "properties" || t == "patternProperties"
			}
		case t == "prefixItems" || (t == "items" && isList(m[t])):
			idx, ok := next()
			out = append(out, "items")
			n = m[t]
			if ok {
				out = append(out, idx)
				k, _ := strconv.Atoi(idx)
				if l, _ := m[t].([]any); k >= 0 && k < len(l) {
					n = l[k]
				} else {
					n = nil
				}
				wrapped = true
			}
		case t == "items" && m["prefixItems"] != nil:
			out = append(out, "additionalItems")
			n, wrapped = m[t], true
		case t == "items" || t == "additionalProperties" || t == "additionalItems" || t == "contains":
			out = append(out, t)
			n, wrapped = m[t], true
		default:
			out = append(out, t)
			n = m[t]
		}
		if wrapped && i+1 < len(tokens) {
			if _, isObj := n.(map[string]any); isObj {
				// The converted value is {"anyOf": [S, binding]}: S is
				// its first member.
				out = append(out, "anyOf", "0")
			}
		}
	}
	p := c.base
	for _, t := range out {
		p += "/" + pointerToken(t)
	}
	return p, nil
}

func isList(v any) bool {
	_, ok := v.([]any)
	return ok
}

// pointerToken escapes t as one reference token of a JSON Pointer in a
// URI fragment: "~" as "~0" and "/" as "~1" (RFC 6901 §3), then the
// characters a fragment may not hold percent-encoded (RFC 6901 §6, RFC
// 3986 §3.5).
func pointerToken(t string) string {
	t = strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		c := t[i]
		if fragmentChar(c) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// fragmentChar reports whether c may stand as it is in a URI fragment
// (RFC 3986: unreserved, sub-delims, ":" and "@"; "/" and "?" too, but
// "/" separates a pointer's tokens).
func fragmentChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@", c) >= 0
}

// unescapeFragment decodes one reference token of a pointer in a URI
// fragment: percent-decoding, then "~1" as "/" and "~0" as "~".
func unescapeFragment(t string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		if t[i] == '%' {
			if i+2 >= len(t) {
				return "", fmt.Errorf("bad percent-encoding")
			}
			x, err := strconv.ParseUint(t[i+1:i+3], 16, 8)
			if err != nil {
				return "", fmt.Errorf("bad percent-encoding")
			}
			b.WriteByte(byte(x))
			i += 2
			continue
		}
		b.WriteByte(t[i])
	}
	return strings.ReplaceAll(strings.ReplaceAll(b.String(), "~1", "/"), "~0", "~"), nil
}
