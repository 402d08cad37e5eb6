package flowchart

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/resolver"
)

// Format is the language a picture is written in.
type Format string

// The formats; Formats lists them, the default first.
const (
	// Mermaid is a Mermaid flowchart (mermaid.js.org, "Flowcharts
	// Syntax"), which GitHub renders in a ```mermaid block.
	Mermaid Format = "mermaid"
	// DOT is a Graphviz digraph (graphviz.org, "The DOT Language").
	DOT Format = "dot"
)

// Formats are the formats Write takes, the default first.
var Formats = []Format{Mermaid, DOT}

// Write draws g in format f to w, with the paths in refused
// (resolver.Result.Refused) highlighted. It fails for a format not in
// Formats ("unknown format %q"), and with w's error.
func Write(w io.Writer, f Format, g *resolver.StepGraph, refused []resolver.RefusedPath) error {
	p := draw(g, refused)
	var out []byte
	switch f {
	case Mermaid:
		out = p.mermaid()
	case DOT:
		out = p.dot()
	default:
		return fmt.Errorf("unknown format %q (want mermaid or dot)", f)
	}
	_, err := w.Write(out)
	return err
}

// shape is what a node looks like: one per step kind, and the ends.
type shape int

const (
	shapeTool shape = iota
	shapeWorkflow
	shapeReview
	shapeChoice
	shapePass
	shapeWait
	shapeForEach
	shapeSucceed
	shapeFail
	shapeEnd     // end: of the run, or of an iteration in a body
	shapeUnknown // a target that names no step
)

var shapes = map[resolver.StepKind]shape{
	resolver.KindTool: shapeTool, resolver.KindWorkflow: shapeWorkflow, resolver.KindReview: shapeReview,
	resolver.KindChoice: shapeChoice, resolver.KindPass: shapePass, resolver.KindWait: shapeWait,
	resolver.KindForEach: shapeForEach, resolver.KindSucceed: shapeSucceed, resolver.KindFail: shapeFail,
}

// line is how an edge is drawn.
type line int

const (
	lineNext     line = iota // next, a choice's rules and default, a for_each into its body
	lineApprove              // on_approve
	lineReject               // on_reject
	lineTimeout              // on_timeout
	lineError                // on_error
	lineApproves             // a review to the tool step it approves, when on_approve does not go there
)

var lines = map[resolver.EdgeKind]line{
	resolver.EdgeNext: lineNext, resolver.EdgeRule: lineNext, resolver.EdgeDefault: lineNext, resolver.EdgeBody: lineNext,
	resolver.EdgeOnApprove: lineApprove, resolver.EdgeOnReject: lineReject, resolver.EdgeOnTimeout: lineTimeout,
	resolver.EdgeOnError: lineError,
}

// picture is a StepGraph laid out for either format: node ids made,
// labels written as shown (shown, fit; step ids whole: idText), not yet
// escaped for either language, highlights decided.
type picture struct {
	title    string
	nodes    []node
	clusters []cluster
	edges    []edge
}

type node struct {
	id    string
	shape shape
	lines []string // the label, one entry a line
	// cluster is the index in picture.clusters of the body holding the
	// node; -1 at the top level.
	cluster     int
	gated       bool
	unreachable bool
	onPath      bool // on a refused path
	refused     bool // the last step of a refused path: the call refused
}

type cluster struct {
	id, title string
}

type edge struct {
	from, to string
	label    string
	line     line
	onPath   bool
}

// maxLabelRunes bounds each line of a label but a step id's (fit), so
// that a long rule or error code does not stretch a node across the
// page.
const maxLabelRunes = 60

