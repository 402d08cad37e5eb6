package resolver

import (
	"fmt"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/resolver/gate"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/observed"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/schemashape"
	"github.com/toolgate/toolgate/shared/toolset"
)

// fetchTool is the catalog name of the http tool (docs/design.md, "The
// http tool").
const fetchTool = "structured-data-fetch"

// checker holds one Solution while it is checked.
type checker struct {
	ds  *diags
	cat *catalog.Catalog
	// named is the registered toolset the Solution names; nil: the
	// catalog's tools.
	named *toolset.Toolset
	sol   *Solution
	index map[string]int // step id -> index in sol.Steps
	start int
	tools []*catalog.Tool // per step: the admitted tool, or nil
	gated map[string]bool // tool names on the review list
	hosts hostlist.List
	// httpEntry holds, per http step whose literal URL matches one, its
	// host entry (checkHTTP).
	httpEntry map[int]toolset.HTTPHost

	// compiled values per step (tool inputs, pass values) and their bindings
	params map[int]compiled
	uses   map[int][]use
	rules  map[int][]compiledRule
	// waitPaths holds each bound wait step's path: the SecondsPath or
	// TimestampPath of its Wait state.
	waitPaths map[int]string
	// itemsPaths holds each for_each step's items path (its Map's
	// ItemsPath), and collects what each iteration returns, in Parameters
	// form, with its bindings (read in the body's scope).
	itemsPaths  map[int]string
	collects    map[int]compiled
	collectUses map[int][]use
	// decisions holds the review steps whose decision a reachable step,
	// a reachable for_each's collect or the output binds
	// (${reviews.ID...}): their outcomes write it.
	decisions map[string]bool

	reachable []bool
	verdicts  []GateVerdict
	literals  []Literal // for publish: see Literal
	// refused are the paths of Gate A's and no-fallback's diagnostics.
	refused []RefusedPath

	// inputComment is the Start state's Comment: the InputRecord.
	inputComment string

	// output is the run's result (output:) in Parameters form under the
	// one member "output", and its bindings; a zero output is {}.
	output     compiled
	outputUses []use
	// runTimeout is how the run timeout was set (deriveRunTimeout).
	runTimeout RunTimeout
	// childRunTimeout is Options.ChildRunTimeout.
	childRunTimeout func(name string) (int, error)
	// scopeSteps lists each scope's step indexes in order (stepsIn), by
	// its for_each step (nil: the top level); built once.
	scopeSteps map[*Step][]int
	// shapes holds the schemas the binding checks read, parsed once per
	// tool, review or pass step (checkBindings).
	shapes map[string]*schemashape.Shape
	// observed is Options.Observed when it is of the Solution's toolset
	// (observedFor); nil: none.
	observed *observed.File
}

type compiledRule struct {
	variable string
	operand  compiled
}

// resolve reports duplicate ids and unknown targets, and finds the start.
func (c *checker) resolve() {
	c.index = make(map[string]int, len(c.sol.Steps))
	for i, st := range c.sol.Steps {
		if st.ID == "" {
			continue
		}
		if j, dup := c.index[st.ID]; dup {
			c.ds.errorf(st.Pos, RuleDuplicateID, "step id %q is already used by step %d (line %d)", st.ID, j+1, c.sol.Steps[j].Pos.Line)
			continue
		}
		c.index[st.ID] = i
	}
	c.start = 0
	if c.sol.Start.Set {
		if i, ok := c.index[c.sol.Start.Name]; ok {
			c.start = i
			if l := c.sol.Steps[i].Loop; l != nil {
				c.ds.errorf(c.sol.Start.Pos, RuleForEachScope, "start %q is a step of for_each %q's body: the run starts at a top-level step; a body starts at its first step", c.sol.Start.Name, l.ID)
			}
		} else if !slices.Contains(c.sol.Dropped, c.sol.Start.Name) {
			c.ds.errorf(c.sol.Start.Pos, RuleUnknownTarget, "start %q names no step", c.sol.Start.Name)
		}
	}
	for _, st := range c.sol.Steps {
		for _, t := range c.targets(st) {
			c.target(st, t.ref, t.what, true)
		}
		if st.Kind == KindReview && st.Of.Set {
			i, ok := c.target(st, st.Of, "review.of", false)
			switch {
			case !ok:
				st.OfUnusable = true
			case c.sol.Steps[i].Loop != st.Loop:
				st.OfUnusable = true
				c.ds.errorf(st.Of.Pos, RuleReviewScope, "review %q is of step %q, %s: a review approves only a tool step of its own scope (a for_each's body is one, the top level another), so that an approval never reaches a call of another item or outside the loop", st.ID, st.Of.Name, scopeDiff(st, c.sol.Steps[i]))
			case c.sol.Steps[i].Kind != KindTool:
				st.OfUnusable = true
				c.ds.errorf(st.Of.Pos, RuleTargetKind, "review %q is of step %q, which is a %s step: a review approves the inputs of a tool step", st.ID, st.Of.Name, c.sol.Steps[i].Kind)
			}
		}
	}
}

// pathsUnsure reports whether the step graph is not the one the author
// meant: a step was left out for its kind keys, or a review's of names no
// tool step. The checks that follow paths (unreachable steps, bindings
// set on every path, Gate A, no fallback, waits before a call) then report
// nothing, since what they would find follows from the error already
// reported.
func (c *checker) pathsUnsure() bool {
	if len(c.sol.Dropped) > 0 {
		return true
	}
	for _, st := range c.sol.Steps {
		if st.Kind == KindReview && st.OfUnusable {
			return true
		}
	}
	return false
}

type namedRef struct {
	ref  Ref
	what string
	kind gate.EdgeKind
}

// targets lists a step's out-edges as written (end included).
func (c *checker) targets(st *Step) []namedRef {
	var out []namedRef
	add := func(r Ref, what string, k gate.EdgeKind, dflt bool) {
		if !r.Set && dflt {
			r = Ref{Name: EndTarget, Set: true, Pos: st.Pos}
		}
		if r.Set {
			out = append(out, namedRef{r, what, k})
		}
	}
	switch st.Kind {
	case KindTool, KindWorkflow:
		add(st.Next, "next", gate.Plain, true)
		// Each on_error entry is an error edge, for Gate A and the
		// no-fallback check alike.
		for _, k := range st.Catches {
			add(k.Next, "on_error", gate.Error, false)
		}
		add(st.OnError, "on_error", gate.Error, false)
	case KindPass, KindWait:
		add(st.Next, "next", gate.Plain, true)
	case KindForEach:
		add(st.Next, "next", gate.Plain, true)
		for _, k := range st.Catches {
			add(k.Next, "on_error", gate.Error, false)
		}
		add(st.OnError, "on_error", gate.Error, false)
	case KindChoice:
		for _, r := range st.Rules {
			add(r.Next, "next", gate.Plain, false)
		}
		add(st.Default, "default", gate.Plain, true)
	case KindReview:
		add(st.OnApprove, "on_approve", gate.Approve, false)
		add(st.OnReject, "on_reject", gate.Reject, true)
		// A timeout approves nothing: Gate A takes it as a rejection.
		add(st.OnTimeout, "on_timeout", gate.Reject, false)
	}
	return out
}

