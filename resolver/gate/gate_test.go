package gate

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// tn describes a node of a test graph; of names the reviewed step.
type tn struct {
	name  string
	kind  Kind
	gated bool
	of    string
	fails bool // a fail step: no out-edges, and it does not succeed
}

// te describes an edge of a test graph.
type te struct {
	from, to string
	kind     EdgeKind
}

// build makes a Graph from named nodes and edges; edges keep their order.
// An edge to "end" is not listed but sets its source's Succeeds, as the
// resolver does; a node with no out-edges that is not a fail step ends
// the run too (as a step whose next defaults to end).
func build(t *testing.T, start string, nodes []tn, edges []te) *Graph {
	t.Helper()
	idx := map[string]int{}
	for i, n := range nodes {
		idx[n.name] = i
	}
	at := func(name string) int {
		i, ok := idx[name]
		if !ok {
			t.Fatalf("unknown node %q", name)
		}
		return i
	}
	g := &Graph{Nodes: make([]Node, len(nodes)), Start: at(start)}
	for i, n := range nodes {
		g.Nodes[i] = Node{Name: n.name, Kind: n.kind, Gated: n.gated, Of: -1}
		if n.of != "" {
			g.Nodes[i].Of = at(n.of)
		}
	}
	for _, e := range edges {
		u := at(e.from)
		if e.to == "end" {
			g.Nodes[u].Succeeds = true
			continue
		}
		g.Nodes[u].Next = append(g.Nodes[u].Next, Edge{To: at(e.to), Kind: e.kind})
	}
	for i, n := range nodes {
		if len(g.Nodes[i].Next) == 0 && !n.fails {
			g.Nodes[i].Succeeds = true
		}
	}
	return g
}

func other(name string) tn          { return tn{name: name, kind: Other} }
func tool(name string) tn           { return tn{name: name, kind: Tool} }
func gated(name string) tn          { return tn{name: name, kind: Tool, gated: true} }
func review(name, of string) tn     { return tn{name: name, kind: Review, of: of} }
func fail(name string) tn           { return tn{name: name, kind: Other, fails: true} }
func plain(from, to string) te      { return te{from, to, Plain} }
func approveE(from, to string) te   { return te{from, to, Approve} }
func rejectE(from, to string) te    { return te{from, to, Reject} }
func errorE(from, to string) te     { return te{from, to, Error} }
func path(names ...string) []string { return names }

