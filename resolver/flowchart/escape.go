package flowchart

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/toolgate/toolgate/shared/invisible"
)

// shown is s as a label shows it, before either language's escaping:
// bytes that are not UTF-8 as U+FFFD, a C0 control character or DEL as a
// space, and every other character invisible.Is reports (bidirectional
// embeddings, overrides and isolates, zero-width characters, C1 controls,
// tag characters, ...) written out as \u{X} (invisible.Escape), the form
// the CLI shows them in elsewhere. So a label holds no character that
// hides text or draws the text after it in another order
// (docs/toolsets.md, "Invisible characters").
func shown(s string) string {
	return invisible.Escape(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s))
}

// mermaidText escapes s for a double-quoted Mermaid string (a label, an
// edge's text, a subgraph's title): s as shown (control characters as
// spaces, invisible ones as \u{X}), whose letters, digits, the space and
// . , : _ - / ( ) ? ! + = @ stay as they are; any other character becomes
// Mermaid's entity code "#<decimal>;" (mermaid.js.org, "Entity codes to
// escape characters"), which Mermaid draws as the character: \u{202E} as
// "#92;u#123;202E#125;", never "#8238;". So the result holds no '"' to
// end the string, no bracket, brace, pipe, backtick or '<' that Mermaid
// or HTML would read, no '%' to start a directive, no '$' to start math,
// no '#' but an entity's own and no entity of an invisible character,
// whatever s holds.
//
// Mermaid also reads three words on a whole line before it parses it,
// quotes or not: a line holding "direction" and TB, BT, LR or RL is a
// direction statement (its flowchart lexer), and on a line holding
// "style" or "classDef", a ':' and a '#', the last ';' is dropped (its
// encodeEntities), which would spoil an entity. The last letter of each
// of these words, in any case, is written as an entity too.
func mermaidText(s string) string { return mermaidShown(shown(s)) }

// mermaidShown is mermaidText of text already shown (shown, fit): a
// picture's labels.
func mermaidShown(s string) string {
	return mermaidWords.ReplaceAllStringFunc(mermaidChars(s), func(w string) string {
		last := w[len(w)-1]
		return w[:len(w)-1] + "#" + strconv.Itoa(int(last)) + ";"
	})
}

// mermaidWords are the words Mermaid reads on a whole line (mermaidText).
var mermaidWords = regexp.MustCompile(`(?i)direction|style|classdef`)

// mermaidChars is mermaidText of shown text but for mermaidWords.
func mermaidChars(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
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
// (graphviz.org, "The DOT Language" and "escString"): s as shown (control
// characters as spaces, invisible ones as \u{X}), in which '"' becomes
// \", '\' becomes \\ (so that no \n, \N or \G of Graphviz's own is read
// in it, and \u{X} is drawn as written) and '&' becomes &amp; (Graphviz
// reads entities in labels).
func dotText(s string) string { return dotShown(shown(s)) }

// dotShown is dotText of text already shown (shown, fit): a picture's
// labels.
func dotShown(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
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
