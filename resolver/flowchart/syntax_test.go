package flowchart

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// No Mermaid or Graphviz parser runs in the tests (mermaid-cli needs a
// browser, Graphviz a system package): checkMermaid and checkDOT check the
// subset of each language the pictures use, line by line, strictly enough
// that an unescaped quote, bracket or newline in a label, an edge to a
// node never declared, or a style naming an edge that does not exist is
// found.

const (
	mId = `[a-z][a-z0-9_]*`
	// mLabel is what mermaidText writes: safe characters, entity codes,
	// and the line breaks mermaidNode writes.
	mLabel = `(?:[A-Za-z0-9 .,:_\-/()?!+=@]|[\p{L}\p{N}]|#[0-9]+;|<br/>)*`
	mStyle = `[a-z-]+:[a-z0-9#. -]+(?:,[a-z-]+:[a-z0-9#. -]+)*`
)

var (
	mNode      = regexp.MustCompile(`^(` + mId + `)(\[\[|\[/|\[|\{\{|\{|\(\[|\(\(|\(|>)"(` + mLabel + `)"(\]\]|/\]|\\\]|\]|\}\}|\}|\]\)|\)\)|\))$`)
	mSubgraph  = regexp.MustCompile(`^subgraph (` + mId + `) \["` + mLabel + `"\]$`)
	mEdge      = regexp.MustCompile(`^(` + mId + `) (-->|-\.->|-\.-)(?:\|"` + mLabel + `"\|)? (` + mId + `)$`)
	mClassDef  = regexp.MustCompile(`^classDef [a-z]+ ` + mStyle + `$`)
	mClass     = regexp.MustCompile(`^class (` + mId + `(?:,` + mId + `)*) [a-z]+$`)
	mLinkStyle = regexp.MustCompile(`^linkStyle ([0-9]+(?:,[0-9]+)*) ` + mStyle + `$`)
	mNodeStyle = regexp.MustCompile(`^style (` + mId + `) ` + mStyle + `$`)
	mComment   = regexp.MustCompile(`^%% [^%{}]*$`)
	// mQuoted are the quoted texts of a line; mWholeLineWords the words
	// Mermaid reads on a whole line, quotes or not (mermaidText).
	mQuoted         = regexp.MustCompile(`"[^"]*"`)
	mWholeLineWords = regexp.MustCompile(`(?i)direction|style|classdef`)
	// mShapes pairs each opening with its closing.
	mShapes = map[string]string{"[": "]", "[[": "]]", "[/": "/]", "{{": "}}", "{": "}", "([": "])", "((": "))", "(": ")", ">": "]"}
	// mReserved are words Mermaid reads as keywords where a node id stands.
	mReserved = map[string]bool{"end": true, "graph": true, "flowchart": true, "subgraph": true, "style": true, "class": true,
		"classDef": true, "linkStyle": true, "click": true, "direction": true, "default": true}
)