func TestChecks(t *testing.T) {
	tests := []struct {
		name       string
		start      string
		nodes      []tn
		edges      []te
		violations map[string][]string // gated tool → expected path
		fallbacks  map[string][]string // From → expected path (its last node is Tool)
		success    map[string][]string // From → expected Fallback.Success, when given
	}{
		{
			name:  "newsletter",
			start: "start",
			nodes: []tn{other("start"), tool("fetch"), review("review", "send"), gated("send"), other("fail")},
			edges: []te{plain("start", "fetch"), plain("fetch", "review"), errorE("fetch", "fail"), approveE("review", "send")},
		},
		{
			name:       "missing review",
			start:      "start",
			nodes:      []tn{other("start"), tool("fetch"), gated("send")},
			edges:      []te{plain("start", "fetch"), plain("fetch", "send")},
			violations: map[string][]string{"send": path("start", "fetch", "send")},
		},
		{
			name:  "reject leads to the tool",
			start: "start",
			nodes: []tn{other("start"), review("review", "send"), other("notify"), gated("send")},
			edges: []te{plain("start", "review"), approveE("review", "send"), rejectE("review", "notify"),
				plain("notify", "send")},
			violations: map[string][]string{"send": path("start", "review", "notify", "send")},
		},
		{
			name:       "review of another tool only",
			start:      "start",
			nodes:      []tn{other("start"), review("review", "fetch"), gated("fetch"), gated("send")},
			edges:      []te{plain("start", "review"), approveE("review", "fetch"), plain("fetch", "send")},
			violations: map[string][]string{"send": path("start", "review", "fetch", "send")},
		},
		{
			name:  "loop over items with the review inside",
			start: "start",
			nodes: []tn{other("start"), other("items"), review("review", "send"), gated("send"), other("done")},
			edges: []te{plain("start", "items"), plain("items", "review"), plain("items", "done"),
				approveE("review", "send"), rejectE("review", "items"), plain("send", "items")},
		},
		{
			name:  "tool loops back to itself without a fresh review",
			start: "start",
			nodes: []tn{other("start"), review("review", "send"), gated("send"), other("more")},
			edges: []te{plain("start", "review"), approveE("review", "send"), plain("send", "more"),
				plain("more", "send")},
			violations: map[string][]string{"send": path("start", "review", "send", "more", "send")},
		},
		{
			name:  "approve then reject by a second review",
			start: "start",
			nodes: []tn{other("start"), review("r1", "send"), review("r2", "send"), other("log"), gated("send")},
			edges: []te{plain("start", "r1"), approveE("r1", "r2"), approveE("r2", "send"), rejectE("r2", "log"),
				plain("log", "send")},
			violations: map[string][]string{"send": path("start", "r1", "r2", "log", "send")},
		},
		{
			name:  "error edge into another tool",
			start: "start",
			nodes: []tn{other("start"), review("review", "send"), gated("send"), other("notify"), tool("slack")},
			edges: []te{plain("start", "review"), approveE("review", "send"), errorE("send", "notify"),
				plain("notify", "slack")},
			fallbacks: map[string][]string{"send": path("send", "notify", "slack")},
		},
		{
			name:  "error edge to a review, then approve, then a tool",
			start: "start",
			nodes: []tn{other("start"), review("review", "send"), gated("send"), review("ask", "slack"), tool("slack")},
			edges: []te{plain("start", "review"), approveE("review", "send"), errorE("send", "ask"),
				approveE("ask", "slack")},
		},
		{
			name:      "error edge back into the same tool",
			start:     "start",
			nodes:     []tn{other("start"), tool("fetch"), other("wait")},
			edges:     []te{plain("start", "fetch"), plain("fetch", "end"), errorE("fetch", "wait"), plain("wait", "fetch")},
			fallbacks: map[string][]string{"fetch": path("fetch", "wait", "fetch")},
			success:   map[string][]string{"fetch": path("fetch")},
		},
		{
			name:       "gated tool is the start",
			start:      "send",
			nodes:      []tn{gated("send")},
			violations: map[string][]string{"send": path("send")},
		},
		{
			name:  "retry after error uses the approval up",
			start: "start",
			nodes: []tn{other("start"), review("review", "send"), gated("send"), other("retry")},
			edges: []te{plain("start", "review"), approveE("review", "send"), plain("send", "end"), errorE("send", "retry"),
				plain("retry", "send")},
			violations: map[string][]string{"send": path("start", "review", "send", "retry", "send")},
			fallbacks:  map[string][]string{"send": path("send", "retry", "send")},
		},
		{
			name:  "retry after error through a fresh review",
			start: "start",
			nodes: []tn{other("start"), review("review", "send"), gated("send"), other("wait")},
			edges: []te{plain("start", "review"), approveE("review", "send"), errorE("send", "wait"),
				plain("wait", "review")},
		},
		{
			name:  "unreachable gated tool",
			start: "start",
			nodes: []tn{other("start"), gated("send"), other("orphan")},
			edges: []te{plain("orphan", "send")},
		},
		{
			name:  "approval survives another tool",
			start: "start",
			nodes: []tn{other("start"), review("review", "send"), tool("fetch"), gated("send")},
			edges: []te{plain("start", "review"), approveE("review", "fetch"), plain("fetch", "send")},
		},
		{
			name:      "fallback ties go to the lower tool index",
			start:     "start",
			nodes:     []tn{other("start"), tool("fetch"), tool("a"), tool("b"), other("hub")},
			edges:     []te{plain("start", "fetch"), errorE("fetch", "hub"), plain("hub", "b"), plain("hub", "a")},
			fallbacks: map[string][]string{"fetch": path("fetch", "hub", "a")},
		},
		{
			name:  "fallback past an approved tool",
			start: "start",
			nodes: []tn{other("start"), tool("fetch"), review("ask", "slack"), tool("slack"), tool("sms")},
			edges: []te{plain("start", "fetch"), errorE("fetch", "ask"), approveE("ask", "slack"),
				plain("slack", "sms")},
			fallbacks: map[string][]string{"fetch": path("fetch", "ask", "slack", "sms")},
		},
		{
			name:  "error notification that ends in a fail step",
			start: "start",
			nodes: []tn{other("start"), review("review", "send"), gated("send"), tool("notify"), fail("stop")},
			edges: []te{plain("start", "review"), approveE("review", "send"), errorE("send", "notify"),
				plain("notify", "stop"), errorE("notify", "stop")},
		},
		{
			name:  "error notification whose own failure ends the run",
			start: "start",
			nodes: []tn{other("start"), tool("fetch"), tool("notify"), fail("stop")},
			edges: []te{plain("start", "fetch"), errorE("fetch", "notify"), plain("notify", "stop")},
		},
		{
			name:  "error notification then success is a fallback",
			start: "start",
			nodes: []tn{other("start"), tool("fetch"), tool("notify"), other("log"), other("done")},
			edges: []te{plain("start", "fetch"), errorE("fetch", "notify"), plain("notify", "log"),
				plain("log", "done")},
			fallbacks: map[string][]string{"fetch": path("fetch", "notify")},
			success:   map[string][]string{"fetch": path("notify", "log", "done")},
		},
		{
			name:  "error notification whose on_error succeeds is a fallback",
			start: "start",
			nodes: []tn{other("start"), tool("fetch"), tool("notify"), fail("stop")},
			edges: []te{plain("start", "fetch"), errorE("fetch", "notify"), plain("notify", "stop"),
				errorE("notify", "end")},
			fallbacks: map[string][]string{"fetch": path("fetch", "notify")},
			success:   map[string][]string{"fetch": path("notify")},
		},
		{
			name:  "error notification that loops back to a step that can succeed",
			start: "start",
			nodes: []tn{other("start"), tool("fetch"), tool("notify"), other("again"), fail("stop")},
			edges: []te{plain("start", "fetch"), plain("fetch", "end"), errorE("fetch", "notify"),
				plain("notify", "again"), plain("again", "stop"), plain("again", "fetch")},
			fallbacks: map[string][]string{"fetch": path("fetch", "notify")},
			success:   map[string][]string{"fetch": path("notify", "again", "fetch")},
		},
		{
			name:  "a tool past a failing notification is no fallback either",
			start: "start",
			nodes: []tn{other("start"), tool("fetch"), tool("notify"), tool("page"), fail("stop")},
			edges: []te{plain("start", "fetch"), errorE("fetch", "notify"), plain("notify", "page"),
				plain("page", "stop")},
		},
		{
			name:  "plain edge of a tool starts no fallback search",
			start: "start",
			nodes: []tn{other("start"), tool("fetch"), tool("store")},
			edges: []te{plain("start", "fetch"), plain("fetch", "store")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := build(t, tc.start, tc.nodes, tc.edges)

			got := map[string][]string{}
			for _, v := range ReviewBeforeTool(g) {
				got[g.Nodes[v.Tool].Name] = g.Names(v.Path)
			}
			if !equalPaths(got, tc.violations) {
				t.Errorf("ReviewBeforeTool = %v, want %v", got, tc.violations)
			}

			got = map[string][]string{}
			success := map[string][]string{}
			for _, f := range NoFallback(g) {
				got[g.Nodes[f.From].Name] = g.Names(f.Path)
				success[g.Nodes[f.From].Name] = g.Names(f.Success)
				if f.Path[len(f.Path)-1] != f.Tool {
					t.Errorf("fallback from %s: Tool %d is not the path's last node", g.Nodes[f.From].Name, f.Tool)
				}
				if f.Success[0] != f.Tool || !g.Nodes[f.Success[len(f.Success)-1]].Succeeds {
					t.Errorf("fallback from %s: Success %v does not lead from the tool to success", g.Nodes[f.From].Name, f.Success)
				}
			}
			if !equalPaths(got, tc.fallbacks) {
				t.Errorf("NoFallback = %v, want %v", got, tc.fallbacks)
			}
			for from, want := range tc.success {
				if !slices.Equal(success[from], want) {
					t.Errorf("fallback from %s: Success = %v, want %v", from, success[from], want)
				}
			}
		})
	}
}

