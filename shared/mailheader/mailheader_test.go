package mailheader

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// Every line break and control character is refused at the start, in the
// middle and at the end of a subject, with its code point and position and
// without the subject's text.
func TestCheckSubjectRefuses(t *testing.T) {
	const text = "Quarterly results" // must never appear in a message
	refused := []struct {
		r    rune
		kind string
	}{
		{'\r', "line break"}, {'\n', "line break"},
		{0x0085, "line break"}, {0x2028, "line break"}, {0x2029, "line break"},
		{0x00, "control"}, {0x01, "control"}, {0x0b, "control"}, {0x0c, "control"}, {0x1b, "control"}, {0x1f, "control"},
		{0x7f, "control"}, {0x80, "control"}, {0x84, "control"}, {0x86, "control"}, {0x9f, "control"},
	}
	for _, c := range refused {
		for _, place := range []struct {
			name, subject string
			pos           int
		}{
			{"start", string(c.r) + text, 1},
			{"middle", text[:9] + string(c.r) + text[9:], 10},
			{"end", text + string(c.r), utf8.RuneCountInString(text) + 1},
			{"alone", string(c.r), 1},
		} {
			t.Run(fmt.Sprintf("U+%04X %s", c.r, place.name), func(t *testing.T) {
				err := CheckSubject(place.subject)
				if err == nil {
					t.Fatalf("accepted %q", place.subject)
				}
				msg := err.Error()
				want := fmt.Sprintf("U+%04X", c.r)
				at := fmt.Sprintf("at character %d", place.pos)
				if !strings.Contains(msg, c.kind) || !strings.Contains(msg, want) || !strings.Contains(msg, at) {
					t.Fatalf("message %q, want %s, %s and %q", msg, c.kind, want, at)
				}
				if strings.Contains(msg, "Quarterly") || strings.Contains(msg, "results") || strings.ContainsRune(msg, c.r) {
					t.Fatalf("the message quotes the subject: %q", msg)
				}
			})
		}
	}
	// The first offending character is the one named.
	if err := CheckSubject("a\u2029b\rc"); err == nil || !strings.Contains(err.Error(), "U+2029") || !strings.Contains(err.Error(), "character 2") {
		t.Fatalf("%v", err)
	}
	if err := CheckSubject(""); err == nil || err.Error() != "subject is empty" {
		t.Fatalf("empty subject: %v", err)
	}
}

// Printable text, TAB, and the characters next to the refused ones are
// accepted.
func TestCheckSubjectAccepts(t *testing.T) {
	for _, s := range []string{
		"s",
		"Review needed: step 3 — ünïcödé",
		"tab\tseparated",
		"\u00a0no-break space",   // U+00A0, just above C1
		"hyphenation\u2027point", // U+2027, just below LINE SEPARATOR
		"narrow\u202fno-break",   // U+202F, just above PARAGRAPH SEPARATOR
		"日本語の件名",
		"emoji 📬",
		" leading and trailing spaces ",
		strings.Repeat("x", 998),
	} {
		if err := CheckSubject(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
}
