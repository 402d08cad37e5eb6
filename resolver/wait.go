package resolver

import (
	"fmt"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/resolver/asl"
	"github.com/toolgate/toolgate/resolver/gate"
)

// Wait steps pause the run (docs/solutions.md, "wait"): a Wait state of
// literal Seconds, or of SecondsPath or TimestampPath from one binding.

// compileWait compiles a bound wait's value: exactly one whole binding to
// the state data (a Wait state's SecondsPath and TimestampPath are
// reference paths; a template or an intrinsic function is not one).
func (c *checker) compileWait(i int, st *Step) {
	w := st.Wait
	if w == nil || w.Bound == nil {
		return
	}
	field, example := "seconds", "${input.delay_seconds}"
	if w.Until {
		field, example = "until", "${input.send_at}"
	}
	var uses []use
	p, errs := compileParams(w.Bound, false, &uses)
	for _, e := range errs {
		c.ds.errorf(e.pos, RuleBinding, "step %q: %s", st.ID, e.msg)
	}
	if len(errs) > 0 {
		return
	}
	if len(uses) == 1 && uses[0].b.root == "execution" {
		c.ds.errorf(w.Pos, RuleBinding, "step %q: wait.%s cannot read ${%s}, which is not in the run's data: a Wait state reads its path from the state data", st.ID, field, uses[0].b.text)
		return
	}
	if len(uses) != 1 || !uses[0].whole || !strings.HasPrefix(p.expr, "$.") {
		what := "a whole number or exactly one binding"
		if w.Until {
			what = "exactly one binding to an RFC 3339 time"
		}
		c.ds.errorf(w.Pos, RuleBinding, "step %q: wait.%s must be %s, such as %s, read from the run's data when the wait starts", st.ID, field, what, example)
		return
	}
	c.uses[i] = uses
	for k := range uses {
		c.checkBindingTarget(st, &uses[k])
	}
	c.waitPaths[i] = p.expr
}

// checkWaits refuses a literal wait that is not below the run's timeout
// (the execution would time out while it waits), and checks the waits
// between each review's approval and the gated tool it approves
// (checkApprovalWaits).
func (c *checker) checkWaits(g *gate.Graph) {
	hasWaits := false
	for i, st := range c.sol.Steps {
		if st.Kind != KindWait || st.Wait == nil || !c.reachable[i] {
			continue
		}
		hasWaits = true
		if st.Wait.Bound == nil && c.sol.RunTimeout > 0 && st.Wait.Seconds >= c.sol.RunTimeout {
			c.ds.errorf(st.Wait.Pos, RuleRunTimeout, "wait %q waits %d s, which is not below the run's timeout of %d s (policy.run_timeout_seconds): the run would time out while it waits", st.ID, st.Wait.Seconds, c.sol.RunTimeout)
		}
	}
	if hasWaits && !c.pathsUnsure() {
		c.checkApprovalWaits(g)
	}
}

// checkApprovalWaits: an approval authorises its call only until the
// review's deadline, timeout_seconds after the review was requested
// (docs/reviews.md, "The check before a gated tool runs", rule 5); a call
// after it is refused with TOOL_PERMISSION_DENIED. For each review R of a
// gated tool T, it follows the paths from R's on_approve to T on which
// that approval is the one T uses (no other decision of a review of T, T
// not run), and adds up their literal waits: when they can reach R's
// timeout, every approval would expire before the call, and the Solution
// is refused. When some wait comes between them the approval expires if it
// is given late enough, and when a wait is bound or on a loop its length
// is known only at run time: those are warnings. A park between the
// approval and the call is no wait counted here: a call whose approval
// expired while it was parked is reviewed again (rereview.go), and that
// re-review's approval leads straight back into the Task, with no wait
// between them (docs/parking.md, "A re-review").
func (c *checker) checkApprovalWaits(g *gate.Graph) {
	for t, st := range c.sol.Steps {
		if st.Kind != KindTool || !c.stepGated(t) || !c.reachable[t] {
			continue
		}
		back := keepRegion(g, t)
		for r, rs := range c.sol.Steps {
			if rs.Kind != KindReview || g.Nodes[r].Of != t || !c.reachable[r] {
				continue
			}
			for _, e := range g.Nodes[r].Next {
				if e.Kind == gate.Approve && back[e.To] {
					c.checkApprovalPath(g, r, e.To, t, back)
				}
			}
		}
	}
}

