package resolver

import (
	"strings"
	"testing"
)

// yamlSteps is a Solution whose second step's pass value is @V@, on line 5
// from column 11.
const yamlSteps = "solution: x\nversion: 1\nsteps:\n  - id: a\n    pass: @V@\n  - id: b\n    pass: {}\n"

// A YAML syntax error is reported in words, at the construct it concerns:
// a flow collection that is never closed where it opens (go-yaml notices it
// only where the next entry begins), with the line in the message too.
func TestYAMLSyntaxErrors(t *testing.T) {
	for _, c := range []struct {
		name, src string
		at        Pos
		says      string
	}{
		{"unclosed flow mapping", strings.Replace(yamlSteps, "@V@", "{x: 1", 1), Pos{5, 11},
			`the "{" on line 5 opens a flow mapping that is never closed: line 6 column 3 comes before its "}"`},
		{"unclosed flow sequence", strings.Replace(yamlSteps, "@V@", "{x: [1, 2", 1), Pos{5, 15},
			`the "[" on line 5 opens a flow sequence that is never closed: line 6 column 3 comes before its "]"`},
		{"sequence closed by a brace", strings.Replace(yamlSteps, "@V@", "{x: [1, 2}", 1), Pos{5, 15},
			`the "[" on line 5 opens a flow sequence that is never closed: "}" at line 5 column 20 comes before its "]"`},
		{"mapping closed by a bracket", "a: {x: 1]\n", Pos{1, 4},
			`the "{" on line 1 opens a flow mapping that is never closed: "]" at line 1 column 9 comes before its "}"`},
		{"unclosed at the end of the file", "solution: x\nsteps: [a, b\n", Pos{2, 8},
			`the "[" on line 2 opens a flow sequence that is never closed: the file ends before its "]"`},
		{"innermost of two unclosed", "a: {b: [1, {c: 2}\n", Pos{1, 8}, `the "[" on line 1 opens a flow sequence that is never closed`},
		{"characters before the bracket", "é: {ü: [1, 2}\n", Pos{1, 8}, `"}" at line 1 column 13 comes before its "]"`},
		{"missing comma in a closed mapping", "a: {\n  b: 1\n  c: 2\n}\n", Pos{3, 3},
			`a "," is missing before this entry of the flow mapping that opens with "{" on line 1`},
		{"closer with nothing open", "a: ]\n", Pos{1, 4}, `"]" closes nothing: no "[" is open here`},
		{"sequence closed by a brace after a comma", "toolset: x\ntools: {a: [1,}\n", Pos{2, 12},
			`the "[" on line 2 opens a flow sequence that is never closed: "}" at line 2 column 15 comes before its "]"`},
		{"extra closing brace", "{a: 1}}\n", Pos{1, 7}, `"}" closes nothing: no "{" is open here`},
		{"unclosed double-quoted string", "a: \"x\n\nb: 1\n", Pos{1, 4}, `the double-quoted string that starts here is never closed`},
		{"unclosed single-quoted string", "a: 'x\n", Pos{1, 4}, `the single-quoted string that starts here is never closed`},
		{"colon in a plain value", "a: b: c\n", Pos{1, 4}, `this value holds ": "`},
		{"tab indentation", "a:\n\t- b\n", Pos{2, 1}, "a tab indents this line: YAML indents with spaces only"},
		{"reserved character", "a: @x\n", Pos{1, 4}, "a plain value may not start with \"@\" or \"`\""},
		{"unknown escape", "a: \"\\q\"\n", Pos{1, 6}, "this escape is not one a double-quoted YAML string knows"},
		{"list then mapping at one level", "- a\nb: 1\n", Pos{2, 1}, "a value cannot start here: check this line's indentation"},
		{"key without colon", "a\nb: 1\n", Pos{1, 1}, `this line is not a "key: value" pair`},
		{"two commas", "a: [1, 2,, 3]\n", Pos{1, 10}, `a value is missing here, between two ","`},
		{"text after a quoted value", "x: \"a\" b\n", Pos{1, 8}, "text follows the quoted value on its line"},
		{"repeated key", "a: 1\nb: 2\na: 3\n", Pos{3, 1}, `key "a" appears twice in this mapping (first on line 1)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := Compile("bad.yaml", []byte(c.src), Options{})
			if len(res.Diagnostics) != 1 {
				t.Fatalf("%d diagnostics, want 1: %v", len(res.Diagnostics), res.Diagnostics)
			}
			d := res.Diagnostics[0]
			if d.Rule != RuleSyntax || (Pos{d.Line, d.Column}) != c.at || !strings.Contains(d.Message, c.says) {
				t.Errorf("got  %s\nwant bad.yaml:%d:%d: error: [syntax] …%s…", d, c.at.Line, c.at.Column, c.says)
			}
			for _, raw := range []string{"must be specified", "not found", "could not find", "is not allowed in this context"} {
				if strings.Contains(d.Message, raw) {
					t.Errorf("the message holds the parser's text %q: %s", raw, d.Message)
				}
			}
		})
	}
}

// flowOpenAt finds the innermost open flow collection and what ends it,
// skipping brackets in quoted scalars and comments.
func TestFlowOpenAt(t *testing.T) {
	for _, c := range []struct {
		src      string
		at       int
		open     Pos
		end      int // offset of the end, -1 for the end of the file
		notFound bool
	}{
		{"a: {x: [1, 2}", 12, Pos{1, 8}, 12, false},
		{"a: {x: 1\nb: 2", 9, Pos{1, 4}, -1, false},
		{"a: {x: \"}\", y: 1\nb", 17, Pos{1, 4}, -1, false},
		{"a: {x: 1 # }\nb", 13, Pos{1, 4}, -1, false},
		{"a: {x: 1}\nb: 2", 10, Pos{}, -1, true},
		{"a: [1, [2], 3]", 13, Pos{1, 4}, 13, false},
	} {
		o, end, found := flowOpenAt([]byte(c.src), c.at)
		if found == c.notFound || found && (o.pos != c.open || end.off != c.end) {
			t.Errorf("%q at %d: open %v end %d found %v; want open %v end %d", c.src, c.at, o.pos, end.off, found, c.open, c.end)
		}
	}
}

// A YAML directive is refused at its line: the file is read as YAML 1.2
// whatever it says, and a "%YAML 1.1" left in place would let a YAML 1.1
// reader see yes and on as booleans where the resolver sees strings.
func TestYAMLDirectivesAreRefused(t *testing.T) {
	body := "solution: s\nversion: 1\nsteps:\n  - id: a\n    pass: {x: yes}\n"
	for _, c := range []struct {
		name, src string
		at        Pos
		says      string
	}{
		{"YAML 1.1", "%YAML 1.1\n---\n" + body, Pos{1, 1}, `the directive "%YAML 1.1" is refused`},
		{"YAML 1.2", "%YAML 1.2\n---\n" + body, Pos{1, 1}, `the directive "%YAML 1.2" is refused`},
		{"TAG after a comment", "# a Solution\n%TAG ! tag:example.com,2000:\n---\n" + body, Pos{2, 1}, `the directive "%TAG ! tag:example.com,2000:" is refused`},
		{"directives only", "%YAML 1.1\n", Pos{1, 1}, "reads every YAML file as YAML 1.2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := Compile("d.yaml", []byte(c.src), Options{})
			if len(res.Diagnostics) != 1 {
				t.Fatalf("%d diagnostics, want 1: %v", len(res.Diagnostics), res.Diagnostics)
			}
			d := res.Diagnostics[0]
			if d.Rule != RuleSyntax || (Pos{d.Line, d.Column}) != c.at || !strings.Contains(d.Message, c.says) || !strings.Contains(d.Message, "remove the directive") {
				t.Errorf("got  %s\nwant d.yaml:%d:%d: error: [syntax] …%s…", d, c.at.Line, c.at.Column, c.says)
			}
		})
	}
	// A "%" line of a block scalar is text, not a directive.
	res := Compile("d.yaml", []byte("solution: s\nversion: 1\nsteps:\n  - id: a\n    pass:\n      x: |\n        %YAML 1.1\n"), Options{})
	if !res.OK() {
		t.Errorf("a block scalar's line read as a directive: %v", res.Diagnostics)
	}
}
