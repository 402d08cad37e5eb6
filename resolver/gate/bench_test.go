package gate

import (
	"fmt"
	"testing"
)

// blockGraph returns a Solution of the shape authors write, with n nodes
// (n a multiple of 5): repeating blocks
//
//	fetch → pass → choice → review (of send) → send
//
// where the choice may skip to the next block, the review's Approve leads to
// send and its Reject to the next block, send's on_error goes back to its
// review for a fresh approval, and every fourth block's send loops back to
// the fetch three blocks earlier. fetch's on_error goes to pass, so every
// tool has a fallback (to the next block's fetch) for NoFallback to report.
// The last block's choice, send and review end the run (their edges to
// end), so every tool can reach success.
func blockGraph(n int) *Graph {
	g := &Graph{Nodes: make([]Node, 0, n)}
	blocks := n / 5
	for i := range blocks {
		b := 5 * i
		fetch, pass, choice, review, send, next := b, b+1, b+2, b+3, b+4, b+5
		var toNext []Edge // edges to the next block, or to end after the last
		if i+1 < blocks {
			toNext = []Edge{{To: next}}
		}
		sendNext := append([]Edge{}, toNext...)
		sendNext = append(sendNext, Edge{To: review, Kind: Error})
		if i%4 == 3 {
			sendNext = append(sendNext, Edge{To: fetch - 15})
		}
		reject := []Edge{}
		if i+1 < blocks {
			reject = append(reject, Edge{To: next, Kind: Reject})
		}
		g.Nodes = append(g.Nodes,
			Node{Name: fmt.Sprintf("fetch%d", i), Kind: Tool, Next: []Edge{{To: pass}, {To: pass, Kind: Error}}},
			Node{Name: fmt.Sprintf("pass%d", i), Next: []Edge{{To: choice}}},
			Node{Name: fmt.Sprintf("choice%d", i), Next: append([]Edge{{To: review}}, toNext...), Succeeds: i+1 == blocks},
			Node{Name: fmt.Sprintf("review%d", i), Kind: Review, Of: send,
				Next: append([]Edge{{To: send, Kind: Approve}}, reject...), Succeeds: i+1 == blocks},
			Node{Name: fmt.Sprintf("send%d", i), Kind: Tool, Gated: true, Next: sendNext, Succeeds: i+1 == blocks},
		)
	}
	return g
}

func TestBlockGraph(t *testing.T) {
	g := blockGraph(10000)
	if v := ReviewBeforeTool(g); len(v) != 0 {
		t.Errorf("ReviewBeforeTool found %d violations, first %v", len(v), g.Names(v[0].Path))
	}
	f := NoFallback(g)
	// Every fetch falls over to the next fetch, and every send's retry
	// review can be rejected into it (the last block loops back instead).
	if len(f) != 4000 {
		t.Fatalf("NoFallback found %d fallbacks, want 4000", len(f))
	}
	for i, want := range []string{"[fetch0 pass0 choice0 fetch1]", "[send0 review0 fetch1]"} {
		if got := fmt.Sprint(g.Names(f[i].Path)); got != want {
			t.Errorf("fallback %d: %s, want %s", i, got, want)
		}
	}
}

func BenchmarkReviewBeforeTool(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		g := blockGraph(n)
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ReviewBeforeTool(g)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
		})
	}
}

func BenchmarkNoFallback(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		g := blockGraph(n)
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				NoFallback(g)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
		})
	}
}

// BenchmarkLastReviewsOf asks for the last reviews of every gated tool of
// the graph at once, as the resolver does per scope: ns/node stays flat
// when the answer costs linear time in the graph, not one search per tool.
func BenchmarkLastReviewsOf(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		g := blockGraph(n)
		var gated []int
		for v, nd := range g.Nodes {
			if nd.Kind == Tool && nd.Gated {
				gated = append(gated, v)
			}
		}
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				LastReviewsOf(g, gated)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node")
		})
	}
}