// target resolves a reference to a step index; end gives -1.
func (c *checker) target(st *Step, r Ref, what string, endOK bool) (int, bool) {
	if r.Name == EndTarget && endOK {
		return -1, true
	}
	if i, ok := c.index[r.Name]; ok {
		if t := c.sol.Steps[i]; t.Loop != st.Loop && what != "review.of" {
			c.ds.errorf(r.Pos, RuleForEachScope, "step %q %s %q: %q is %s; a body's targets stay inside it, and %q ends an iteration", st.ID, what, r.Name, r.Name, scopeDiff(st, t), EndTarget)
			return -1, false
		}
		return i, true
	}
	if slices.Contains(c.sol.Dropped, r.Name) {
		return -1, false // the step exists, refused for its kind keys
	}
	c.ds.errorf(r.Pos, RuleUnknownTarget, "step %q %s %q names no step (targets are step ids or %q)", st.ID, what, r.Name, EndTarget)
	return -1, false
}

// scopeDiff says where step t is, seen from step st of another scope.
func scopeDiff(st, t *Step) string {
	switch {
	case t.Loop == nil:
		return "a top-level step"
	case st.Loop == nil:
		return fmt.Sprintf("a step of for_each %q's body", t.Loop.ID)
	}
	return fmt.Sprintf("a step of for_each %q's body, not of %q's", t.Loop.ID, st.Loop.ID)
}

// bodyStart is the index of for_each step st's first body step; -1 when
// it has none.
func (c *checker) bodyStart(st *Step) int {
	if st.ForEach == nil || len(st.ForEach.Body) == 0 {
		return -1
	}
	if i, ok := c.index[st.ForEach.Body[0].ID]; ok && c.sol.Steps[i] == st.ForEach.Body[0] {
		return i
	}
	return -1
}

// callsTool reports whether for_each step st's body holds a tool step or
// a workflow step (whose child run calls tools).
func callsTool(st *Step) bool {
	if st.ForEach == nil {
		return false
	}
	return slices.ContainsFunc(st.ForEach.Body, func(b *Step) bool { return b.Kind == KindTool || b.Kind == KindWorkflow })
}

// graph builds the step graph for reachability, dominance and waits: a
// for_each has a Plain edge to its body's first step besides its own
// out-edges (its body's steps run after it starts, and its next only
// after all of them). Edges to end and unresolved targets are left out.
// Gate A and the no-fallback check run on scopeGraph, never on this one.
func (c *checker) graph() *gate.Graph {
	g := &gate.Graph{Nodes: make([]gate.Node, len(c.sol.Steps)), Start: c.start}
	for i, st := range c.sol.Steps {
		n := gate.Node{Name: st.ID, Of: -1}
		switch st.Kind {
		case KindTool:
			n.Kind = gate.Tool
			n.Gated = c.stepGated(i)
		case KindReview:
			if j, ok := c.index[st.Of.Name]; ok && c.sol.Steps[j].Kind == KindTool {
				n.Kind, n.Of = gate.Review, j
			}
		}
		for _, t := range c.targets(st) {
			if j, ok := c.index[t.ref.Name]; ok && t.ref.Name != EndTarget && c.sol.Steps[j].Loop == st.Loop {
				n.Next = append(n.Next, gate.Edge{To: j, Kind: t.kind})
			}
		}
		if b := c.bodyStart(st); b >= 0 {
			n.Next = append(n.Next, gate.Edge{To: b, Kind: gate.Plain})
		}
		g.Nodes[i] = n
	}
	return g
}

// scopeGraph builds the graph Gate A and the no-fallback check run on for
// one scope: the top level (loop nil) or a for_each's body, each its own
// graph, starting unapproved (docs/solutions.md, "for_each"): a review
// outside a body never approves a call inside it, and a review inside
// approves only its own iteration's call. A workflow step, and in the top
// level a for_each whose body calls a tool or starts a workflow, is an
// ungated Tool node: its on_error starts a fallback search, and a
// fallback path that reaches it reaches a tool.
// global maps the graph's nodes to step indexes.
func (c *checker) scopeGraph(loop *Step) (g *gate.Graph, global []int) {
	global = slices.Clone(c.stepsIn(loop))
	local := make(map[int]int, len(global))
	for k, i := range global {
		local[i] = k
	}
	g = &gate.Graph{Nodes: make([]gate.Node, len(global)), Start: -1}
	start := c.start
	if loop != nil {
		start = c.bodyStart(loop)
	}
	if s, ok := local[start]; ok {
		g.Start = s
	}
	for k, i := range global {
		st := c.sol.Steps[i]
		n := gate.Node{Name: st.ID, Of: -1}
		switch st.Kind {
		case KindTool:
			n.Kind = gate.Tool
			n.Gated = c.stepGated(i)
		case KindForEach:
			if callsTool(st) {
				n.Kind = gate.Tool
			}
		case KindWorkflow:
			// The child run calls tools, and no review of this Solution
			// approves them: an ungated Tool node, so that its on_error
			// starts a fallback search and a fallback path that reaches
			// it reaches a tool (docs/solutions.md §4.2).
			n.Kind = gate.Tool
		case KindReview:
			if j, ok := c.index[st.Of.Name]; ok && c.sol.Steps[j].Kind == KindTool {
				if o, in := local[j]; in {
					n.Kind, n.Of = gate.Review, o
				}
			}
		}
		for _, t := range c.targets(st) {
			if t.ref.Name == EndTarget {
				n.Succeeds = true // the run, or the iteration, ends well
				continue
			}
			if j, ok := c.index[t.ref.Name]; ok {
				if o, in := local[j]; in {
					n.Next = append(n.Next, gate.Edge{To: o, Kind: t.kind})
				}
			}
		}
		if st.Kind == KindSucceed {
			n.Succeeds = true
		}
		g.Nodes[k] = n
	}
	return g, global
}

// stepsIn lists the indexes of the steps of scope loop (nil: the top
// level, else a for_each's body) in order. The lists of all scopes are
// built in one pass over the steps, so that a Solution of many loops
// costs linear time, not one pass per loop.
func (c *checker) stepsIn(loop *Step) []int {
	if c.scopeSteps == nil {
		c.scopeSteps = map[*Step][]int{}
		for i, st := range c.sol.Steps {
			c.scopeSteps[st.Loop] = append(c.scopeSteps[st.Loop], i)
		}
	}
	return c.scopeSteps[loop]
}

// scopes lists the top level (nil) and every for_each step.
func (c *checker) scopes() []*Step {
	out := []*Step{nil}
	for _, st := range c.sol.Steps {
		if st.Kind == KindForEach {
			out = append(out, st)
		}
	}
	return out
}

// reach marks the steps reachable from the start and warns about the rest.
func (c *checker) reach(g *gate.Graph) {
	c.reachable = make([]bool, len(g.Nodes))
	stack := []int{g.Start}
	c.reachable[g.Start] = true
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range g.Nodes[v].Next {
			if !c.reachable[e.To] {
				c.reachable[e.To] = true
				stack = append(stack, e.To)
			}
		}
	}
	for i, st := range c.sol.Steps {
		if !c.reachable[i] && !c.pathsUnsure() {
			c.ds.warnf(st.Pos, RuleUnreachable, "step %q is unreachable: no path from the start (%q) leads to it", st.ID, c.sol.Steps[c.start].ID)
		}
	}
}