func equalPaths(got, want map[string][]string) bool {
	if len(got) != len(want) {
		return false
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || !slices.Equal(g, w) {
			return false
		}
	}
	return true
}

func TestOrderAndNames(t *testing.T) {
	g := build(t, "start", []tn{other("start"), gated("b"), gated("a"), tool("c")},
		[]te{plain("start", "a"), plain("start", "b"), errorE("b", "c"), errorE("a", "c")})
	var tools []int
	for _, v := range ReviewBeforeTool(g) {
		tools = append(tools, v.Tool)
	}
	if !slices.Equal(tools, []int{1, 2}) {
		t.Errorf("violations for tools %v, want [1 2]", tools)
	}
	var froms []int
	for _, f := range NoFallback(g) {
		froms = append(froms, f.From)
	}
	if !slices.Equal(froms, []int{1, 2}) {
		t.Errorf("fallbacks from %v, want [1 2]", froms)
	}
	if got := g.Names([]int{0, 3, 7, -1}); !slices.Equal(got, []string{"start", "c", "#7", "#-1"}) {
		t.Errorf("Names = %q", got)
	}
}

func TestMalformed(t *testing.T) {
	// Start out of range reaches nothing; edges to missing nodes are ignored;
	// a review of a non-tool reviews nothing.
	g := &Graph{Start: 5, Nodes: []Node{
		{Name: "send", Kind: Tool, Gated: true, Next: []Edge{{To: 9, Kind: Error}, {To: -2}}},
		{Name: "odd", Kind: Review, Of: 2, Next: []Edge{{To: 0, Kind: Approve}}},
		{Name: "x", Kind: Other},
	}}
	if v := ReviewBeforeTool(g); v != nil {
		t.Errorf("ReviewBeforeTool = %v, want nil", v)
	}
	if f := NoFallback(g); f != nil {
		t.Errorf("NoFallback = %v, want nil", f)
	}
	g.Start = 1
	v := ReviewBeforeTool(g)
	if len(v) != 1 || !slices.Equal(v[0].Path, []int{1, 0}) {
		t.Errorf("ReviewBeforeTool = %v, want one violation on path [1 0]", v)
	}
	if v := ReviewBeforeTool(&Graph{}); v != nil {
		t.Errorf("empty graph: %v", v)
	}
	if f := NoFallback(&Graph{}); f != nil {
		t.Errorf("empty graph: %v", f)
	}
}

