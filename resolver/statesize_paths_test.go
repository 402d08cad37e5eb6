package resolver

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/toolgate/toolgate/resolver/gate"
)

// The state-size bound's path exploration (worstPaths) and the union test
// that skips it (unionFits) are checked here against the exploration as it
// was first written (refWorstPaths, below: a slot array and a whole path
// copied per explored pair), which the diagnostics were written against:
// on random graphs, on graphs with more than maxPathSets incomparable sets
// at a step, and on diamonds past maxExplored, each step's heaviest path,
// its slots and whether it was merged are the same, so every [state-size]
// diagnostic is.

// randomSizeGraph returns a graph of n steps with random edges (cycles
// and self-loops included) and, per step, up to two slots named from a
// small pool (so that steps share names) of random sizes.
func randomSizeGraph(r *rand.Rand, n int) (*gate.Graph, [][]*slot) {
	g := &gate.Graph{Nodes: make([]gate.Node, n)}
	slots := make([][]*slot, n)
	names := 1 + r.IntN(2*n)
	for v := range n {
		for range r.IntN(4) {
			g.Nodes[v].Next = append(g.Nodes[v].Next, gate.Edge{To: r.IntN(n)})
		}
		for range r.IntN(3) {
			slots[v] = append(slots[v], &slot{name: fmt.Sprintf("s%d", r.IntN(names)), bytes: (1 + r.IntN(4)) * 30_000})
		}
	}
	return g, slots
}

// diamondSizeGraph returns n diamonds in a row, each branch writing its own
// slot of random size: 2^n paths, each with its own set.
func diamondSizeGraph(r *rand.Rand, n int) (*gate.Graph, [][]*slot) {
	g := &gate.Graph{Nodes: make([]gate.Node, 3*n)}
	slots := make([][]*slot, 3*n)
	for i := range n {
		c, a, b := 3*i, 3*i+1, 3*i+2
		g.Nodes[c].Next = []gate.Edge{{To: a}, {To: b}}
		if i+1 < n {
			g.Nodes[a].Next = []gate.Edge{{To: c + 3}}
			g.Nodes[b].Next = []gate.Edge{{To: c + 3}}
		}
		slots[a] = []*slot{{name: fmt.Sprintf("a%d", i), bytes: r.IntN(3) * 10_000}}
		slots[b] = []*slot{{name: fmt.Sprintf("b%d", i), bytes: r.IntN(3) * 10_000}}
	}
	return g, slots
}

// sameWorstPaths compares worstPaths with the reference on one graph, and
// checks unionFits against what the reference would refuse.
// It returns the reference's worst paths.
func sameWorstPaths(t *testing.T, what string, g *gate.Graph, slots [][]*slot) []*refWorstPath {
	t.Helper()
	x := newSlotIndex(slots)
	got, want := worstPaths(g, 0, x), refWorstPaths(g, 0, slots)
	base := 1 + len(g.Nodes)%7*10_000
	exceeds := false
	for v := range g.Nodes {
		w, r := got[v], want[v]
		if (w == nil) != (r == nil) {
			t.Fatalf("%s: step %d: worst path %v, reference %v", what, v, w, r)
		}
		if w == nil {
			continue
		}
		gotSlots, wantSlots := x.slotsIn(w.written), r.slots
		if !slices.Equal(gotSlots, wantSlots) || !slices.Equal(w.path.steps(), r.path) || w.merged != r.merged {
			t.Fatalf("%s: step %d: worst path %v (merged %v) writing %d slots, reference %v (merged %v) writing %d",
				what, v, w.path.steps(), w.merged, len(gotSlots), r.path, r.merged, len(wantSlots))
		}
		total := base
		for _, s := range wantSlots {
			total += s.bytes
		}
		exceeds = exceeds || total > MaxStateBytes
	}
	if unionFits(g, 0, x, base, make([]*slot, len(g.Nodes))) && exceeds {
		t.Fatalf("%s: the union test skips the exploration, which refuses a step", what)
	}
	return want
}

func TestWorstPathsAgainstTheFirstExploration(t *testing.T) {
	fits := 0
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 7))
		g, slots := randomSizeGraph(r, 1+r.IntN(24))
		sameWorstPaths(t, fmt.Sprintf("seed %d", seed), g, slots)
		if unionFits(g, 0, newSlotIndex(slots), 0, make([]*slot, len(g.Nodes))) {
			fits++
		}
	}
	if fits == 0 || fits == 3000 {
		t.Fatalf("the union fits in %d of 3000 graphs: the graphs do not exercise both outcomes", fits)
	}
	for _, n := range []int{8, 12, 1000} { // 8 and 12: past maxPathSets; 1000: past maxExplored
		r := rand.New(rand.NewPCG(uint64(n), 8))
		g, slots := diamondSizeGraph(r, n)
		want := sameWorstPaths(t, fmt.Sprintf("%d diamonds", n), g, slots)
		if merged, fellBack := want[len(want)-1].merged, want[0].merged; !merged || fellBack != (n == 1000) {
			t.Fatalf("%d diamonds: merged %v, past maxExplored %v: the graphs do not exercise the limits", n, merged, fellBack)
		}
	}
}

