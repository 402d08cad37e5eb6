package resolver

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/shared/excerpt"
)

// yamlSyntax explains a syntax error of go-yaml (msg, at the token at) in
// words, at the construct it concerns. go-yaml notices a flow mapping or
// sequence that is never closed only where something else begins, often
// lines later; the error is moved to the "{" or "[" that opens it, and says
// where it should have been closed. The other messages are rewritten by
// their kind (yamlMessages); one this table does not know keeps go-yaml's
// text, quoted as the parser's.
func yamlSyntax(src []byte, at Pos, msg string) (Pos, error) {
	switch msg {
	case "',' or '}' must be specified", "could not find flow mapping end token '}'":
		return unclosedFlow(src, at, '{')
	case "',' or ']' must be specified", "sequence end token ']' not found":
		return unclosedFlow(src, at, '[')
	case "could not find '{' character corresponding to '}'", "could not find '[' character corresponding to ']'":
		// A closer of the other kind than the collection open there: that
		// collection is the one never closed.
		other := map[byte]byte{'{': '[', '[': '{'}[msg[len("could not find '")]]
		if o, _, found := flowOpenAt(src, offsetOf(src, at)); found && src[o.off] == other {
			return unclosedFlow(src, at, other)
		}
	}
	if m := yamlDuplicateKey.FindStringSubmatch(msg); m != nil {
		return at, fmt.Errorf("key %s appears twice in this mapping (first on line %s)", excerpt.BytesWithin(m[1], maxQuotedBytes, "..."), m[2])
	}
	off := offsetOf(src, at)
	if strings.HasSuffix(msg, "is a reserved character") {
		return at, errors.New("a plain value may not start with \"@\" or \"`\" (YAML 1.2 §5.3): quote the value")
	}
	for _, m := range yamlMessages {
		if strings.HasPrefix(msg, m.prefix) {
			return at, errors.New(m.say(src, at, off))
		}
	}
	return at, fmt.Errorf("this is not valid YAML (the parser says %q)", msg)
}

// yamlDuplicateKey is go-yaml's message for a key repeated in a mapping.
var yamlDuplicateKey = regexp.MustCompile(`^mapping key ("(?:[^"\\]|\\.)*") already defined at \[(\d+):\d+\]$`)

// yamlMessages rewrites go-yaml's syntax errors by the prefix of their text.
var yamlMessages = []struct {
	prefix string
	say    func(src []byte, at Pos, off int) string
}{
	{"could not find end character of double-quoted text", func([]byte, Pos, int) string {
		return `the double-quoted string that starts here is never closed: it needs a closing "`
	}},
	{"could not find end character of single-quoted text", func([]byte, Pos, int) string {
		return `the single-quoted string that starts here is never closed: it needs a closing '`
	}},
	{"could not find '[' character corresponding to ']'", closesNothing},
	{"could not find '{' character corresponding to '}'", closesNothing},
	{"value is not allowed in this context. map key-value is pre-defined", func([]byte, Pos, int) string {
		return "text follows the quoted value on its line: quote the whole value, or move the text to a line of its own"
	}},
	{"value is not allowed in this context", func(src []byte, at Pos, off int) string {
		if off < len(src) && (src[off] == ']' || src[off] == '}') {
			return closesNothing(src, at, off)
		}
		return "a value cannot start here: check this line's indentation against the lines above it (a mapping and a list cannot share one level)"
	}},
	{"mapping value is not allowed in this context", func([]byte, Pos, int) string {
		return `this value holds ": " or is followed by a more indented "key:" line: quote the value, or check the indentation of the line after it`
	}},
	{"found character '\t' that cannot start any token", indentedByTab},
	{"found a tab character where an indentation space is expected", indentedByTab},
	{"tab character cannot be used for indentation", indentedByTab},
	{"found unknown escape character", func([]byte, Pos, int) string {
		return `this escape is not one a double-quoted YAML string knows (YAML 1.2 §5.7): write \\ for a backslash, or use single quotes`
	}},
	{"unexpected key name", func([]byte, Pos, int) string {
		return `this line is not a "key: value" pair: add the ":" after the key, or check the indentation`
	}},
	{"could not find flow map content", missingValue},
	{"unexpected scalar value type", missingValue},
	{"found unexpected document separator", oneDocument},
	{"value cannot be placed after document separator", oneDocument},
	{"unexpected end content", oneDocument},
}

func closesNothing(src []byte, at Pos, off int) string {
	c := "this bracket"
	if off < len(src) {
		c = strconv.Quote(string(src[off]))
	}
	return fmt.Sprintf("%s closes nothing: no %q is open here", c, map[string]string{`"]"`: "[", `"}"`: "{"}[c])
}

func indentedByTab([]byte, Pos, int) string {
	return "a tab indents this line: YAML indents with spaces only (YAML 1.2 §6.1)"
}

