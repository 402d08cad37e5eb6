package resolver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A line holding invisible or bidirectional characters is an [invisible]
// warning at the first of them, naming the line and the code points and
// never the text; the Solution is not refused. Tab, newline and a
// carriage return (a line break) are not reported.
func TestInvisibleCharactersAreWarnedOfByLine(t *testing.T) {
	const head = "solution: bidi\nversion: 1\nsteps:\n"
	cases := []struct {
		name, src string
		want      []string // "line:column: message" of the [invisible] warnings
	}{
		{"a right-to-left override in a string", head + "  - id: a\n    pass: {x: \"invoice\u202Efdp.exe\"}\n",
			[]string{"5:23: line 5 has invisible or bidirectional characters (U+202E): a reader of the Solution does not see them, or sees the text around them reordered"}},
		{"a zero-width space and a tag character in a comment", head + "  - id: a # ok\u200b\U000E0041\u200b\n    succeed: {}\n",
			[]string{"4:15: line 4 has invisible or bidirectional characters (U+200B, U+E0041): a reader of the Solution does not see them, or sees the text around them reordered"}},
		{"a byte order mark", "\ufeff" + head + "  - id: a\n    succeed: {}\n",
			[]string{"1:1: line 1 has invisible or bidirectional characters (U+FEFF): a reader of the Solution does not see them, or sees the text around them reordered"}},
		{"CRLF line breaks and tabs", strings.ReplaceAll(head+"  - id: a\n    succeed: {}  # a\tb\n", "\n", "\r\n"), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := compileString(t, c.src)
			if !res.OK() {
				t.Fatalf("refused: %v", res.Diagnostics)
			}
			var got []string
			for _, d := range res.Diagnostics {
				if d.Rule == RuleInvisible {
					if d.Severity != SeverityWarning {
						t.Errorf("%s is not a warning", d)
					}
					got = append(got, fmt.Sprintf("%d:%d: %s", d.Line, d.Column, d.Message))
				}
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("[invisible] warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// Past MaxInvisibleLines lines, one more warning counts the rest: a
// Solution cannot bury its diagnostics under thousands of warnings.
func TestInvisibleLinesPastTheBoundAreCounted(t *testing.T) {
	var b strings.Builder
	b.WriteString("solution: bidi\nversion: 1\nsteps:\n  - id: a\n    succeed: {}\n")
	for i := 0; i < 25; i++ {
		fmt.Fprintf(&b, "# note %d\u200b\n", i)
	}
	b.WriteString("# last\u2066\n")
	var got []string
	for _, d := range compileString(t, b.String()).Diagnostics {
		if d.Rule == RuleInvisible {
			got = append(got, d.Message)
		}
	}
	if len(got) != MaxInvisibleLines+1 || got[MaxInvisibleLines] != "16 more lines, from line 16 on, have invisible or bidirectional characters (U+200B, U+2066)" {
		t.Fatalf("%d warnings, the last %q", len(got), got[len(got)-1])
	}
}

// Every diagnostic's message, notes and file name show invisible and
// bidirectional characters escaped, also where a library's message quotes
// the source (a regular expression's compile error), whatever quoting the
// resolver used.
func TestDiagnosticsEscapeInvisibleCharacters(t *testing.T) {
	src := "solution: s\nversion: 1\ninput: {type: object, properties: {a: {type: string, pattern: \"(\u202e\"}}}\nsteps:\n  - id: a\n    pass: {}\n"
	res := Compile("in\u2066put.yaml", []byte(src), Options{})
	var schemaErr *Diagnostic
	for i, d := range res.Diagnostics {
		if strings.ContainsFunc(d.String(), invisibleRune) {
			t.Errorf("raw invisible character in %q", d.String())
		}
		if d.Rule == RuleInputSchema {
			schemaErr = &res.Diagnostics[i]
		}
	}
	if schemaErr == nil || !strings.Contains(schemaErr.Message, "missing closing ) in `(\\u{202E}`") || !strings.HasPrefix(schemaErr.String(), "in\\u{2066}put.yaml:3:") {
		t.Fatalf("the pattern's compile error: %v", res.Diagnostics)
	}
	ds := &diags{file: "x.yaml"}
	ds.errorNotes(Pos{1, 1}, RuleStateSize, []string{"note \u200b"}, "message %s", "\u202e")
	if d := ds.list[0]; d.Message != `message \u{202E}` || d.Notes[0] != `note \u{200B}` {
		t.Fatalf("message %q, notes %q", d.Message, d.Notes)
	}
}

func invisibleRune(r rune) bool { return r == '\u202e' || r == '\u2066' || r == '\u200b' }
