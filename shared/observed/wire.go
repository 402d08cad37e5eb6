package observed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// wire is a node as Marshal writes it: t its types (Type.Names), m its
// members, o on an optional member, i its items, v a map's values, u an
// unknown node. Empty members are left out.
type wire struct {
	T []string         `json:"t,omitempty"`
	M map[string]*wire `json:"m,omitempty"`
	O bool             `json:"o,omitempty"`
	I *wire            `json:"i,omitempty"`
	V *wire            `json:"v,omitempty"`
	U bool             `json:"u,omitempty"`
}

func (n *Node) wire() *wire {
	if n == nil {
		return nil
	}
	w := &wire{T: n.Types.Names(), O: n.Optional, I: n.Items.wire(), V: n.Values.wire(), U: n.Unknown}
	if len(n.Members) > 0 {
		w.M = make(map[string]*wire, len(n.Members))
		for k, m := range n.Members {
			w.M[k] = m.wire()
		}
	}
	return w
}

// Marshal writes s as compact JSON, the same bytes for the same shape
// (members in byte order, types in Type.Names order), for example
// {"t":["object"],"m":{"id":{"t":["integer"]},"tags":{"t":["array"],"o":true,"i":{"t":["string"]}}}}.
// It holds names and flags only, never a value. The zero Shape is an
// error.
func (s *Shape) Marshal() ([]byte, error) {
	if s == nil || s.Root == nil {
		return nil, errors.New("marshal shape: the shape has seen no result")
	}
	return json.Marshal(s.Root.wire())
}

