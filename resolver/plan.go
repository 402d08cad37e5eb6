package resolver

import (
	"github.com/toolgate/toolgate/resolver/gate"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/toolset"
)

// The resolver is a compiler in stages (docs/design.md, "The compiler"):
// decode (the value tree to Steps), check (the checker's diagnostics),
// plan (this file) and emit (asl.go and the files of each step kind, to
// typed ASL in resolver/asl). The plan is built once, from a Solution
// check found no error in, and holds all that emit reads: per step, its
// decoded Step and the payload check compiled for its kind. The state-size
// bound reads the steps' values from it and writes its bounds into it;
// emit reads no state of the checker.

// plan is a checked Solution, ready to emit.
type plan struct {
	name    string
	version int
	// runTimeout is the run's timeout in seconds (policy.run_timeout_seconds,
	// or derived).
	runTimeout int
	// inputComment is the Start state's Comment: the InputRecord.
	inputComment string
	// output is the run's result in Parameters form under the one member
	// "output"; nil when the Solution has no output (the result is {}).
	// outputUses are its bindings.
	output     any
	outputUses []use
	// start is the first state of the start step.
	start string
	// decisions: some review's decision is bound, and the state data has
	// $.decisions.
	decisions bool
	// starter: a reachable step is a review (the Solution has gated
	// tools: Gate A puts a review before each) or a workflow step (whose
	// child's reviews' requester is this run's starter), or the named
	// toolset declares auth anywhere (declaresAuth: run and end-user
	// credentials are resolved by the verified start), or a reachable
	// step can park (its park is decided by the run's starter); its runs
	// then start with the Starter, which checks toolgate run's start
	// record.
	starter bool
	// first maps each step id to its first state's name (firstState).
	first map[string]string
	// at holds every step's plan by its index in Solution.Steps, the
	// unreachable ones included (the state-size bound reads a review's
	// tool wherever it is).
	at []*planStep
	// steps are the reachable top-level steps, in Solution order; a
	// for_each's reachable body steps are in its forEach payload.
	steps []*planStep
	// outputBound bounds the run's result in bytes of JSON (the manifest's
	// output_bound_bytes); set by checkStateSize.
	outputBound int
}

// planStep is one step: its decoded Step, its value, and the payload of
// its kind (one of tool, review, choice, wait, forEach and workflow is
// set; pass, succeed and fail steps need none).
type planStep struct {
	*Step
	// value is a tool's or workflow step's with, or a pass step's values,
	// in Parameters form with its bindings; for the other kinds, an empty
	// value.
	value    *boundValue
	tool     *toolCall
	review   *reviewCall
	choice   []compiledRule
	wait     *waitPlan
	forEach  *loopPlan
	workflow *childCall
}

// boundValue is a value in Parameters form and the bindings it holds.
type boundValue struct {
	static any
	uses   []use
}

// toolCall is a tool step's call: the admitted tool, the retry with the
// catalog's defaults, and the envelope's values (the input is the step's
// value).
type toolCall struct {
	tool  *catalog.Tool
	retry catalog.Retry
	// tolerates: the step, or the named toolset, accepts duplicates.
	tolerates bool
	// gated: the tool needs an approved review ($.reviews.<id>).
	gated bool
	// platform is the pinned function of a platform tool ("" for a
	// catalog tool).
	platform string
	// park is the step's park when its call can be parked and no
	// on_error entry names CALL_PARKED (checker.parkable); nil otherwise.
	park *parkPlan
}

// reviewCall is a review step's request: the tool step it approves (nil
// for a review that shows values), that step's input in Parameters form
// (or the values shown), and whether its decision is bound.
type reviewCall struct {
	of       *Step
	input    any
	decision bool
}

// waitPlan is a bound wait step's path (SecondsPath or TimestampPath); a
// literal wait's seconds are its Step's.
type waitPlan struct{ path string }

// loopPlan is a for_each's Map: its items path, what each iteration
// returns, the outer values each iteration is passed, and its body.
type loopPlan struct {
	itemsPath string
	// itemsUses are the items' bindings: exactly one, to the list.
	itemsUses []use
	// collect is what an iteration returns in Parameters form ({} without
	// collect); collected is collect as compiled, with its bindings (nil
	// without collect), which the state-size bound reads.
	collect   map[string]any
	collected *boundValue
	// input, steps and reviews name the outer values the body binds: the
	// run's input, top-level steps' slots, top-level reviews' decisions,
	// in the order of their bindings (outerUses).
	input          bool
	steps, reviews []string
	// first is the body's first state.
	first string
	// body are the body's reachable steps, in Solution order.
	body []*planStep
}

// childCall is a workflow step's child start (its input is the step's
// value): the bound of its with, in bytes of JSON, set by checkStateSize.
type childCall struct {
	withBound int
}