// draw lays out g. Node ids: "s_<step id>" for a step whose id follows
// the rule and is the first with it, else "n<index>"; "e_end" for the
// run's end and "e_<for_each node id>" for an iteration's; "u<n>" for
// a target that names no step. No id is a keyword of either language,
// and none starts with o or x, which Mermaid would read as an edge's end.
func draw(g *resolver.StepGraph, refused []resolver.RefusedPath) *picture {
	p := &picture{title: shown(fmt.Sprintf("Solution %s v%d", g.Solution, g.Version))}
	ids := make([]string, len(g.Steps))
	seen := map[string]bool{}
	for i, st := range g.Steps {
		// An id that follows the step id rule is safe as part of a node
		// id in both formats.
		if resolver.StepIDPattern.MatchString(st.ID) && !seen[st.ID] {
			ids[i] = "s_" + st.ID
			seen[st.ID] = true
		} else {
			ids[i] = "n" + strconv.Itoa(i)
		}
	}
	clusterOf := map[int]int{} // for_each step -> cluster
	for i, st := range g.Steps {
		if st.Kind == resolver.KindForEach {
			clusterOf[i] = len(p.clusters)
			p.clusters = append(p.clusters, cluster{id: "b_" + ids[i], title: "for_each " + idText(st.ID) + ": its body, once per item"})
		}
	}
	scope := func(i int) int {
		if c, ok := clusterOf[g.Steps[i].Loop]; ok {
			return c
		}
		return -1
	}
	index := map[string]int{} // node id -> index in p.nodes
	addNode := func(n node) {
		if _, ok := index[n.id]; !ok {
			index[n.id] = len(p.nodes)
			p.nodes = append(p.nodes, n)
		}
	}
	for i, st := range g.Steps {
		addNode(node{id: ids[i], shape: shapes[st.Kind], lines: stepLines(g, i), cluster: scope(i),
			gated: st.Kind == resolver.KindTool && st.Gated, unreachable: !st.Reachable})
	}
	unknown := map[string]string{} // target name -> node id
	approved := map[[2]int]bool{}  // review, tool: on_approve goes there
	for _, e := range g.Edges {
		var to string
		switch {
		case e.To >= 0:
			to = ids[e.To]
		case e.To == resolver.ToEnd:
			to = "e_end"
			text := []string{"end"}
			c := scope(e.From)
			if c >= 0 {
				to = "e_" + ids[g.Steps[e.From].Loop]
				text = append(text, "of item")
			}
			addNode(node{id: to, shape: shapeEnd, lines: text, cluster: c})
		default:
			if to = unknown[e.ToName]; to == "" {
				to = "u" + strconv.Itoa(len(unknown)+1)
				unknown[e.ToName] = to
				addNode(node{id: to, shape: shapeUnknown, lines: []string{fit(e.ToName), "no such step"}, cluster: -1})
			}
		}
		if e.Kind == resolver.EdgeOnApprove {
			approved[[2]int{e.From, e.To}] = true
		}
		p.edges = append(p.edges, edge{from: ids[e.From], to: to, label: fit(edgeLabel(e)), line: lines[e.Kind]})
	}
	for i, st := range g.Steps {
		if st.Kind == resolver.KindReview && st.Of >= 0 && !approved[[2]int{i, st.Of}] {
			p.edges = append(p.edges, edge{from: ids[i], to: ids[st.Of], label: "approves", line: lineApproves})
		}
	}
	for _, r := range refused {
		p.highlight(g, ids, index, r)
	}
	return p
}

// highlight marks a refused path's steps and the edges between them: for
// each two steps in a row, every edge from the first to the second, but
// for the first edge of a [no-fallback] path only on_error edges, and for
// the last edge of a Gate A path out of a review of the tool, not its
// on_approve (the path arrives unapproved, so it was not taken).
func (p *picture) highlight(g *resolver.StepGraph, ids []string, index map[string]int, r resolver.RefusedPath) {
	valid := func(i int) bool { return i >= 0 && i < len(ids) }
	for k, i := range r.Path {
		if !valid(i) {
			return
		}
		n := &p.nodes[index[ids[i]]]
		n.onPath = true
		n.refused = n.refused || k == len(r.Path)-1
	}
	for k := 0; k+1 < len(r.Path); k++ {
		from, to := r.Path[k], r.Path[k+1]
		for j, e := range g.Edges {
			switch {
			case e.From != from || e.To != to:
			case r.Rule == resolver.RuleNoFallback && k == 0 && e.Kind != resolver.EdgeOnError:
			case r.Rule == resolver.RuleReviewBefore && k+2 == len(r.Path) && e.Kind == resolver.EdgeOnApprove && g.Steps[from].Of == to:
			default:
				p.edges[j].onPath = true
			}
		}
	}
}

