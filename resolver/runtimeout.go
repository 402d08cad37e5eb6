package resolver

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/resolver/gate"
)

// The run timeout (docs/solutions.md, "The run timeout"). Without
// policy.run_timeout_seconds, a run is bounded by the longest path through
// its Solution, plus a margin: each step counts the longest it can keep
// the run, and a path's steps add up. What the resolver cannot bound (a
// loop, a wait only the run knows the length of, a child run) refuses the
// derivation: the author then writes the policy.

const (
	// RunTimeoutMarginMin and RunTimeoutMarginPercent make the margin a
	// derived run timeout adds to its longest path: a tenth of it, at least
	// an hour. It covers what the path leaves out: the run's start check,
	// state transitions, and Lambda invocations waiting to be served.
	RunTimeoutMarginMin     = 3600
	RunTimeoutMarginPercent = 10
	// reviewRetrySeconds is what a review Task's retries may add to its
	// timeout: three retries on Lambda's errors (Retry of the review Task,
	// docs/solutions.md §7.4), after 2, 4 and 8 s, each after an
	// invocation that failed within a function's longest timeout,
	// MaxToolTimeout (AWS Lambda quota).
	reviewRetrySeconds = 3*MaxToolTimeout + 2 + 4 + 8
	// ChildStartSeconds is what a workflow step adds to its child's run
	// timeout: its record Task's four attempts (Retry MaxAttempts 3, after
	// 1, 2 and 4 s), each within a function's longest timeout,
	// MaxToolTimeout, and the start Task's retries (after 2, 4 and 8 s),
	// which start no second child: they find the first and wait for it.
	ChildStartSeconds = 4*MaxToolTimeout + 1 + 2 + 4 + 2 + 4 + 8
	// overYear stands for a duration past MaxRunTimeout: sums saturate at
	// it, so that no retry's backoff or loop's product overflows.
	overYear = 1 << 40
)

// RunTimeout says how a Solution's run timeout was set: written in
// policy.run_timeout_seconds, or derived from its longest path.
type RunTimeout struct {
	// Seconds is the state machine's TimeoutSeconds.
	Seconds int
	// Derived: no policy.run_timeout_seconds; Seconds is LongestSeconds
	// plus MarginSeconds.
	Derived bool
	// LongestSeconds is the longest path's duration, in seconds, and Path
	// its top-level step ids, in order (a for_each counts its body).
	LongestSeconds int
	MarginSeconds  int
	Path           []string
	// ParkSeconds is the park timeout (policy.park_timeout_seconds) a
	// derived run timeout adds once when a step can park; 0 otherwise.
	ParkSeconds int
	// RereviewSeconds is what a derived run timeout adds once, with the
	// park, when a gated step can park: the longest re-review's timeout
	// and its retries (a call whose approval expired while it was parked
	// is reviewed again; docs/parking.md, "A re-review"); 0 otherwise.
	RereviewSeconds int
	// Pending are the workflow steps whose child's run timeout is not
	// known here (Options.ChildRunTimeout is nil): each counts only
	// ChildStartSeconds, and publishing derives the run timeout again
	// with the child's published run timeout added.
	Pending []string
}

// String is the run timeout as the summary prints it: "95040 s (derived:
// the longest path [approve → send] takes 86400 s, plus a margin of
// 8640 s)", with ", a park of 604800 s" after the path's seconds when a
// step can park (and ", a re-review of 89460 s" when a gated one can), or
// "86400 s (policy.run_timeout_seconds)".
func (r RunTimeout) String() string {
	if !r.Derived {
		return fmt.Sprintf("%d s (policy.run_timeout_seconds)", r.Seconds)
	}
	pending := ""
	if len(r.Pending) > 0 {
		pending = fmt.Sprintf("; publishing adds the run timeouts of the children started by %s", strings.Join(r.Pending, ", "))
	}
	parked := ""
	if r.ParkSeconds > 0 {
		parked = fmt.Sprintf(", a park of %d s", r.ParkSeconds)
	}
	if r.RereviewSeconds > 0 {
		parked += fmt.Sprintf(", a re-review of %d s", r.RereviewSeconds)
	}
	return fmt.Sprintf("%d s (derived: the longest path [%s] takes %d s%s, plus a margin of %d s%s)", r.Seconds, strings.Join(r.Path, " → "), r.LongestSeconds, parked, r.MarginSeconds, pending)
}