// plan builds the plan of a Solution check found no error in, whose step
// graph is g.
func (c *checker) plan(g *gate.Graph) *plan {
	p := &plan{
		name:         c.sol.Name,
		version:      c.sol.Version,
		runTimeout:   c.sol.RunTimeout,
		inputComment: c.inputComment,
		decisions:    len(c.decisions) > 0,
		first:        make(map[string]string, len(c.sol.Steps)),
		at:           make([]*planStep, len(c.sol.Steps)),
	}
	if c.sol.Output != nil {
		p.output, p.outputUses = c.output.static, c.outputUses
	}
	for i, st := range c.sol.Steps {
		p.first[st.ID] = firstState(st)
		if (st.Kind == KindReview || st.Kind == KindWorkflow) && c.reachable[i] {
			p.starter = true
		}
	}
	if c.hasParkable() {
		// A parked call of an ungated step is decided, and any parked
		// call cancelled, by the run's starter (or a park decider or
		// operator): only a verified start names one (docs/parking.md,
		// "Deciding").
		p.starter = true
	}
	if declaresAuth(c.named) {
		// Its calls may present a credential of the run's or its end
		// user's scope, which only a verified start names
		// (docs/credentials.md): such a run always has a start record.
		p.starter = true
	}
	p.start = firstState(c.sol.Steps[c.start])
	cyclic := cyclicNodes(g)
	for i, st := range c.sol.Steps {
		p.at[i] = c.planStep(i, st)
		if call := p.at[i].tool; call != nil && call.park != nil {
			call.park.reset = cyclic[i]
		}
	}
	for i, st := range c.sol.Steps {
		if l := p.at[i].forEach; l != nil {
			for _, b := range st.ForEach.Body {
				if k, ok := c.index[b.ID]; ok && c.reachable[k] {
					l.body = append(l.body, p.at[k])
				}
			}
		}
		if st.Loop == nil && c.reachable[i] {
			p.steps = append(p.steps, p.at[i])
		}
	}
	return p
}

// declaresAuth reports whether ts (nil: the Solution names no toolset)
// declares auth anywhere: on a pinned MCP tool, an http host entry or a
// draft's MCP server. A run of such a toolset always has a start record,
// since the run and end-user scopes of its credentials are taken from it
// (docs/identity.md, "End users").
func declaresAuth(ts *toolset.Toolset) bool {
	if ts == nil {
		return false
	}
	for _, t := range ts.Tools {
		if t.MCP != nil && t.MCP.Auth != nil {
			return true
		}
	}
	for _, h := range ts.HTTPHosts {
		if h.Auth != nil {
			return true
		}
	}
	for _, s := range ts.MCPServers {
		if s.Auth != nil {
			return true
		}
	}
	return false
}

// firstState is the name of a step's first state: "<id>-seq" for the
// steps that take a value of the call counter first, the id otherwise.
func firstState(st *Step) string {
	if st.Kind == KindTool || st.Kind == KindWorkflow || st.Kind == KindForEach {
		return st.ID + "-seq"
	}
	return st.ID
}

// planStep is step i's plan: its value and its kind's payload. A new
// step kind adds its payload here.
func (c *checker) planStep(i int, st *Step) *planStep {
	ps := &planStep{Step: st, value: &boundValue{}}
	switch st.Kind {
	case KindTool, KindPass, KindWorkflow:
		ps.value = &boundValue{static: c.params[i].static, uses: c.uses[i]}
	case KindReview:
		if st.Show != nil {
			ps.value = &boundValue{static: c.params[i].static, uses: c.uses[i]}
		}
	}
	switch st.Kind {
	case KindTool:
		t := c.tools[i]
		call := &toolCall{tool: t, retry: c.retryOf(i), tolerates: c.tolerates(st), gated: c.stepGated(i)}
		if c.parkable(st) {
			call.park = &parkPlan{timeoutSeconds: c.parkTimeout()}
			if call.gated {
				call.park.rereview = c.rereviewOf(i)
			}
		}
		if c.named != nil {
			if pt := c.named.Tools[st.Tool]; pt.Platform() {
				call.platform = pt.Function
			}
		}
		ps.tool = call
	case KindReview:
		if st.Show != nil {
			ps.review = &reviewCall{input: c.params[i].static, decision: c.decisions[st.ID]}
			break
		}
		j := c.index[st.Of.Name]
		ps.review = &reviewCall{of: c.sol.Steps[j], input: c.params[j].static, decision: c.decisions[st.ID]}
	case KindChoice:
		ps.choice = c.rules[i]
	case KindWait:
		ps.wait = &waitPlan{path: c.waitPaths[i]}
	case KindWorkflow:
		ps.workflow = &childCall{}
	case KindForEach:
		ps.forEach = c.loopPlan(i, st)
	}
	return ps
}

// loopPlan is for_each step i's Map.
func (c *checker) loopPlan(i int, st *Step) *loopPlan {
	l := &loopPlan{itemsPath: c.itemsPaths[i], itemsUses: c.uses[i], collect: map[string]any{}}
	if len(st.ForEach.Body) > 0 {
		l.first = firstState(st.ForEach.Body[0])
	}
	if col, ok := c.collects[i]; ok {
		l.collected = &boundValue{static: col.static, uses: c.collectUses[i]}
		if m, ok := col.static.(map[string]any); ok {
			l.collect = m
		}
	}
	for _, u := range c.outerUses(i, st) {
		switch u.b.root {
		case "input":
			l.input = true
		case "steps":
			l.steps = append(l.steps, u.b.step)
		case "reviews":
			l.reviews = append(l.reviews, u.b.step)
		}
	}
	return l
}

// platformKey is a platform tool's function placeholder key, from its
// pinned "${key}" (toolset.FunctionPattern); "" for an ARN.
func platformKey(function string) string {
	if m := toolset.FunctionPattern.FindStringSubmatch(function); m != nil {
		return m[1]
	}
	return ""
}
