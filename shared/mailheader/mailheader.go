package mailheader

import (
	"errors"
	"fmt"
	"unicode"
)

// lineBreaks names the characters that end a line: RFC 5322 §2.2 (CR, LF)
// and the Unicode Standard §5.8 (NEL, LS, PS; VT and FF are C0 controls and
// refused as such).
var lineBreaks = map[rune]string{
	'\r':   "CARRIAGE RETURN",
	'\n':   "LINE FEED",
	0x0085: "NEXT LINE (NEL)",
	0x2028: "LINE SEPARATOR",
	0x2029: "PARAGRAPH SEPARATOR",
}

// CheckSubject returns nil when subject may be an e-mail's Subject, and
// otherwise an error that says why (see the package documentation): empty,
// a line break, or a control character other than TAB. The error names the
// first offending character by code point and 1-based character position;
// it never quotes the subject.
func CheckSubject(subject string) error {
	if subject == "" {
		return errors.New("subject is empty")
	}
	pos := 0
	for _, r := range subject {
		pos++
		if name, ok := lineBreaks[r]; ok {
			return fmt.Errorf("subject holds a line break, U+%04X %s, at character %d: a header field is one line (RFC 5322 §2.2), and Unicode counts NEL, U+2028 and U+2029 as line ends too (Unicode §5.8)", r, name, pos)
		}
		if r != '\t' && unicode.IsControl(r) {
			return fmt.Errorf("subject holds the control character U+%04X at character %d: a header field body is printable text (RFC 5322 §2.2; RFC 5198 §2 for U+0080–U+009F)", r, pos)
		}
	}
	return nil
}
