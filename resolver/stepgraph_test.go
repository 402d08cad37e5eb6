package resolver

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
)

// The StepGraph of every example Solution has exactly the edges the checks
// follow (checker.targets, and each for_each into its body), so a picture
// shows the graph Gate A saw.
func TestStepGraphHasTheEdgesTheChecksFollow(t *testing.T) {
	for _, f := range solutionFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			res := Compile(filepath.Base(f), src, Options{})
			if res.Graph == nil {
				return // refused before its steps were checked
			}
			c := checkerOf(t, src)
			var want, got []string
			for i, st := range c.sol.Steps {
				for _, r := range c.targets(st) {
					want = append(want, fmt.Sprintf("%d %s %s", i, r.what, r.ref.Name))
				}
				if b := c.bodyStart(st); b >= 0 {
					want = append(want, fmt.Sprintf("%d for_each %s", i, c.sol.Steps[b].ID))
				}
			}
			for _, e := range res.Graph.Edges {
				what := string(e.Kind)
				switch e.Kind {
				case EdgeRule:
					what = "next" // a choice rule's next
				case EdgeOnTimeout, EdgeOnReject, EdgeOnApprove, EdgeDefault, EdgeOnError, EdgeNext, EdgeBody:
				default:
					t.Errorf("edge of unknown kind %q", e.Kind)
				}
				got = append(got, fmt.Sprintf("%d %s %s", e.From, what, e.ToName))
				_, known := c.index[e.ToName]
				switch {
				case e.ToName == EndTarget && e.To != ToEnd,
					e.To >= 0 && res.Graph.Steps[e.To].ID != e.ToName,
					e.To == ToUnknown && known:
					t.Errorf("edge %+v resolves its target wrongly", e)
				}
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(want, got) {
				t.Errorf("edges differ\nchecks: %v\ngraph:  %v", want, got)
			}
		})
	}
}

// checkerOf runs the checks Compile runs up to reachability, for a test
// that compares the StepGraph with the checker's own view.
func checkerOf(t *testing.T, src []byte) *checker {
	t.Helper()
	ds := &diags{file: "x"}
	v, ok := parseChecked(src, ds)
	if !ok {
		t.Fatal("parse")
	}
	sol := (&decoder{ds: ds}).decodeSolution(v)
	c := &checker{ds: ds, cat: catalog.Default(), sol: sol}
	c.resolve()
	c.admit()
	c.reach(c.graph())
	return c
}

// Every [review-before-tool] and [no-fallback] diagnostic has its path as
// data (Result.Refused), at its line and column, naming the steps its
// message lists; no other diagnostic has one.
func TestRefusedPathsAreTheDiagnosticsPaths(t *testing.T) {
	seen := 0
	for _, f := range solutionFiles(t) {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		res := Compile(filepath.Base(f), src, Options{})
		var paths []Diagnostic
		for _, d := range res.Diagnostics {
			if d.Rule == RuleReviewBefore || d.Rule == RuleNoFallback {
				paths = append(paths, d)
			}
		}
		if len(paths) != len(res.Refused) {
			t.Errorf("%s: %d path diagnostics, %d refused paths", f, len(paths), len(res.Refused))
			continue
		}
		for _, r := range res.Refused {
			names := make([]string, len(r.Path))
			for k, i := range r.Path {
				names[k] = res.Graph.Steps[i].ID
			}
			i := slices.IndexFunc(paths, func(d Diagnostic) bool {
				return d.Rule == r.Rule && d.Line == r.Line && d.Column == r.Column && strings.Contains(d.Message, ": "+strings.Join(names, " → "))
			})
			if i < 0 {
				t.Errorf("%s: refused path %s %v at %d:%d is no diagnostic's: %v", f, r.Rule, names, r.Line, r.Column, paths)
			}
			seen++
		}
	}
	if seen < 4 {
		t.Fatalf("only %d refused paths in the examples: the test checks too little", seen)
	}
}

// A refused Solution still has its graph; one whose steps were never
// decoded has none.
func TestStepGraphOfRefusedSolutions(t *testing.T) {
	cases := []struct {
		name      string
		src       string
		wantGraph bool
	}{
		{"refused by Gate A", "solution: s\nversion: 1\nsteps:\n  - {id: send, tool: send-email, with: {to: [a@example.com], subject: s, text: t}}\n", true},
		{"an unknown target", "solution: s\nversion: 1\nsteps:\n  - {id: a, pass: {}, next: nowhere}\n", true},
		{"syntax", "solution: [\n", false},
		{"no steps", "solution: s\nversion: 1\nsteps: []\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Compile("x.yaml", []byte(c.src), Options{})
			if res.OK() {
				t.Fatal("compiled")
			}
			if (res.Graph != nil) != c.wantGraph {
				t.Fatalf("graph %v, want one: %v", res.Graph, c.wantGraph)
			}
		})
	}
	res := Compile("x.yaml", []byte("solution: s\nversion: 1\nsteps:\n  - {id: a, pass: {}, next: nowhere}\n"), Options{})
	if e := res.Graph.Edges[0]; e.To != ToUnknown || e.ToName != "nowhere" {
		t.Errorf("edge to an unknown step: %+v", e)
	}
	res = Compile("x.yaml", []byte("solution: s\nversion: 1\nsteps:\n  - {id: send, tool: send-email, with: {to: [a@example.com], subject: s, text: t}}\n"), Options{})
	if len(res.Refused) != 1 || !slices.Equal(res.Refused[0].Path, []int{0}) || !res.Graph.Steps[0].Gated {
		t.Errorf("Gate A of a lone send: %+v, graph %+v", res.Refused, res.Graph.Steps)
	}
}
