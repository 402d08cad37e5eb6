package invisible

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// Each class is escaped, at its edges too; tab, newline and visible text
// are not.
func TestEscape(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"plain text", "Returns a customer's name. Café, 日本語, ∑.", "Returns a customer's name. Café, 日本語, ∑."},
		{"tab and newline are kept", "a\tb\nc", "a\tb\nc"},
		{"C0 controls", "a\x00b\x07c\rd\x1b", `a\u{0000}b\u{0007}c\u{000D}d\u{001B}`},
		{"DEL and C1 controls", "a\x7fb\u0085c\u009f", `a\u{007F}b\u{0085}c\u{009F}`},
		{"zero width and direction marks U+200B-U+200F", "\u200b\u200c\u200d\u200e\u200f", `\u{200B}\u{200C}\u{200D}\u{200E}\u{200F}`},
		{"embeddings and overrides U+202A-U+202E", "x\u202a\u202b\u202c\u202d\u202ey", `x\u{202A}\u{202B}\u{202C}\u{202D}\u{202E}y`},
		{"invisible operators U+2060-U+2064", "\u2060\u2061\u2062\u2063\u2064", `\u{2060}\u{2061}\u{2062}\u{2063}\u{2064}`},
		{"isolates U+2066-U+2069", "\u2066\u2067\u2068\u2069", `\u{2066}\u{2067}\u{2068}\u{2069}`},
		{"byte order mark and soft hyphen", "\ufeffa\u00adb", `\u{FEFF}a\u{00AD}b`},
		{"tag characters, assigned or not", "ok\U000E0000\U000E0001\U000E0041\U000E007F", `ok\u{E0000}\u{E0001}\u{E0041}\u{E007F}`},
		{"line and paragraph separators", "a\u2028b\u2029c", `a\u{2028}b\u{2029}c`},
		{"a written escape's backslashes are doubled", `say \u{202E} or \\u{41} or \u0041 or \\`, `say \\u{202E} or \\\\u{41} or \u0041 or \\`},
		{"so is a backslash before an escape", "a\\\u200b and \\x", `a\\\u{200B} and \x`},
		{"bytes that are not UTF-8 stay", "a\xffb\u200b", "a\xffb\\u{200B}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Escape(c.in); got != c.want {
				t.Errorf("Escape(%+q) = %+q, want %+q", c.in, got, c.want)
			}
		})
	}
}

// Runes lists the code points, each once, in order; CodePoints names
// them.
func TestRunes(t *testing.T) {
	got := CodePoints(Runes("\u202eab\u200b\u202e\t\U000E0041"))
	if want := "U+200B, U+202E, U+E0041"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if rs := Runes("plain\ttext\n"); rs != nil {
		t.Fatalf("plain text: %v", rs)
	}
}

// EscapeJSON writes them as JSON escapes: the document decodes to the same
// value and shows no raw one.
func TestEscapeJSON(t *testing.T) {
	value := map[string]any{"description": "a\u202eb\u200bc\U000E0041d\u0085e\u00adé", "n": 1}
	doc, err := json.MarshalIndent(value, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got := EscapeJSON(doc)
	if want := `"a\u202eb\u200bc\udb40\udc41d\u0085e\u00adé"`; !strings.Contains(string(got), want) {
		t.Fatalf("%s\ndoes not hold %s", got, want)
	}
	var back map[string]any
	if err := json.Unmarshal(got, &back); err != nil || back["description"] != value["description"] {
		t.Fatalf("decodes to %+q, %v", back["description"], err)
	}
	if strings.ContainsFunc(string(got), Is) {
		t.Fatalf("a raw character is left: %+q", got)
	}
	if plain := []byte(`{"a": "b"}`); string(EscapeJSON(plain)) != string(plain) {
		t.Fatal("a document without them changed")
	}
}

// unescape undoes Escape: a run of m backslashes before "u{" is m/2
// backslashes and "u{" when m is even, else (m-1)/2 backslashes and the
// escaped character.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			i++
			continue
		}
		m := len(s[i:]) - len(strings.TrimLeft(s[i:], `\`))
		rest := s[i+m:]
		if !strings.HasPrefix(rest, "u{") {
			b.WriteString(s[i : i+m])
			i += m
			continue
		}
		b.WriteString(strings.Repeat(`\`, m/2))
		i += m
		if m%2 == 0 {
			continue
		}
		end := strings.IndexByte(rest, '}')
		n, err := strconv.ParseUint(rest[2:end], 16, 32)
		if err != nil {
			panic(rest)
		}
		b.WriteRune(rune(n))
		i += end + 1
	}
	return b.String()
}

// FuzzEscape: for any UTF-8 text, Escape leaves no character Is reports,
// changes nothing else, and can be undone (so two texts never show alike);
// EscapeJSON of the text's JSON decodes to the text.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"plain", "a\u202eb", `\u{200B}`, "\\\u200b", "\U000E0041\t\n\r", `\\u{`, "\u2028\u2029\ufeff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		e := Escape(s)
		if strings.ContainsFunc(e, Is) {
			t.Fatalf("Escape(%+q) = %+q keeps one", s, e)
		}
		if back := unescape(e); back != s {
			t.Fatalf("Escape(%+q) = %+q, which reads back as %+q", s, e, back)
		}
		if (e == s) != (Runes(s) == nil && !strings.Contains(s, `\u{`)) {
			t.Fatalf("Escape(%+q) = %+q", s, e)
		}
		doc, _ := json.Marshal(s)
		var back string
		if err := json.Unmarshal(EscapeJSON(doc), &back); err != nil || back != s {
			t.Fatalf("EscapeJSON of %+q reads back as %+q, %v", s, back, err)
		}
	})
}
