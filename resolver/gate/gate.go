package gate

import "strconv"

// Kind of a node.
type Kind int

// The kinds of node.
const (
	Other  Kind = iota // pass, choice, succeed, fail…
	Tool               // a tool step
	Review             // a human review step
)

// String returns the kind's lower-case name, or "Kind(n)" for an unknown value.
func (k Kind) String() string {
	switch k {
	case Other:
		return "other"
	case Tool:
		return "tool"
	case Review:
		return "review"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// EdgeKind labels an edge by how the step is left.
type EdgeKind int

// The kinds of edge.
const (
	Plain   EdgeKind = iota // next, a choice branch, a choice default
	Approve                 // a review's on_approve
	Reject                  // a review's on_reject or on_timeout
	Error                   // a tool step's on_error
)

// String returns the edge kind's lower-case name, or "EdgeKind(n)" for an
// unknown value.
func (k EdgeKind) String() string {
	switch k {
	case Plain:
		return "plain"
	case Approve:
		return "approve"
	case Reject:
		return "reject"
	case Error:
		return "error"
	}
	return "EdgeKind(" + strconv.Itoa(int(k)) + ")"
}

// Edge is one out-edge of a node: the index of the node it leads to and how
// the source step is left. An edge whose To is not an index of Graph.Nodes is
// ignored, like an edge to the reserved target end.
type Edge struct {
	To   int
	Kind EdgeKind
}

// Node is one step of a Solution.
//
// Only Approve and Reject edges out of a Review node whose Of is the index of
// a Tool node change an approval; on any other node those kinds behave as
// Plain. A Review whose Of is out of range or names a node that is not a Tool
// reviews nothing. Error edges start fallback searches only on Tool nodes.
type Node struct {
	Name  string // step id, used only in reports
	Kind  Kind
	Gated bool   // Tool: the tool is on the review list
	Of    int    // Review: index of the Tool node it reviews; ignored otherwise
	Next  []Edge // out-edges; edges to the reserved target `end` are simply not listed
	// Succeeds: leaving this node can end the run (or the scope the graph
	// is) successfully: a succeed step, or a step with an edge to the
	// reserved target end, which Next does not list. A node that can only
	// fail (a fail step) leaves it false. NoFallback reads it.
	Succeeds bool
}

// Graph is a compiled Solution: its steps and the index of the start step.
// A Start that is not an index of Nodes reaches nothing.
type Graph struct {
	Nodes []Node
	Start int
}

// Violation is a path from Start to a gated tool that does not carry a fresh
// approval.
type Violation struct {
	Tool int   // index of the gated tool node
	Path []int // the SHORTEST offending path (fewest nodes), node indices, Path[0]==Start, last==Tool; may visit Tool earlier (loop case)
}

// Fallback is a path that leaves tool node From by its Error edge and reaches
// a tool node (any tool, gated or not, From itself included) while that tool
// is not approved: no Approve edge of a review whose Of is that tool was
// crossed after the Error edge, or the last one was followed by a Reject edge
// of such a review or by an execution of the tool.
type Fallback struct {
	From int   // the tool node whose on_error is the start of the path
	Tool int   // the tool node reached
	Path []int // From, then the nodes after its Error edge, ending at Tool; shortest
	// Success is a shortest path from Tool (its first node) to a node
	// whose Succeeds is set (its last): why Tool does not only report a
	// failure before the run fails.
	Success []int
}

// Names maps a path of node indices to step names, for messages. An index
// that is not a node is written "#i".
func (g *Graph) Names(path []int) []string {
	out := make([]string, len(path))
	for i, x := range path {
		if x >= 0 && x < len(g.Nodes) {
			out[i] = g.Nodes[x].Name
		} else {
			out[i] = "#" + strconv.Itoa(x)
		}
	}
	return out
}

// ReviewBeforeTool checks Gate A. It returns one Violation per gated Tool
// node that some path from Start reaches while not approved, ordered by Tool
// index; nil when there is none. Each Violation carries a shortest offending
// path (fewest nodes; ties broken deterministically). Gated tools no path from
// Start reaches are not checked.
//
// The approval of a gated tool T along a path starts "not approved"; crossing
// the Approve edge of a Review whose Of is T sets it, crossing the Reject edge
// of such a review clears it, and leaving T by any edge (Error included)
// clears it. Arriving at T while it is not approved is a violation.
//
// Complexity: with n nodes and m edges, time and memory are
//
//	O(n + m + Σ_T (|R_T| + in(R_T)) + output)
//
// where the sum is over gated tools T that Start reaches and that have at
// least one review, R_T is the set of nodes that Start reaches and that reach
// T by a path crossing no Approve or Reject edge of a review of T and not
// leaving T, in(R_T) is the number of edges into R_T, and output is the total
// length of the returned paths. When the only edges into a gated tool are the
// Approve edges of its reviews, as in Solutions as authored, R_T is {T} and
// the whole check is O(n + m). A gated tool with no review at all costs O(1)
// beyond the shared O(n + m) (its shortest path from Start is the answer).
func ReviewBeforeTool(g *Graph) []Violation {
	n := len(g.Nodes)
	if g.Start < 0 || g.Start >= n {
		return nil
	}
	dist, parent := shortestFrom(g, []int{g.Start})
	reach := make([]bool, n)
	for v, d := range dist {
		reach[v] = d >= 0
	}
	rev := reverseOf(g)
	reviewed := reviewedTools(g)
	reg := newRegion(n)

	var out []Violation
	for t := range n {
		nd := &g.Nodes[t]
		if nd.Kind != Tool || !nd.Gated || !reach[t] {
			continue
		}
		if !reviewed[t] {
			// No review of T exists: every arrival is unapproved, and the
			// shortest path from Start is the shortest offending path.
			out = append(out, Violation{Tool: t, Path: treePath(parent, t)})
			continue
		}
		// An offending path ends with a suffix that crosses no edge setting
		// T's approval, reaching T from Start itself (no such edge at all)
		// or from the head of a resetting edge (a, x), whose tail a is
		// reached by any shortest path from Start.
		best, bestA, bestX := -1, -1, -1
		reg.search(g, rev, t, reach,
			func(x int) {
				if x == g.Start && (best < 0 || reg.dist[x] < best) {
					best, bestA, bestX = reg.dist[x], -1, x
				}
			},
			func(a, x int) {
				if c := dist[a] + 1 + reg.dist[x]; best < 0 || c < best {
					best, bestA, bestX = c, a, x
				}
			})
		if best >= 0 {
			var p []int
			if bestA >= 0 {
				p = treePath(parent, bestA)
			}
			out = append(out, Violation{Tool: t, Path: reg.appendPath(p, bestX)})
		}
		reg.clear()
	}
	return out
}

// LastReviews returns the Review nodes of tool node t whose approval can be
// the one t uses: those some path from Start crosses by an Approve edge and
// then arrives at t with no other decision of a review of t and no leaving
// of t in between. They are in index order; nil when t is not a Tool node,
// Start reaches no such review, or none can be last. Where Gate A passes,
// the last decision before every arrival at t is the approval of one of
// them.
//
// Complexity: O(n + m) for the search from Start and the region of t (see
// ReviewBeforeTool), plus the out-edges of t's reviews. For several tools
// of one graph, LastReviewsOf shares the O(n + m) part.
func LastReviews(g *Graph, t int) []int {
	return LastReviewsOf(g, []int{t})[0]
}

// LastReviewsOf returns LastReviews(g, t) for each t of tools, in the
// order of tools: out[k] belongs to tools[k].
//
// Complexity: O(n + m) once, for one search from Start, one reversal of
// the edges and one list of the reviews of each tool, plus, per tool t,
// O(|R_t| + in(R_t)) for its region (ReviewBeforeTool) and the out-edges
// of its reviews. When the only edges into each tool are the Approve edges
// of its reviews, as in Solutions as authored, that is O(n + m) in all,
// however many tools are asked about.
func LastReviewsOf(g *Graph, tools []int) [][]int {
	n := len(g.Nodes)
	out := make([][]int, len(tools))
	if g.Start < 0 || g.Start >= n {
		return out
	}
	var dist []int
	var rev reverse
	var reviews [][]int // tool node -> its Review nodes, in index order
	var allowed []bool
	var reg *region
	for k, t := range tools {
		if t < 0 || t >= n || g.Nodes[t].Kind != Tool {
			continue
		}
		if reg == nil {
			dist, _ = shortestFrom(g, []int{g.Start})
			rev = reverseOf(g)
			reviews = make([][]int, n)
			for r := range g.Nodes {
				if nd := &g.Nodes[r]; nd.Kind == Review && nd.Of >= 0 && nd.Of < n {
					reviews[nd.Of] = append(reviews[nd.Of], r)
				}
			}
			allowed = make([]bool, n)
			for v := range n {
				allowed[v] = true
			}
			reg = newRegion(n)
		}
		if len(reviews[t]) == 0 {
			continue
		}
		reg.search(g, rev, t, allowed, nil, nil)
		for _, r := range reviews[t] {
			if dist[r] < 0 {
				continue
			}
			for _, e := range g.Nodes[r].Next {
				if e.Kind == Approve && e.To >= 0 && e.To < n && reg.dist[e.To] >= 0 {
					out[k] = append(out[k], r)
					break
				}
			}
		}
		reg.clear()
	}
	return out
}

// NoFallback checks the "no tool fallback chain" rule. For every Tool node
// From with an Error edge it looks for a shortest path that leaves From by
// an Error edge and reaches a Tool node U while U is not approved, with the
// approval rules of ReviewBeforeTool applied to U and everything unapproved
// right after the Error edge, where U can still reach success: some path
// (over edges of any kind) leads from U to a node whose Succeeds is set. A
// tool from which every path ends in a failure only reports the failure
// before the run fails (an error notification), and is no fallback. It
// returns at most one Fallback per From (the shortest, ties broken by lower
// Tool index), ordered by From; nil when there is none. The check is
// structural: From need not be reachable from Start.
//
// Complexity: with n nodes and m edges, time and memory are
//
//	O(n + m + Σ_U (|R_U| + in(R_U)) + output)
//
// where the sum is over Tool nodes U that have at least one review and are
// reached from an Error edge, R_U is the set of nodes reached from an Error
// edge that reach U by a path crossing no Approve or Reject edge of a review
// of U and not leaving U, in(R_U) is the number of edges into R_U, and output
// is the total length of the returned paths. Tools without a review, and the
// part of every path before its last reset of U's approval, are handled by a
// single multi-source search shared by all sources and all tools; when the
// only edges into each reviewed tool are the Approve edges of its reviews,
// every R_U is {U} and the whole check is O(n + m). Which tools can reach
// success is one more search over reversed edges, O(n + m).
func NoFallback(g *Graph) []Fallback {
	n := len(g.Nodes)
	isSource := make([]bool, n)
	var sources []int
	for f := range n {
		if g.Nodes[f].Kind != Tool {
			continue
		}
		for _, e := range g.Nodes[f].Next {
			if e.Kind == Error && e.To >= 0 && e.To < n && !isSource[e.To] {
				isSource[e.To] = true
				sources = append(sources, e.To)
			}
		}
	}
	if len(sources) == 0 {
		return nil
	}
	sdist, _ := shortestFrom(g, sources)
	live := make([]bool, n)
	for v, d := range sdist {
		live[v] = d >= 0
	}
	rev := reverseOf(g)
	reviewed := reviewedTools(g)
	reg := newRegion(n)
	succDist, succNext := toSuccess(g, rev)

	// For a target tool U, a path from a source s reaches U unapproved iff
	// either it crosses no edge setting U's approval (s ∈ R_U: "clean"), or
	// its last such edge is a reset (a, b) with b ∈ R_U. The first case is
	// recorded per source; the second becomes a terminal at a, with offset
	// 1 + dist_U(b), for one multi-source search over plain edges. A tool
	// with no review is a terminal at itself with offset 0.
	clean := make([]label, n)
	term := make([]label, n)
	termB := make([]int, n) // head of the reset edge, or -1 at a tool with no review
	for v := range n {
		clean[v], term[v], termB[v] = none, none, -1
	}
	for u := range n {
		if g.Nodes[u].Kind != Tool || !live[u] || succDist[u] < 0 {
			continue // not a tool, no Error edge reaches it, or it only fails
		}
		if !reviewed[u] {
			if l := (label{0, u}); l.less(term[u]) {
				term[u], termB[u] = l, -1
			}
			continue
		}
		reg.search(g, rev, u, live,
			func(x int) {
				if l := (label{reg.dist[x], u}); isSource[x] && l.less(clean[x]) {
					clean[x] = l
				}
			},
			func(a, x int) {
				if l := (label{1 + reg.dist[x], u}); l.less(term[a]) {
					term[a], termB[a] = l, x
				}
			})
		reg.clear()
	}
	near, next := nearest(rev, live, term)

	// Choose, per From, the best Error edge and way of reaching a tool.
	type choice struct {
		from, s, tool int
		clean         bool
		l             label
	}
	var picks []choice
	for f := range n {
		if g.Nodes[f].Kind != Tool {
			continue
		}
		c := choice{from: f, l: none}
		for _, e := range g.Nodes[f].Next {
			if e.Kind != Error || e.To < 0 || e.To >= n {
				continue
			}
			if near[e.To].less(c.l) {
				c.s, c.l, c.clean = e.To, near[e.To], false
			}
			if clean[e.To].less(c.l) {
				c.s, c.l, c.clean = e.To, clean[e.To], true
			}
		}
		if c.l != none {
			c.tool = c.l.tool
			picks = append(picks, c)
		}
	}

	// Build the paths. The part inside R_U needs U's region again: group
	// those by U so each region is searched at most once more.
	out := make([]Fallback, len(picks))
	pending := map[int][]int{}       // tool U → indices into out whose path ends inside R_U
	tails := make([]int, len(picks)) // the node of R_U where that path continues, or -1
	for i, c := range picks {
		p := []int{c.from}
		tail := c.s
		if !c.clean {
			x := c.s
			for {
				p = append(p, x)
				if next[x] < 0 {
					break
				}
				x = next[x]
			}
			// x is the terminal that set near[c.s].
			tail = termB[x]
		}
		var sp []int
		for x := c.tool; x >= 0; x = succNext[x] {
			sp = append(sp, x)
		}
		out[i] = Fallback{From: c.from, Tool: c.tool, Path: p, Success: sp}
		tails[i] = tail
		if tail >= 0 {
			pending[c.tool] = append(pending[c.tool], i)
		}
	}
	for u := range n {
		idx, ok := pending[u]
		if !ok {
			continue
		}
		reg.search(g, rev, u, live, nil, nil)
		for _, i := range idx {
			out[i].Path = reg.appendPath(out[i].Path, tails[i])
		}
		reg.clear()
	}
	return out
}

// ReachesSuccess reports, per node, whether some path (over edges of any
// kind) leads from it to a node whose Succeeds is set, itself included:
// the nodes NoFallback may take as fallbacks. O(n + m).
func ReachesSuccess(g *Graph) []bool {
	dist, _ := toSuccess(g, reverseOf(g))
	out := make([]bool, len(dist))
	for v, d := range dist {
		out[v] = d >= 0
	}
	return out
}

// toSuccess returns, per node, the number of edges of a shortest path
// (over edges of any kind) to a node whose Succeeds is set, -1 when no
// path leads to one, and its successor on such a path, -1 at a Succeeds
// node. It is one breadth-first search over reversed edges: O(n + m).
func toSuccess(g *Graph, rev reverse) (dist, next []int) {
	n := len(g.Nodes)
	dist = make([]int, n)
	next = make([]int, n)
	queue := make([]int, 0, n)
	for v := range n {
		dist[v], next[v] = -1, -1
		if g.Nodes[v].Succeeds {
			dist[v] = 0
			queue = append(queue, v)
		}
	}
	for i := 0; i < len(queue); i++ {
		x := queue[i]
		for j := rev.off[x]; j < rev.off[x+1]; j++ {
			if a := rev.from[j]; dist[a] < 0 {
				dist[a], next[a] = dist[x]+1, x
				queue = append(queue, a)
			}
		}
	}
	return dist, next
}

// label is a candidate distance (in edges) to a tool, compared by distance
// and then by tool index.
type label struct{ d, tool int }

// none is the label of "no tool reached"; it compares after every other label.
var none = label{d: -1, tool: -1}

func (l label) less(o label) bool {
	if o.d < 0 {
		return l.d >= 0
	}
	if l.d < 0 {
		return false
	}
	return l.d < o.d || l.d == o.d && l.tool < o.tool
}

// effect says how traversing an edge changes the approval of one tool.
type effect uint8

const (
	keep effect = iota
	approve
	reset
)

// effectOn returns how leaving u by an edge of kind k changes the approval of
// tool node t.
func effectOn(g *Graph, u int, k EdgeKind, t int) effect {
	if u == t {
		return reset
	}
	if nd := &g.Nodes[u]; nd.Kind == Review && nd.Of == t {
		switch k {
		case Approve:
			return approve
		case Reject:
			return reset
		}
	}
	return keep
}

// reviewedTools marks the Tool nodes that some Review node reviews.
func reviewedTools(g *Graph) []bool {
	n := len(g.Nodes)
	r := make([]bool, n)
	for i := range g.Nodes {
		nd := &g.Nodes[i]
		if nd.Kind == Review && nd.Of >= 0 && nd.Of < n && g.Nodes[nd.Of].Kind == Tool {
			r[nd.Of] = true
		}
	}
	return r
}

// reverse is the graph's in-edges in compressed form: the edges into v are
// from[off[v]:off[v+1]] with kinds kind[off[v]:off[v+1]], in the order of
// their sources and, per source, of Next.
type reverse struct {
	off  []int
	from []int
	kind []EdgeKind
}

func reverseOf(g *Graph) reverse {
	n := len(g.Nodes)
	off := make([]int, n+1)
	for u := range g.Nodes {
		for _, e := range g.Nodes[u].Next {
			if e.To >= 0 && e.To < n {
				off[e.To+1]++
			}
		}
	}
	for v := range n {
		off[v+1] += off[v]
	}
	from := make([]int, off[n])
	kind := make([]EdgeKind, off[n])
	fill := make([]int, n)
	copy(fill, off[:n])
	for u := range g.Nodes {
		for _, e := range g.Nodes[u].Next {
			if e.To >= 0 && e.To < n {
				from[fill[e.To]], kind[fill[e.To]] = u, e.Kind
				fill[e.To]++
			}
		}
	}
	return reverse{off: off, from: from, kind: kind}
}

// shortestFrom runs a breadth-first search over plain edges from the given
// sources and returns each node's distance in edges (-1 if unreached) and its
// parent on a shortest path (-1 for a source).
func shortestFrom(g *Graph, sources []int) (dist, parent []int) {
	n := len(g.Nodes)
	dist = make([]int, n)
	parent = make([]int, n)
	for v := range n {
		dist[v], parent[v] = -1, -1
	}
	queue := make([]int, 0, n)
	for _, s := range sources {
		if dist[s] < 0 {
			dist[s] = 0
			queue = append(queue, s)
		}
	}
	for i := 0; i < len(queue); i++ {
		u := queue[i]
		for _, e := range g.Nodes[u].Next {
			if v := e.To; v >= 0 && v < n && dist[v] < 0 {
				dist[v], parent[v] = dist[u]+1, u
				queue = append(queue, v)
			}
		}
	}
	return dist, parent
}

// treePath returns the path from the search's source to v along parent.
func treePath(parent []int, v int) []int {
	k := 0
	for x := v; x >= 0; x = parent[x] {
		k++
	}
	p := make([]int, k)
	for x := v; x >= 0; x = parent[x] {
		k--
		p[k] = x
	}
	return p
}

// region is scratch space for backward searches from one tool at a time,
// reused across tools so that each search costs only what it visits.
type region struct {
	dist    []int // edges to the tool; -1 outside the current region
	next    []int // successor on a shortest path to the tool; -1 at the tool
	visited []int // the current region, in order of distance
}

func newRegion(n int) *region {
	r := &region{dist: make([]int, n), next: make([]int, n)}
	for v := range n {
		r.dist[v] = -1
	}
	return r
}

// search visits R_t: the nodes allowed[v] that reach tool t by a path crossing
// no edge that approves or resets t's approval, in breadth-first order from t
// over reversed edges. It calls visit(x) for each node of R_t and
// onReset(a, x) for each resetting edge from an allowed node a into x ∈ R_t
// (a == t, or a is a review of t left by Reject). Approve edges of reviews of
// t are not crossed. Either callback may be nil.
func (r *region) search(g *Graph, rev reverse, t int, allowed []bool, visit func(x int), onReset func(a, x int)) {
	r.dist[t], r.next[t] = 0, -1
	r.visited = append(r.visited[:0], t)
	for i := 0; i < len(r.visited); i++ {
		x := r.visited[i]
		if visit != nil {
			visit(x)
		}
		for j := rev.off[x]; j < rev.off[x+1]; j++ {
			a := rev.from[j]
			if !allowed[a] {
				continue
			}
			switch effectOn(g, a, rev.kind[j], t) {
			case keep:
				if r.dist[a] < 0 {
					r.dist[a], r.next[a] = r.dist[x]+1, x
					r.visited = append(r.visited, a)
				}
			case reset:
				if onReset != nil {
					onReset(a, x)
				}
			}
		}
	}
}

// appendPath appends the path from x ∈ R_t to t to p.
func (r *region) appendPath(p []int, x int) []int {
	for ; x >= 0; x = r.next[x] {
		p = append(p, x)
	}
	return p
}

// clear empties the current region.
func (r *region) clear() {
	for _, v := range r.visited {
		r.dist[v], r.next[v] = -1, -1
	}
	r.visited = r.visited[:0]
}

// nearest computes, for every live node x, the least label (distance, tool)
// over paths x → … → a over live nodes followed by the terminal offset of a:
// term[a] for each node a with term[a] != none. next[x] is x's successor on
// such a path, -1 where x's own terminal gives the label. The search runs
// layer by layer over reversed edges, injecting terminals at their offsets,
// so it takes O(n + m + largest offset) time; offsets are at most n.
func nearest(rev reverse, live []bool, term []label) (near []label, next []int) {
	n := len(term)
	near = make([]label, n)
	next = make([]int, n)
	// Terminals sorted by offset (counting sort keeps this linear).
	maxD := -1
	for _, l := range term {
		maxD = max(maxD, l.d)
	}
	byD := make([]int, maxD+2)
	for _, l := range term {
		if l.d >= 0 {
			byD[l.d+1]++
		}
	}
	for d := 0; d <= maxD; d++ {
		byD[d+1] += byD[d]
	}
	order := make([]int, byD[maxD+1])
	fill := make([]int, maxD+1)
	copy(fill, byD[:maxD+1])
	for v, l := range term {
		if l.d >= 0 {
			order[fill[l.d]] = v
			fill[l.d]++
		}
	}

	seen := make([]bool, n) // finalized or a candidate of the current layer
	cand := make([]label, n)
	candNext := make([]int, n)
	for v := range n {
		near[v], next[v] = none, -1
	}
	offer := func(layer []int, v int, l label, nx int) []int {
		if !seen[v] {
			seen[v] = true
			cand[v], candNext[v] = l, nx
			return append(layer, v)
		}
		if near[v] == none && l.less(cand[v]) {
			cand[v], candNext[v] = l, nx
		}
		return layer
	}
	var layer, nextLayer []int
	ti := 0
	for d := 0; len(layer) > 0 || ti < len(order); d++ {
		nextLayer = nextLayer[:0]
		for ; ti < len(order) && term[order[ti]].d == d; ti++ {
			a := order[ti]
			nextLayer = offer(nextLayer, a, term[a], -1)
		}
		for _, x := range layer {
			for j := rev.off[x]; j < rev.off[x+1]; j++ {
				if p := rev.from[j]; live[p] {
					nextLayer = offer(nextLayer, p, label{d, near[x].tool}, x)
				}
			}
		}
		for _, v := range nextLayer {
			near[v], next[v] = cand[v], candNext[v]
		}
		layer, nextLayer = nextLayer, layer
	}
	return near, next
}
