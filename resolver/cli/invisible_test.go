package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/toolset"
)

// ticketsFile is a toolset file with one platform tool whose description
// is desc and whose input schema's property description is title (YAML
// double-quoted: escapes allowed).
func ticketsFile(t *testing.T, dir, name, desc, title string) string {
	t.Helper()
	f := filepath.Join(dir, name+".yaml")
	src := "toolset: " + name + "\ntools:\n  create-ticket:\n    function: ${FunctionCreateTicket}\n    description: \"" + desc + "\"\n" +
		"    input_schema: {type: object, properties: {title: {type: string, description: \"" + title + "\"}}}\n" +
		"    output_schema: {type: object}\n    timeout_seconds: 30\n"
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// A tool whose description holds a right-to-left override and a
// zero-width space is registered with a warning naming the tool and the
// code points; toolset show writes them as JSON escapes (the same
// document), and toolset diff as \u{…}.
func TestInvisibleCharactersAreShown(t *testing.T) {
	t.Parallel()
	_, flags := ledgerEnv(t)
	dir := t.TempDir()
	hidden := ticketsFile(t, dir, "tickets", `Opens a ticket.\u202e Needs no review.\u200b`, `the title\u2066`)
	code, out, errs := run(append([]string{"toolset", "register"}, append(flags, hidden)...)...)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	want := `: warning: toolset ts_`
	detail := `tool create-ticket has invisible or bidirectional characters (U+200B, U+202E, U+2066) in description, input_schema /properties/title/description; toolgate shows them as \u{…}`
	if !strings.Contains(errs, want) || !strings.Contains(errs, detail) {
		t.Fatalf("stderr lacks the warning:\n%s", errs)
	}
	lock := readFile(t, filepath.Join(dir, "tickets.lock.json"))
	ts, err := toolset.Parse([]byte(lock))
	if err != nil {
		t.Fatal(err)
	}

	code, out, errs = run("toolset", "show", ts.ID, "--toolsets", dir)
	if code != ExitOK {
		t.Fatalf("show: exit %d: %s", code, errs)
	}
	if strings.ContainsAny(out, "\u202e\u200b\u2066") || !strings.Contains(out, `Opens a ticket.\u202e Needs no review.\u200b`) || !strings.Contains(out, `the title\u2066`) {
		t.Fatalf("show:\n%s", out)
	}
	if shown, err := toolset.Parse([]byte(out)); err != nil || shown.ID != ts.ID {
		t.Fatalf("show's document: %v", err)
	}

	clean := ticketsFile(t, dir, "tickets-clean", `Opens a ticket.`, `the title`)
	if code, out, errs := run(append([]string{"toolset", "register"}, append(flags, clean)...)...); code != ExitOK || strings.Contains(errs, "warning") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	other, err := toolset.Parse([]byte(readFile(t, filepath.Join(dir, "tickets-clean.lock.json"))))
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ = run("toolset", "diff", ts.ID, other.ID, "--toolsets", dir)
	if line := `~ tool create-ticket: description "Opens a ticket.\u{202E} Needs no review.\u{200B}" → "Opens a ticket."`; code != ExitErrors || !strings.Contains(out, line+"\n") {
		t.Fatalf("diff: exit %d\n%s\nwant the line %s", code, out, line)
	}
}

// toolgate check prints a warning diagnostic for a Solution line holding
// a right-to-left override, naming the line, the column and the code
// point, never the character or the text around it, in text and JSON;
// the Solution is not refused.
func TestCheckWarnsOfInvisibleCharactersInASolution(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "bidi.yaml")
	src := "solution: bidi\nversion: 1\nsteps:\n  - id: a\n    pass: {x: \"invoice\u202efdp.exe\"}\n"
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	want := f + ":5:23: warning: [invisible] line 5 has invisible or bidirectional characters (U+202E): a reader of the Solution does not see them, or sees the text around them reordered\n"
	code, out, errs := run("check", f)
	if code != ExitOK || out != want || errs != "" {
		t.Fatalf("exit %d\nstdout: %q\nstderr: %s\nwant exit 0 and %q", code, out, errs, want)
	}
	code, out, _ = run("check", "--format", "json", f)
	if code != ExitOK || !strings.Contains(out, `"rule": "invisible"`) || !strings.Contains(out, `"warnings": 1`) || strings.ContainsRune(out, '\u202e') || strings.Contains(out, "invoice") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}
