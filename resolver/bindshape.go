package resolver

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/observed"
	"github.com/toolgate/toolgate/shared/schemashape"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Binding checks (docs/declarations.md, "Binding checks"): each binding's
// path against the schema of what it reads ([binding-shape]), each bound
// with: value's possible types against the tool's input schema at its
// place ([binding-type]), and each choice rule's operator against the
// types of the value it compares ([binding-type], a warning).

// source is where a binding's value comes from: a schema, and the path in
// it. The binding's text writes the path's steps from skip on after root.
type source struct {
	shape *schemashape.Shape
	path  []schemashape.Step
	skip  int    // the path's first steps the binding does not write (a body item's items path)
	root  string // the binding's text before its path: "steps.fetch.output"
	what  string // the schema, for messages: "the output schema of tool http"
	// learned is set when the schema is a shape learned from the tool's
	// results (Options.Observed), and from how many: a path or a type it
	// does not have is a warning, never an error.
	learned     bool
	learnedFrom int64
}

// render writes the binding that reaches the path's first n steps.
func (s *source) render(n int) string {
	var b strings.Builder
	b.WriteString("${" + s.root)
	for _, st := range s.path[s.skip:max(n, s.skip)] {
		b.WriteString(accessor(st))
	}
	return b.String() + "}"
}

// accessor writes one step as a binding writes it (.name or [i]).
func accessor(st schemashape.Step) string {
	if st.IsIndex {
		if st.Index == schemashape.AnyIndex {
			return "[0]"
		}
		return "[" + strconv.Itoa(st.Index) + "]"
	}
	return "." + st.Name
}

// bindingName is a member name a binding can write after a dot.
var bindingName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// pathSteps splits a binding's accessors (".data.items[0]") into steps.
func pathSteps(rest string) []schemashape.Step {
	var out []schemashape.Step
	for rest != "" {
		if rest[0] == '[' {
			end := strings.IndexByte(rest, ']')
			n, _ := strconv.Atoi(rest[1:end])
			out = append(out, schemashape.Index(n))
			rest = rest[end+1:]
			continue
		}
		rest = rest[1:]
		end := strings.IndexAny(rest, ".[")
		if end < 0 {
			end = len(rest)
		}
		out = append(out, schemashape.Member(rest[:end]))
		rest = rest[end:]
	}
	return out
}

// Fixed shapes of the values toolgate writes itself.
var (
	stringShape       = schemashape.FromValue(map[string]any{"type": "string"})
	integerShape      = schemashape.FromValue(map[string]any{"type": "integer"})
	stringOrNullShape = schemashape.FromValue(map[string]any{"type": []any{"string", "null"}})
)

// shapeOf parses a schema once per key (a tool's output or input, the
// Solution's input, a review's ask): compile stays linear in the steps.
func (c *checker) shapeOf(key string, doc func() any) *schemashape.Shape {
	if s, ok := c.shapes[key]; ok {
		return s
	}
	s := schemashape.FromValue(doc())
	c.shapes[key] = s
	return s
}

// rawShape parses a schema document kept as bytes (a tool's schemas); nil
// when it is empty or does not parse (reported elsewhere, or nothing to
// check against).
func (c *checker) rawShape(key string, raw []byte) *schemashape.Shape {
	if s, ok := c.shapes[key]; ok {
		return s
	}
	var s *schemashape.Shape
	if len(strings.TrimSpace(string(raw))) > 0 {
		s, _ = schemashape.Parse(raw)
	}
	c.shapes[key] = s
	return s
}