// runTimeoutMargin is the margin added to a longest path of secs seconds.
func runTimeoutMargin(secs int) int {
	return max(RunTimeoutMarginMin, (secs*RunTimeoutMarginPercent+99)/100)
}

// deriveRunTimeout sets the run timeout when policy.run_timeout_seconds is
// not written: the longest path from the start, plus its margin. It
// refuses ([run-timeout]) a Solution whose longest path it cannot bound,
// and one whose total is over MaxRunTimeout; the run timeout then stays 0.
func (c *checker) deriveRunTimeout() {
	if c.sol.RunTimeoutSet {
		c.runTimeout = RunTimeout{Seconds: c.sol.RunTimeout}
		return
	}
	if c.ds.hasErrors() {
		// A refused Solution has no run; its path may not be the one meant.
		return
	}
	t := &timer{c: c, weights: map[int]int{}}
	secs, path, ok := t.longest(nil)
	if !ok {
		return
	}
	if len(path) == 0 {
		// Never: the run starts at a top-level step.
		c.ds.errorf(c.sol.RunTimeoutPos, RuleRunTimeout, "the run has no top-level start, so no run timeout can be derived; set policy.run_timeout_seconds")
		return
	}
	names := make([]string, len(path))
	heaviest := path[0]
	for k, i := range path {
		names[k] = c.sol.Steps[i].ID
		if t.weights[i] > t.weights[heaviest] {
			heaviest = i
		}
	}
	// A parked call waits up to the park timeout for a decision; the
	// parks of a run add one park timeout in total (docs/parking.md, "The
	// compiled states"): a run whose calls park again and again ends
	// with States.Timeout.
	// A gated call whose approval expired while it was parked is
	// reviewed again: once, with the park (rereview.go).
	parkSecs, rereviewSecs := 0, 0
	if c.hasParkable() {
		parkSecs, rereviewSecs = c.parkTimeout(), c.rereviewSeconds()
		secs = saturate(secs + parkSecs + rereviewSecs)
	}
	margin := runTimeoutMargin(min(secs, overYear))
	if total := secs + margin; secs >= overYear || total > MaxRunTimeout {
		marginText := durationText(margin)
		if secs >= overYear {
			marginText = durationText(overYear) // a tenth of a saturated sum
		}
		parked := ""
		if parkSecs > 0 {
			parked = fmt.Sprintf(" with a park of %d s (policy.park_timeout_seconds)", parkSecs)
		}
		if rereviewSecs > 0 {
			parked += fmt.Sprintf(" and a re-review of %d s", rereviewSecs)
		}
		c.ds.errorf(c.sol.Steps[heaviest].Pos, RuleRunTimeout, "the run timeout, derived from the longest path %s (%s%s; %s), and a margin of %s, is over %d s, a Standard workflow's longest execution (AWS Step Functions quota): shorten the path's reviews, waits, retries or loops, or set policy.run_timeout_seconds (at most %d) to end longer runs with States.Timeout",
			strings.Join(names, " → "), durationText(secs), parked, t.explain(heaviest), marginText, MaxRunTimeout, MaxRunTimeout)
		return
	}
	c.runTimeout = RunTimeout{Seconds: secs + margin, Derived: true, LongestSeconds: secs - parkSecs - rereviewSecs, ParkSeconds: parkSecs, RereviewSeconds: rereviewSecs, MarginSeconds: margin, Path: names}
	c.sol.RunTimeout = secs + margin
	if len(t.pending) > 0 {
		slices.SortFunc(t.pending, func(a, b string) int { return c.index[a] - c.index[b] })
		c.runTimeout.Pending = t.pending
		first := c.sol.Steps[c.index[t.pending[0]]]
		var rounds []string
		for _, id := range t.pending {
			if loop := c.sol.Steps[c.index[id]].Loop; loop != nil && forEachRounds(loop.ForEach) > 1 {
				fe := loop.ForEach
				rounds = append(rounds, fmt.Sprintf("%s, in for_each %q, once per round: %d times (⌈max_items %d / max_concurrency %d⌉)", id, loop.ID, forEachRounds(fe), fe.MaxItems, fe.MaxConcurrency))
			}
		}
		perRound := ""
		if len(rounds) > 0 {
			perRound = "; it counts the child's run timeout of " + strings.Join(rounds, "; of ")
		}
		c.ds.warnf(first.WorkflowPos, RuleRunTimeout, "the run timeout is derived when the Solution is published: step(s) %s start workflows whose run timeouts only the stage knows, so %d s here counts each child as %d s to start it; publishing adds each child's published run timeout%s (set policy.run_timeout_seconds to fix it here)",
			strings.Join(t.pending, ", "), secs+margin, ChildStartSeconds, perRound)
	}
}