// keepRegion marks the nodes that reach tool t by a path along which t's
// approval is kept: no decision of a review of t, t itself not left.
func keepRegion(g *gate.Graph, t int) []bool {
	in := make([][]int, len(g.Nodes))
	for u, n := range g.Nodes {
		for _, e := range n.Next {
			if keepsApproval(g, u, e.Kind, t) {
				in[e.To] = append(in[e.To], u)
			}
		}
	}
	back := make([]bool, len(g.Nodes))
	back[t] = true
	stack := []int{t}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, u := range in[x] {
			if !back[u] {
				back[u] = true
				stack = append(stack, u)
			}
		}
	}
	return back
}

// keepsApproval reports whether leaving u by an edge of kind k keeps tool
// t's approval as it is (Gate A's rules, resolver/gate).
func keepsApproval(g *gate.Graph, u int, k gate.EdgeKind, t int) bool {
	if u == t {
		return false
	}
	n := g.Nodes[u]
	return n.Kind != gate.Review || n.Of != t || k != gate.Approve && k != gate.Reject
}

// checkApprovalPath checks the waits between review r's approval, whose
// edge leads to x, and the call of tool t: the longest sum of literal
// waits over the paths from x to t that keep the approval (the strongly
// connected components of those nodes, in topological order; a component
// counts all of its waits, since a run may go round it through each).
func (c *checker) checkApprovalPath(g *gate.Graph, r, x, t int, back []bool) {
	// The nodes on such paths: reached from x, inside back.
	on := map[int]bool{x: true}
	order := []int{x}
	for k := 0; k < len(order); k++ {
		u := order[k]
		if u == t {
			continue
		}
		for _, e := range g.Nodes[u].Next {
			if back[e.To] && keepsApproval(g, u, e.Kind, t) && !on[e.To] {
				on[e.To] = true
				order = append(order, e.To)
			}
		}
	}
	succ := func(u int) []int {
		if u == t {
			return nil
		}
		var out []int
		for _, e := range g.Nodes[u].Next {
			if on[e.To] && keepsApproval(g, u, e.Kind, t) {
				out = append(out, e.To)
			}
		}
		return out
	}
	comps, compOf := components(order, succ)
	hasWait := false
	bodies := map[int]bodyWait{}
	for _, u := range order {
		if c.sol.Steps[u].Kind == KindWait && c.sol.Steps[u].Wait != nil {
			hasWait = true
		}
		if c.sol.Steps[u].Kind == KindForEach {
			if bw := c.bodyWaits(g, u); len(bw.waits) > 0 {
				bodies[u], hasWait = bw, true
			}
		}
	}
	if !hasWait {
		return
	}
	weight := make([]int, len(comps))
	var bound, looped, inBody []string
	for k, comp := range comps {
		cyclic := len(comp) > 1 || slices.Contains(succ(comp[0]), comp[0])
		for _, u := range comp {
			if bw, ok := bodies[u]; ok {
				// The body runs its waits before the loop's next: at
				// least once when the list holds an item, once per item
				// at max_concurrency 1; counted once, as on a loop.
				inBody = append(inBody, bw.waits...)
				bound = append(bound, bw.bound...)
				weight[k] += bw.seconds
				continue
			}
			w := c.sol.Steps[u].Wait
			if c.sol.Steps[u].Kind != KindWait || w == nil {
				continue
			}
			if cyclic {
				looped = append(looped, c.sol.Steps[u].ID)
			}
			if w.Bound != nil {
				bound = append(bound, c.sol.Steps[u].ID)
			} else {
				weight[k] += w.Seconds
			}
		}
	}
	// Longest path over the components, which components lists in
	// topological order, from x's to t's.
	best := make([]int, len(comps))
	from := make([]int, len(comps))
	for k := range best {
		best[k], from[k] = -1, -1
	}
	best[compOf[x]] = weight[compOf[x]]
	for k, comp := range comps {
		if best[k] < 0 {
			continue
		}
		for _, u := range comp {
			for _, v := range succ(u) {
				if j := compOf[v]; j != k && best[k]+weight[j] > best[j] {
					best[j], from[j] = best[k]+weight[j], k
				}
			}
		}
	}
	var waits []string
	var heaviest Pos
	most := -1
	for k := compOf[t]; k >= 0; k = from[k] {
		for _, u := range comps[k] {
			if bw, ok := bodies[u]; ok && bw.seconds > 0 {
				waits = append([]string{fmt.Sprintf("%s's body %d s (%s)", c.sol.Steps[u].ID, bw.seconds, strings.Join(bw.waits, ", "))}, waits...)
				if bw.seconds > most {
					heaviest, most = bw.pos, bw.seconds
				}
			}
			if w := c.sol.Steps[u].Wait; c.sol.Steps[u].Kind == KindWait && w != nil && w.Bound == nil {
				waits = append([]string{fmt.Sprintf("%s %d s", c.sol.Steps[u].ID, w.Seconds)}, waits...)
				if w.Seconds > most {
					heaviest, most = w.Pos, w.Seconds
				}
			}
		}
	}
	rs, ts := c.sol.Steps[r], c.sol.Steps[t]
	total := best[compOf[t]]
	if total >= rs.ReviewTimeout {
		c.ds.errorf(heaviest, RuleApprovalExpiry, "the waits between review %q's approval and tool step %q (%s) add up to %d s (%s), not below the review's timeout_seconds %d: an approval ends at the review's deadline, timeout_seconds after it was requested, so %q would be refused (TOOL_PERMISSION_DENIED) every time these waits run before it; wait before the review instead",
			rs.ID, ts.ID, ts.Tool, total, strings.Join(waits, ", "), rs.ReviewTimeout, ts.ID)
		return
	}
	var why []string
	if total > 0 {
		why = append(why, strings.Join(waits, ", "))
	}
	if len(bound) > 0 {
		why = append(why, strings.Join(bound, ", ")+": bound, known at run time")
	}
	if len(looped) > 0 {
		why = append(why, strings.Join(looped, ", ")+": on a loop")
	}
	if len(inBody) > 0 {
		why = append(why, strings.Join(inBody, ", ")+": in a for_each body, once per item")
	}
	late := ""
	if total > 0 {
		late = fmt.Sprintf("; an approval given in its last %d s always expires", total)
	}
	c.ds.warnf(rs.Pos, RuleApprovalExpiry, "review %q approves tool step %q (%s), but waits come between the approval and the call (%s): the approval ends at the review's deadline, %d s after it was requested, and a call after it is refused (TOOL_PERMISSION_DENIED)%s",
		rs.ID, ts.ID, ts.Tool, strings.Join(why, "; "), rs.ReviewTimeout, late)
}

