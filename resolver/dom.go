package resolver

import "github.com/toolgate/toolgate/resolver/gate"

// dominators answers "has step j completed on every path from the start to
// step k?" for the unset-binding check. Each tool, workflow or pass step i gets a
// virtual node ok(i) on its success edge (next); step j has completed before
// k exactly when ok(j) dominates k. A failure (on_error) leaves no result, so
// it bypasses ok(i).
//
// The dominator tree is built with the iterative algorithm of Cooper, Harvey
// and Kennedy ("A Simple, Fast Dominance Algorithm", 2001) and queried in
// O(1) by pre/post numbering.
type dominators struct {
	n         int
	pre, post []int // -1 when unreachable
}

func newDominators(sol *Solution, _ map[string]int, g *gate.Graph) *dominators {
	n := len(g.Nodes)
	succ := make([][]int, 2*n)
	for i, node := range g.Nodes {
		hasOK := sol.Steps[i].Kind.completes()
		if hasOK {
			succ[i] = append(succ[i], n+i)
		}
		for _, e := range node.Next {
			if hasOK && e.Kind == gate.Plain {
				succ[n+i] = append(succ[n+i], e.To)
			} else {
				succ[i] = append(succ[i], e.To)
			}
		}
	}
	total := 2 * n
	// Reverse postorder by an iterative depth-first search.
	order := make([]int, total) // node -> rpo index, -1 unreachable
	for i := range order {
		order[i] = -1
	}
	var post []int
	visited := make([]bool, total)
	type frame struct{ v, next int }
	stack := []frame{{g.Start, 0}}
	visited[g.Start] = true
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next < len(succ[top.v]) {
			w := succ[top.v][top.next]
			top.next++
			if !visited[w] {
				visited[w] = true
				stack = append(stack, frame{w, 0})
			}
			continue
		}
		post = append(post, top.v)
		stack = stack[:len(stack)-1]
	}
	rpo := make([]int, len(post))
	for i, v := range post {
		rpo[len(post)-1-i] = v
	}
	for i, v := range rpo {
		order[v] = i
	}
	preds := make([][]int, total)
	for v := range total {
		if order[v] < 0 {
			continue
		}
		for _, w := range succ[v] {
			preds[w] = append(preds[w], v)
		}
	}
	idom := make([]int, total)
	for i := range idom {
		idom[i] = -1
	}
	idom[g.Start] = g.Start
	intersect := func(a, b int) int {
		for a != b {
			for order[a] > order[b] {
				a = idom[a]
			}
			for order[b] > order[a] {
				b = idom[b]
			}
		}
		return a
	}
	for changed := true; changed; {
		changed = false
		for _, v := range rpo[1:] {
			nd := -1
			for _, p := range preds[v] {
				if idom[p] < 0 {
					continue
				}
				if nd < 0 {
					nd = p
				} else {
					nd = intersect(p, nd)
				}
			}
			if idom[v] != nd {
				idom[v] = nd
				changed = true
			}
		}
	}
	// Pre/post numbers on the dominator tree.
	children := make([][]int, total)
	for _, v := range rpo[1:] {
		children[idom[v]] = append(children[idom[v]], v)
	}
	d := &dominators{n: n, pre: make([]int, total), post: make([]int, total)}
	for i := range d.pre {
		d.pre[i], d.post[i] = -1, -1
	}
	clock := 0
	tstack := []frame{{g.Start, 0}}
	d.pre[g.Start] = clock
	clock++
	for len(tstack) > 0 {
		top := &tstack[len(tstack)-1]
		if top.next < len(children[top.v]) {
			w := children[top.v][top.next]
			top.next++
			d.pre[w] = clock
			clock++
			tstack = append(tstack, frame{w, 0})
			continue
		}
		d.post[top.v] = clock
		clock++
		tstack = tstack[:len(tstack)-1]
	}
	return d
}

// dominates reports whether every path from the start to b passes a.
func (d *dominators) dominates(a, b int) bool {
	if d.pre[a] < 0 || d.pre[b] < 0 {
		return false
	}
	return d.pre[a] <= d.pre[b] && d.post[b] <= d.post[a]
}

// completedBefore reports whether step j has completed (left by its success
// edge) on every path from the start to step k.
func (d *dominators) completedBefore(j, k int) bool {
	return d.dominates(d.n+j, k)
}

// completedBeforeEnd reports whether step j has completed on every path
// that ends the run from step from: left by its success edge when viaOK
// (j == from then counts), otherwise from the step itself.
func (d *dominators) completedBeforeEnd(j, from int, viaOK bool) bool {
	if viaOK {
		return d.dominates(d.n+j, d.n+from)
	}
	return d.dominates(d.n+j, from)
}
