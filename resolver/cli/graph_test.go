package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// toolgate graph prints the picture on stdout: of a clean Solution with
// exit 0, of a refused one with its diagnostics on stderr and exit 1;
// a Solution whose steps cannot be read prints nothing on stdout.
func TestGraphCommand(t *testing.T) {
	t.Parallel()
	syntax := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(syntax, []byte("solution: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name        string
		args        []string
		code        int
		out, stderr string // what stdout starts with, what stderr holds
	}{
		{"mermaid by default", []string{"graph", filepath.Join(solutions, "human-approval.yaml")}, ExitOK, "flowchart TD\n", ""},
		{"dot", []string{"graph", "--format", "dot", filepath.Join(solutions, "human-approval.yaml")}, ExitOK, "digraph solution {\n", ""},
		{"one-dash flag", []string{"graph", "-format", "dot", filepath.Join(solutions, "human-approval.yaml")}, ExitOK, "digraph solution {\n", ""},
		{"refused, drawn with its path", []string{"graph", filepath.Join(solutions, "refuse-no-review.yaml")}, ExitErrors, "flowchart TD\n", "[review-before-tool]"},
		{"steps not read", []string{"graph", syntax}, ExitErrors, "", "[syntax]"},
		{"unknown format", []string{"graph", "--format", "svg", filepath.Join(solutions, "human-approval.yaml")}, ExitMisuse, "", `--format "svg": want mermaid or dot`},
		{"no file", []string{"graph"}, ExitMisuse, "", "name one Solution file"},
		{"two files", []string{"graph", syntax, syntax}, ExitMisuse, "", "name one Solution file"},
		{"missing file", []string{"graph", "does-not-exist.yaml"}, ExitMisuse, "", "does-not-exist.yaml"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := run(c.args...)
			if code != c.code || !strings.HasPrefix(out, c.out) || c.out == "" && out != "" || !strings.Contains(errs, c.stderr) || c.stderr == "" && errs != "" {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, out, errs)
			}
		})
	}
	// The refused path is drawn: the refused call filled red.
	_, out, _ := run("graph", filepath.Join(solutions, "refuse-no-review.yaml"))
	if !strings.Contains(out, "style s_send fill:#ffcdd2") {
		t.Errorf("the refused call is not highlighted:\n%s", out)
	}
}

// toolgate graph writes a right-to-left override the Solution carries
// into a label (here a choice rule's operand) as \u{202E}, in either
// format: the picture never holds the character.
func TestGraphWritesOutBidirectionalCharacters(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "bidi.yaml")
	src := "solution: bidi\nversion: 1\ninput: {type: object, properties: {x: {type: string, maxLength: 10}}}\nsteps:\n" +
		"  - id: pick\n    choice:\n      - when: {value: \"${input.x}\", equals: \"txt\u202efdp.exe\"}\n        next: done\n    default: end\n" +
		"  - id: done\n    succeed: {}\n"
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for format, want := range map[string]string{"mermaid": "txt#92;u#123;202E#125;fdp.exe", "dot": `txt\\u{202E}fdp.exe`} {
		t.Run(format, func(t *testing.T) {
			code, out, errs := run("graph", "--format", format, f)
			if code != ExitOK || strings.ContainsRune(out, '\u202e') || !strings.Contains(out, want) {
				t.Fatalf("exit %d; want 0 and %s, no U+202E\nstdout: %+q\nstderr: %s", code, want, out, errs)
			}
		})
	}
}
