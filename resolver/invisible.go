package resolver

import (
	"bytes"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/toolgate/toolgate/shared/invisible"
)

// MaxInvisibleLines bounds the [invisible] warnings of one Solution: the
// first MaxInvisibleLines lines that hold such characters are named, and
// one more warning counts the lines after them.
const MaxInvisibleLines = 10

// InvisibleLine is a line of a Solution's source that holds characters a
// reader does not see or that reorder what they see (invisible.Is: a
// right-to-left override U+202E shows the text after it backwards, a
// zero-width space U+200B splits a word unseen, tag characters carry a
// hidden message). Such a character in a string, a key or a comment
// reaches reviewers and publishers as text they read otherwise than
// toolgate does (docs/solutions.md, "Invisible characters").
type InvisibleLine struct {
	// Line is the line's number, from 1; Column the first such
	// character's, in characters from 1, as a diagnostic counts them.
	Line, Column int
	// Runes are the characters, each once, in code point order.
	Runes []rune
}

// String names the line and the code points, never the text around them:
// "line 3 has invisible or bidirectional characters (U+202E) ...".
func (l InvisibleLine) String() string {
	return fmt.Sprintf("line %d has invisible or bidirectional characters (%s): a reader of the Solution does not see them, or sees the text around them reordered", l.Line, invisible.CodePoints(l.Runes))
}

// InvisibleLines returns every line of src that holds characters
// invisible.Is reports, in order. Lines end at "\n"; a carriage return is
// not reported, since YAML reads it as a line break (YAML 1.2 §5.4) and
// JSON as white space (RFC 8259 §2). Bytes that are not UTF-8 are skipped
// (the parser refuses them).
func InvisibleLines(src []byte) []InvisibleLine {
	var out []InvisibleLine
	n := 0
	for line := range bytes.Lines(src) {
		n++
		found := InvisibleLine{Line: n}
		for col, i := 1, 0; i < len(line); col++ {
			if b := line[i]; b < utf8.RuneSelf && !asciiInvisible[b] {
				i++
				continue
			}
			r, size := utf8.DecodeRune(line[i:])
			i += size
			if r == '\r' || r == utf8.RuneError && size == 1 || !invisible.Is(r) {
				continue
			}
			if found.Column == 0 {
				found.Column = col
			}
			if !slices.Contains(found.Runes, r) {
				found.Runes = append(found.Runes, r)
			}
		}
		if len(found.Runes) > 0 {
			slices.Sort(found.Runes)
			out = append(out, found)
		}
	}
	return out
}

// checkInvisible warns of each line of src that holds invisible or
// bidirectional characters ([invisible], InvisibleLines), the first
// MaxInvisibleLines by name and the rest in one more warning. They are
// not refused: a comment may have a reason for a soft hyphen.
func checkInvisible(ds *diags, src []byte) {
	lines := InvisibleLines(src)
	for _, l := range lines[:min(len(lines), MaxInvisibleLines)] {
		ds.add(SeverityWarning, Pos{l.Line, l.Column}, RuleInvisible, nil, "%s", l)
	}
	if rest := lines[min(len(lines), MaxInvisibleLines):]; len(rest) > 0 {
		var rs []rune
		for _, l := range rest {
			for _, r := range l.Runes {
				if !slices.Contains(rs, r) {
					rs = append(rs, r)
				}
			}
		}
		slices.Sort(rs)
		ds.add(SeverityWarning, Pos{rest[0].Line, rest[0].Column}, RuleInvisible, nil,
			"%d more lines, from line %d on, have invisible or bidirectional characters (%s)", len(rest), rest[0].Line, invisible.CodePoints(rs))
	}
}

// asciiInvisible is invisible.Is of each ASCII character, taken from it
// once, so that InvisibleLines decodes and looks up only the others.
var asciiInvisible = func() (t [utf8.RuneSelf]bool) {
	for r := range t {
		t[r] = invisible.Is(rune(r))
	}
	return t
}()