// bodyWait is what a for_each's body waits: the longest sum of literal
// waits on a path of one iteration (a cycle's waits counted once each),
// where the heaviest of them is, the body's bound waits, and every wait
// step of the body.
type bodyWait struct {
	seconds int
	pos     Pos
	bound   []string
	waits   []string
}

// bodyWaits returns the waits of for_each step f's reachable body.
func (c *checker) bodyWaits(g *gate.Graph, f int) bodyWait {
	var bw bodyWait
	start := c.bodyStart(c.sol.Steps[f])
	if start < 0 {
		return bw
	}
	seen := map[int]bool{start: true}
	order := []int{start}
	for k := 0; k < len(order); k++ {
		for _, e := range g.Nodes[order[k]].Next {
			if !seen[e.To] && c.sol.Steps[e.To].Loop == c.sol.Steps[f] {
				seen[e.To] = true
				order = append(order, e.To)
			}
		}
	}
	succ := func(u int) []int {
		var out []int
		for _, e := range g.Nodes[u].Next {
			if seen[e.To] {
				out = append(out, e.To)
			}
		}
		return out
	}
	comps, compOf := components(order, succ)
	weight := make([]int, len(comps))
	most := -1
	for k, comp := range comps {
		for _, u := range comp {
			w := c.sol.Steps[u].Wait
			if c.sol.Steps[u].Kind != KindWait || w == nil {
				continue
			}
			bw.waits = append(bw.waits, c.sol.Steps[u].ID)
			if w.Bound != nil {
				bw.bound = append(bw.bound, c.sol.Steps[u].ID)
				continue
			}
			weight[k] += w.Seconds
			if w.Seconds > most {
				bw.pos, most = w.Pos, w.Seconds
			}
		}
	}
	best := make([]int, len(comps))
	for k := range best {
		best[k] = -1
	}
	best[compOf[start]] = weight[compOf[start]]
	for k, comp := range comps {
		if best[k] < 0 {
			continue
		}
		bw.seconds = max(bw.seconds, best[k])
		for _, u := range comp {
			for _, v := range succ(u) {
				if j := compOf[v]; j != k && best[k]+weight[j] > best[j] {
					best[j] = best[k] + weight[j]
				}
			}
		}
	}
	return bw
}