// forEachRounds is how many times a for_each runs its body one after
// another at most: ⌈max_items / max_concurrency⌉, each round running up
// to max_concurrency items at once.
func forEachRounds(fe *ForEach) int {
	return (fe.MaxItems + fe.MaxConcurrency - 1) / max(fe.MaxConcurrency, 1)
}

// durationText is n seconds as messages write it, "3600 s", or "more
// than a year" for a sum saturated at overYear, whose digits would mean
// nothing.
func durationText(n int) string {
	if n >= overYear {
		return "more than a year"
	}
	return fmt.Sprintf("%d s", n)
}

// timer computes how long steps can keep a run, in seconds.
type timer struct {
	c *checker
	// weights holds each step's own duration, once computed; failed is
	// set when some step's could not be bounded (and was reported).
	weights map[int]int
	failed  bool
	// pending are the workflow steps counted without their child's run
	// timeout (RunTimeout.Pending), in the order they were weighed.
	pending []string
}

// longest returns the longest path from the start of scope loop (nil: the
// top level, else a for_each's body) through its reachable steps: its
// duration in seconds, saturated at overYear, and its steps. ok is false
// when the scope has a loop, or a step whose duration cannot be bounded,
// each reported as [run-timeout].
func (t *timer) longest(loop *Step) (secs int, path []int, ok bool) {
	g, global := t.c.scopeGraph(loop)
	if g.Start < 0 {
		return 0, nil, true // a body without steps, refused by the decoder
	}
	// The reachable nodes of the scope, in the order they are found.
	seen := map[int]bool{g.Start: true}
	order := []int{g.Start}
	for k := 0; k < len(order); k++ {
		for _, e := range g.Nodes[order[k]].Next {
			if !seen[e.To] {
				seen[e.To] = true
				order = append(order, e.To)
			}
		}
	}
	succ := func(u int) []int {
		var out []int
		for _, e := range g.Nodes[u].Next {
			out = append(out, e.To)
		}
		return out
	}
	comps, _ := components(order, succ)
	ok = true
	for _, comp := range comps {
		if len(comp) > 1 || slices.Contains(succ(comp[0]), comp[0]) {
			t.reportLoop(loop, g, comp, global)
			ok = false
		}
	}
	for _, u := range order {
		if _, bounded := t.weight(global[u]); !bounded {
			ok = false
		}
	}
	if !ok {
		return 0, nil, false
	}
	// Longest paths in topological order (the components are single
	// nodes): dist is the longest path ending at a node, prev its
	// predecessor on it.
	dist := map[int]int{g.Start: t.weights[global[g.Start]]}
	prev := map[int]int{g.Start: -1}
	best := g.Start
	for _, comp := range comps {
		u := comp[0]
		d, reached := dist[u]
		if !reached {
			continue
		}
		if d > dist[best] {
			best = u
		}
		for _, v := range succ(u) {
			nd := saturate(d + t.weights[global[v]])
			if old, had := dist[v]; !had || nd > old {
				dist[v], prev[v] = nd, u
			}
		}
	}
	for u := best; u >= 0; u = prev[u] {
		path = append(path, global[u])
	}
	slices.Reverse(path)
	return dist[best], path, true
}

// reportLoop refuses deriving the run timeout through a loop, a strongly
// connected component comp of scope graph g: how often it repeats is known
// only at run time. It names the loop through the component's first step
// in source order.
func (t *timer) reportLoop(loop *Step, g *gate.Graph, comp, global []int) {
	in := map[int]bool{}
	first := comp[0]
	for _, u := range comp {
		in[u] = true
		if global[u] < global[first] {
			first = u
		}
	}
	// A shortest way back to first, inside the component.
	prev := map[int]int{}
	queue := []int{first}
	back := -1
	for len(queue) > 0 && back < 0 {
		u := queue[0]
		queue = queue[1:]
		for _, e := range g.Nodes[u].Next {
			if e.To == first {
				back = u
				break
			}
			if _, seen := prev[e.To]; !seen && in[e.To] {
				prev[e.To] = u
				queue = append(queue, e.To)
			}
		}
	}
	cycle := []string{t.c.sol.Steps[global[first]].ID}
	for u := back; u != first; u = prev[u] {
		cycle = append(cycle, t.c.sol.Steps[global[u]].ID)
	}
	cycle = append(cycle, cycle[0])
	slices.Reverse(cycle[1 : len(cycle)-1])
	where := ""
	if loop != nil {
		where = fmt.Sprintf(" in for_each %q's body", loop.ID)
	}
	t.c.ds.errorf(t.c.sol.Steps[global[first]].Pos, RuleRunTimeout, "the loop %s%s repeats as often as the run makes it, so the run timeout cannot be derived from the longest path; set policy.run_timeout_seconds (at most %d), the longest the run may take, after which it ends with States.Timeout",
		strings.Join(cycle, " → "), where, MaxRunTimeout)
}

