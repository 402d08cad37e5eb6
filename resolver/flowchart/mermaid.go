package flowchart

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Colours, shared by both formats.
const (
	colourError   = "#c62828"
	colourReject  = "#ef6c00"
	colourTimeout = "#6a1b9a"
	colourApprove = "#2e7d32"
	colourOf      = "#9e9e9e"
	colourPath    = "#d50000"
	fillRefused   = "#ffcdd2"
	fillFail      = "#fdecea"
	fillSucceed   = "#e8f5e9"
)

// mermaidShapes opens and closes a node of each shape around its quoted
// label (mermaid.js.org, "Flowcharts Syntax", "Node shapes").
var mermaidShapes = map[shape][2]string{
	shapeTool:     {"[", "]"},
	shapeWorkflow: {"[[", "]]"},
	shapeReview:   {"{{", "}}"},
	shapeChoice:   {"{", "}"},
	shapePass:     {"(", ")"},
	shapeWait:     {"[/", "/]"},
	shapeForEach:  {"[/", `\]`},
	shapeSucceed:  {"([", "])"},
	shapeFail:     {"([", "])"},
	shapeEnd:      {"((", "))"},
	shapeUnknown:  {">", "]"},
}

// mermaidArrows is the link of each line: dotted for the edges a step is
// left by when it fails or is not approved, a line without a head for a
// review's "approves".
var mermaidArrows = map[line]string{
	lineNext: "-->", lineApprove: "-->", lineReject: "-.->", lineTimeout: "-.->", lineError: "-.->", lineApproves: "-.-",
}

// mermaidLinkStyles colours each line but next's.
var mermaidLinkStyles = map[line]string{
	lineApprove:  "stroke:" + colourApprove + ",color:" + colourApprove,
	lineReject:   "stroke:" + colourReject + ",color:" + colourReject,
	lineTimeout:  "stroke:" + colourTimeout + ",color:" + colourTimeout,
	lineError:    "stroke:" + colourError + ",color:" + colourError,
	lineApproves: "stroke:" + colourOf + ",color:" + colourOf,
}

// mermaidClasses are the node classes (classDef) the pictures use.
var mermaidClasses = map[string]string{
	"gated":       "stroke-width:3px",
	"fail":        "fill:" + fillFail,
	"succeed":     "fill:" + fillSucceed,
	"unreachable": "color:#757575,stroke-dasharray: 5 5",
}

// mermaid writes the picture as a Mermaid flowchart: the nodes (a body's
// in its subgraph), then the edges, then the classes and styles, so that
// edge k is the k-th link, as linkStyle counts them. No statement ends in
// ";", which Mermaid would read as the end of an entity in a style.
func (p *picture) mermaid() []byte {
	var b bytes.Buffer
	b.WriteString("flowchart TD\n")
	fmt.Fprintf(&b, "    %%%% %s\n", mermaidShown(p.title))
	for _, n := range p.nodes {
		if n.cluster < 0 {
			b.WriteString("    " + mermaidNode(n) + "\n")
		}
	}
	for c, cl := range p.clusters {
		fmt.Fprintf(&b, "    subgraph %s [\"%s\"]\n", cl.id, mermaidShown(cl.title))
		b.WriteString("        direction TB\n")
		for _, n := range p.nodes {
			if n.cluster == c {
				b.WriteString("        " + mermaidNode(n) + "\n")
			}
		}
		b.WriteString("    end\n")
	}
	for _, e := range p.edges {
		arrow := mermaidArrows[e.line]
		if e.label != "" {
			arrow += `|"` + mermaidShown(e.label) + `"|`
		}
		fmt.Fprintf(&b, "    %s %s %s\n", e.from, arrow, e.to)
	}
	for _, class := range []string{"gated", "fail", "succeed", "unreachable"} {
		var ids []string
		for _, n := range p.nodes {
			if n.hasClass(class) {
				ids = append(ids, n.id)
			}
		}
		if len(ids) > 0 {
			fmt.Fprintf(&b, "    classDef %s %s\n    class %s %s\n", class, mermaidClasses[class], strings.Join(ids, ","), class)
		}
	}
	for _, l := range []line{lineApprove, lineReject, lineTimeout, lineError, lineApproves} {
		var at []string
		for k, e := range p.edges {
			if e.line == l && !e.onPath {
				at = append(at, strconv.Itoa(k))
			}
		}
		if len(at) > 0 {
			fmt.Fprintf(&b, "    linkStyle %s %s\n", strings.Join(at, ","), mermaidLinkStyles[l])
		}
	}
	var path []string
	for k, e := range p.edges {
		if e.onPath {
			path = append(path, strconv.Itoa(k))
		}
	}
	if len(path) > 0 {
		fmt.Fprintf(&b, "    linkStyle %s stroke:%s,stroke-width:4px,color:%s\n", strings.Join(path, ","), colourPath, colourPath)
	}
	for _, n := range p.nodes {
		switch {
		case n.refused:
			fmt.Fprintf(&b, "    style %s fill:%s,stroke:%s,stroke-width:4px\n", n.id, fillRefused, colourPath)
		case n.onPath:
			fmt.Fprintf(&b, "    style %s stroke:%s,stroke-width:3px\n", n.id, colourPath)
		}
	}
	return b.Bytes()
}

// mermaidNode declares node n: its id, shape and label, lines apart.
func mermaidNode(n node) string {
	text := make([]string, len(n.lines))
	for i, l := range n.lines {
		text[i] = mermaidShown(l)
	}
	s := mermaidShapes[n.shape]
	return n.id + s[0] + `"` + strings.Join(text, "<br/>") + `"` + s[1]
}

// hasClass reports whether node n is drawn with the Mermaid class (or,
// in DOT, the attributes) of that name.
func (n node) hasClass(class string) bool {
	switch class {
	case "gated":
		return n.gated
	case "fail":
		return n.shape == shapeFail
	case "succeed":
		return n.shape == shapeSucceed
	case "unreachable":
		return n.unreachable
	}
	return false
}
