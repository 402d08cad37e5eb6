package schemashape

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Shape is a JSON Schema document read for navigation: which values a path
// into an instance may reach, and of which types. A Shape is read-only
// after Parse and safe for concurrent use.
type Shape struct {
	root any // the decoded document: a map[string]any or a bool
	// refAlone: the document is of a draft before 2019-09 (its $schema
	// says so), where a schema object with $ref is the referenced schema
	// alone and the keywords beside it are ignored (draft-07 Core,
	// section 8.3).
	refAlone bool
	// embedded: a subschema has an $id of its own (draft-04: id), a
	// resource against which its "#…" references resolve (2020-12 Core,
	// sections 8.2.1 and 9.2). The walk resolves against the root only,
	// so in such a document it follows no $ref: open, never the wrong
	// target.
	embedded bool
	// noPrefixItems: the document is of a draft before 2020-12, where
	// prefixItems is an unknown keyword (ignored) and a tuple is items
	// as an array.
	noPrefixItems bool
	// patterns holds each patternProperties pattern compiled once
	// (string → *regexp.Regexp, nil for one RE2 cannot read).
	patterns sync.Map
	// members holds the names each properties object declares, once
	// listed (its map's identity → []string).
	members sync.Map
	// results holds At's result per path (pathKey → Result), for at
	// most maxResults paths: a Solution binds the same path many times.
	results  sync.Map
	nresults atomic.Int32
}

// maxResults bounds the paths a Shape keeps At's results of.
const maxResults = 1 << 14

// refAloneDraft matches the $schema of the drafts where keywords beside
// $ref are ignored: draft-03 to draft-07.
var refAloneDraft = regexp.MustCompile(`^https?://json-schema\.org/draft-0[3-7]/schema#?$`)

// prefixItemsDraft matches the $schema of the drafts before 2020-12, where
// prefixItems is not a keyword.
var prefixItemsDraft = regexp.MustCompile(`^https?://json-schema\.org/(draft-0[3-7]/schema#?|draft/2019-09/schema)$`)

// idKeywordDraft matches the $schema of the drafts whose identifier
// keyword is id, not $id: draft-03 and draft-04.
var idKeywordDraft = regexp.MustCompile(`^https?://json-schema\.org/draft-0[34]/schema#?$`)

// newShape is the Shape of a decoded document.
func newShape(root any) *Shape {
	s := &Shape{root: root}
	idKeyword := "$id"
	if m, ok := root.(map[string]any); ok {
		if id, ok := m["$schema"].(string); ok {
			s.refAlone = refAloneDraft.MatchString(id)
			s.noPrefixItems = prefixItemsDraft.MatchString(id)
			if idKeywordDraft.MatchString(id) {
				idKeyword = "id"
			}
		}
		for k, v := range m {
			if k != idKeyword && hasID(v, idKeyword) {
				s.embedded = true
			}
		}
	}
	return s
}

// hasID reports whether v holds, at any depth, an object with a string
// member named keyword. It may also find one inside an enum or const
// value, which only leaves the document more open.
func hasID(v any, keyword string) bool {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x[keyword].(string); ok {
			return true
		}
		for _, e := range x {
			if hasID(e, keyword) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasID(e, keyword) {
				return true
			}
		}
	}
	return false
}

// Parse reads a JSON Schema document (draft 2020-12 or draft-07: both
// spellings of the keywords it reads are known). An empty document is the
// schema true (nothing known). Keywords it does not read are ignored, which
// leaves the place open: the navigation never says a path cannot exist
// unless a keyword it reads says so. The error says why the bytes are not
// a schema (not JSON, or a value other than an object or a boolean).
func Parse(doc json.RawMessage) (*Shape, error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return &Shape{root: true}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("schema is not JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("schema is not one JSON value")
	}
	switch root.(type) {
	case map[string]any, bool:
	default:
		return nil, errors.New("schema must be an object or a boolean (JSON Schema 2020-12, section 4.3)")
	}
	return newShape(root), nil
}

// FromValue is Parse of a schema already decoded (by encoding/json, numbers
// as float64 or json.Number); nil is the schema true.
func FromValue(v any) *Shape {
	if v == nil {
		return &Shape{root: true}
	}
	return newShape(v)
}