// admit looks up every tool in the catalog; an unknown tool is refused,
// never treated as something else (docs/design.md, "Tool steps and admission").
func (c *checker) admit() {
	c.tools = make([]*catalog.Tool, len(c.sol.Steps))
	c.gated = map[string]bool{}
	for _, name := range c.cat.Names() {
		if t, _ := c.cat.Lookup(name); t.ReviewRequired {
			c.gated[name] = true
		}
	}
	for _, r := range c.sol.ReviewBefore {
		if _, ok := c.cat.Lookup(r.Name); !ok {
			c.ds.errorf(r.Pos, RuleUnknownTool, "policy.review_before names %q, which is not in %s (%s); %s", r.Name, c.admittedFrom(), strings.Join(c.cat.Names(), ", "), c.otherTools())
			continue
		}
		c.gated[r.Name] = true
	}
	for i, st := range c.sol.Steps {
		if st.Kind == KindWorkflow {
			c.admitWorkflow(st)
			continue
		}
		if st.Kind != KindTool {
			continue
		}
		t, ok := c.cat.Lookup(st.Tool)
		if !ok {
			c.ds.errorf(st.ToolPos, RuleUnknownTool, "step %q uses tool %q, which is not in %s (%s); a tool is never admitted as something else; %s", st.ID, st.Tool, c.admittedFrom(), strings.Join(c.cat.Names(), ", "), c.otherTools())
			continue
		}
		c.tools[i] = t
	}
}

// admitWorkflow refuses a workflow step whose Solution the run's toolset
// does not list in its workflows (docs/toolsets.md): the toolset is the
// guard for which Solutions a run may start. A Solution never starts
// itself.
func (c *checker) admitWorkflow(st *Step) {
	switch {
	case st.Workflow == "":
		return // reported by the decoder
	case st.Workflow == c.sol.Name:
		c.ds.errorf(st.WorkflowPos, RuleWorkflow, "step %q starts %q, the Solution itself: a run may not start itself", st.ID, st.Workflow)
	case c.named == nil:
		c.ds.errorf(st.WorkflowPos, RuleWorkflow, "step %q starts workflow %q, but the Solution names no registered toolset: the Solutions a run may start are listed in its toolset's workflows (toolset: ts_...)", st.ID, st.Workflow)
	case !slices.Contains(c.named.Workflows, st.Workflow):
		listed := "lists none"
		if len(c.named.Workflows) > 0 {
			listed = "lists " + strings.Join(c.named.Workflows, ", ")
		}
		c.ds.errorf(st.WorkflowPos, RuleWorkflow, "step %q starts workflow %q, which toolset %s does not list in its workflows (it %s)", st.ID, st.Workflow, c.named.ID, listed)
	}
}

// compileValues compiles tool inputs, pass values and choice rules into
// Parameters form and checks each binding's shape and target step.
func (c *checker) compileValues() {
	c.params = map[int]compiled{}
	c.uses = map[int][]use{}
	c.rules = map[int][]compiledRule{}
	c.waitPaths = map[int]string{}
	c.itemsPaths, c.collects, c.collectUses = map[int]string{}, map[int]compiled{}, map[int][]use{}
	for i, st := range c.sol.Steps {
		var v *value
		switch st.Kind {
		case KindTool, KindWorkflow:
			v = st.With
			if v == nil {
				v = &value{kind: kMap, pos: st.Pos}
			}
		case KindPass:
			if v = st.Pass; v == nil {
				continue // reported by the decoder
			}
		case KindReview:
			// A review that shows values compiles them as a pass step's.
			if v = st.Show; v == nil {
				continue
			}
		case KindChoice:
			c.compileRules(i, st)
			continue
		case KindWait:
			c.compileWait(i, st)
			continue
		case KindForEach:
			c.compileForEach(i, st)
			continue
		default:
			continue
		}
		var uses []use
		p, errs := compileParams(v, false, &uses)
		for _, e := range errs {
			c.ds.errorf(e.pos, RuleBinding, "step %q: %s", st.ID, e.msg)
		}
		c.params[i] = p
		c.uses[i] = uses
		for k := range uses {
			c.checkBindingTarget(st, &uses[k])
		}
	}
	c.compileOutput()
	c.decisions = map[string]bool{}
	for i, uses := range c.uses {
		for _, u := range uses {
			if u.b.root == "reviews" && c.reachable[i] {
				c.decisions[u.b.step] = true
			}
		}
	}
	// collect is read where an iteration ends, which is reachable when
	// its for_each is.
	for i, uses := range c.collectUses {
		for _, u := range uses {
			if u.b.root == "reviews" && c.reachable[i] {
				c.decisions[u.b.step] = true
			}
		}
	}
	for _, u := range c.outputUses {
		if u.b.root == "reviews" {
			c.decisions[u.b.step] = true
		}
	}
}

// compileOutput compiles the Solution's output: a value with bindings,
// wrapped as {"output": value} so that any value (a mapping, a list, one
// whole binding) is a Pass state's Parameters (the End state's
// OutputPath then takes the member).
func (c *checker) compileOutput() {
	if c.sol.Output == nil {
		return
	}
	wrap := &value{kind: kMap, pos: c.sol.Output.pos, fields: []field{{key: "output", keyPos: c.sol.Output.pos, val: c.sol.Output}}}
	p, errs := compileParams(wrap, false, &c.outputUses)
	for _, e := range errs {
		c.ds.errorf(e.pos, RuleBinding, "output: %s", e.msg)
	}
	c.output = p
	self := &Step{ID: "output", Pos: c.sol.Output.pos}
	for k := range c.outputUses {
		c.checkBindingTarget(self, &c.outputUses[k])
	}
}