func missingValue([]byte, Pos, int) string {
	return `a value is missing here, between two ","`
}

func oneDocument([]byte, Pos, int) string {
	return `a Solution is one YAML document: remove the "---" or "..." and what follows it, or the text after it on its line`
}

// unclosedFlow explains go-yaml's error at `at` about a flow collection
// opened by open ('{' or '['): go-yaml reports either the opener itself,
// when nothing closes it, or the token where it wanted a "," or the closer.
// When the opener is never closed, the error moves there, naming where its
// closer should have been; when it is closed later, an entry separator is
// missing and the error stays.
func unclosedFlow(src []byte, at Pos, open byte) (Pos, error) {
	what := map[byte]string{'{': "flow mapping", '[': "flow sequence"}[open]
	close := closer(open)
	off := offsetOf(src, at)
	o, end, found := flowOpenAt(src, off)
	if !found || src[o.off] != open {
		// The approximate scan disagrees with go-yaml: say what go-yaml saw.
		return at, fmt.Errorf("a %q or %q must come here, in a %s", ",", ch(close), what)
	}
	switch {
	case end.off < 0 && o.off == off:
		return o.pos, fmt.Errorf("the %q on line %d opens a %s that is never closed: the file ends before its %q", ch(open), o.pos.Line, what, ch(close))
	case end.off < 0 || src[end.off] != close:
		fault := at
		if o.off == off {
			fault = end.pos
		}
		comes := fmt.Sprintf("line %d column %d", fault.Line, fault.Column)
		if f := offsetOf(src, fault); f < len(src) && (src[f] == ']' || src[f] == '}') {
			comes = fmt.Sprintf("%q at line %d column %d", ch(src[f]), fault.Line, fault.Column)
		}
		return o.pos, fmt.Errorf("the %q on line %d opens a %s that is never closed: %s comes before its %q", ch(open), o.pos.Line, what, comes, ch(close))
	}
	return at, fmt.Errorf("a %q is missing before this entry of the %s that opens with %q on line %d", ",", what, ch(open), o.pos.Line)
}

// flowMark is a bracket found by scanFlow: its offset and position.
type flowMark struct {
	off int
	pos Pos
}

// flowOpenAt finds the innermost flow collection open at offset off (one
// opening at off counts as open), and what ends it: the first closing
// bracket at its depth, its own closer or not, or end.off -1 when the file
// ends first.
func flowOpenAt(src []byte, off int) (open, end flowMark, found bool) {
	var stack []flowMark
	end.off = -1
	depth := 0 // once the opener is found: brackets opened inside it and open
	scanFlow(src, func(i int, p Pos, c byte) bool {
		opening := c == '[' || c == '{'
		if !found {
			if i < off || i == off && opening {
				if opening {
					stack = append(stack, flowMark{i, p})
				} else if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
				return true
			}
			if len(stack) == 0 {
				return false
			}
			open, found = stack[len(stack)-1], true
		}
		switch {
		case opening:
			depth++
		case depth > 0:
			depth--
		default:
			end = flowMark{i, p}
			return false
		}
		return true
	})
	if !found && len(stack) > 0 {
		open, found = stack[len(stack)-1], true
	}
	return open, end, found
}

// scanFlow calls visit with the offset, position and byte of every "[",
// "{", "]" and "}" of YAML text src that is outside quoted scalars and
// comments, in order, until visit returns false. The scan is approximate:
// it knows neither block scalars nor plain scalars holding these
// characters, so that its callers only use it where go-yaml has found
// something wrong, or to refuse what go-yaml would parse too slowly.
func scanFlow(src []byte, visit func(off int, p Pos, c byte) bool) {
	line, col := 1, 0
	var quote byte
	comment := false
	for i, c := range src {
		if c&0xC0 != 0x80 { // columns count characters, as go-yaml's do
			col++
		}
		switch {
		case c == '\n':
			line, col, comment = line+1, 0, false
		case comment:
		case quote != 0:
			if c == quote && (quote == '\'' || i == 0 || src[i-1] != '\\') {
				quote = 0
			}
		case (c == '"' || c == '\'') && (i == 0 || strings.IndexByte(" \t\n[{,:-", src[i-1]) >= 0):
			quote = c // a quoted scalar starts only where a scalar can start
		case c == '#' && (i == 0 || src[i-1] == ' ' || src[i-1] == '\t'):
			comment = true
		case c == '[' || c == '{' || c == ']' || c == '}':
			if !visit(i, Pos{line, col}, c) {
				return
			}
		}
	}
}

// offsetOf is the byte offset of the position p in src (columns counted in
// characters), or len(src) past its end.
func offsetOf(src []byte, p Pos) int {
	line, col := 1, 1
	for i := 0; i < len(src); {
		if line == p.Line && col == p.Column || line > p.Line {
			return i
		}
		r, size := utf8.DecodeRune(src[i:])
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return len(src)
}