// sourceOf finds where binding b, written in step st (the user), reads
// from; ok is false when nothing is known of it (a workflow's or a
// for_each's result, a tool without an output schema) or the binding was
// refused already.
func (c *checker) sourceOf(st *Step, b *binding, depth int) (source, bool) {
	rest := pathSteps(b.rest)
	switch b.root {
	case "input":
		if c.sol.Input == nil {
			return source{}, false
		}
		return source{shape: c.shapeOf("input", c.sol.Input.plain), path: rest, root: "input", what: "the Solution's input schema"}, true
	case "execution":
		return source{shape: stringShape, root: "execution." + b.step, what: "the execution's context object"}, true
	case "for_each":
		return source{shape: integerShape, root: "for_each.index", what: "the item's index"}, true
	case "reviews":
		j, ok := c.index[b.step]
		if !ok || c.sol.Steps[j].Kind != KindReview {
			return source{}, false
		}
		field := rest[0].Name
		src := source{root: "reviews." + b.step + "." + field, path: rest[1:], what: fmt.Sprintf("review %q's decision", b.step)}
		switch field {
		case "decision":
			src.shape = stringShape
		case "answer":
			ask := c.sol.Steps[j].Ask
			if ask == nil {
				return source{}, false
			}
			src.shape = c.shapeOf("ask:"+b.step, func() any {
				return map[string]any{"anyOf": []any{ask.plain(), map[string]any{"type": "null"}}}
			})
			src.what = fmt.Sprintf("review %q's ask schema", b.step)
		default:
			src.shape = stringOrNullShape
		}
		return src, true
	case "item":
		loop := st.Loop
		if loop == nil || depth > 0 {
			return source{}, false
		}
		li, ok := c.index[loop.ID]
		if !ok || len(c.uses[li]) != 1 || c.uses[li][0].refused {
			return source{}, false
		}
		items, ok := c.sourceOf(loop, c.uses[li][0].b, depth+1)
		if !ok {
			return source{}, false
		}
		items.path = append(slices.Clone(items.path), schemashape.Index(schemashape.AnyIndex))
		items.skip = len(items.path)
		items.path = append(items.path, rest...)
		items.root = b.step
		items.what += fmt.Sprintf(", at each item of for_each %q", loop.ID)
		return items, true
	}
	j, ok := c.index[b.step]
	if !ok {
		return source{}, false
	}
	x := c.sol.Steps[j]
	switch {
	case b.isError() && x.Kind != KindPass:
		return source{shape: stringShape, root: "steps." + b.step + b.rest, what: fmt.Sprintf("step %q's error", b.step)}, true
	case x.Kind == KindPass:
		if x.Pass == nil {
			return source{}, false
		}
		return source{shape: c.shapeOf("pass:"+x.ID, func() any { return valueSchema(x.Pass) }), path: rest, root: "steps." + b.step, what: fmt.Sprintf("pass step %q's values", b.step)}, true
	case x.Kind == KindTool && c.tools[j] != nil && len(rest) > 0 && rest[0].Name == "output" && !rest[0].IsIndex:
		t := c.tools[j]
		if src, ok := c.learnedSource(t.Name, t.OutputSchema); ok {
			src.path, src.root = rest[1:], "steps."+b.step+".output"
			return src, true
		}
		sh := c.rawShape("out:"+t.Name, t.OutputSchema)
		if sh == nil {
			return source{}, false
		}
		return source{shape: sh, path: rest[1:], root: "steps." + b.step + ".output", what: fmt.Sprintf("the output schema of tool %s", t.Name)}, true
	}
	return source{}, false
}

// learnedSource is the source of a tool's result when the tool declares
// no output schema (absent, null, {} or true) and the checker has a shape
// learned from its results: the shape's schema (observed.Shape.Schema,
// open everywhere), parsed once per tool.
func (c *checker) learnedSource(tool string, out []byte) (source, bool) {
	if c.observed == nil {
		return source{}, false
	}
	switch strings.Join(strings.Fields(string(out)), "") {
	case "", "null", "true", "{}":
	default:
		return source{}, false
	}
	ts, ok := c.observed.Tools[tool]
	if !ok || ts.Shape == nil {
		return source{}, false
	}
	sh := c.rawShape("observed:"+tool, ts.Shape.Schema())
	if sh == nil {
		return source{}, false
	}
	return source{shape: sh, what: fmt.Sprintf("the results of tool %s", tool), learned: true, learnedFrom: ts.LearnedFrom}, true
}

// observedFor is the shapes the binding checks use: shapes (else those
// the named toolset's lock carries, named.Observed) when they name no
// toolset or the one the Solution names (named); shapes of
// another toolset (or given for a Solution that names none) are a
// warning at the Solution's toolset: (or its first line), and unused.
func observedFor(ds *diags, sol *Solution, named *toolset.Toolset, shapes *observed.File) *observed.File {
	if shapes == nil && named != nil {
		shapes = named.Observed
	}
	switch {
	case shapes == nil:
		return nil
	case shapes.Toolset == "" || named != nil && shapes.Toolset == named.ID:
		return shapes
	}
	at, of := Pos{Line: 1, Column: 1}, "names no toolset"
	if named != nil {
		at, of = sol.Toolset.Pos, "names toolset "+named.ID
	}
	ds.warnf(at, RuleBindingShape, "the observed shapes are of toolset %s, and the Solution %s: they are not used", shapes.Toolset, of)
	return nil
}