func (c *checker) compileRules(i int, st *Step) {
	for _, r := range st.Rules {
		var uses []use
		vc, errs := compileParams(r.Value, false, &uses)
		for _, e := range errs {
			c.ds.errorf(e.pos, RuleBinding, "step %q: %s", st.ID, e.msg)
		}
		if len(errs) == 0 && len(uses) == 1 && uses[0].b.root == "execution" {
			c.ds.errorf(r.Value.pos, RuleBinding, "step %q: a choice cannot compare ${%s}, which is not in the run's data: copy it with a pass step and compare that", st.ID, uses[0].b.text)
			continue
		}
		if len(errs) == 0 && (len(uses) != 1 || !strings.HasPrefix(vc.expr, "$.")) {
			c.ds.errorf(r.Value.pos, RuleBinding, "step %q: when.value must be exactly one binding such as ${steps.fetch.output.data.count}", st.ID)
			continue
		}
		oc, errs := compileParams(r.Operand, false, &uses)
		for _, e := range errs {
			c.ds.errorf(e.pos, RuleBinding, "step %q: %s", st.ID, e.msg)
		}
		if oc.expr != "" && strings.HasPrefix(oc.expr, "$$.") {
			c.ds.errorf(r.Operand.pos, RuleBinding, "step %q: a choice cannot compare with %s, which is not in the run's data: copy it with a pass step and compare with that", st.ID, oc.expr)
			continue
		}
		if oc.expr != "" && !strings.HasPrefix(oc.expr, "$.") {
			c.ds.errorf(r.Operand.pos, RuleBinding, "step %q: %s compares with a literal or exactly one binding, not a template", st.ID, r.Operator)
			continue
		}
		if oc.expr == "" && r.Operator != "is_present" && r.Operator != "equals" && r.Operator != "not_equals" {
			if r.Operand.kind != kNumber && r.Operand.kind != kString {
				c.ds.errorf(r.Operand.pos, RuleInvalidValue, "step %q: %s compares numbers or strings, not a %s", st.ID, r.Operator, r.Operand.kind)
				continue
			}
		}
		if oc.expr == "" && (r.Operand.kind == kMap || r.Operand.kind == kList) {
			c.ds.errorf(r.Operand.pos, RuleInvalidValue, "step %q: %s cannot compare with a %s", st.ID, r.Operator, r.Operand.kind)
			continue
		}
		for k := range uses {
			c.checkBindingTarget(st, &uses[k])
		}
		c.uses[i] = append(c.uses[i], uses...)
		c.rules[i] = append(c.rules[i], compiledRule{variable: vc.expr, operand: oc})
	}
}

func (c *checker) checkBindingTarget(st *Step, u *use) {
	switch u.b.root {
	case "for_each":
		if st.Loop == nil {
			c.refuse(u, "step %q binds ${%s}, but is in no for_each body: the index is an item's, inside its body", st.ID, u.b.text)
		}
		return
	case "item":
		if st.Loop == nil || st.Loop.ForEach.As != u.b.step {
			// As parseBinding says of any other name: the item's name is
			// a root only inside its body.
			c.refuse(u, "step %q: binding %q must be %s", st.ID, excerpt.BytesWithin("${"+u.b.text+"}", maxQuotedBytes, "..."), bindingForms)
		}
		return
	}
	if j, ok := c.index[u.b.step]; ok && (u.b.root == "steps" || u.b.root == "reviews") {
		switch x := c.sol.Steps[j]; {
		case x == st.Loop:
			c.refuse(u, "step %q binds ${%s}, but it is in for_each %q's body, whose output is the list the loop collects once every item is done", st.ID, u.b.text, x.ID)
			return
		case x.Loop != nil && x.Loop != st.Loop:
			c.refuse(u, "step %q binds ${%s}, but step %q is in for_each %q's body: its values live in one iteration; after the loop, bind ${steps.%s.output}, the list each iteration collects", st.ID, u.b.text, x.ID, x.Loop.ID, x.Loop.ID)
			return
		}
	}
	if (u.b.root == "steps" || u.b.root == "reviews") && slices.Contains(c.sol.Dropped, u.b.step) {
		return // the step exists, refused for its kind keys
	}
	if j, ok := c.index[u.b.step]; ok && u.b.root == "steps" && len(c.sol.Steps[j].Keep) > 0 && !readsKept(u.b.rest, c.sol.Steps[j].Keep) {
		c.refuse(u, "step %q binds ${%s}, a field step %q does not keep (keep: %s): it would always be absent",
			st.ID, u.b.text, u.b.step, strings.Join(c.sol.Steps[j].Keep, ", "))
	}
	if u.b.root == "reviews" {
		if j, ok := c.index[u.b.step]; !ok || c.sol.Steps[j].Kind != KindReview {
			what := "there is no step " + fmt.Sprintf("%q", u.b.step)
			if ok {
				what = fmt.Sprintf("step %q is a %s step, not a review", u.b.step, c.sol.Steps[j].Kind)
			}
			c.refuse(u, "step %q binds ${%s}, but %s: ${reviews.ID...} reads the decision of review step ID", st.ID, u.b.text, what)
		} else if u.b.isAnswer() && c.sol.Steps[j].Ask == nil {
			c.refuse(u, "step %q binds ${%s}, but review %q asks no question: only a review with ask has an answer (review.ask, the JSON Schema of the answer)", st.ID, u.b.text, u.b.step)
		}
		return
	}
	if u.b.root != "steps" {
		return
	}
	j, ok := c.index[u.b.step]
	if !ok {
		c.refuse(u, "step %q binds ${%s}, but there is no step %q", st.ID, u.b.text, u.b.step)
		return
	}
	switch x := c.sol.Steps[j]; x.Kind {
	case KindTool, KindWorkflow, KindForEach:
		if u.b.isError() {
			switch {
			case u.b.rest != ".error.Error" && u.b.rest != ".error.Cause":
				c.refuse(u, "step %q binds ${%s}: a step's error has Error and Cause: ${steps.%s.error.Error} or ${steps.%s.error.Cause}", st.ID, u.b.text, u.b.step, u.b.step)
			case !x.hasOnError():
				c.refuse(u, "step %q binds ${%s}, but step %q has no on_error: no path leaves it with its error", st.ID, u.b.text, u.b.step)
			}
			return
		}
		if u.b.rest != ".output" && !strings.HasPrefix(u.b.rest, ".output.") && !strings.HasPrefix(u.b.rest, ".output[") {
			c.refuse(u, "step %q binds ${%s}: a %s step's result is at ${steps.%s.output...}, its error at ${steps.%s.error.Error} and ${steps.%s.error.Cause}", st.ID, u.b.text, x.Kind, u.b.step, u.b.step, u.b.step)
		}
	case KindPass:
	default:
		c.refuse(u, "step %q binds ${%s}, but step %q is a %s step and has no values", st.ID, u.b.text, u.b.step, x.Kind)
	}
}

// refuse reports a binding that cannot work, as [binding], and marks it
// so that no other check reports it again (one diagnostic per cause).
func (c *checker) refuse(u *use, format string, args ...any) {
	c.ds.errorf(u.pos, RuleBinding, format, args...)
	u.refused = true
}