// The property tests compare both checks with a brute-force enumeration of
// every path of at most 2n+2 nodes on small random graphs. A shortest
// offending path has at most 2n nodes (a shortest path to the last reset of
// the approval, the reset edge, then a simple path to the tool), and a
// shortest fallback one more, so the bound loses nothing.

const seeds = 3000

// randomGraph returns a graph of n nodes with random kinds, reviews and
// edges (cycles, self-loops and parallel edges included), 0–2 out-edges each.
func randomGraph(r *rand.Rand, n int) *Graph {
	g := &Graph{Nodes: make([]Node, n), Start: r.IntN(n)}
	var tools []int
	for i := range g.Nodes {
		g.Nodes[i].Name = fmt.Sprintf("n%d", i)
		g.Nodes[i].Kind = Kind(r.IntN(3))
		g.Nodes[i].Gated = r.IntN(4) != 0
		g.Nodes[i].Succeeds = r.IntN(3) == 0
		if g.Nodes[i].Kind == Tool {
			tools = append(tools, i)
		}
	}
	for i := range g.Nodes {
		nd := &g.Nodes[i]
		nd.Of = r.IntN(n)
		if len(tools) > 0 && r.IntN(8) != 0 {
			nd.Of = tools[r.IntN(len(tools))]
		}
		for range r.IntN(3) {
			var k EdgeKind
			switch {
			case r.IntN(10) == 0:
				k = EdgeKind(r.IntN(4)) // any kind on any node
			case nd.Kind == Review:
				k = []EdgeKind{Plain, Approve, Approve, Reject, Reject}[r.IntN(5)]
			case nd.Kind == Tool:
				k = []EdgeKind{Plain, Error}[r.IntN(2)]
			}
			nd.Next = append(nd.Next, Edge{To: r.IntN(n), Kind: k})
		}
	}
	return g
}

// leave applies leaving u by an edge of kind k to the approvals of all tools,
// written straight from the rule, and returns an undo function.
func leave(g *Graph, approved []bool, u int, k EdgeKind) (undo func()) {
	i, v := -1, false
	switch nd := g.Nodes[u]; {
	case nd.Kind == Tool:
		i, v = u, false
	case nd.Kind == Review && nd.Of >= 0 && nd.Of < len(g.Nodes) && g.Nodes[nd.Of].Kind == Tool && k == Approve:
		i, v = nd.Of, true
	case nd.Kind == Review && nd.Of >= 0 && nd.Of < len(g.Nodes) && g.Nodes[nd.Of].Kind == Tool && k == Reject:
		i, v = nd.Of, false
	}
	if i < 0 {
		return func() {}
	}
	old := approved[i]
	approved[i] = v
	return func() { approved[i] = old }
}