// Step is one accessor of a path into an instance: a member name, or an
// array index.
type Step struct {
	Name string // the member name, when !IsIndex
	// Index is the element, when IsIndex; AnyIndex stands for every
	// element.
	Index   int
	IsIndex bool
	// Either marks a JSON Pointer token made of digits, which names a
	// member of an object and an element of an array alike (RFC 6901,
	// section 4): Name holds the token, Index its value.
	Either bool
}

// AnyIndex, as a Step's Index, stands for any element of an array.
const AnyIndex = -1

// Member is the Step to an object's member name.
func Member(name string) Step { return Step{Name: name} }

// Index is the Step to an array's element i (AnyIndex: any element).
func Index(i int) Step { return Step{Index: i, IsIndex: true} }

// Naming says whether a schema names the member a path ends at.
type Naming uint8

const (
	// Unconstrained: no keyword says anything of the member (an open
	// object that declares no properties, or the schema true).
	Unconstrained Naming = iota
	// Named: properties, patternProperties, an additionalProperties
	// schema, items or prefixItems reach the place.
	Named
	// Undeclared: the object declares properties but not this one, and
	// accepts others (additionalProperties absent or true): the member
	// may exist, but no schema says what it holds.
	Undeclared
)

// Result is what a schema says of a path.
type Result struct {
	// Types are the JSON types a value at the path may have (Any when
	// nothing is known; empty when the path cannot exist).
	Types TypeSet
	// Cannot reports that no valid instance has the path: a member no
	// properties name under additionalProperties: false (or false
	// schemas) in every alternative, or an index into something that
	// cannot be an array (or past a closed tuple), or a member of
	// something that cannot be an object.
	Cannot bool
	// Naming says how the schema reaches the path; Undeclared is where a
	// check may warn.
	Naming Naming
	// Depth is how many steps of the path the schema names before it
	// stops (Cannot or Undeclared): the path's first Depth steps exist.
	Depth int
	// Members are the member names the schema declares at Depth (sorted),
	// for "did you mean".
	Members []string
}

// maxVisits bounds the schema nodes one At visits: $ref cycles and nested
// alternatives cannot make it run long. Past it, the rest is unknown.
const maxVisits = 4096

// At walks path from the document's root.
func (s *Shape) At(path []Step) Result {
	if s == nil {
		return Result{Types: Any}
	}
	key := pathKey(path)
	if r, ok := s.results.Load(key); ok {
		return cloneResult(r.(Result))
	}
	w := &walker{root: s.root, refAlone: s.refAlone, embedded: s.embedded, noPrefixItems: s.noPrefixItems, patterns: &s.patterns, members: &s.members, memo: map[memoKey]memoEntry{}}
	r := w.at(s.root, path, 0, 0)
	r.Members = slices.Compact(slices.Sorted(slices.Values(r.Members)))
	if s.nresults.Add(1) <= maxResults {
		s.results.Store(key, cloneResult(r))
	}
	return r
}

// pathKey writes a path as a map key: each step's kind, then its name's
// length and name or its index, so distinct paths have distinct keys.
func pathKey(path []Step) string {
	var b strings.Builder
	for _, st := range path {
		switch {
		case st.Either:
			fmt.Fprintf(&b, "e%d:%s", len(st.Name), st.Name)
		case st.IsIndex:
			fmt.Fprintf(&b, "i%d;", st.Index)
		default:
			fmt.Fprintf(&b, "m%d:%s", len(st.Name), st.Name)
		}
	}
	return b.String()
}

// cloneResult is r with its own Members, which the caller may change.
func cloneResult(r Result) Result {
	r.Members = slices.Clone(r.Members)
	return r
}

// AtPointer walks a JSON Pointer (RFC 6901): "" is the root, "/a/0" the
// element 0 of member a (or its member "0", whichever the schema has). The
// error says why the pointer is not one.
func (s *Shape) AtPointer(ptr string) (Result, error) {
	path, err := PointerSteps(ptr)
	if err != nil {
		return Result{}, err
	}
	return s.At(path), nil
}