// The union test and the exploration agree on a for_each's result that
// goes to end: a step whose union fits without the result but not with it
// is explored.
func TestUnionFitsCountsAResultThatGoesToEnd(t *testing.T) {
	g := &gate.Graph{Nodes: []gate.Node{{Next: []gate.Edge{{To: 1}}}, {}}}
	slots := [][]*slot{{{name: "a", bytes: 100_000}}, {{name: "b", bytes: 100_000}}}
	x := newSlotIndex(slots)
	toEnd := []*slot{nil, nil}
	if !unionFits(g, 0, x, 0, toEnd) {
		t.Fatal("200 000 bytes do not fit")
	}
	toEnd[1] = &slot{name: "r", bytes: 100_000}
	if unionFits(g, 0, x, 0, toEnd) {
		t.Fatal("300 000 bytes with the result fit")
	}
	toEnd[1] = &slot{name: "b", bytes: 100_000} // the result replaces b's slot
	if !unionFits(g, 0, x, 0, toEnd) {
		t.Fatal("a result that replaces a slot is counted twice")
	}
}

// refPathSet is, in the reference, the slots written on one path up to a step (its own write
// included, by slot index), and the path.
type refPathSet struct {
	written []bool
	path    []int
	merged  bool
}

// refWorstPath is a step's heaviest path: its slots and the path.
type refWorstPath struct {
	slots  []*slot
	path   []int
	merged bool
}

// refWorstPaths returns, per step, the path from the start whose written
// slots weigh most at that step. It explores (step, written set) pairs,
// keeping per step only the sets no other contains; past maxPathSets a
// step's sets are merged into their union, a bound no smaller than any
// path's.
func refWorstPaths(g *gate.Graph, start int, slots [][]*slot) []*refWorstPath {
	n := len(g.Nodes)
	index := map[string]int{}
	var byIndex []*slot
	for _, ss := range slots {
		for _, s := range ss {
			if _, ok := index[s.name]; !ok {
				index[s.name] = len(byIndex)
				byIndex = append(byIndex, s)
			}
		}
	}
	write := func(p *refPathSet, v int) *refPathSet {
		q := &refPathSet{written: slices.Clone(p.written), path: append(slices.Clone(p.path), v), merged: p.merged}
		for _, s := range slots[v] {
			q.written[index[s.name]] = true
		}
		return q
	}
	weight := func(p *refPathSet) int {
		w := 0
		for k, on := range p.written {
			if on {
				w += byIndex[k].bytes
			}
		}
		return w
	}
	sets := make([][]*refPathSet, n)
	first := write(&refPathSet{written: make([]bool, len(byIndex))}, start)
	sets[start] = []*refPathSet{first}
	queue := []*refPathSet{first}
	for explored := 0; len(queue) > 0; explored++ {
		if explored == maxExplored {
			sets = refUnionSets(g, start, slots, index, len(byIndex))
			break
		}
		p := queue[0]
		queue = queue[1:]
		v := p.path[len(p.path)-1]
		if !slices.Contains(sets[v], p) {
			continue // dominated since it was queued
		}
		for _, e := range g.Nodes[v].Next {
			if q := refAddSet(&sets[e.To], write(p, e.To)); q != nil {
				queue = append(queue, q)
			}
		}
	}
	worst := make([]*refWorstPath, n)
	for v, ps := range sets {
		var best *refPathSet
		for _, p := range ps {
			if best == nil || weight(p) > weight(best) {
				best = p
			}
		}
		if best == nil {
			continue
		}
		w := &refWorstPath{path: best.path, merged: best.merged}
		for k, on := range best.written {
			if on {
				w.slots = append(w.slots, byIndex[k])
			}
		}
		worst[v] = w
	}
	return worst
}

// refUnionSets is the fallback of refWorstPaths: per step, one set holding every
// slot any path from the start writes up to it (a dataflow fixed point),
// with a shortest path to name.
func refUnionSets(g *gate.Graph, start int, slots [][]*slot, index map[string]int, width int) [][]*refPathSet {
	n := len(g.Nodes)
	written := make([][]bool, n)
	paths := make([][]int, n)
	mark := func(v int, from []bool) bool {
		if written[v] == nil {
			written[v] = make([]bool, width)
		}
		changed := false
		for k, on := range from {
			if on && !written[v][k] {
				written[v][k], changed = true, true
			}
		}
		for _, s := range slots[v] {
			if !written[v][index[s.name]] {
				written[v][index[s.name]], changed = true, true
			}
		}
		return changed
	}
	mark(start, nil)
	paths[start] = []int{start}
	queue := []int{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, e := range g.Nodes[v].Next {
			if paths[e.To] == nil {
				paths[e.To] = append(slices.Clone(paths[v]), e.To)
			}
			if mark(e.To, written[v]) {
				queue = append(queue, e.To)
			}
		}
	}
	sets := make([][]*refPathSet, n)
	for v := range written {
		if written[v] != nil {
			sets[v] = []*refPathSet{{written: written[v], path: paths[v], merged: true}}
		}
	}
	return sets
}

// refAddSet adds q to a step's sets unless one of them contains it, dropping
// those q contains, and returns the set to explore from there (nil: none).
// Past maxPathSets the step's sets are merged into their union.
func refAddSet(sets *[]*refPathSet, q *refPathSet) *refPathSet {
	for _, p := range *sets {
		if refSubset(q.written, p.written) {
			return nil
		}
	}
	kept := (*sets)[:0]
	for _, p := range *sets {
		if !refSubset(p.written, q.written) {
			kept = append(kept, p)
		}
	}
	*sets = append(kept, q)
	if len(*sets) <= maxPathSets {
		return q
	}
	u := &refPathSet{written: make([]bool, len(q.written)), path: q.path, merged: true}
	for _, p := range *sets {
		for k, w := range p.written {
			u.written[k] = u.written[k] || w
		}
	}
	*sets = []*refPathSet{u}
	return u
}

func refSubset(a, b []bool) bool {
	for k := range a {
		if a[k] && !b[k] {
			return false
		}
	}
	return true
}