// weight is how long step i can keep the run, in seconds (saturated at
// overYear), once computed; bounded is false when it cannot be bounded,
// which it reports as [run-timeout] the first time.
func (t *timer) weight(i int) (secs int, bounded bool) {
	if n, done := t.weights[i]; done {
		return n, n >= 0
	}
	n := t.compute(i)
	t.weights[i] = n
	if n < 0 {
		return 0, false
	}
	return n, true
}

// compute is weight's duration of step i, or -1 after reporting why it
// has none.
func (t *timer) compute(i int) int {
	c, st := t.c, t.c.sol.Steps[i]
	switch st.Kind {
	case KindTool:
		tl := c.tools[i]
		if tl == nil {
			return 0 // refused as an unknown tool
		}
		// Every attempt may run to the Task's timeout (States.Timeout is
		// retried), and each retry waits its interval first.
		r := c.retryOf(i)
		total := float64(r.MaxAttempts) * float64(tl.TaskTimeoutSeconds())
		interval := float64(r.IntervalSeconds)
		for k := 1; k < r.MaxAttempts; k++ {
			total += math.Ceil(interval)
			interval *= r.BackoffRate
		}
		return saturateFloat(total)
	case KindReview:
		return st.ReviewTimeout + reviewRetrySeconds
	case KindWait:
		return t.waitSeconds(i, st)
	case KindForEach:
		secs, _, ok := t.longest(st)
		if !ok {
			return -1
		}
		return saturateFloat(float64(forEachRounds(st.ForEach)) * float64(secs))
	case KindWorkflow:
		if c.childRunTimeout == nil {
			t.pending = append(t.pending, st.ID)
			return ChildStartSeconds
		}
		secs, err := c.childRunTimeout(st.Workflow)
		if err != nil {
			c.ds.errorf(st.WorkflowPos, RuleRunTimeout, "step %q starts workflow %q, whose run timeout cannot be read (%v), so the run timeout cannot be derived from the longest path; set policy.run_timeout_seconds (at most %d) to cover the child's run timeout and the rest of the path",
				st.ID, st.Workflow, err, MaxRunTimeout)
			return -1
		}
		return saturate(ChildStartSeconds + max(secs, 0))
	}
	return 0
}

// waitSeconds is the longest a wait step waits: its literal seconds, or
// the maximum the input schema or the tool's output schema gives the
// bound value; -1 after reporting a wait no schema bounds.
func (t *timer) waitSeconds(i int, st *Step) int {
	w := st.Wait
	if w == nil {
		return 0 // refused by the decoder
	}
	if w.Bound == nil {
		return w.Seconds
	}
	uses := t.c.uses[i]
	if len(uses) != 1 {
		return 0 // refused by compileWait
	}
	b := uses[0].b
	if w.Until {
		t.c.ds.errorf(w.Pos, RuleRunTimeout, "wait %q waits until ${%s}, a time only the run knows, so the run timeout cannot be derived from the longest path; set policy.run_timeout_seconds (at most %d) to the longest the run may take", st.ID, b.text, MaxRunTimeout)
		return -1
	}
	if n, ok := t.c.boundMaximum(st, b); ok {
		return n
	}
	t.c.ds.errorf(w.Pos, RuleRunTimeout, "wait %q waits ${%s} s, which no schema bounds with a maximum, so the run timeout cannot be derived from the longest path; give the value a maximum in the input schema (maximum: 86400 for a day), or set policy.run_timeout_seconds (at most %d)", st.ID, b.text, MaxRunTimeout)
	return -1
}