// stepLines is the label of step i: its id, then its kind and options.
func stepLines(g *resolver.StepGraph, i int) []string {
	st := g.Steps[i]
	out := []string{idText(st.ID)}
	switch st.Kind {
	case resolver.KindTool:
		kind := "tool " + st.Tool
		if st.Gated {
			kind += " (gated)"
		}
		out = append(out, fit(kind))
	case resolver.KindWorkflow:
		out = append(out, fit("workflow "+st.Workflow))
	case resolver.KindReview:
		of := "review of no tool step"
		switch {
		case st.Shows:
			of = "review, shows values"
		case st.Of >= 0:
			of = "review of " + idText(g.Steps[st.Of].ID)
		}
		out = append(out, of)
	default:
		out = append(out, string(st.Kind))
	}
	if st.Detail != "" {
		out = append(out, fit(st.Detail))
	}
	if !st.Reachable {
		out = append(out, "(unreachable)")
	}
	return out
}

// edgeLabel is the text an edge carries: the key it is written with,
// and when it is taken.
func edgeLabel(e resolver.GraphEdge) string {
	switch {
	case e.Kind == resolver.EdgeNext:
		return ""
	case e.Kind == resolver.EdgeRule, e.Kind == resolver.EdgeBody:
		return e.Label
	case e.Kind == resolver.EdgeOnReject && e.Label != "":
		return string(e.Kind) + " " + e.Label
	case e.Label != "":
		return string(e.Kind) + ": " + e.Label
	}
	return string(e.Kind)
}

// idText is a step id as a label shows it: whole when it follows the step
// id rule (resolver.StepIDPattern: at most 63 characters), so that two ids are
// never drawn alike; "(no id)" for none; fit for any other, which the
// resolver refuses.
func idText(id string) string {
	switch {
	case id == "":
		return "(no id)"
	case resolver.StepIDPattern.MatchString(id):
		return id
	}
	return fit(id)
}

// fit is s as shown (shown: invisible characters escaped first, so that
// the bound counts their escapes and none is cut unseen), at most
// maxLabelRunes runes: a longer text keeps its start and its end around
// "...", and ends in " #" and the first 8 hex digits of the SHA-256 of
// s, so that two texts alike at both ends are still drawn apart. No
// escape (\u{X}) is cut in two.
func fit(s string) string {
	t := []rune(shown(s))
	if len(t) <= maxLabelRunes {
		return string(t)
	}
	sum := sha256.Sum256([]byte(s))
	mark := " #" + hex.EncodeToString(sum[:4])
	const dots = "..."
	room := maxLabelRunes - len(dots) - len(mark)
	head, tail := room*2/3, len(t)-(room-room*2/3)
	for i := 0; i+2 < len(t) && i < tail; i++ {
		if t[i] != '\\' || t[i+1] != 'u' || t[i+2] != '{' {
			continue
		}
		end := i + 3
		for end < len(t) && end < i+10 && strings.ContainsRune("0123456789ABCDEF", t[end]) {
			end++
		}
		if end == len(t) || t[end] != '}' {
			continue // "\\u{" that is text, doubled: no escape
		}
		// The escape is t[i:end+1].
		if i < head && head <= end {
			head = i
		}
		if i < tail && tail <= end {
			tail = end + 1
		}
		i = end
	}
	return string(t[:head]) + dots + string(t[tail:]) + mark
}