// valueSchema is the JSON Schema of exactly the shapes a pass value can
// have: its mappings closed, its lists of fixed length, a whole binding
// unknown (true), a template a string.
func valueSchema(v *value) any {
	switch v.kind {
	case kNull:
		return map[string]any{"type": "null"}
	case kBool:
		return map[string]any{"type": "boolean"}
	case kNumber:
		if strings.ContainsAny(v.str, ".eE") {
			return map[string]any{"type": "number"}
		}
		return map[string]any{"type": "integer"}
	case kString:
		if segs, err := parseTemplate(v.str); err == nil && (boundString{segs}).whole() != nil {
			return true
		}
		return map[string]any{"type": "string"}
	case kMap:
		props := make(map[string]any, len(v.fields))
		for _, f := range v.fields {
			props[f.key] = valueSchema(f.val)
		}
		return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	case kList:
		items := make([]any, len(v.items))
		for i, it := range v.items {
			items[i] = valueSchema(it)
		}
		return map[string]any{"type": "array", "prefixItems": items, "items": false}
	}
	return true
}

// useKey finds a use again from a value's position and binding text.
type useKey struct {
	pos  Pos
	text string
}

// checkBindings runs the binding checks on every use the checker compiled
// (tool and workflow inputs, pass values, review shows, choice rules,
// for_each items and collect, the output), then the types of tool inputs
// and choice rules.
func (c *checker) checkBindings() {
	c.shapes = map[string]*schemashape.Shape{}
	types := map[useKey]schemashape.TypeSet{}
	visit := func(st *Step, uses []use) {
		for _, u := range uses {
			if u.refused {
				continue
			}
			if t, ok := c.checkShape(st, u); ok {
				types[useKey{u.pos, u.b.text}] = t
			}
		}
	}
	for i, st := range c.sol.Steps {
		visit(st, c.uses[i])
		if uses := c.collectUses[i]; len(uses) > 0 {
			visit(&Step{ID: st.ID, Pos: st.Pos, Loop: st}, uses)
		}
	}
	visit(&Step{ID: "output"}, c.outputUses)
	for i, st := range c.sol.Steps {
		switch {
		case st.Kind == KindTool && c.tools[i] != nil && st.With != nil:
			t := c.tools[i]
			if in := c.rawShape("in:"+t.Name, t.InputSchema); in != nil {
				c.checkWithTypes(st, t.Name, in, st.With, nil, types)
			}
		case st.Kind == KindChoice:
			c.checkRuleTypes(st, types)
		case st.Kind == KindForEach && len(c.uses[i]) == 1 && !c.uses[i][0].refused:
			// The Map state's ItemsPath must select a list, or the run
			// fails (States.Runtime, which no Catcher catches).
			u := c.uses[i][0]
			if t, ok := types[useKey{u.pos, u.b.text}]; ok && !t.Overlaps(schemashape.Array) {
				c.ds.errorf(u.pos, RuleBindingType, "step %q: for_each.items ${%s} can be %s, never a list: items must be a list", st.ID, u.b.text, t)
			}
		}
	}
}

