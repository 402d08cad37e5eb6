package flowchart

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// mermaidText escapes s for a double-quoted Mermaid string (a label, an
// edge's text, a subgraph's title): letters, digits, the space and
// . , : _ - / ( ) ? ! + = @ stay as they are; a control character
// becomes a space; any other character becomes Mermaid's entity code
// "#<decimal>;" (mermaid.js.org, "Entity codes to escape characters"),
// which Mermaid draws as the character. So the result holds no '"' to
// end the string, no bracket, brace, pipe, backtick or '<' that Mermaid
// or HTML would read, no '%' to start a directive, no '$' to start
// math and no '#' but an entity's own, whatever s holds.
//
// Mermaid also reads three words on a whole line before it parses it,
// quotes or not: a line holding "direction" and TB, BT, LR or RL is a
// direction statement (its flowchart lexer), and on a line holding
// "style" or "classDef", a ':' and a '#', the last ';' is dropped (its
// encodeEntities), which would spoil an entity. The last letter of each
// of these words, in any case, is written as an entity too.
func mermaidText(s string) string {
	return mermaidWords.ReplaceAllStringFunc(mermaidChars(s), func(w string) string {
		last := w[len(w)-1]
		return w[:len(w)-1] + "#" + strconv.Itoa(int(last)) + ";"
	})
}

// mermaidWords are the words Mermaid reads on a whole line (mermaidText).
var mermaidWords = regexp.MustCompile(`(?i)direction|style|classdef`)

// mermaidChars is mermaidText but for mermaidWords.
func mermaidChars(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		case r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(" .,:_-/()?!+=@", r)):
			b.WriteRune(r)
		case r >= 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)) && r != unicode.ReplacementChar:
			b.WriteRune(r)
		default:
			b.WriteString("#" + strconv.Itoa(int(r)) + ";")
		}
	}
	return b.String()
}

// dotText escapes s for a double-quoted DOT string used as a label
// (graphviz.org, "The DOT Language" and "escString"): '"' becomes \",
// '\' becomes \\ (so that no \n, \N or \G of Graphviz's own is read in
// it), '&' becomes &amp; (Graphviz reads entities in labels), and a
// control character becomes a space.
func dotText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