// Unmarshal reads a shape Marshal wrote. It is strict: at most
// MaxItemBytes, no member Marshal does not write, the canonical form only
// (Marshal of the result gives the same bytes: no duplicate keys, no
// spaces), and every rule of the model holds: known types in order,
// member names matching IdentifierPattern, at most MaxKeys of them, a map
// or members but not both, members and values only on an object node and
// items only on an array one, optional only on members, an unknown node
// with nothing else, no object or array MaxDepth levels down, at most
// MaxPaths nodes. An error names the rule and the path (JSON Pointer,
// RFC 6901), never more of the text.
func Unmarshal(data []byte) (*Shape, error) {
	if len(data) > MaxItemBytes {
		return nil, fmt.Errorf("unmarshal shape: %d bytes, over %d", len(data), MaxItemBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w wire
	if err := dec.Decode(&w); err != nil {
		return nil, errors.New("unmarshal shape: not a shape document")
	}
	count := 0
	root, err := w.node("", 0, false, &count)
	if err != nil {
		return nil, fmt.Errorf("unmarshal shape: %w", err)
	}
	s := &Shape{Root: root}
	again, err := s.Marshal()
	if err != nil || !bytes.Equal(again, data) {
		return nil, errors.New("unmarshal shape: not in the canonical form Marshal writes")
	}
	return s, nil
}

// node checks w, at path (a JSON Pointer) depth levels down, and returns
// it as a Node; member says w is an object's member; count counts the
// nodes.
func (w *wire) node(path string, depth int, member bool, count *int) (*Node, error) {
	if *count++; *count > MaxPaths {
		return nil, fmt.Errorf("more than %d nodes", MaxPaths)
	}
	at := path
	if at == "" {
		at = "the root"
	}
	if w.O && !member {
		return nil, fmt.Errorf("%s: optional on a node that is no member", at)
	}
	if w.U {
		if len(w.T) > 0 || w.M != nil || w.I != nil || w.V != nil {
			return nil, fmt.Errorf("%s: an unknown node holds nothing else", at)
		}
		return &Node{Unknown: true, Optional: w.O}, nil
	}
	n := &Node{Optional: w.O}
	var last Type
	for _, name := range w.T {
		t, ok := typeOf(name)
		if !ok || t <= last {
			return nil, fmt.Errorf("%s: types must be known JSON types, each once, in the order %s", at, strings.Join(Type(0xff).Names(), ", "))
		}
		n.Types, last = n.Types|t, t
	}
	if n.Types == 0 {
		return nil, fmt.Errorf("%s: a node that is not unknown has a type", at)
	}
	if n.Types&(Object|Array) != 0 && depth >= MaxDepth {
		return nil, fmt.Errorf("%s: an object or array %d levels down, where the shape is unknown", at, depth)
	}
	if (w.M != nil || w.V != nil) && n.Types&Object == 0 {
		return nil, fmt.Errorf("%s: members or values on a node that saw no object", at)
	}
	if w.I != nil && n.Types&Array == 0 {
		return nil, fmt.Errorf("%s: items on a node that saw no array", at)
	}
	if w.M != nil && w.V != nil {
		return nil, fmt.Errorf("%s: a map has no members", at)
	}
	if len(w.M) > MaxKeys {
		return nil, fmt.Errorf("%s: more than %d members", at, MaxKeys)
	}
	var err error
	for _, k := range sortedKeys(w.M) {
		if !IdentifierPattern.MatchString(k) {
			return nil, fmt.Errorf("%s: a member name that is no plain identifier", at)
		}
		if w.M[k] == nil {
			return nil, fmt.Errorf("%s/%s: null", path, k)
		}
		if n.Members == nil {
			n.Members = map[string]*Node{}
		}
		if n.Members[k], err = w.M[k].node(path+"/"+k, depth+1, true, count); err != nil {
			return nil, err
		}
	}
	if w.I != nil {
		if n.Items, err = w.I.node(path+"/items", depth+1, false, count); err != nil {
			return nil, err
		}
	}
	if w.V != nil {
		if n.Values, err = w.V.node(path+"/values", depth+1, false, count); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// typeOf is the Type JSON Schema names name.
func typeOf(name string) (Type, bool) {
	for _, tn := range typeNames {
		if tn.name == name {
			return tn.t, true
		}
	}
	return 0, false
}

// SchemaDialect is the $schema of the documents Schema writes.
const SchemaDialect = "https://json-schema.org/draft/2020-12/schema"

// Schema is s as a JSON Schema 2020-12 document that accepts every result
// merged into s: "type" the types seen (one name, or a list; "number"
// alone where integers and other numbers were seen); an object's
// "properties" and "required" (its members that are not optional), never
// "additionalProperties": false, since a later result may hold more; a
// map's values as "additionalProperties"; an array's items as "items"; an
// unknown node as true. It holds no value, length, range, pattern or enum
// (no const, enum, default, examples, minimum, maximum, minLength,
// maxLength, minItems, maxItems, pattern). The zero Shape is true.
func (s *Shape) Schema() json.RawMessage {
	doc := map[string]any{"$schema": SchemaDialect}
	if s != nil && s.Root != nil && !s.Root.Unknown {
		doc = s.Root.schema()
		doc["$schema"] = SchemaDialect
	}
	out, err := json.Marshal(doc)
	if err != nil {
		panic(err) // maps of strings, bools and lists always encode
	}
	return out
}

// schema is n's schema object (an unknown node's is written true by its
// parent: schemaOf).
func (n *Node) schema() map[string]any {
	out := map[string]any{}
	t := n.Types
	if t&Number != 0 {
		t &^= Integer
	}
	switch names := t.Names(); len(names) {
	case 0:
	case 1:
		out["type"] = names[0]
	default:
		out["type"] = names
	}
	if n.Values != nil {
		out["additionalProperties"] = schemaOf(n.Values)
	}
	if len(n.Members) > 0 {
		props := map[string]any{}
		required := []string{}
		for _, k := range sortedKeys(n.Members) {
			props[k] = schemaOf(n.Members[k])
			if !n.Members[k].Optional {
				required = append(required, k)
			}
		}
		out["properties"] = props
		if len(required) > 0 {
			out["required"] = required
		}
	}
	if n.Items != nil {
		out["items"] = schemaOf(n.Items)
	}
	return out
}

// schemaOf is n's schema: true when unknown.
func schemaOf(n *Node) any {
	if n.Unknown {
		return true
	}
	return n.schema()
}