// enumerate walks every path of at most maxLen nodes that starts with
// prefix and continues at v, with the given approvals, and calls arrive for
// every node arrived at (v included) with the path so far.
func enumerate(g *Graph, approved []bool, prefix []int, v, maxLen int, arrive func(path []int)) {
	p := append(prefix, v)
	arrive(p)
	if len(p) >= maxLen {
		return
	}
	for _, e := range g.Nodes[v].Next {
		undo := leave(g, approved, v, e.Kind)
		enumerate(g, approved, p, e.To, maxLen, arrive)
		undo()
	}
}

// bruteGate returns, per node, the number of nodes of a shortest path from
// Start that arrives at it as an unapproved gated tool, 0 if none.
func bruteGate(g *Graph) []int {
	n := len(g.Nodes)
	best := make([]int, n)
	approved := make([]bool, n)
	enumerate(g, approved, nil, g.Start, 2*n+2, func(p []int) {
		v := p[len(p)-1]
		if nd := g.Nodes[v]; nd.Kind == Tool && nd.Gated && !approved[v] && (best[v] == 0 || len(p) < best[v]) {
			best[v] = len(p)
		}
	})
	return best
}

// bruteSuccess returns, per node, the number of nodes of a shortest walk
// of at most n nodes from it to a node whose Succeeds is set (1 at such a
// node), 0 if none: every walk is enumerated, and a shortest one visits no
// node twice, so the bound loses nothing.
func bruteSuccess(g *Graph) []int {
	n := len(g.Nodes)
	best := make([]int, n)
	approved := make([]bool, n)
	for v := range n {
		enumerate(g, approved, nil, v, n, func(p []int) {
			if g.Nodes[p[len(p)-1]].Succeeds && (best[v] == 0 || len(p) < best[v]) {
				best[v] = len(p)
			}
		})
	}
	return best
}

// isWalk reports whether p is a walk of g over edges of any kind.
func isWalk(g *Graph, p []int) bool {
	for i := 0; i+1 < len(p); i++ {
		if !slices.ContainsFunc(g.Nodes[p[i]].Next, func(e Edge) bool { return e.To == p[i+1] }) {
			return false
		}
	}
	return len(p) > 0
}

// bruteFallback returns, per node From, the (length, tool) of a shortest
// fallback from it, least tool first; length 0 if none. A tool no walk
// leads from to success is never the end of a fallback.
func bruteFallback(g *Graph) [][2]int {
	n := len(g.Nodes)
	best := make([][2]int, n)
	succeeds := bruteSuccess(g)
	for f := range n {
		if g.Nodes[f].Kind != Tool {
			continue
		}
		for _, e := range g.Nodes[f].Next {
			if e.Kind != Error {
				continue
			}
			approved := make([]bool, n)
			enumerate(g, approved, []int{f}, e.To, 2*n+2, func(p []int) {
				v := p[len(p)-1]
				if g.Nodes[v].Kind != Tool || approved[v] || succeeds[v] == 0 {
					return
				}
				b := &best[f]
				if b[0] == 0 || len(p) < b[0] || len(p) == b[0] && v < b[1] {
					*b = [2]int{len(p), v}
				}
			})
		}
	}
	return best
}

// unapprovedAtEnd reports whether path is a walk of g, its first step by an
// Error edge if firstError, that can end with tool t unapproved, starting
// unapproved. Parallel edges of different kinds make the walk ambiguous, so
// the set of possible approvals of t is tracked.
func unapprovedAtEnd(g *Graph, path []int, t int, firstError bool) bool {
	can := [2]bool{true, false} // can[0]: may be unapproved; can[1]: may be approved
	for i := 0; i+1 < len(path); i++ {
		u, v := path[i], path[i+1]
		var nc [2]bool
		found := false
		for _, e := range g.Nodes[u].Next {
			if e.To != v || (i == 0 && firstError && e.Kind != Error) {
				continue
			}
			found = true
			for b := range 2 {
				if !can[b] {
					continue
				}
				approved := make([]bool, len(g.Nodes))
				approved[t] = b == 1
				leave(g, approved, u, e.Kind)
				if approved[t] {
					nc[1] = true
				} else {
					nc[0] = true
				}
			}
		}
		if !found {
			return false
		}
		can = nc
	}
	return path[len(path)-1] == t && can[0]
}