// checkMermaid returns what is wrong with a Mermaid flowchart as
// mermaid() writes it.
func checkMermaid(src string) []string {
	var problems []string
	bad := func(n int, format string, a ...any) {
		problems = append(problems, fmt.Sprintf("line %d: %s", n+1, fmt.Sprintf(format, a...)))
	}
	lines := strings.Split(strings.TrimSuffix(src, "\n"), "\n")
	if lines[0] != "flowchart TD" {
		bad(0, "not a flowchart: %q", lines[0])
	}
	nodes, subgraphs := map[string]bool{}, map[string]bool{}
	var edges [][2]string
	type ref struct {
		line int
		id   string // a node id; for a linkStyle, its edge indexes
	}
	var refs, linkStyles []ref
	depth := 0
	for n, raw := range lines[1:] {
		n++
		l := strings.TrimSpace(raw)
		for _, q := range mQuoted.FindAllString(l, -1) {
			if w := mWholeLineWords.FindString(q); w != "" {
				bad(n, "%q in a label: Mermaid reads it on the whole line", w)
			}
		}
		var m []string
		switch {
		case mComment.MatchString(l), l == "direction TB":
		case l == "end":
			if depth--; depth < 0 {
				bad(n, "end without a subgraph")
			}
		case mSubgraph.MatchString(l):
			m = mSubgraph.FindStringSubmatch(l)
			subgraphs[m[1]] = true
			depth++
		case mNode.MatchString(l):
			m = mNode.FindStringSubmatch(l)
			if mShapes[m[2]] != m[4] && !(m[2] == "[/" && m[4] == `\]`) {
				bad(n, "shape %s closed by %s", m[2], m[4])
			}
			if nodes[m[1]] {
				bad(n, "node %s declared twice", m[1])
			}
			nodes[m[1]] = true
		case mEdge.MatchString(l):
			m = mEdge.FindStringSubmatch(l)
			edges = append(edges, [2]string{m[1], m[3]})
			refs = append(refs, ref{n, m[1]}, ref{n, m[3]})
		case mClassDef.MatchString(l):
		case mClass.MatchString(l):
			for _, id := range strings.Split(mClass.FindStringSubmatch(l)[1], ",") {
				refs = append(refs, ref{n, id})
			}
		case mLinkStyle.MatchString(l):
			linkStyles = append(linkStyles, ref{n, mLinkStyle.FindStringSubmatch(l)[1]})
		case mNodeStyle.MatchString(l):
			refs = append(refs, ref{n, mNodeStyle.FindStringSubmatch(l)[1]})
		default:
			bad(n, "not a statement of the subset: %q", l)
		}
	}
	if depth != 0 {
		bad(len(lines)-1, "%d subgraphs not ended", depth)
	}
	for id := range nodes {
		if mReserved[id] || id[0] == 'o' || id[0] == 'x' || subgraphs[id] {
			bad(0, "node id %s is a keyword, starts with o or x, or is a subgraph's", id)
		}
	}
	for _, r := range refs {
		if !nodes[r.id] {
			bad(r.line, "%s is not a declared node", r.id)
		}
	}
	for _, ls := range linkStyles {
		for _, k := range strings.Split(ls.id, ",") {
			if i, _ := strconv.Atoi(k); i >= len(edges) {
				bad(ls.line, "linkStyle %d: there are %d edges", i, len(edges))
			}
		}
	}
	return problems
}

const (
	dId    = `[a-z][a-z0-9_]*`
	dValue = `(?:"(?:[^"\\\n]|\\.)*"|[A-Za-z0-9.#]+)`
	dAttrs = `[a-z]+=` + dValue + `(?:, [a-z]+=` + dValue + `)*`
)

var (
	dNode    = regexp.MustCompile(`^(` + dId + `) \[` + dAttrs + `\]$`)
	dEdge    = regexp.MustCompile(`^(` + dId + `) -> (` + dId + `)(?: \[` + dAttrs + `\])?$`)
	dCluster = regexp.MustCompile(`^subgraph cluster_` + dId + ` \{$`)
	dGraph   = regexp.MustCompile(`^[a-z]+=` + dValue + `$`)
	dDefault = regexp.MustCompile(`^(?:node|edge) \[` + dAttrs + `\]$`)
	// dKeywords are DOT's keywords, which no id may be (any case).
	dKeywords = map[string]bool{"node": true, "edge": true, "graph": true, "digraph": true, "subgraph": true, "strict": true}
)