// components returns the strongly connected components of the graph of
// nodes (succ leads only to nodes of it) in topological order, sources
// first, and each node's component (Kosaraju's algorithm, iterative).
func components(nodes []int, succ func(int) []int) ([][]int, map[int]int) {
	pred := map[int][]int{}
	for _, u := range nodes {
		for _, v := range succ(u) {
			pred[v] = append(pred[v], u)
		}
	}
	// First pass: nodes by finishing time.
	seen := map[int]bool{}
	var finished []int
	type frame struct {
		u    int
		next []int
	}
	for _, s := range nodes {
		if seen[s] {
			continue
		}
		seen[s] = true
		stack := []frame{{s, succ(s)}}
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if len(top.next) > 0 {
				v := top.next[0]
				top.next = top.next[1:]
				if !seen[v] {
					seen[v] = true
					stack = append(stack, frame{v, succ(v)})
				}
				continue
			}
			finished = append(finished, top.u)
			stack = stack[:len(stack)-1]
		}
	}
	// Second pass, on the reversed graph in decreasing finishing time:
	// each search is one component, sources of the condensation first.
	compOf := map[int]int{}
	var comps [][]int
	for k := len(finished) - 1; k >= 0; k-- {
		s := finished[k]
		if _, ok := compOf[s]; ok {
			continue
		}
		id := len(comps)
		compOf[s] = id
		comp := []int{s}
		for q := 0; q < len(comp); q++ {
			for _, u := range pred[comp[q]] {
				if _, ok := compOf[u]; !ok {
					compOf[u] = id
					comp = append(comp, u)
				}
			}
		}
		comps = append(comps, comp)
	}
	return comps, compOf
}

// wait emits a wait step's Wait state.
func (e *emitter) wait(ps *planStep) {
	st := ps.Step
	w := &asl.Wait{}
	switch {
	case st.Wait.Bound == nil:
		w.Seconds = &st.Wait.Seconds
	case st.Wait.Until:
		w.TimestampPath = ps.wait.path
	default:
		w.SecondsPath = ps.wait.path
	}
	w.Next = e.next(st.Next, stateEnd)
	e.states[st.ID] = w
}