// checkShape reports a binding whose path its source's schema cannot
// have (an error where the schema is closed there) or does not name (a
// warning where an open object declares other properties), and returns
// the types the bound value may have; ok is false when nothing is known.
func (c *checker) checkShape(st *Step, u use) (schemashape.TypeSet, bool) {
	src, ok := c.sourceOf(st, u.b, 0)
	if !ok {
		return 0, false
	}
	r := src.shape.At(src.path)
	if r.Depth < src.skip {
		return 0, false // the items binding is reported at its for_each
	}
	if src.learned {
		// A learned shape is open: more may come than was seen. A path
		// it lacks is a warning, and its types are not held against the
		// places the value is bound to.
		if r.Cannot || r.Naming == schemashape.Undeclared {
			c.ds.warnf(u.pos, RuleBindingShape, "step %q binds ${%s}, a path never observed in %s (observed from %s): %s", st.ID, u.b.text, src.what, results(src.learnedFrom), c.neverSeen(src, r))
		}
		return schemashape.Any, true
	}
	switch {
	case r.Cannot:
		c.ds.errorf(u.pos, RuleBindingShape, "step %q binds ${%s}, a path %s cannot have: %s", st.ID, u.b.text, src.what, c.stopsAt(src, r))
		return 0, false
	case r.Naming == schemashape.Undeclared:
		c.ds.warnf(u.pos, RuleBindingShape, "step %q binds ${%s}, a path %s does not declare: %s", st.ID, u.b.text, src.what, c.stopsAt(src, r))
		return schemashape.Any, true
	}
	return r.Types, true
}

// stopsAt says where a path leaves its schema, and the nearest paths that
// exist there, as bindings.
func (c *checker) stopsAt(src source, r schemashape.Result) string {
	if r.Depth >= len(src.path) {
		return "no value can be there"
	}
	at, next := src.render(r.Depth), src.path[r.Depth]
	here := src.shape.At(src.path[:r.Depth]).Types
	var msg string
	switch {
	case next.IsIndex && here&schemashape.Array == 0:
		return fmt.Sprintf("%s is %s, never a list", at, here)
	case !next.IsIndex && here&schemashape.Object == 0:
		return fmt.Sprintf("%s is %s, never an object", at, here)
	case next.IsIndex:
		msg = fmt.Sprintf("the list at %s has no element %s", at, accessor(next))
	case r.Cannot:
		msg = fmt.Sprintf("the object at %s has no member %q (additionalProperties: false)", at, next.Name)
	default:
		msg = fmt.Sprintf("the object at %s declares no member %q, and accepts undeclared ones", at, next.Name)
	}
	if near := nearestMembers(next.Name, r.Members, 3); len(near) > 0 {
		var alts []string
		for _, m := range near {
			alts = append(alts, strings.TrimSuffix(at, "}")+"."+m+"}")
		}
		msg += "; did you mean " + strings.Join(alts, ", ") + "?"
	} else if len(r.Members) == 0 && r.Cannot && !next.IsIndex {
		msg += "; it declares no members"
	}
	return msg
}

// neverSeen says where a path leaves a learned shape, and the nearest
// members seen there, as bindings: stopsAt's words for what was observed
// (the shape names only types and members, never a value).
func (c *checker) neverSeen(src source, r schemashape.Result) string {
	if r.Depth >= len(src.path) {
		return "no value was seen there"
	}
	at, next := src.render(r.Depth), src.path[r.Depth]
	here := src.shape.At(src.path[:r.Depth]).Types
	switch {
	case next.IsIndex && here&schemashape.Array == 0:
		return fmt.Sprintf("%s was only ever %s, never a list", at, here)
	case !next.IsIndex && here&schemashape.Object == 0:
		return fmt.Sprintf("%s was only ever %s, never an object", at, here)
	case next.IsIndex:
		return fmt.Sprintf("no list at %s had an element %s", at, accessor(next))
	}
	msg := fmt.Sprintf("no object at %s had a member %q", at, next.Name)
	if near := nearestMembers(next.Name, r.Members, 3); len(near) > 0 {
		var alts []string
		for _, m := range near {
			alts = append(alts, strings.TrimSuffix(at, "}")+"."+m+"}")
		}
		msg += "; did you mean " + strings.Join(alts, ", ") + "?"
	}
	return msg
}

// results writes a count of results: "1 result", "N results".
func results(n int64) string {
	if n == 1 {
		return "1 result"
	}
	return strconv.FormatInt(n, 10) + " results"
}

// nearestMembers returns up to n of members closest to name by edit distance
// (editDistance), nearest first, then by name; members a binding cannot
// write after a dot are left out.
func nearestMembers(name string, members []string, n int) []string {
	type cand struct {
		m string
		d int
	}
	var cs []cand
	for _, m := range members {
		if bindingName.MatchString(m) {
			cs = append(cs, cand{m, editDistance(name, m)})
		}
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.m, b.m)
	})
	var out []string
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.m)
	}
	return out
}