// checkDOT returns what is wrong with a DOT digraph as dot() writes it.
func checkDOT(src string) []string {
	var problems []string
	bad := func(n int, format string, a ...any) {
		problems = append(problems, fmt.Sprintf("line %d: %s", n+1, fmt.Sprintf(format, a...)))
	}
	lines := strings.Split(strings.TrimSuffix(src, "\n"), "\n")
	if lines[0] != "digraph solution {" {
		bad(0, "not a digraph: %q", lines[0])
	}
	nodes := map[string]bool{}
	var ends [][2]any
	depth := 1
	for n, raw := range lines[1:] {
		n++
		l := strings.TrimSpace(raw)
		switch {
		case l == "}":
			depth--
		case dCluster.MatchString(l):
			depth++
		case dDefault.MatchString(l):
		case dNode.MatchString(l):
			id := dNode.FindStringSubmatch(l)[1]
			if nodes[id] || dKeywords[strings.ToLower(id)] {
				bad(n, "node %s declared twice or a keyword", id)
			}
			nodes[id] = true
		case dEdge.MatchString(l):
			m := dEdge.FindStringSubmatch(l)
			ends = append(ends, [2]any{n, m[1]}, [2]any{n, m[2]})
		case dGraph.MatchString(l):
		default:
			bad(n, "not a statement of the subset: %q", l)
		}
		if depth <= 0 && n != len(lines)-1 {
			bad(n, "the digraph ends before its last line")
		}
	}
	if depth != 0 {
		bad(len(lines)-1, "braces do not balance (%d open)", depth)
	}
	for _, e := range ends {
		if !nodes[e[1].(string)] {
			bad(e[0].(int), "%s is not a declared node", e[1])
		}
	}
	return problems
}

// The checkers find what they are for: each broken picture is refused.
func TestCheckersRefuseBrokenPictures(t *testing.T) {
	good := "flowchart TD\n    s_a[\"a\"]\n    s_b(\"b\")\n    s_a -->|\"x\"| s_b\n    linkStyle 0 stroke:#d50000\n"
	if p := checkMermaid(good); len(p) > 0 {
		t.Fatalf("a good flowchart refused: %v", p)
	}
	for name, src := range map[string]string{
		"quote in a label":         "flowchart TD\n    s_a[\"a\"b\"]\n",
		"bracket in a label":       "flowchart TD\n    s_a[\"a]\"]\n",
		"html in a label":          "flowchart TD\n    s_a[\"<b>a</b>\"]\n",
		"edge to an undeclared":    "flowchart TD\n    s_a[\"a\"]\n    s_a --> s_b\n",
		"linkStyle past the edges": "flowchart TD\n    s_a[\"a\"]\n    s_a --> s_a\n    linkStyle 1 stroke:#d50000\n",
		"shape not closed":         "flowchart TD\n    s_a[\"a\"}\n",
		"end as a node id":         "flowchart TD\n    end[\"a\"]\n",
		"id starting with o":       "flowchart TD\n    o_a[\"a\"]\n",
		"subgraph not ended":       "flowchart TD\n    subgraph b_a [\"x\"]\n    s_a[\"a\"]\n",
		"directive in a comment":   "flowchart TD\n    %% %%{init: {}}%%\n",
		"a style with a semicolon": "flowchart TD\n    s_a[\"a\"]\n    style s_a fill:#fff;\n",
		"direction in a label":     "flowchart TD\n    s_a[\"a direction LR\"]\n",
		"style in a label":         "flowchart TD\n    s_a[\"Style: #35;\"]\n",
	} {
		if len(checkMermaid(src)) == 0 {
			t.Errorf("mermaid: %s accepted", name)
		}
	}
	goodDOT := "digraph solution {\n    s_a [shape=box, label=\"a \\\" b\"]\n    s_b [shape=box, label=\"b\"]\n    s_a -> s_b [label=\"x\"]\n}\n"
	if p := checkDOT(goodDOT); len(p) > 0 {
		t.Fatalf("a good digraph refused: %v", p)
	}
	for name, src := range map[string]string{
		"quote in a label":      "digraph solution {\n    s_a [shape=box, label=\"a\"b\"]\n}\n",
		"edge to an undeclared": "digraph solution {\n    s_a [shape=box, label=\"a\"]\n    s_a -> s_b\n}\n",
		"unbalanced":            "digraph solution {\n    subgraph cluster_a {\n}\n",
		"keyword id":            "digraph solution {\n    node [shape=box, label=\"a\"]\n    edge -> node\n}\n",
		"trailing backslash":    "digraph solution {\n    s_a [shape=box, label=\"a\\\"]\n}\n",
	} {
		if len(checkDOT(src)) == 0 {
			t.Errorf("dot: %s accepted", name)
		}
	}
}
