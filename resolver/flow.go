package resolver

import "github.com/toolgate/toolgate/resolver/gate"

// flow is the step graph with each step's exits apart, for the bindings
// that depend on how a step was left: a node ok(i) on the success edge
// (next) of a tool, workflow or pass step, and on every outcome edge
// (on_approve, on_reject, on_timeout) of a review, which writes its
// decision; a node err(i) on the on_error edges of a tool or workflow
// step, which write its error; and one node for every successful end of
// the run (an edge to end, a succeed step). Unresolved targets are left
// out, as in the gate graph.
type flow struct {
	n     int
	start int
	succ  [][]int
}

func (f *flow) ok(i int) int  { return f.n + i }
func (f *flow) err(i int) int { return 2*f.n + i }
func (f *flow) end() int      { return 3 * f.n }

func newFlow(c *checker) *flow {
	n := len(c.sol.Steps)
	f := &flow{n: n, start: c.start, succ: make([][]int, 3*n+1)}
	for i, st := range c.sol.Steps {
		hasOK := st.Kind.completes() || st.Kind == KindReview
		failsTo := st.Kind == KindTool || st.Kind == KindWorkflow || st.Kind == KindForEach
		if hasOK {
			f.succ[i] = append(f.succ[i], f.ok(i))
		}
		if st.hasOnError() && failsTo {
			f.succ[i] = append(f.succ[i], f.err(i))
		}
		if st.Kind == KindSucceed && st.Loop == nil {
			f.succ[i] = append(f.succ[i], f.end())
		}
		// A for_each enters its body; an iteration's end (end in a body)
		// ends the iteration, never the run: the body's paths stop there.
		if b := c.bodyStart(st); b >= 0 {
			f.succ[i] = append(f.succ[i], b)
		}
		for _, t := range c.targets(st) {
			to := f.end()
			if t.ref.Name == EndTarget && st.Loop != nil {
				continue
			}
			if t.ref.Name != EndTarget {
				j, ok := c.index[t.ref.Name]
				if !ok {
					continue
				}
				to = j
			}
			from := i
			switch {
			case t.kind == gate.Error && failsTo:
				from = f.err(i)
			case hasOK:
				from = f.ok(i)
			}
			f.succ[from] = append(f.succ[from], to)
		}
	}
	return f
}

// reaches reports whether a path from one of the nodes from reaches node
// to without passing node avoid (a path of no edges counts).
func (f *flow) reaches(from []int, to, avoid int) bool {
	seen := make([]bool, len(f.succ))
	var stack []int
	for _, s := range from {
		if s != avoid && !seen[s] {
			seen[s] = true
			stack = append(stack, s)
		}
	}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if v == to {
			return true
		}
		for _, w := range f.succ[v] {
			if w != avoid && !seen[w] {
				seen[w] = true
				stack = append(stack, w)
			}
		}
	}
	return false
}

// leftByError reports whether, on every path from the start to node at,
// step j was left through its on_error, and not left again since through
// its next (which replaces its slot with the result): every such path
// passes err(j), and no path from ok(j) reaches at without passing err(j).
func (f *flow) leftByError(j, at int) bool {
	return !f.reaches([]int{f.start, f.ok(j)}, at, f.err(j))
}

// decided reports whether review r has been decided (left by one of its
// outcome edges) on every path from the start to node at.
func (f *flow) decided(r, at int) bool {
	return !f.reaches([]int{f.start}, at, f.ok(r))
}