func describe(g *Graph) string {
	var b strings.Builder
	fmt.Fprintf(&b, "start %d\n", g.Start)
	for i, nd := range g.Nodes {
		fmt.Fprintf(&b, "  %d %s gated=%v of=%d next=%v\n", i, nd.Kind, nd.Gated, nd.Of, nd.Next)
	}
	return b.String()
}

func TestReviewBeforeToolAgainstBruteForce(t *testing.T) {
	violating := 0
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 1))
		g := randomGraph(r, 2+r.IntN(6))
		want := bruteGate(g)
		got := ReviewBeforeTool(g)
		seen := make([]bool, len(g.Nodes))
		last := -1
		for _, v := range got {
			violating++
			if v.Tool <= last {
				t.Fatalf("seed %d: violations not ordered by Tool: %v\n%s", seed, got, describe(g))
			}
			last = v.Tool
			seen[v.Tool] = true
			if want[v.Tool] == 0 {
				t.Fatalf("seed %d: reported tool %d, brute force finds no offending path\n%s", seed, v.Tool, describe(g))
			}
			if len(v.Path) == 0 || v.Path[0] != g.Start || !unapprovedAtEnd(g, v.Path, v.Tool, false) {
				t.Fatalf("seed %d: path %v is not an offending path to %d\n%s", seed, v.Path, v.Tool, describe(g))
			}
			if len(v.Path) != want[v.Tool] {
				t.Fatalf("seed %d: path %v to %d has %d nodes, shortest has %d\n%s",
					seed, v.Path, v.Tool, len(v.Path), want[v.Tool], describe(g))
			}
		}
		for tool, w := range want {
			if w > 0 && !seen[tool] {
				t.Fatalf("seed %d: tool %d has an offending path of %d nodes, not reported\n%s", seed, tool, w, describe(g))
			}
		}
	}
	t.Logf("%d graphs, %d violations", seeds, violating)
}

func TestNoFallbackAgainstBruteForce(t *testing.T) {
	found := 0
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 2))
		g := randomGraph(r, 2+r.IntN(6))
		want := bruteFallback(g)
		succeeds := bruteSuccess(g)
		got := NoFallback(g)
		seen := make([]bool, len(g.Nodes))
		last := -1
		for _, f := range got {
			found++
			if f.From <= last {
				t.Fatalf("seed %d: fallbacks not ordered by From: %v\n%s", seed, got, describe(g))
			}
			last = f.From
			seen[f.From] = true
			w := want[f.From]
			if w[0] == 0 {
				t.Fatalf("seed %d: reported fallback from %d, brute force finds none\n%s", seed, f.From, describe(g))
			}
			if len(f.Path) < 2 || f.Path[0] != f.From || g.Nodes[f.Tool].Kind != Tool ||
				!unapprovedAtEnd(g, f.Path, f.Tool, true) {
				t.Fatalf("seed %d: path %v is not a fallback from %d to %d\n%s", seed, f.Path, f.From, f.Tool, describe(g))
			}
			if len(f.Path) != w[0] || f.Tool != w[1] {
				t.Fatalf("seed %d: fallback from %d: path %v to %d, brute force: %d nodes to %d\n%s",
					seed, f.From, f.Path, f.Tool, w[0], w[1], describe(g))
			}
			if !isWalk(g, f.Success) || f.Success[0] != f.Tool || !g.Nodes[f.Success[len(f.Success)-1]].Succeeds ||
				len(f.Success) != succeeds[f.Tool] {
				t.Fatalf("seed %d: fallback from %d: success path %v, brute force: %d nodes\n%s",
					seed, f.From, f.Success, succeeds[f.Tool], describe(g))
			}
		}
		for from, w := range want {
			if w[0] > 0 && !seen[from] {
				t.Fatalf("seed %d: tool %d has a fallback of %d nodes to %d, not reported\n%s", seed, from, w[0], w[1], describe(g))
			}
		}
	}
	t.Logf("%d graphs, %d fallbacks", seeds, found)
}

// successBFS is the product search's oracle of which nodes can reach
// success: a forward breadth-first search from each node.
func successBFS(g *Graph) []bool {
	n := len(g.Nodes)
	out := make([]bool, n)
	for v := range n {
		seen := make([]bool, n)
		queue := []int{v}
		seen[v] = true
		for len(queue) > 0 && !out[v] {
			x := queue[0]
			queue = queue[1:]
			if g.Nodes[x].Succeeds {
				out[v] = true
			}
			for _, e := range g.Nodes[x].Next {
				if e.To >= 0 && e.To < n && !seen[e.To] {
					seen[e.To] = true
					queue = append(queue, e.To)
				}
			}
		}
	}
	return out
}