// boundMaximum is the largest whole number a value step st binds may
// hold: the maximum (or exclusiveMaximum) of its schema, the input
// schema's for ${input…} and, through the list's items schema, for the
// item of st's for_each when the list is in the input; the tool's pinned
// output schema for ${steps.<tool>.output…} (the dispatcher validates
// every result against it before it returns). ok is false when no schema
// on the way gives one.
func (c *checker) boundMaximum(st *Step, b *binding) (int, bool) {
	var schema map[string]any
	var path string
	switch b.root {
	case "input":
		if c.sol.Input == nil {
			return 0, false
		}
		schema, _ = c.sol.Input.plain().(map[string]any)
		path = b.rest
	case "item":
		loop := st.Loop
		if loop == nil || loop.ForEach.As != b.step || c.sol.Input == nil {
			return 0, false
		}
		uses := c.uses[c.index[loop.ID]]
		if len(uses) != 1 || uses[0].b.root != "input" {
			return 0, false
		}
		root, _ := c.sol.Input.plain().(map[string]any)
		if !boundsApply(root) {
			return 0, false
		}
		// items applies to every item of the list (JSON Schema 2020-12),
		// unless prefixItems holds the first ones.
		list := memberSchema(root, uses[0].b.rest)
		if _, prefix := list["prefixItems"]; prefix {
			return 0, false
		}
		schema, _ = list["items"].(map[string]any)
		path = b.rest
	case "steps":
		j, ok := c.index[b.step]
		if !ok || c.sol.Steps[j].Kind != KindTool || c.tools[j] == nil || !strings.HasPrefix(b.rest, ".output.") {
			return 0, false
		}
		if json.Unmarshal(c.tools[j].OutputSchema, &schema) != nil {
			return 0, false
		}
		path = strings.TrimPrefix(b.rest, ".output")
	default:
		return 0, false
	}
	if !boundsApply(schema) {
		return 0, false
	}
	s := memberSchema(schema, path)
	if s == nil {
		return 0, false
	}
	most, ok := math.Inf(1), false
	if m, has := schemaNumber(s["maximum"]); has {
		most, ok = math.Floor(m), true
	}
	if m, has := schemaNumber(s["exclusiveMaximum"]); has {
		most, ok = min(most, math.Ceil(m)-1), true
	}
	if !ok {
		return 0, false
	}
	return saturateFloat(max(most, 0)), true
}

// boundsApply reports whether a schema's maximum keywords apply as they
// are read here: under JSON Schema 2020-12 (the default when $schema is
// absent, as shared/schema reads it) or 2019-09. Under earlier drafts a
// keyword beside $ref is ignored, so a maximum there bounds nothing the
// validator checks: no bound is taken from such a schema.
func boundsApply(root map[string]any) bool {
	v, has := root["$schema"]
	if !has {
		return true
	}
	s, _ := v.(string)
	return strings.Contains(s, "/2020-12/") || strings.Contains(s, "/2019-09/")
}

// memberSchema is the schema of the member at a binding path (".a.b"; ""
// for the value itself; an index gives nil) under a schema, through
// properties alone: a member's schema in properties applies to it
// whatever else the object's schema says (JSON Schema 2020-12,
// "properties"). nil when a name on the way has none.
func memberSchema(schema map[string]any, path string) map[string]any {
	if schema == nil || strings.Contains(path, "[") {
		return nil
	}
	if path == "" {
		return schema
	}
	for _, name := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		props, _ := schema["properties"].(map[string]any)
		if schema, _ = props[name].(map[string]any); schema == nil {
			return nil
		}
	}
	return schema
}

// schemaNumber reads a schema's number: a float64 from encoding/json, or a
// json.Number from a Solution's value tree.
func schemaNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// saturate caps a sum of durations at overYear.
func saturate(n int) int { return min(n, overYear) }

// saturateFloat is saturate of a float64 duration, rounded up.
func saturateFloat(f float64) int {
	if f >= overYear || math.IsNaN(f) {
		return overYear
	}
	return int(math.Ceil(f))
}

// explain names what step i counts for on the longest path.
func (t *timer) explain(i int) string {
	st := t.c.sol.Steps[i]
	n := durationText(t.weights[i])
	switch st.Kind {
	case KindReview:
		return fmt.Sprintf("review %q up to %s", st.ID, n)
	case KindWait:
		return fmt.Sprintf("wait %q up to %s", st.ID, n)
	case KindForEach:
		return fmt.Sprintf("for_each %q up to %s", st.ID, n)
	case KindWorkflow:
		return fmt.Sprintf("workflow %q up to %s, its child's run timeout and %d s to start it", st.ID, n, ChildStartSeconds)
	}
	return fmt.Sprintf("step %q up to %s", st.ID, n)
}