// checkSet reports bindings to steps that have not run on every path to the
// step that uses them. A review of T uses every binding of T: what T sends
// must be known when the reviewer looks at it.
func (c *checker) checkSet(g *gate.Graph) {
	if c.pathsUnsure() {
		return
	}
	dom := newDominators(c.sol, c.index, g)
	fl := newFlow(c)
	check := func(at int, owner *Step, u use) {
		if u.refused {
			return
		}
		if u.b.root == "reviews" {
			c.checkDecisionSet(fl, at, owner, u)
			return
		}
		if u.b.root != "steps" {
			return
		}
		j, ok := c.index[u.b.step]
		if !ok || !c.reachable[at] {
			return
		}
		k := c.sol.Steps[j].Kind
		if !k.completes() {
			return
		}
		here := c.sol.Steps[at]
		if u.b.isError() && k != KindPass {
			if !c.sol.Steps[j].hasOnError() || fl.leftByError(j, at) {
				return // no on_error: refused as a binding already
			}
			if here == owner {
				c.ds.errorf(u.pos, RuleUnsetBinding, "step %q binds ${%s}, but not every path to %q leaves step %q through its on_error, the last time it runs: the error may be unset", owner.ID, u.b.text, owner.ID, u.b.step)
			} else {
				c.ds.errorf(here.Pos, RuleUnsetBinding, "review %q shows the inputs of %q, but ${%s} is not set on every path to %q: not every path leaves step %q through its on_error, the last time it runs", here.ID, owner.ID, u.b.text, here.ID, u.b.step)
			}
			return
		}
		if dom.completedBefore(j, at) {
			return
		}
		if here == owner {
			c.ds.errorf(u.pos, RuleUnsetBinding, "step %q binds ${%s}, but step %q has not completed on every path to %q: the value may be unset", owner.ID, u.b.text, u.b.step, owner.ID)
		} else {
			c.ds.errorf(here.Pos, RuleUnsetBinding, "review %q shows the inputs of %q, but ${%s} is not set on every path to %q: step %q has not completed on all of them", here.ID, owner.ID, u.b.text, here.ID, u.b.step)
		}
	}
	c.checkOutputSet(dom, fl)
	for i, st := range c.sol.Steps {
		for _, u := range c.uses[i] {
			check(i, st, u)
		}
		// collect's outer values are read in every iteration: set before
		// the loop starts, as its items are.
		for _, u := range c.collectUses[i] {
			if j, ok := c.index[u.b.step]; ok && c.sol.Steps[j].Loop == nil {
				check(i, st, u)
			}
		}
		if st.Kind == KindReview {
			if j, ok := c.index[st.Of.Name]; ok && c.sol.Steps[j].Kind == KindTool {
				for _, u := range c.uses[j] {
					check(i, c.sol.Steps[j], u)
				}
			}
		}
	}
}

// checkDecisionSet reports a binding of review R's decision used at step
// at (by owner, or by the tool a review at at shows) where R has not been
// decided on every path from the start: R's outcome edges write it. A
// tool never binds the decision of the review that approves it, since
// that review shows the tool's inputs before it is decided.
func (c *checker) checkDecisionSet(fl *flow, at int, owner *Step, u use) {
	j, ok := c.index[u.b.step]
	if !ok || c.sol.Steps[j].Kind != KindReview || !c.reachable[at] || fl.decided(j, at) {
		return
	}
	here := c.sol.Steps[at]
	switch {
	case here == owner:
		c.ds.errorf(u.pos, RuleUnsetBinding, "step %q binds ${%s}, but review %q has not been decided on every path to %q: the decision may be unset", owner.ID, u.b.text, u.b.step, owner.ID)
	case at == j:
		c.ds.errorf(u.pos, RuleUnsetBinding, "step %q binds ${%s}, the decision of review %q, which shows %q's inputs before it is decided: a tool cannot bind the decision of a review of it that has not been decided", owner.ID, u.b.text, here.ID, owner.ID)
	default:
		c.ds.errorf(here.Pos, RuleUnsetBinding, "review %q shows the inputs of %q, but ${%s} is not set on every path to %q: review %q has not been decided on all of them", here.ID, owner.ID, u.b.text, here.ID, u.b.step)
	}
}

// checkOutputSet reports output bindings to steps that have not completed
// on every path that ends the run successfully (a succeed step, or an
// edge to end: after a tool's or a workflow's success, its result is
// set), and collect bindings to body steps that have not completed on
// every path that ends an iteration, whether or not there is an output.
func (c *checker) checkOutputSet(dom *dominators, fl *flow) {
	// collect is read where an iteration ends, with or without an output.
	for i, st := range c.sol.Steps {
		if st.Kind == KindForEach {
			c.checkEndsSet(dom, fl, st, c.collectUses[i], map[string]bool{}, fmt.Sprintf("for_each %q collect", st.ID), "ends an iteration", "an iteration")
		}
	}
	if len(c.outputUses) == 0 {
		return
	}
	reported := map[string]bool{}
	for _, u := range c.outputUses {
		if u.refused {
			continue
		}
		j, ok := c.index[u.b.step]
		if u.b.root == "reviews" && ok && c.sol.Steps[j].Kind == KindReview && !reported[u.b.text] && !fl.decided(j, fl.end()) {
			reported[u.b.text] = true
			c.ds.errorf(u.pos, RuleUnsetBinding, "output binds ${%s}, but review %q has not been decided on every path that ends the run: the decision may be unset", u.b.text, u.b.step)
		}
		if !u.b.isError() || !ok || reported[u.b.text] {
			continue
		}
		if x := c.sol.Steps[j]; x.Kind != KindTool && x.Kind != KindWorkflow && x.Kind != KindForEach || !x.hasOnError() {
			continue
		}
		if !fl.leftByError(j, fl.end()) {
			reported[u.b.text] = true
			c.ds.errorf(u.pos, RuleUnsetBinding, "output binds ${%s}, but not every path that ends the run leaves step %q through its on_error, the last time it runs: the error may be unset", u.b.text, u.b.step)
		}
	}
	type end struct {
		from int
		ok   bool // left by its success edge (next)
	}
	c.checkEndsSet(dom, fl, nil, c.outputUses, reported, "output", "ends the run", "the run")
}

// checkEndsSet refuses a binding of uses, read where scope ends (the run's
// output for the top level, collect for a for_each's body), of a step that
// has not completed on every path that ends the scope.
func (c *checker) checkEndsSet(dom *dominators, fl *flow, scope *Step, uses []use, reported map[string]bool, what, ends, who string) {
	type end struct {
		from    int
		ok      bool // left by its success edge (next)
		byError bool // left by its on_error
	}
	var all []end
	for i, st := range c.sol.Steps {
		if !c.reachable[i] || st.Loop != scope {
			continue
		}
		if st.Kind == KindSucceed {
			all = append(all, end{i, false, false})
		}
		for _, t := range c.targets(st) {
			if t.ref.Name == EndTarget {
				all = append(all, end{i, t.kind == gate.Plain && st.Kind.completes(), t.kind == gate.Error})
			}
		}
	}
	for _, u := range uses {
		j, ok := c.index[u.b.step]
		if scope != nil && u.b.isError() && ok && c.sol.Steps[j].Loop == scope && c.sol.Steps[j].Kind != KindPass &&
			c.sol.Steps[j].hasOnError() && !u.refused && !reported[u.b.text] {
			// A body step's error: written on its on_error edges, so set
			// at an end only when every path to it left the step so.
			for _, e := range all {
				at := e.from
				if e.from == j {
					at = fl.ok(j)
					if e.byError {
						at = fl.err(j)
					}
				}
				if !fl.leftByError(j, at) {
					reported[u.b.text] = true
					c.ds.errorf(u.pos, RuleUnsetBinding, "%s binds ${%s}, but not every path that %s leaves step %q through its on_error: %s can end at step %q without its error", what, u.b.text, ends, u.b.step, who, c.sol.Steps[e.from].ID)
					break
				}
			}
			continue
		}
		if scope != nil && u.b.root == "reviews" && ok && c.sol.Steps[j].Loop == scope && !u.refused && !reported[u.b.text] {
			// A body review's decision: written on its outcome edges, so
			// decided at every end that is the review or follows it.
			for _, e := range all {
				if e.from != j && !fl.decided(j, e.from) {
					reported[u.b.text] = true
					c.ds.errorf(u.pos, RuleUnsetBinding, "%s binds ${%s}, but review %q has not been decided on every path that %s: %s can end at step %q without it", what, u.b.text, u.b.step, ends, who, c.sol.Steps[e.from].ID)
					break
				}
			}
			continue
		}
		if u.refused || u.b.root != "steps" || !ok || reported[u.b.text] || u.b.isError() && c.sol.Steps[j].Kind != KindPass {
			continue
		}
		if !c.sol.Steps[j].Kind.completes() || c.sol.Steps[j].Loop != scope {
			continue // an outer step, bound in a body, was checked at the for_each
		}
		for _, e := range all {
			if !dom.completedBeforeEnd(j, e.from, e.ok) {
				reported[u.b.text] = true
				c.ds.errorf(u.pos, RuleUnsetBinding, "%s binds ${%s}, but step %q has not completed on every path that %s: %s can end at step %q without it", what, u.b.text, u.b.step, ends, who, c.sol.Steps[e.from].ID)
				break
			}
		}
	}
}