// shortestUnapproved is a second, independent oracle for larger graphs: a
// breadth-first search over states (node, approval of t) from node s with t
// unapproved, returning the number of nodes of a shortest walk that arrives
// at t unapproved, 0 if none.
func shortestUnapproved(g *Graph, s, t int) int {
	n := len(g.Nodes)
	seen := make([]bool, 2*n)
	type state struct{ v, b, len int }
	queue := []state{{s, 0, 1}}
	seen[2*s] = true
	approved := make([]bool, n)
	for i := 0; i < len(queue); i++ {
		q := queue[i]
		if q.v == t && q.b == 0 {
			return q.len
		}
		for _, e := range g.Nodes[q.v].Next {
			approved[t] = q.b == 1
			undo := leave(g, approved, q.v, e.Kind)
			b := 0
			if approved[t] {
				b = 1
			}
			undo()
			if !seen[2*e.To+b] {
				seen[2*e.To+b] = true
				queue = append(queue, state{e.To, b, q.len + 1})
			}
		}
	}
	return 0
}

func TestAgainstProductSearch(t *testing.T) {
	violations, fallbacks, longest := 0, 0, 0
	for seed := range uint64(2000) {
		r := rand.New(rand.NewPCG(seed, 3))
		g := randomGraph(r, 8+r.IntN(33))
		n := len(g.Nodes)

		wantV := make([]int, n)
		for v := range n {
			if g.Nodes[v].Kind == Tool && g.Nodes[v].Gated {
				wantV[v] = shortestUnapproved(g, g.Start, v)
			}
		}
		gotV := make([]int, n)
		for _, v := range ReviewBeforeTool(g) {
			if v.Path[0] != g.Start || !unapprovedAtEnd(g, v.Path, v.Tool, false) {
				t.Fatalf("seed %d: path %v is not an offending path to %d\n%s", seed, v.Path, v.Tool, describe(g))
			}
			gotV[v.Tool] = len(v.Path)
			violations++
			longest = max(longest, len(v.Path))
		}
		if !slices.Equal(gotV, wantV) {
			t.Fatalf("seed %d: violation lengths %v, want %v\n%s", seed, gotV, wantV, describe(g))
		}

		wantF := make([][2]int, n)
		canSucceed := successBFS(g)
		for f := range n {
			if g.Nodes[f].Kind != Tool {
				continue
			}
			for _, e := range g.Nodes[f].Next {
				if e.Kind != Error {
					continue
				}
				for u := range n {
					if g.Nodes[u].Kind != Tool || !canSucceed[u] {
						continue
					}
					l := shortestUnapproved(g, e.To, u)
					if b := &wantF[f]; l > 0 && (b[0] == 0 || l+1 < b[0] || l+1 == b[0] && u < b[1]) {
						*b = [2]int{l + 1, u}
					}
				}
			}
		}
		gotF := make([][2]int, n)
		for _, f := range NoFallback(g) {
			if f.Path[0] != f.From || !unapprovedAtEnd(g, f.Path, f.Tool, true) {
				t.Fatalf("seed %d: path %v is not a fallback from %d to %d\n%s", seed, f.Path, f.From, f.Tool, describe(g))
			}
			gotF[f.From] = [2]int{len(f.Path), f.Tool}
			fallbacks++
			longest = max(longest, len(f.Path))
		}
		if !slices.Equal(gotF, wantF) {
			t.Fatalf("seed %d: fallbacks %v, want %v\n%s", seed, gotF, wantF, describe(g))
		}
	}
	t.Logf("2000 graphs, %d violations, %d fallbacks, longest path %d nodes", violations, fallbacks, longest)
}