// PointerSteps splits a JSON Pointer (RFC 6901) into Steps; a token of
// digits is a Step that is Either.
func PointerSteps(ptr string) ([]Step, error) {
	if ptr == "" {
		return nil, nil
	}
	if ptr[0] != '/' {
		return nil, fmt.Errorf("JSON Pointer %q must start with / (RFC 6901, section 3)", ptr)
	}
	var out []Step
	for _, tok := range strings.Split(ptr[1:], "/") {
		if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(tok, "~0", ""), "~1", ""), "~") {
			return nil, fmt.Errorf("JSON Pointer %q: ~ must be written ~0 or ~1 (RFC 6901, section 3)", ptr)
		}
		name := strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		st := Step{Name: name}
		if n, err := strconv.Atoi(tok); err == nil && n >= 0 && (tok == "0" || tok[0] != '0') {
			st.Index, st.Either = n, true
		}
		out = append(out, st)
	}
	return out, nil
}

type walker struct {
	root     any
	refAlone bool // Shape.refAlone
	embedded bool // Shape.embedded
	// noPrefixItems is Shape.noPrefixItems.
	noPrefixItems bool
	patterns      *sync.Map // Shape.patterns
	members       *sync.Map // Shape.members
	visits        int
	// memo holds the result of each schema object at each depth of the
	// path, once evaluated: the path's rest is fixed by its depth, so a
	// schema reached again (a $ref, the same alternative twice) costs
	// nothing, and a walk visits each object at most once per depth
	// instead of once per route to it.
	memo map[memoKey]memoEntry
}

// memoKey is a schema object (its map's identity) at a depth of the path.
type memoKey struct {
	node  uintptr
	depth int
}

// memoEntry is a memoized result; busy marks an object whose evaluation
// reached itself again at the same depth (a $ref or alternative cycle that
// makes no progress along the path): that inner visit is unknown.
type memoEntry struct {
	r    Result
	busy bool
}

// regexpOf is pattern compiled, once per Shape; nil when RE2 cannot
// read it (an ECMA-262 lookaround, for one).
func (w *walker) regexpOf(pattern string) *regexp.Regexp {
	if re, ok := w.patterns.Load(pattern); ok {
		return re.(*regexp.Regexp)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		re = nil
	}
	w.patterns.Store(pattern, re)
	return re
}

// unknown is the result of a place nothing is known of.
func unknown(depth int) Result { return Result{Types: Any, Depth: depth} }

// at evaluates node n for path; depth is how many steps of the whole path
// precede path; refs counts $ref expansions on the way here.
func (w *walker) at(n any, path []Step, depth, refs int) Result {
	w.visits++
	if w.visits > maxVisits {
		return unknown(depth)
	}
	switch x := n.(type) {
	case bool:
		if !x {
			return Result{Cannot: true, Depth: depth}
		}
		return unknown(depth)
	case map[string]any:
		key := memoKey{reflect.ValueOf(x).Pointer(), depth}
		if e, ok := w.memo[key]; ok {
			if e.busy {
				return unknown(depth)
			}
			return e.r
		}
		w.memo[key] = memoEntry{busy: true}
		r := w.object(x, path, depth, refs)
		r.Members = slices.Clip(r.Members) // shared: an append copies
		w.memo[key] = memoEntry{r: r}
		return r
	}
	return unknown(depth) // not a schema: ignored, open
}