// checkToolInputs validates literal inputs against the tool's input schema;
// bound values are checked at run time by the dispatcher.
func (c *checker) checkToolInputs() {
	compiled := map[string]*schema.Schema{}
	for i, st := range c.sol.Steps {
		t := c.tools[i]
		if t == nil {
			continue
		}
		s, ok := compiled[t.Name]
		if !ok {
			var err error
			if s, err = schema.Compile(t.InputSchema); err != nil {
				c.ds.errorf(st.ToolPos, RuleToolInput, "tool %q input schema: %v", t.Name, err)
			}
			compiled[t.Name] = s
		}
		if s == nil {
			continue
		}
		v := st.With
		if v == nil {
			v = &value{kind: kMap, pos: st.Pos}
		}
		bound := map[string]bool{}
		markBound(v, "", bound)
		err := s.Validate(v.plain())
		if err == nil {
			continue
		}
		ignore := func(loc []string) bool {
			p := ""
			for _, tok := range loc {
				p += "/" + tok
				if bound[p] {
					return true
				}
			}
			return false
		}
		for _, p := range schema.Problems(err, ignore) {
			at := locate(v, p.Location)
			where := "with"
			if p.Location != "" {
				where = "with" + strings.ReplaceAll(p.Location, "/", ".")
			}
			c.ds.errorf(at, RuleToolInput, "step %q (%s) %s: %s", st.ID, t.Name, where, p.Message)
		}
	}
}

// markBound records the JSON Pointer of every string holding a binding.
func markBound(v *value, at string, bound map[string]bool) {
	switch v.kind {
	case kString:
		if strings.Contains(strings.ReplaceAll(v.str, "$${", ""), "${") {
			bound[at] = true
		}
	case kMap:
		for _, f := range v.fields {
			markBound(f.val, at+"/"+f.key, bound)
		}
	case kList:
		for i, it := range v.items {
			markBound(it, fmt.Sprintf("%s/%d", at, i), bound)
		}
	}
}

// pointerUnescaper turns a JSON Pointer's reference token back into the
// name it escapes: "~1" is "/", "~0" is "~" (RFC 6901, section 4).
var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// locate finds the position of the value at a JSON Pointer, or the nearest
// ancestor's.
func locate(v *value, pointer string) Pos {
	if pointer == "" {
		return v.pos
	}
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = pointerUnescaper.Replace(tok)
		var next *value
		switch v.kind {
		case kMap:
			if f := v.get(tok); f != nil {
				next = f.val
			}
		case kList:
			for i, it := range v.items {
				if fmt.Sprint(i) == tok {
					next = it
				}
			}
		}
		if next == nil {
			return v.pos
		}
		v = next
	}
	return v.pos
}

// GateVerdict is Gate A's result for one gated tool step.
type GateVerdict struct {
	Step    string   // the tool step
	Tool    string   // its tool
	Reviews []string // the review steps of it
	// Last are the reviews whose approval can be the last decision of a
	// review of Step before it runs (gate.LastReviews): on every path the
	// last one must approve.
	Last []string
	// Path is the shortest path from the start reaching Step without a
	// fresh approval; nil when every path carries one.
	Path []string
}

// checkGates runs Gate A and the no-fallback rule (docs/design.md) on
// each scope's graph (scopeGraph).
func (c *checker) checkGates() {
	if c.pathsUnsure() {
		return
	}
	reviews := map[string][]string{} // tool step -> its review steps
	for _, r := range c.sol.Steps {
		if r.Kind == KindReview {
			reviews[r.Of.Name] = append(reviews[r.Of.Name], r.ID)
		}
	}
	var topSucceeds []bool // per step index: the top level can succeed from it
	for _, loop := range c.scopes() {
		g, global := c.scopeGraph(loop)
		if loop == nil {
			topSucceeds = make([]bool, len(c.sol.Steps))
			for k, ok := range gate.ReachesSuccess(g) {
				topSucceeds[global[k]] = ok
			}
		} else if c.failureCaught(loop, topSucceeds) {
			// A failure the body does not catch fails the for_each, whose
			// on_error can still end the run well.
			for k, i := range global {
				if c.failsBody(c.sol.Steps[i]) {
					g.Nodes[k].Succeeds = true
				}
			}
		}
		c.checkGatesIn(g, global, reviews)
	}
}

// failsBody reports whether a body step can fail its for_each: a fail
// step; a tool or workflow step without on_error (its entries by error
// name leave the others uncaught); a review, whose Task's errors other
// than a rejection and a timeout its Catchers leave uncaught. A States.Runtime
// error fails the execution, which no Catcher catches (AWS Step Functions,
// "Error handling"), so it never ends a run well.
func (c *checker) failsBody(st *Step) bool {
	switch st.Kind {
	case KindFail, KindReview:
		return true
	case KindTool, KindWorkflow:
		return !st.OnError.Set
	}
	return false
}

// failureCaught reports whether a failure of for_each step loop can still
// end the run well: one of its on_error targets is end, or a top-level
// step from which the run can succeed (topSucceeds, per step index).
// Without an on_error the failure fails the run (for_each bodies do not
// nest: docs/solutions.md, "for_each").
func (c *checker) failureCaught(loop *Step, topSucceeds []bool) bool {
	for _, t := range c.targets(loop) {
		if t.kind != gate.Error {
			continue
		}
		if t.ref.Name == EndTarget {
			return true
		}
		if j, ok := c.index[t.ref.Name]; ok && topSucceeds[j] {
			return true
		}
	}
	return false
}