// checkWithTypes reports a bound with: value whose possible types the
// tool's input schema does not accept at its place (at, the value's
// path in with:).
func (c *checker) checkWithTypes(st *Step, tool string, in *schemashape.Shape, v *value, at []schemashape.Step, types map[useKey]schemashape.TypeSet) {
	switch v.kind {
	case kMap:
		for _, f := range v.fields {
			c.checkWithTypes(st, tool, in, f.val, append(slices.Clip(at), schemashape.Member(f.key)), types)
		}
		return
	case kList:
		for i, it := range v.items {
			c.checkWithTypes(st, tool, in, it, append(slices.Clip(at), schemashape.Index(i)), types)
		}
		return
	case kString:
	default:
		return
	}
	segs, err := parseTemplate(v.str)
	if err != nil || !(boundString{segs}).bound() {
		return
	}
	have, text := schemashape.String, v.str
	if b := (boundString{segs}).whole(); b != nil {
		t, ok := types[useKey{v.pos, b.text}]
		if !ok {
			return
		}
		have = t
	}
	want := in.At(at)
	if want.Cannot || want.Types == schemashape.Any || have.Overlaps(want.Types) {
		return
	}
	what := fmt.Sprintf("%q, text with bindings, is a string", excerpt.BytesWithin(text, maxQuotedBytes, "..."))
	if b := (boundString{segs}).whole(); b != nil {
		what = fmt.Sprintf("${%s} can be %s", b.text, have)
	}
	c.ds.errorf(v.pos, RuleBindingType, "step %q (%s) with%s: %s, but the tool's input schema wants %s there", st.ID, tool, withPath(at), what, want.Types)
}

// withPath writes a path in with: as the diagnostics of [tool-input] do
// (".a.b.0").
func withPath(at []schemashape.Step) string {
	var b strings.Builder
	for _, st := range at {
		if st.IsIndex {
			b.WriteString("." + strconv.Itoa(st.Index))
			continue
		}
		b.WriteString("." + st.Name)
	}
	return b.String()
}

// checkRuleTypes warns of a choice rule whose operator cannot match the
// types of the value it compares: ordered operators compare numbers or
// strings (as the operand is one), equals compares the operand's type
// (docs/solutions.md, "choice"). Such a rule is always false at run time,
// and a not_equals, the Not of such an equals, always true.
func (c *checker) checkRuleTypes(st *Step, types map[useKey]schemashape.TypeSet) {
	for _, r := range st.Rules {
		if r.Value == nil || r.Value.kind != kString || r.Operator == "" || r.Operator == "is_present" || r.Operand == nil {
			continue
		}
		segs, err := parseTemplate(r.Value.str)
		if err != nil {
			continue
		}
		b := (boundString{segs}).whole()
		if b == nil {
			continue
		}
		have, ok := types[useKey{r.Value.pos, b.text}]
		if !ok || have == schemashape.Any {
			continue
		}
		_, ordered := comparisons[r.Operator]
		var want schemashape.TypeSet
		var operand string
		if r.Operand.kind == kString && (boundString{mustSegs(r.Operand.str)}).bound() {
			want, operand = schemashape.Number|schemashape.Integer|schemashape.String, "a bound operand"
			if !ordered {
				want |= schemashape.Boolean
			}
		} else {
			want = kindTypes(r.Operand.kind)
			operand = "a " + r.Operand.kind.String() + " operand"
		}
		if want == 0 || have.Overlaps(want) {
			continue
		}
		always := "false"
		if r.Operator == "not_equals" {
			always = "true" // Not around an equals that never holds
		}
		c.ds.warnf(r.Value.pos, RuleBindingType, "step %q: %s with %s compares %s, but ${%s} is %s: the rule is always %s",
			st.ID, r.Operator, operand, want, b.text, have, always)
	}
}

// mustSegs is parseTemplate without its error (nil: not a template).
func mustSegs(s string) []segment {
	segs, _ := parseTemplate(s)
	return segs
}

// kindTypes is the JSON type of a literal of kind k (a number literal may
// be an integer).
func kindTypes(k kind) schemashape.TypeSet {
	switch k {
	case kNull:
		return schemashape.Null
	case kBool:
		return schemashape.Boolean
	case kNumber:
		return schemashape.Number | schemashape.Integer
	case kString:
		return schemashape.String
	}
	return 0
}