// object evaluates a schema object: its own keywords, in conjunction with
// its $ref, allOf, and the disjunctions anyOf and oneOf. In a draft before
// 2019-09, an object with $ref is its target alone (Shape.refAlone).
func (w *walker) object(m map[string]any, path []Step, depth, refs int) Result {
	if ref, ok := m["$ref"].(string); ok && w.refAlone {
		if target, ok := w.resolve(ref); ok && refs < 32 {
			return w.at(target, path, depth, refs+1)
		}
		return unknown(depth)
	}
	parts := []Result{w.own(m, path, depth, refs)}
	if ref, ok := m["$ref"].(string); ok {
		if target, ok := w.resolve(ref); ok && refs < 32 {
			parts = append(parts, w.at(target, path, depth, refs+1))
		}
	}
	if all, ok := m["allOf"].([]any); ok {
		for _, sub := range all {
			parts = append(parts, w.at(sub, path, depth, refs))
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if alts, ok := m[kw].([]any); ok && len(alts) > 0 {
			var rs []Result
			for _, sub := range alts {
				rs = append(rs, w.at(sub, path, depth, refs))
			}
			parts = append(parts, or(rs))
		}
	}
	return and(parts)
}

// own evaluates m's own keywords (type, enum, const, properties, items …).
func (w *walker) own(m map[string]any, path []Step, depth, refs int) Result {
	types := declaredTypes(m)
	if len(path) == 0 {
		if types == 0 {
			return Result{Cannot: true, Depth: depth}
		}
		return Result{Types: types, Depth: depth, Naming: Named}
	}
	st := path[0]
	canObject, canArray := types&Object != 0, types&Array != 0
	if st.IsIndex || st.Either && !canObject {
		if !canArray {
			return Result{Cannot: true, Depth: depth}
		}
		if st.Either {
			st = Index(st.Index)
		}
		return w.element(m, st.Index, path, depth, refs)
	}
	if !canObject {
		return Result{Cannot: true, Depth: depth}
	}
	return w.member(m, st.Name, path, depth, refs)
}

// member follows an object's member name.
func (w *walker) member(m map[string]any, name string, path []Step, depth, refs int) Result {
	props, _ := m["properties"].(map[string]any)
	if sub, ok := props[name]; ok {
		if sub == false {
			return Result{Cannot: true, Depth: depth, Members: w.memberNames(props)}
		}
		return w.at(sub, path[1:], depth+1, refs)
	}
	if pp, ok := m["patternProperties"].(map[string]any); ok {
		var rs []Result
		for pat, sub := range pp {
			re := w.regexpOf(pat)
			if re == nil {
				return unknown(depth) // an ECMA-262 pattern RE2 cannot read: open
			}
			if re.MatchString(name) {
				rs = append(rs, w.at(sub, path[1:], depth+1, refs))
			}
		}
		if len(rs) > 0 {
			return and(rs)
		}
	}
	switch ap := m["additionalProperties"].(type) {
	case bool:
		if !ap {
			return Result{Cannot: true, Depth: depth, Members: w.memberNames(props)}
		}
	case map[string]any:
		return w.at(ap, path[1:], depth+1, refs)
	}
	if len(props) > 0 {
		return Result{Types: Any, Naming: Undeclared, Depth: depth, Members: w.memberNames(props)}
	}
	return unknown(depth)
}

// memberNames is the names properties declares, for Result.Members,
// listed once per Shape (shared: its capacity is its length, so an append
// copies).
func (w *walker) memberNames(props map[string]any) []string {
	key := reflect.ValueOf(props).Pointer()
	if m, ok := w.members.Load(key); ok {
		return m.([]string)
	}
	members := slices.Sorted(maps.Keys(props))
	w.members.Store(key, members)
	return members
}

// element follows an array's element i (AnyIndex: any), by prefixItems and
// items (2020-12) or items as an array and additionalItems (draft-07,
// 2019-09, where prefixItems is not read).
func (w *walker) element(m map[string]any, i int, path []Step, depth, refs int) Result {
	var prefix []any
	if !w.noPrefixItems {
		prefix, _ = m["prefixItems"].([]any)
	}
	rest, hasRest := m["items"]
	if tuple, ok := rest.([]any); ok { // draft-07 tuple
		prefix = tuple
		rest, hasRest = m["additionalItems"]
	}
	if i == AnyIndex {
		var rs []Result
		for _, sub := range prefix {
			rs = append(rs, w.at(sub, path[1:], depth+1, refs))
		}
		if hasRest {
			rs = append(rs, w.at(rest, path[1:], depth+1, refs))
		} else {
			rs = append(rs, unknown(depth+1))
		}
		return or(rs)
	}
	if i < len(prefix) {
		return w.at(prefix[i], path[1:], depth+1, refs)
	}
	if rest == false {
		return Result{Cannot: true, Depth: depth} // past a closed tuple
	}
	if hasRest {
		return w.at(rest, path[1:], depth+1, refs)
	}
	return unknown(depth + 1)
}

// resolve finds a local $ref ("#" followed by a JSON Pointer) in the
// document; other references, and every reference of a document with
// embedded resources (Shape.embedded), are not followed (open).
func (w *walker) resolve(ref string) (any, bool) {
	if !strings.HasPrefix(ref, "#") || w.embedded {
		return nil, false
	}
	path, err := PointerSteps(ref[1:])
	if err != nil {
		return nil, false
	}
	n := w.root
	for _, st := range path {
		switch x := n.(type) {
		case map[string]any:
			n = x[st.Name]
		case []any:
			if !st.Either || st.Index >= len(x) {
				return nil, false
			}
			n = x[st.Index]
		default:
			return nil, false
		}
		if n == nil {
			return nil, false
		}
	}
	return n, true
}

// declaredTypes is what type, enum and const allow (Any when none is
// written).
func declaredTypes(m map[string]any) TypeSet {
	t := Any
	switch x := m["type"].(type) {
	case string:
		if s, ok := typeOfName(x); ok {
			t = s
		}
	case []any:
		var u TypeSet
		for _, e := range x {
			if name, ok := e.(string); ok {
				s, _ := typeOfName(name)
				u |= s
			}
		}
		t = u
	}
	if c, ok := m["const"]; ok {
		t &= typeOf(c)
	}
	if e, ok := m["enum"].([]any); ok {
		var u TypeSet
		for _, v := range e {
			u |= typeOf(v)
		}
		t &= u
	}
	return t
}

// typeOf is the type of a decoded JSON value.
func typeOf(v any) TypeSet {
	switch x := v.(type) {
	case nil:
		return Null
	case bool:
		return Boolean
	case string:
		return String
	case json.Number:
		if _, err := x.Int64(); err == nil || !strings.ContainsAny(x.String(), ".eE") {
			return Integer
		}
		if f, err := x.Float64(); err == nil && f == float64(int64(f)) {
			return Integer
		}
		return Number
	case float64:
		if x == float64(int64(x)) {
			return Integer
		}
		return Number
	case map[string]any:
		return Object
	case []any:
		return Array
	}
	return Any
}

// and is the conjunction of results: a path any of them refuses cannot
// exist; the types are those all allow.
func and(rs []Result) Result {
	out := Result{Types: Any, Depth: -1}
	for _, r := range rs {
		out.Types &= r.Types
		if r.Cannot {
			if !out.Cannot || r.Depth > out.Depth {
				out.Depth, out.Members = r.Depth, r.Members
			}
			out.Cannot = true
		}
	}
	if out.Cannot {
		out.Types = 0
		return out
	}
	out.Depth = 0
	for _, r := range rs {
		out.Naming = max(out.Naming, namingRank(r.Naming))
	}
	out.Naming = unrank(out.Naming)
	for _, r := range rs {
		out.Depth = max(out.Depth, r.Depth)
		if r.Naming == Undeclared {
			out.Members = append(out.Members, r.Members...)
		}
	}
	return out
}

// or is the disjunction of results (anyOf, oneOf, the elements of an
// array): the path cannot exist only when no alternative has it.
func or(rs []Result) Result {
	out := Result{Cannot: true, Depth: -1}
	for _, r := range rs {
		if !r.Cannot {
			if out.Cannot {
				out = Result{Depth: r.Depth}
			}
			out.Types |= r.Types
			out.Naming = max(out.Naming, namingRank(r.Naming))
			if r.Depth > out.Depth {
				out.Depth = r.Depth
			}
			if r.Naming == Undeclared {
				out.Members = append(out.Members, r.Members...)
			}
			continue
		}
		if out.Cannot {
			if r.Depth > out.Depth {
				out.Depth, out.Members = r.Depth, r.Members
			} else if r.Depth == out.Depth {
				out.Members = append(out.Members, r.Members...)
			}
		}
	}
	if len(rs) == 0 {
		return Result{Types: Any}
	}
	if !out.Cannot {
		out.Naming = unrank(out.Naming)
	}
	return out
}

// namingRank orders Naming for combining: a name anywhere wins over an
// undeclared member, which wins over nothing known.
func namingRank(n Naming) Naming {
	switch n {
	case Named:
		return 2
	case Undeclared:
		return 1
	}
	return 0
}

func unrank(r Naming) Naming {
	switch r {
	case 2:
		return Named
	case 1:
		return Undeclared
	}
	return Unconstrained
}