// checkGatesIn runs Gate A and the no-fallback rule on one scope's graph
// g, whose node k is step global[k] (in step order); reviews lists each
// tool step's review steps by its id.
func (c *checker) checkGatesIn(g *gate.Graph, global []int, reviews map[string][]string) {
	toGlobal := func(path []int) []int {
		out := make([]int, len(path))
		for k, x := range path {
			out[k] = global[x]
		}
		return out
	}
	violations := map[int][]int{}
	for _, v := range gate.ReviewBeforeTool(g) {
		violations[global[v.Tool]] = toGlobal(v.Path)
	}
	var gated []int // the nodes of the gated tool steps the start reaches
	for k, i := range global {
		if st := c.sol.Steps[i]; st.Kind == KindTool && c.stepGated(i) && c.reachable[i] {
			gated = append(gated, k)
		}
	}
	lasts := gate.LastReviewsOf(g, gated)
	for n, k := range gated {
		i := global[k]
		st := c.sol.Steps[i]
		verdict := GateVerdict{Step: st.ID, Tool: st.Tool, Reviews: reviews[st.ID], Last: g.Names(lasts[n])}
		if path, bad := violations[i]; bad {
			verdict.Path = c.names(path)
			reason := "no review step is of it"
			if len(verdict.Reviews) > 0 {
				reason = "its reviews (" + strings.Join(verdict.Reviews, ", ") + ") are not approved on this path"
			}
			c.refused = append(c.refused, RefusedPath{Rule: RuleReviewBefore, Line: st.Pos.Line, Column: st.Pos.Column, Path: path})
			c.ds.errorf(st.Pos, RuleReviewBefore, "tool step %q (%s) needs an approved human review before every run, but %s: %s%s", st.ID, c.gatedTool(i), reason, strings.Join(verdict.Path, " → "), c.rejectInto(path, i)+c.showsOnPath(path, i))
		}
		c.verdicts = append(c.verdicts, verdict)
	}
	for _, f := range gate.NoFallback(g) {
		from, to, path := global[f.From], global[f.Tool], toGlobal(f.Path)
		if !c.reachable[from] {
			continue // unreachable steps only get a warning
		}
		fs, ts := c.sol.Steps[from], c.sol.Steps[to]
		what := fmt.Sprintf("tool step %q (%s) without an approved review of it", ts.ID, ts.Tool)
		switch ts.Kind {
		case KindForEach:
			what = fmt.Sprintf("for_each %q, whose body calls a tool", ts.ID)
		case KindWorkflow:
			what = fmt.Sprintf("workflow step %q, whose child run (%s) calls tools", ts.ID, ts.Workflow)
		}
		at := c.errorEdgePos(fs, path)
		c.refused = append(c.refused, RefusedPath{Rule: RuleNoFallback, Line: at.Line, Column: at.Column, Path: path})
		c.ds.errorf(at, RuleNoFallback, "on_error of step %q reaches %s: %s; a failure must never turn into a different side effect, and from %q the run can still succeed: %s (a tool on an error path needs no review only when every path from it ends in a fail step)",
			fs.ID, what, strings.Join(c.names(path), " → "), ts.ID, c.successPath(toGlobal(f.Success)))
	}
}

// successPath writes a path from a fallback's tool to success
// (gate.Fallback.Success, as step indexes): the steps, then how the last
// one ends well.
func (c *checker) successPath(path []int) string {
	if len(path) == 0 {
		return ""
	}
	ids := strings.Join(c.names(path), " → ")
	last := c.sol.Steps[path[len(path)-1]]
	if last.Kind == KindSucceed {
		return ids + " (a succeed step)"
	}
	for _, t := range c.targets(last) {
		if t.ref.Name != EndTarget {
			continue
		}
		if last.Loop != nil {
			return fmt.Sprintf("%s → end (%s's %s: the iteration ends and for_each %q goes on)", ids, last.ID, t.what, last.Loop.ID)
		}
		return fmt.Sprintf("%s → end (%s's %s)", ids, last.ID, t.what)
	}
	if last.Loop != nil {
		return fmt.Sprintf("%s, whose failure fails for_each %q, and its on_error leads on", ids, last.Loop.ID)
	}
	return ids
}

// names maps a path of step indexes to step ids.
func (c *checker) names(path []int) []string {
	out := make([]string, len(path))
	for k, i := range path {
		out[k] = c.sol.Steps[i].ID
	}
	return out
}

// errorEdgePos is where the on_error target a fallback path leaves step
// from by is written: the path's second step.
func (c *checker) errorEdgePos(from *Step, path []int) Pos {
	if len(path) > 1 {
		to := c.sol.Steps[path[1]].ID
		for _, k := range from.Catches {
			if k.Next.Name == to {
				return k.Next.Pos
			}
		}
	}
	return from.OnError.Pos
}

// rejectInto explains a Gate A path whose last edge is a review of tool
// step t that goes to t on its rejection or timeout: that edge approves
// nothing, though the path names only the two steps.
func (c *checker) rejectInto(path []int, t int) string {
	if len(path) < 2 {
		return ""
	}
	r := c.sol.Steps[path[len(path)-2]]
	if r.Kind != KindReview || r.Of.Name != c.sol.Steps[t].ID {
		return ""
	}
	var keys []string
	if r.OnReject.Name == c.sol.Steps[t].ID {
		keys = append(keys, "on_reject")
	}
	if r.OnTimeout.Name == c.sol.Steps[t].ID {
		keys = append(keys, "on_timeout")
	}
	if len(keys) == 0 {
		return ""
	}
	return fmt.Sprintf(" (review %q's %s leads to the tool: a rejection or a timeout approves nothing)", r.ID, strings.Join(keys, " and "))
}

// checkHosts checks policy.fetch_hosts, and every fetch step's url
// (checkURL: the tool's URL rules, and the host against the entries).
func (c *checker) checkHosts() {
	for _, r := range c.sol.FetchHosts {
		e, err := hostlist.ParseEntry(r.Name)
		if err != nil {
			c.ds.errorf(r.Pos, RuleFetchHost, "policy.fetch_hosts: %v", err)
			continue
		}
		c.hosts = append(c.hosts, e)
	}
	for i, st := range c.sol.Steps {
		if c.tools[i] == nil || c.tools[i].Name != fetchTool {
			continue
		}
		if len(c.sol.FetchHosts) == 0 {
			c.ds.errorf(st.ToolPos, RuleFetchHost, "step %q uses %s, but policy.fetch_hosts is empty: without allowed hosts there is no fetch", st.ID, fetchTool)
			continue
		}
		if st.With == nil {
			continue
		}
		f := st.With.get("url")
		if f == nil || f.val.kind != kString {
			continue
		}
		c.checkURL(i, st, f.val)
	}
}

// effectiveRetry returns a tool step's retry with the catalog's defaults.
func effectiveRetry(st *Step, t *catalog.Tool) catalog.Retry {
	r := t.Retry
	if st.Retry != nil {
		if st.Retry.MaxAttempts != 0 {
			r.MaxAttempts = st.Retry.MaxAttempts
		}
		if st.Retry.IntervalSeconds != 0 {
			r.IntervalSeconds = st.Retry.IntervalSeconds
		}
		if st.Retry.BackoffRate != 0 {
			r.BackoffRate = st.Retry.BackoffRate
		}
	}
	return r
}

