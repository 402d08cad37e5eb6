package flowchart

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/invisible"
)

func TestMermaidText(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain text stays", "send_email: to ops (v2) ok?", "send_email: to ops (v2) ok?"},
		{"a quote and brackets", `a"]b[c`, "a#34;#93;b#91;c"},
		{"a binding", "${input.x}", "#36;#123;input.x#125;"},
		{"an entity of the author's stays text", "#quot;", "#35;quot#59;"},
		{"a directive", "%%{init: {}}%%", "#37;#37;#123;init: #123;#125;#125;#37;#37;"},
		{"html", "<b>x</b>", "#60;b#62;x#60;/b#62;"},
		{"a newline becomes a space", "a\nb", "a b"},
		{"letters of other scripts stay", "Grüße", "Grüße"},
		{"a symbol that is no letter", "a→b", "a#8594;b"},
		{"invalid UTF-8", "a\xffb", "a#65533;b"},
		{"words Mermaid reads on a line", "Direction LR, style, CLASSDEF", "Directio#110; LR, styl#101;, CLASSDE#70;"},
		{"a right-to-left override is written out, not drawn", "abc\u202edef", "abc#92;u#123;202E#125;def"},
		{"so are zero-width, isolate, C1 and tag characters", "a\u200bb\u2067c\u0085d\U000E0041", "a#92;u#123;200B#125;b#92;u#123;2067#125;c#92;u#123;0085#125;d#92;u#123;E0041#125;"},
		{"a written escape stays apart from a made one", `\u{202E}`, "#92;#92;u#123;202E#125;"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mermaidText(c.in); got != c.want {
				t.Errorf("mermaidText(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestDOTText(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain text stays", "send <b> {x} [y]", "send <b> {x} [y]"},
		{"a quote", `a"b`, `a\"b`},
		{"a backslash, so no \\N is Graphviz's", `\N\G\`, `\\N\\G\\`},
		{"an entity", "&amp;", "&amp;amp;"},
		{"a newline becomes a space", "a\r\nb", "a  b"},
		{"a right-to-left override is written out, not drawn", "abc\u202edef", `abc\\u{202E}def`},
		{"so are zero-width, isolate, C1 and tag characters", "a\u200bb\u2067c\u0085d\U000E0041", `a\\u{200B}b\\u{2067}c\\u{0085}d\\u{E0041}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := dotText(c.in); got != c.want {
				t.Errorf("dotText(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

// sanitized is s as both escapers read it: invalid UTF-8 as U+FFFD, a C0
// control character or DEL as a space, then the other invisible
// characters written out as \u{X} (invisible.Escape).
func sanitized(s string) string {
	var b strings.Builder
	for _, r := range s { // one U+FFFD per invalid byte
		if r < 0x20 || r == 0x7f {
			r = ' '
		}
		b.WriteRune(r)
	}
	return invisible.Escape(b.String())
}

var (
	mermaidSafe   = regexp.MustCompile(`^(?:[A-Za-z0-9 .,:_\-/()?!+=@]|[\p{L}\p{N}]|#[0-9]+;)*$`)
	mermaidEntity = regexp.MustCompile(`#([0-9]+);`)
)

// Whatever the text, mermaidText writes only safe characters and entity
// codes, none of the words Mermaid reads on a whole line, and the
// entities decode to the text.
func FuzzMermaidText(f *testing.F) {
	for _, s := range []string{"", "a\"]b", "#quot;", "%%{init}%%", "direction TB", "\xff\xfe", "style:#fff;", "é→\u2028", "a\u202eb", "\\u{41}\\\\\u200b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := mermaidText(s)
		if !mermaidSafe.MatchString(got) {
			t.Fatalf("mermaidText(%q) = %q holds an unsafe character", s, got)
		}
		if w := mWholeLineWords.FindString(got); w != "" {
			t.Fatalf("mermaidText(%q) = %q holds %q", s, got, w)
		}
		decoded := mermaidEntity.ReplaceAllStringFunc(got, func(e string) string {
			n, _ := strconv.Atoi(e[1 : len(e)-1])
			return string(rune(n))
		})
		if want := sanitized(s); decoded != want {
			t.Fatalf("mermaidText(%q) = %q decodes to %q, want %q", s, got, decoded, want)
		}
		if strings.ContainsFunc(decoded, invisible.Is) {
			t.Fatalf("mermaidText(%q) = %q draws an invisible character", s, got)
		}
	})
}

// Whatever the text, dotText writes no quote that ends the string, no
// control character, and nothing Graphviz would read otherwise than the
// text.
func FuzzDOTText(f *testing.F) {
	for _, s := range []string{"", `a"b`, `\`, `\N`, "&amp;", "a\nb", "\xff", "a\u202eb", "\\u{41}\\\\\u200b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := dotText(s)
		var b strings.Builder
		for i := 0; i < len(got); i++ {
			switch c := got[i]; {
			case c == '"':
				t.Fatalf("dotText(%q) = %q ends the string", s, got)
			case c < 0x20 || c == 0x7f:
				t.Fatalf("dotText(%q) = %q holds a control character", s, got)
			case c == '\\':
				if i+1 == len(got) || got[i+1] != '"' && got[i+1] != '\\' {
					t.Fatalf("dotText(%q) = %q has an escape Graphviz would read", s, got)
				}
				i++
				b.WriteByte(got[i])
			default:
				b.WriteByte(c)
			}
		}
		if decoded := strings.ReplaceAll(b.String(), "&amp;", "&"); decoded != sanitized(s) || strings.Count(b.String(), "&") != strings.Count(b.String(), "&amp;") {
			t.Fatalf("dotText(%q) = %q reads as %q", s, got, decoded)
		}
		if strings.ContainsFunc(got, invisible.Is) {
			t.Fatalf("dotText(%q) = %q holds an invisible character", s, got)
		}
	})
}
