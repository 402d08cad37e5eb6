package resolver

import (
	"errors"
	"strings"
	"testing"
)

// WithToolset replaces the top-level toolset's value where it is written,
// quoted as it was, in YAML and JSON, and nothing else; a Solution naming
// no toolset, a value that is no one-line string, and an id that is no
// toolset id are errors.
func TestWithToolsetReplacesOnlyTheToolsetsValue(t *testing.T) {
	const old, id = "ts_00000000000000000000000000000000", "ts_0123456789abcdef0123456789abcdef"
	for _, c := range []struct{ file, src, want string }{
		{"a.yaml", "solution: a\nversion: 1\ntoolset: " + old + "\nsteps: []\n", "solution: a\nversion: 1\ntoolset: " + id + "\nsteps: []\n"},
		{"a.yaml", "solution: a\ntoolset: \"" + old + "\"  # pinned\n", "solution: a\ntoolset: \"" + id + "\"  # pinned\n"},
		{"a.yaml", "solution: a\ntoolset: '" + old + "'\n", "solution: a\ntoolset: '" + id + "'\n"},
		{"a.yaml", "solution: a\ntoolset: " + old + " # pinned\n", "solution: a\ntoolset: " + id + " # pinned\n"},
		{"a.yaml", "solution: a\ntoolset: " + old + "\t# pinned\n", "solution: a\ntoolset: " + id + "\t# pinned\n"},
		{"a.yaml", "solution: a\ntoolset:\n  " + old + "\n", "solution: a\ntoolset:\n  " + id + "\n"},
		{"a.yaml", "solution: a\n\"toolset\": " + old + "\n", "solution: a\n\"toolset\": " + id + "\n"},
		{"a.yaml", "{solution: a, toolset: " + old + ", version: 1}\n", "{solution: a, toolset: " + id + ", version: 1}\n"},
		{"a.json", "{\"solution\": \"a\", \"toolset\": \"" + old + "\"}", "{\"solution\": \"a\", \"toolset\": \"" + id + "\"}"},
		{"a.yaml", "# toolset: x\nsolution: é\ntoolset: " + old + "\n", "# toolset: x\nsolution: é\ntoolset: " + id + "\n"},
	} {
		got, err := WithToolset(c.file, []byte(c.src), id)
		if err != nil || string(got) != c.want {
			t.Errorf("%s %q:\n got %q, %v\nwant %q", c.file, c.src, got, err, c.want)
		}
	}
	for _, c := range []struct{ src, id, says string }{
		{"solution: a\nversion: 1\n", id, "names no registered toolset"},
		{"solution: a\ntoolset: [a]\n", id, "not a toolset id"},
		{"solution: a\ntoolset: " + old + "\n", "ts_X", "is not a toolset id"},
		{"solution: [\n", id, "does not parse"},
		// An id carrying more than an id (a newline and another member,
		// a quote, a comment) is refused before the source is touched.
		{"solution: a\ntoolset: " + old + "\n", id + "\nsteps: []", "is not a toolset id"},
		{"solution: a\ntoolset: " + old + "\n", id + "\"", "is not a toolset id"},
		{"solution: a\ntoolset: " + old + "\n", id + " # x", "is not a toolset id"},
		{"solution: a\ntoolset: " + old + "\n", strings.ToUpper(id), "is not a toolset id"},
		// An alias would replace its anchor's value too: refused by the parser.
		{"solution: &t " + old + "\ntoolset: *t\n", id, "anchors and aliases are not supported"},
		{"solution: a\ntoolset: " + old + "\ntoolset: " + old + "\n", id, "appears twice"},
	} {
		_, err := WithToolset("a.yaml", []byte(c.src), c.id)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: %v, want %q", c.src, err, c.says)
		}
	}
	if _, err := WithToolset("a.yaml", []byte("solution: a\n"), id); !errors.Is(err, ErrNoToolset) {
		t.Errorf("no toolset: %v, want ErrNoToolset", err)
	}
}

// WithToolset never panics, and whatever it returns parses to a
// Solution naming the id given, with every other line of the source
// unchanged.
func FuzzWithToolset(f *testing.F) {
	const id = "ts_0123456789abcdef0123456789abcdef"
	f.Add("a.yaml", "solution: a\ntoolset: ts_00000000000000000000000000000000\n")
	f.Add("a.yaml", "{solution: a, toolset: 'ts_0', x: [1]}\n")
	f.Add("a.json", `{"toolset": "ts_\"0", "solution": "a"}`)
	f.Add("a.yaml", "toolset: |\n  ts_0\n")
	f.Fuzz(func(t *testing.T, file, src string) {
		out, err := WithToolset(file, []byte(src), id)
		if err != nil {
			return
		}
		v, ok := parseChecked(out, &diags{file: file})
		if !ok || v.get("toolset") == nil || v.get("toolset").val.str != id {
			t.Fatalf("%q became %q, which does not name %s", src, out, id)
		}
		before, after := strings.Split(src, "\n"), strings.Split(string(out), "\n")
		if len(before) != len(after) {
			t.Fatalf("%q became %q: the lines changed", src, out)
		}
		changed := 0
		for i := range before {
			if before[i] != after[i] {
				changed++
			}
		}
		if changed > 1 {
			t.Fatalf("%q became %q: %d lines changed", src, out, changed)
		}
	})
}