// checkRetries enforces the tool contract's retry rules (docs/design.md, "The tool contract"): a tool
// that does not honour idempotency keys is retried only with the author's
// explicit tolerate_duplicates.
func (c *checker) checkRetries() {
	for i, st := range c.sol.Steps {
		t := c.tools[i]
		if t == nil {
			continue
		}
		r, idempotent := c.retryOf(i), c.idempotentStep(i)
		switch {
		case !idempotent && r.MaxAttempts > 1 && !c.tolerates(st):
			at := st.ToolPos
			if st.Retry != nil {
				at = st.Retry.Pos
			}
			c.ds.errorf(at, RuleRetry, "step %q: %s does not honour idempotency keys, so retry.max_attempts %d could repeat its effect; set tolerate_duplicates: true to accept duplicates, or max_attempts: 1", st.ID, t.Name, r.MaxAttempts)
		case idempotent && st.TolerateDuplicates:
			why := t.Name + " honours idempotency keys"
			if c.isHTTP(i) {
				why = "this http call cannot repeat its effect (a read, or a host that honours an idempotency key)"
			}
			c.ds.warnf(st.ToolPos, RuleRetry, "step %q: tolerate_duplicates has no effect, %s", st.ID, why)
		}
	}
}

// tolerates reports whether a tool step may repeat its tool's effect: the
// step's tolerate_duplicates, or the named toolset's for the tool.
func (c *checker) tolerates(st *Step) bool {
	return st.TolerateDuplicates || c.named != nil && c.named.Tools[st.Tool].TolerateDuplicates
}

// otherTools says where tools beyond those admitted come from, for
// [unknown-tool]: a registered toolset (docs/toolsets.md), which the
// Solution names at its top level.
func (c *checker) otherTools() string {
	if c.named != nil {
		return fmt.Sprintf("to use another tool, add it to the toolset's file and register it again (toolgate toolset register FILE, docs/toolsets.md), then name the new id instead of %s", c.named.ID)
	}
	return "other tools (MCP servers' tools, platform tools) come from a registered toolset, named at the top level (toolset: ts_…): register a toolset file with toolgate toolset register FILE (docs/toolsets.md)"
}

// admittedFrom names where tools are admitted from, for diagnostics.
func (c *checker) admittedFrom() string {
	if c.named != nil {
		return "toolset " + c.named.ID
	}
	return "the tool catalog"
}

// checkToolTimeouts refuses a tool step's timeout_seconds over its tool
// function's timeout: the step's timeout bounds the tool's work inside the
// function, which the function's own timeout already ends (catalog
// function_timeout_seconds; docs/solutions.md, "timeout_seconds").
func (c *checker) checkToolTimeouts() {
	for i, st := range c.sol.Steps {
		if t := c.tools[i]; t != nil && st.TimeoutSeconds > t.FunctionTimeoutSeconds {
			c.ds.errorf(st.TimeoutPos, RuleInvalidValue, "step %q timeout_seconds %d is over the %s function's timeout, %d s: it bounds the tool's work inside the function, so write at most %d or leave it out",
				st.ID, st.TimeoutSeconds, t.Name, t.FunctionTimeoutSeconds, t.FunctionTimeoutSeconds)
		}
	}
}

// usedTools returns the sorted names of the admitted tools the Solution's
// reachable steps use: what the definition can call is what the toolset pins.
func (c *checker) usedTools() []string {
	var names []string
	for i, t := range c.tools {
		if t != nil && c.reachable[i] && !slices.Contains(names, t.Name) {
			names = append(names, t.Name)
		}
	}
	slices.Sort(names)
	return names
}

// checkRunTimeout refuses a review whose timeout, or a park timeout
// (checkParkTimeout), that is not below the run's
// (policy.run_timeout_seconds): the execution would time out while the
// review still waits, and its decision would reach no Task. Where the
// child's run timeout is known (Options.ChildRunTimeout), it warns of a
// written run timeout that a workflow step's child may outlast: Step
// Functions does not stop a .sync child when its parent ends.
func (c *checker) checkRunTimeout() {
	if c.sol.RunTimeout == 0 {
		return // refused, or not derived: reported already
	}
	c.checkParkTimeout()
	c.checkParkRetries()
	for i, st := range c.sol.Steps {
		if st.Kind == KindReview && c.reachable[i] && st.ReviewTimeout >= c.sol.RunTimeout {
			c.ds.errorf(st.ReviewTimeoutPos, RuleRunTimeout, "review %q waits up to %d s, which is not below the run's timeout of %d s (policy.run_timeout_seconds): the run would end before its review", st.ID, st.ReviewTimeout, c.sol.RunTimeout)
		}
		if st.Kind == KindWorkflow && c.reachable[i] && c.sol.RunTimeoutSet && c.childRunTimeout != nil {
			if secs, err := c.childRunTimeout(st.Workflow); err == nil && secs > 0 && secs+ChildStartSeconds >= c.sol.RunTimeout {
				c.ds.warnf(st.WorkflowPos, RuleRunTimeout, "step %q starts workflow %q, whose run timeout of %d s, with %d s to start it, is not below this run's of %d s (policy.run_timeout_seconds): a run that times out leaves its child running; raise the policy or remove it to derive one",
					st.ID, st.Workflow, secs, ChildStartSeconds, c.sol.RunTimeout)
			}
		}
	}
}

// readsKept reports whether a binding path into a tool step's slot
// (".output.data.title") reads what its keep paths return: a kept field,
// something inside one, or an object on the way to one.
func readsKept(rest string, keep []string) bool {
	p, ok := strings.CutPrefix(rest, ".output")
	if !ok {
		return true // not the result: reported elsewhere
	}
	p, _, _ = strings.Cut(p, "[")
	p = strings.TrimPrefix(p, ".")
	for _, k := range keep {
		if p == "" || p == k || strings.HasPrefix(p, k+".") || strings.HasPrefix(k, p+".") {
			return true
		}
	}
	return false
}

// compileForEach compiles a for_each's items, exactly one binding to a
// list in the run's data (its Map's ItemsPath, a reference path), read in
// the scope of the for_each itself; and its collect, read at the end of
// an iteration, in the body's scope.
func (c *checker) compileForEach(i int, st *Step) {
	fe := st.ForEach
	if fe.Items != nil {
		var uses []use
		p, errs := compileParams(fe.Items, false, &uses)
		for _, e := range errs {
			c.ds.errorf(e.pos, RuleBinding, "step %q: %s", st.ID, e.msg)
		}
		switch {
		case len(errs) > 0:
		case len(uses) != 1 || !uses[0].whole || !strings.HasPrefix(p.expr, "$."):
			c.ds.errorf(fe.Items.pos, RuleBinding, "step %q: for_each.items must be exactly one binding to a list in the run's data, such as \"${input.orders}\"", st.ID)
		default:
			c.uses[i] = uses
			for k := range uses {
				c.checkBindingTarget(st, &uses[k])
			}
			c.itemsPaths[i] = p.expr
		}
	}
	if fe.Collect != nil {
		var uses []use
		p, errs := compileParams(fe.Collect, false, &uses)
		for _, e := range errs {
			c.ds.errorf(e.pos, RuleBinding, "step %q collect: %s", st.ID, e.msg)
		}
		// collect is read where an iteration ends: in the body.
		end := &Step{ID: st.ID, Pos: st.Pos, Loop: st}
		for k := range uses {
			c.checkBindingTarget(end, &uses[k])
		}
		c.collects[i], c.collectUses[i] = p, uses
	}
}
