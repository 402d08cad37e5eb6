package observed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/shared/tool"
)

// Bounds of a shape (docs/declarations.md, "Observed shapes"). They keep a
// shape item far under DynamoDB's 400 KB item limit (DynamoDB quotas,
// "Item size"): MaxPaths nodes, each at most a member name of 64 bytes and
// a few flags, is under 32 KB.
const (
	// MaxDepth is the number of members and items a path may name: an
	// object or an array MaxDepth levels below the result is unknown, its
	// content not looked at.
	MaxDepth = 8
	// MaxPaths is the most nodes (the result, each member, each array's
	// items, each map's values) a shape holds. A node that would need a
	// new child past it becomes unknown, and the nodes under it are
	// freed.
	MaxPaths = 256
	// MaxKeys is the most members an object node keeps by name: an object
	// seen with more (in one result, or over the results merged) becomes a
	// map, whose keys are not stored.
	MaxKeys = 32
	// MaxItemBytes bounds an encoded shape Unmarshal reads.
	MaxItemBytes = 64 << 10
)

// IdentifierPattern is what a member name must match to be stored: a
// plain identifier of 1 to 64 characters. An object with any other key (an
// e-mail address, an id, a date, a sentence) holds data in its keys and
// becomes a map. Its count is checked apart (tool.Pattern).
var IdentifierPattern = tool.NewPattern(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`, `^[A-Za-z_][A-Za-z0-9_]*$`, 64, nil)

// Type is a set of JSON types, as JSON Schema 2020-12 names them
// (Validation §6.1.1): one bit each.
type Type uint8

// The JSON types. Integer is a number with no fractional part (JSON
// Schema 2020-12 Validation §6.1.1); a node that saw both has Integer and
// Number, and its schema says "number".
const (
	Null Type = 1 << iota
	Boolean
	Integer
	Number
	String
	Array
	Object
)

// typeNames are the types in the one order Marshal and Schema write them.
var typeNames = []struct {
	t    Type
	name string
}{{Null, "null"}, {Boolean, "boolean"}, {Integer, "integer"}, {Number, "number"}, {String, "string"}, {Array, "array"}, {Object, "object"}}

// Names are the JSON Schema names of the types in t, in the order null,
// boolean, integer, number, string, array, object.
func (t Type) Names() []string {
	var out []string
	for _, tn := range typeNames {
		if t&tn.t != 0 {
			out = append(out, tn.name)
		}
	}
	return out
}

// Node is the shape of the values seen at one place of the results. A node
// is unknown (any value), or holds the types seen and, for objects, either
// its members by name or, as a map, the merged shape of its values; for
// arrays, the merged shape of their items.
type Node struct {
	// Types are the JSON types seen here; 0 on an unknown node.
	Types Type
	// Members are an object's members by name (each matching
	// IdentifierPattern, at most MaxKeys); nil on a map, or when no
	// object seen here had a member.
	Members map[string]*Node
	// Optional, on a member, says that some object seen at its parent
	// lacked it: a member first seen after the first object is optional.
	Optional bool
	// Items is the merged shape of every item of the arrays seen here;
	// nil when none had an item.
	Items *Node
	// Values, when set, makes the objects seen here a map: the merged
	// shape of every member value, whose keys are not stored.
	Values *Node
	// Unknown: any value may be here (past MaxDepth or MaxPaths).
	Unknown bool
}

// Shape is the learned shape of a tool's results (Observe, Merge). Root
// is nil only in the zero Shape, which has seen nothing.
type Shape struct {
	Root *Node
}

// budget is how many more nodes a shape may gain (MaxPaths).
type budget struct{ left int }

// take spends one node, or reports that none is left.
func (b *budget) take() bool {
	if b.left <= 0 {
		return false
	}
	b.left--
	return true
}

// count is the number of nodes of n's subtree, n included.
func (n *Node) count() int {
	if n == nil {
		return 0
	}
	c := 1 + n.Items.count() + n.Values.count()
	for _, m := range n.Members {
		c += m.count()
	}
	return c
}

// Count is the number of nodes of the shape (at most MaxPaths).
func (s *Shape) Count() int { return s.Root.count() }

// forget makes n unknown, giving its subtree's other nodes back to b; a
// member keeps its Optional flag.
func (n *Node) forget(b *budget) {
	b.left += n.count() - 1
	*n = Node{Unknown: true, Optional: n.Optional}
}

// ErrNotJSON is Observe's error for a result that is not one JSON value.
// It says where the text stops being JSON, never what the text holds.
var ErrNotJSON = errors.New("observe: the result is not one JSON value")

// Observe returns the shape of one result, a JSON value: its types,
// members and items, under the bounds MaxDepth, MaxPaths and MaxKeys, and
// never a value. An error (ErrNotJSON) names no part of the result.
func Observe(result json.RawMessage) (*Shape, error) {
	dec := json.NewDecoder(bytes.NewReader(result))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w (at byte %d)", ErrNotJSON, dec.InputOffset())
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: text follows it (at byte %d)", ErrNotJSON, dec.InputOffset())
	}
	root := &Node{}
	observe(root, v, 0, &budget{left: MaxPaths - 1})
	return &Shape{Root: root}, nil
}

// numberType is Integer for a number with no fractional part, else Number.
func numberType(n json.Number) Type {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		return Integer
	}
	f, err := n.Float64()
	if err == nil && !math.IsInf(f, 0) && f == math.Trunc(f) {
		return Integer
	}
	return Number
}

// dataLike reports whether an object's keys look like data: more than
// MaxKeys of them, or one that does not match IdentifierPattern.
func dataLike(keys []string) bool {
	if len(keys) > MaxKeys {
		return true
	}
	for _, k := range keys {
		if !IdentifierPattern.MatchString(k) {
			return true
		}
	}
	return false
}

// observe merges the value v, at depth levels below the result, into n.
func observe(n *Node, v any, depth int, b *budget) {
	if n.Unknown {
		return
	}
	switch x := v.(type) {
	case nil:
		n.Types |= Null
	case bool:
		n.Types |= Boolean
	case string:
		n.Types |= String
	case json.Number:
		n.Types |= numberType(x)
	case []any:
		if depth >= MaxDepth {
			n.forget(b)
			return
		}
		n.Types |= Array
		for _, e := range x {
			if n.Items == nil {
				if !b.take() {
					n.forget(b)
					return
				}
				n.Items = &Node{}
			}
			observe(n.Items, e, depth+1, b)
		}
	case map[string]any:
		if depth >= MaxDepth {
			n.forget(b)
			return
		}
		seen := n.Types&Object != 0
		n.Types |= Object
		keys := sortedKeys(x)
		added := 0
		for _, k := range keys {
			if n.Members[k] == nil {
				added++
			}
		}
		if n.Values != nil || dataLike(keys) || len(n.Members)+added > MaxKeys {
			if n.toMap(depth, b); n.Unknown {
				return
			}
			for _, k := range keys {
				observe(n.Values, x[k], depth+1, b)
			}
			return
		}
		if seen {
			for name, m := range n.Members {
				if _, ok := x[name]; !ok {
					m.Optional = true
				}
			}
		}
		// Every new member first, then their content: a node out of room
		// is one that cannot hold its own members, not the first sibling
		// that runs out.
		for _, k := range keys {
			if n.Members[k] == nil {
				if !b.take() {
					n.forget(b)
					return
				}
				if n.Members == nil {
					n.Members = map[string]*Node{}
				}
				n.Members[k] = &Node{Optional: seen}
			}
		}
		for _, k := range keys {
			observe(n.Members[k], x[k], depth+1, b)
		}
	}
}

// toMap makes n, at depth, a map whose values' shape merges its members'
// (their names dropped), and reports whether n changed; n becomes unknown
// when no node is left for the values.
func (n *Node) toMap(depth int, b *budget) bool {
	if n.Values != nil {
		return false
	}
	members := n.Members
	n.Members = nil
	for _, m := range members {
		b.left += m.count()
	}
	if !b.take() {
		n.forget(b)
		return true
	}
	v := &Node{}
	for _, name := range sortedKeys(members) {
		merge(v, members[name], depth+1, b)
	}
	v.Optional = false
	n.Values = v
	return true
}

// Merge adds what o has seen to s, and reports whether s changed:
// merging is monotone (every result s accepted, it still accepts; a type,
// member, item or map once seen stays), and changed is false when o adds
// nothing. The bounds hold after it: a node that would pass MaxPaths
// becomes unknown. A nil or empty o changes nothing.
func (s *Shape) Merge(o *Shape) bool {
	if o == nil || o.Root == nil {
		return false
	}
	if s.Root == nil {
		s.Root = &Node{}
		b := &budget{left: MaxPaths - 1}
		merge(s.Root, o.Root, 0, b)
		return true
	}
	return merge(s.Root, o.Root, 0, &budget{left: MaxPaths - s.Root.count()})
}

// merge adds src's shape to dst's, at depth levels below the result, and
// reports whether dst changed.
func merge(dst, src *Node, depth int, b *budget) bool {
	if dst.Unknown {
		return false
	}
	if src.Unknown || (depth >= MaxDepth && src.Types&(Array|Object) != 0) {
		dst.forget(b)
		return true
	}
	changed := false
	seen := dst.Types&Object != 0
	if t := dst.Types | src.Types; t != dst.Types {
		dst.Types, changed = t, true
	}
	if src.Items != nil {
		if dst.Items == nil {
			if !b.take() {
				dst.forget(b)
				return true
			}
			dst.Items, changed = &Node{}, true
		}
		if merge(dst.Items, src.Items, depth+1, b) {
			changed = true
		}
		if dst.Unknown {
			return true
		}
	}
	if src.Types&Object == 0 {
		return changed
	}
	added := 0
	for name := range src.Members {
		if dst.Members[name] == nil {
			added++
		}
	}
	if dst.Values != nil || src.Values != nil || len(dst.Members)+added > MaxKeys {
		if dst.toMap(depth, b) {
			changed = true
		}
		if dst.Unknown {
			return true
		}
		for _, name := range sortedKeys(src.Members) {
			if merge(dst.Values, src.Members[name], depth+1, b) {
				changed = true
			}
		}
		if src.Values != nil && merge(dst.Values, src.Values, depth+1, b) {
			changed = true
		}
		dst.Values.Optional = false
		return changed
	}
	if seen {
		for name, m := range dst.Members {
			if src.Members[name] == nil && !m.Optional {
				m.Optional, changed = true, true
			}
		}
	}
	names := sortedKeys(src.Members)
	for _, name := range names {
		sm, dm := src.Members[name], dst.Members[name]
		if dm == nil {
			if !b.take() {
				dst.forget(b)
				return true
			}
			if dst.Members == nil {
				dst.Members = map[string]*Node{}
			}
			dst.Members[name], changed = &Node{Optional: seen || sm.Optional}, true
		} else if sm.Optional && !dm.Optional {
			dm.Optional, changed = true, true
		}
	}
	for _, name := range names {
		if merge(dst.Members[name], src.Members[name], depth+1, b) {
			changed = true
		}
	}
	return changed
}

// sortedKeys are m's keys in byte order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Clone is a deep copy of s.
func (s *Shape) Clone() *Shape {
	if s == nil {
		return nil
	}
	return &Shape{Root: s.Root.clone()}
}

func (n *Node) clone() *Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Items, c.Values = n.Items.clone(), n.Values.clone()
	if n.Members != nil {
		c.Members = make(map[string]*Node, len(n.Members))
		for k, m := range n.Members {
			c.Members[k] = m.clone()
		}
	}
	return &c
}
