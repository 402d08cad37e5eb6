package flowchart

import (
	"bytes"
	"fmt"
	"strings"
)

// dotShape is how a node of one shape is drawn in DOT (graphviz.org,
// "Node Shapes" and "Styles for Nodes").
type dotShape struct {
	shape string
	style []string
	extra string // more attributes
}

var dotShapes = map[shape]dotShape{
	shapeTool:     {shape: "box"},
	shapeWorkflow: {shape: "box", extra: "peripheries=2"},
	shapeReview:   {shape: "hexagon"},
	shapeChoice:   {shape: "diamond"},
	shapePass:     {shape: "box", style: []string{"rounded"}},
	shapeWait:     {shape: "parallelogram"},
	shapeForEach:  {shape: "trapezium"},
	shapeSucceed:  {shape: "oval", style: []string{"filled"}, extra: `fillcolor="` + fillSucceed + `"`},
	shapeFail:     {shape: "oval", style: []string{"filled"}, extra: `fillcolor="` + fillFail + `"`},
	shapeEnd:      {shape: "circle"},
	shapeUnknown:  {shape: "box", style: []string{"dashed"}},
}

// dotLines are the style and colour of each line but next's: dashed red
// for on_error, dotted orange and purple for on_reject and on_timeout,
// green for on_approve, and dashed grey without a head for a review's
// "approves".
var dotLines = map[line][2]string{
	lineApprove:  {"", colourApprove},
	lineReject:   {"dotted", colourReject},
	lineTimeout:  {"dotted", colourTimeout},
	lineError:    {"dashed", colourError},
	lineApproves: {"dashed", colourOf},
}

// dot writes the picture as a Graphviz digraph: the nodes (a body's in
// its cluster), then the edges.
func (p *picture) dot() []byte {
	var b bytes.Buffer
	b.WriteString("digraph solution {\n")
	fmt.Fprintf(&b, "    label=\"%s\"\n    labelloc=\"t\"\n", dotShown(p.title))
	b.WriteString("    node [fontname=\"Helvetica\", fontsize=11]\n    edge [fontname=\"Helvetica\", fontsize=10]\n")
	for _, n := range p.nodes {
		if n.cluster < 0 {
			b.WriteString("    " + dotNode(n) + "\n")
		}
	}
	for c, cl := range p.clusters {
		fmt.Fprintf(&b, "    subgraph cluster_%s {\n        label=\"%s\"\n        style=\"dashed\"\n", cl.id, dotShown(cl.title))
		for _, n := range p.nodes {
			if n.cluster == c {
				b.WriteString("        " + dotNode(n) + "\n")
			}
		}
		b.WriteString("    }\n")
	}
	for _, e := range p.edges {
		var attrs []string
		if e.label != "" {
			attrs = append(attrs, `label="`+dotShown(e.label)+`"`)
		}
		style, colour := dotLines[e.line][0], dotLines[e.line][1]
		if style != "" {
			attrs = append(attrs, `style="`+style+`"`)
		}
		if e.line == lineApproves {
			attrs = append(attrs, `arrowhead="none"`)
		}
		if e.onPath {
			colour = colourPath
			attrs = append(attrs, "penwidth=3")
		}
		if colour != "" {
			attrs = append(attrs, `color="`+colour+`", fontcolor="`+colour+`"`)
		}
		fmt.Fprintf(&b, "    %s -> %s", e.from, e.to)
		if len(attrs) > 0 {
			fmt.Fprintf(&b, " [%s]", strings.Join(attrs, ", "))
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// dotNode declares node n: its id, shape, label (lines apart) and style.
// A later attribute replaces an earlier one of the same name, so the
// refused path's colours come last.
func dotNode(n node) string {
	text := make([]string, len(n.lines))
	for i, l := range n.lines {
		text[i] = dotShown(l)
	}
	s := dotShapes[n.shape]
	attrs := []string{"shape=" + s.shape, `label="` + strings.Join(text, `\n`) + `"`}
	if s.extra != "" {
		attrs = append(attrs, s.extra)
	}
	style := append([]string{}, s.style...)
	if n.gated {
		attrs = append(attrs, "penwidth=3")
	}
	if n.unreachable {
		style = append(style, "dashed")
		attrs = append(attrs, `fontcolor="#757575"`)
	}
	switch {
	case n.refused:
		style = append(style, "filled")
		attrs = append(attrs, `fillcolor="`+fillRefused+`"`, `color="`+colourPath+`"`, "penwidth=4")
	case n.onPath:
		attrs = append(attrs, `color="`+colourPath+`"`, "penwidth=3")
	}
	if len(style) > 0 {
		attrs = append(attrs, `style="`+strings.Join(style, ",")+`"`)
	}
	return n.id + " [" + strings.Join(attrs, ", ") + "]"
}