// bruteLastReviews returns, per tool node, the reviews whose Approve edge
// is the last decision of a review of it before some arrival at it on a
// path of at most 2n+2 nodes from Start.
func bruteLastReviews(g *Graph) map[int][]int {
	n := len(g.Nodes)
	last := make([]int, n) // per tool: the review whose approval holds, or -1
	for i := range last {
		last[i] = -1
	}
	found := map[int]map[int]bool{}
	var walk func(v, depth int)
	walk = func(v, depth int) {
		if g.Nodes[v].Kind == Tool && last[v] >= 0 {
			if found[v] == nil {
				found[v] = map[int]bool{}
			}
			found[v][last[v]] = true
		}
		if depth >= 2*n+2 {
			return
		}
		for _, e := range g.Nodes[v].Next {
			if e.To < 0 || e.To >= n {
				continue
			}
			i, old := -1, 0
			switch nd := g.Nodes[v]; {
			case nd.Kind == Tool:
				i = v
			case nd.Kind == Review && nd.Of >= 0 && nd.Of < n && g.Nodes[nd.Of].Kind == Tool && (e.Kind == Approve || e.Kind == Reject):
				i = nd.Of
			}
			if i >= 0 {
				old = last[i]
				last[i] = -1
				if i != v && e.Kind == Approve {
					last[i] = v
				}
			}
			walk(e.To, depth+1)
			if i >= 0 {
				last[i] = old
			}
		}
	}
	walk(g.Start, 1)
	out := map[int][]int{}
	for t, rs := range found {
		for r := range n {
			if rs[r] {
				out[t] = append(out[t], r)
			}
		}
	}
	return out
}

func TestLastReviewsAgainstBruteForce(t *testing.T) {
	nonEmpty := 0
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 3))
		g := randomGraph(r, 2+r.IntN(6))
		want := bruteLastReviews(g)
		for v := range g.Nodes {
			got := LastReviews(g, v)
			if len(got) > 0 {
				nonEmpty++
			}
			if !slices.Equal(got, want[v]) {
				t.Fatalf("seed %d: LastReviews(%d) = %v, brute force %v\n%s", seed, v, got, want[v], describe(g))
			}
		}
	}
	if nonEmpty < seeds/30 {
		t.Fatalf("only %d non-empty answers: the graphs do not exercise the check", nonEmpty)
	}
}

// LastReviewsOf answers for many tools at once what LastReviews answers for
// each: asked about every node (backwards, each twice, and out of range),
// its answers are the brute force's, so the shared search and region carry
// nothing from one tool to the next.
func TestLastReviewsOfManyToolsAgainstBruteForce(t *testing.T) {
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 3))
		g := randomGraph(r, 2+r.IntN(6))
		want := bruteLastReviews(g)
		var ask []int
		for v := len(g.Nodes) - 1; v >= 0; v-- {
			ask = append(ask, v, -1, v, len(g.Nodes))
		}
		got := LastReviewsOf(g, ask)
		if len(got) != len(ask) {
			t.Fatalf("seed %d: %d answers for %d tools", seed, len(got), len(ask))
		}
		for k, v := range ask {
			var w []int
			if v >= 0 && v < len(g.Nodes) {
				w = want[v]
			}
			if !slices.Equal(got[k], w) {
				t.Fatalf("seed %d: LastReviewsOf(…%d…) = %v, brute force %v\n%s", seed, v, got[k], w, describe(g))
			}
		}
	}
}

func TestLastReviews(t *testing.T) {
	for _, c := range []struct {
		name  string
		nodes []tn
		edges []te
		want  []string
	}{
		{"one review", []tn{review("r", "s"), gated("s")}, []te{approveE("r", "s")}, []string{"r"}},
		{"two in a row: only the second counts", []tn{review("a", "s"), review("b", "s"), gated("s")},
			[]te{approveE("a", "b"), approveE("b", "s")}, []string{"b"}},
		{"two on branches", []tn{other("c"), review("a", "s"), review("b", "s"), gated("s")},
			[]te{plain("c", "a"), plain("c", "b"), approveE("a", "s"), approveE("b", "s")}, []string{"a", "b"}},
		{"a review of another tool between", []tn{review("a", "s"), review("o", "u"), gated("s"), tool("u")},
			[]te{approveE("a", "o"), approveE("o", "s"), rejectE("o", "s")}, []string{"a"}},
		{"an approval the tool uses up", []tn{review("a", "s"), gated("s")},
			[]te{approveE("a", "s"), plain("s", "s")}, []string{"a"}},
		{"no approval reaches it", []tn{review("a", "s"), gated("s")}, []te{rejectE("a", "s")}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := build(t, c.nodes[0].name, c.nodes, c.edges)
			var tool int
			for i, nd := range g.Nodes {
				if nd.Name == "s" {
					tool = i
				}
			}
			if got := g.Names(LastReviews(g, tool)); !slices.Equal(got, c.want) && (len(got) > 0 || len(c.want) > 0) {
				t.Fatalf("LastReviews = %v, want %v", got, c.want)
			}
		})
	}
}
