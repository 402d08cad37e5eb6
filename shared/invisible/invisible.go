package invisible

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// tags is the tag block, U+E0000–U+E007F: its assigned characters are
// format characters (Cf), and its unassigned ones render as nothing too.
var tags = &unicode.RangeTable{R32: []unicode.Range32{{Lo: 0xE0000, Hi: 0xE007F, Stride: 1}}}

// Is reports whether r is escaped where a person reads text: a control
// character other than tab and newline, a format character, a tag
// character, U+2028 or U+2029, a variation selector or another default
// ignorable code point (Unicode's Default_Ignorable_Code_Point property:
// they render as nothing, and variation selectors can carry a byte each),
// or a private-use character (the package documentation).
func Is(r rune) bool {
	switch r {
	case '\t', '\n':
		return false
	case '\u2028', '\u2029':
		return true
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, tags, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point, unicode.Co)
}

// Escape returns s with each character Is reports written as \u{X}: X its
// code point in upper-case hex, at least four digits ("\u{202E}",
// "\u{E0041}"). So that the result reads back one way only, a run of
// backslashes that comes before "u{" in the result (before an escape, or
// before "u{" in s) is doubled: an odd run before "u{" ends in an escape,
// an even one does not. Other backslashes, and bytes that are not UTF-8,
// are left as they are.
func Escape(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(s[i : i+1])
		case Is(r):
			fmt.Fprintf(&b, `\u{%04X}`, r)
		case r == '\\':
			run := len(s[i:]) - len(strings.TrimLeft(s[i:], `\`))
			rest := s[i+run:]
			next, _ := utf8.DecodeRuneInString(rest)
			if strings.HasPrefix(rest, "u{") || rest != "" && Is(next) {
				run *= 2
			}
			b.WriteString(strings.Repeat(`\`, run))
			n = len(s[i:]) - len(strings.TrimLeft(s[i:], `\`))
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func needsEscape(s string) bool {
	return strings.Contains(s, `\u{`) || strings.ContainsFunc(s, Is)
}

// Runes returns the distinct characters of s that Is reports, in code
// point order.
func Runes(s string) []rune {
	var out []rune
	for _, r := range s {
		if Is(r) && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// CodePoints writes rs as "U+200B, U+202E".
func CodePoints(rs []rune) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("U+%04X", r)
	}
	return strings.Join(parts, ", ")
}

// EscapeJSON returns JSON document doc with each character Is reports
// that is not ASCII written as a JSON escape (\u202e; a pair of surrogate
// escapes above U+FFFF, \udb40\udc41 for U+E0041): the same document for
// a JSON reader, and text that shows them. A document that is not UTF-8
// is returned as it is. Valid JSON holds such
// characters only inside strings (the ASCII ones, other than the
// whitespace between tokens, are always escaped there), so escaping them
// changes no value.
func EscapeJSON(doc []byte) []byte {
	if !utf8.Valid(doc) || !strings.ContainsFunc(string(doc), escapedInJSON) {
		return doc
	}
	var b strings.Builder
	for _, r := range string(doc) {
		if !escapedInJSON(r) {
			b.WriteRune(r)
			continue
		}
		if hi, lo := utf16.EncodeRune(r); hi != utf8.RuneError {
			fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return []byte(b.String())
}

func escapedInJSON(r rune) bool { return r >= 0x7F && Is(r) }
