package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/resolver/declare"
	"github.com/toolgate/toolgate/shared/toolset"
)

// lockToolset is the toolset of lock file testdata/toolsets/name.
func lockToolset(t *testing.T, name string) *toolset.Toolset {
	t.Helper()
	ts, err := toolset.Parse([]byte(readFile(t, filepath.Join(toolsetFiles, name))))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// solutionToolset is the toolset the resolver pins for Solution file,
// its toolset: id read from the locks in testdata/toolsets.
func solutionToolset(t *testing.T, file string) *toolset.Toolset {
	t.Helper()
	res := resolver.Compile(file, []byte(readFile(t, file)), resolver.Options{Toolsets: resolver.LockLookup(toolsetFiles)})
	if !res.OK() {
		t.Fatalf("%s: %v", file, res.Diagnostics)
	}
	return res.Toolset
}

// wantDeclarations checks that dir holds exactly declare's two renderings
// of ts, and nothing else (no temporary file left).
func wantDeclarations(t *testing.T, dir string, ts *toolset.Toolset) {
	t.Helper()
	tsd, err := declare.TypeScript(ts)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := declare.SolutionSchema(ts)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{declare.TypeScriptFile: tsd, declare.SolutionSchemaFile: schema} {
		if got := readFile(t, filepath.Join(dir, name)); got != string(want) {
			t.Errorf("%s is not declare's rendering of %s (-want +got):\n%s", name, ts.ID, cmp.Diff(string(want), got))
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("%s holds %v; want %s and %s only", dir, names, declare.TypeScriptFile, declare.SolutionSchemaFile)
	}
}

// toolgate declarations writes declare's two renderings of the toolset
// each argument form names: a lock file, a toolset id found in
// --toolsets, a Solution naming a toolset id, and a Solution whose
// toolset the resolver derives from the catalog. It prints the id and
// both paths.
func TestDeclarationsWritesBothRenderingsForEachArgumentForm(t *testing.T) {
	t.Parallel()
	at := []string{"--toolsets", toolsetFiles}
	demo := lockToolset(t, "demo.lock.json")
	ticket := filepath.Join(toolsetFiles, "solutions", "demo-ticket.yaml")
	newsletter := filepath.Join(solutions, "newsletter.yaml")
	for _, c := range []struct {
		name, arg string
		want      *toolset.Toolset
		from      string // what stdout names the toolset by
	}{
		{"a lock file", filepath.Join(toolsetFiles, "demo.lock.json"), demo, "(demo)"},
		{"a compiled toolset", filepath.Join(solutions, "newsletter.toolset.json"), solutionToolset(t, newsletter), "(derived from the catalog)"},
		{"a toolset id a lock in --toolsets holds", demoID, demo, "(demo)"},
		{"a derived toolset's id", reviewedID, lockToolset(t, "demo-reviewed.lock.json"), "(demo-reviewed)"},
		{"a Solution naming a toolset id", ticket, solutionToolset(t, ticket), "(demo)"},
		{"a Solution on the catalog", newsletter, solutionToolset(t, newsletter), "(derived from the catalog)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "out", "declarations") // created
			code, out, errs := run(append([]string{"declarations", c.arg, "-o", dir}, at...)...)
			if code != ExitOK || errs != "" {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errs)
			}
			want := "toolset " + c.want.ID + " " + c.from + "\nwrote " + filepath.Join(dir, declare.TypeScriptFile) + "\nwrote " + filepath.Join(dir, declare.SolutionSchemaFile) + "\n"
			if out != want {
				t.Errorf("stdout (-want +got):\n%s", cmp.Diff(want, out))
			}
			wantDeclarations(t, dir, c.want)
		})
	}
}

// Declarations written again replace the files of an earlier toolset
// whole: regenerating after a toolset changes needs no cleaning.
func TestDeclarationsReplaceAnEarlierToolsetsFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	at := []string{"-o", dir, "--toolsets", toolsetFiles}
	if code, _, errs := run(append([]string{"declarations", reviewedID}, at...)...); code != ExitOK {
		t.Fatalf("first: exit %d: %s", code, errs)
	}
	if code, _, errs := run(append([]string{"declarations", demoID}, at...)...); code != ExitOK {
		t.Fatalf("again: exit %d: %s", code, errs)
	}
	wantDeclarations(t, dir, lockToolset(t, "demo.lock.json"))
}

// A target that is a directory refuses the command before either file is
// written: DIR never holds a new tools.d.ts beside an old schema.
func TestDeclarationsWriteNeitherFileWhenOneTargetIsADirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, declare.SolutionSchemaFile), 0o755); err != nil {
		t.Fatal(err)
	}
	c := toolsetCase{name: "schema target a directory", args: []string{"declarations", demoID, "-o", dir, "--toolsets", toolsetFiles}, code: ExitErrors,
		stderr: []string{"toolgate declarations: " + filepath.Join(dir, declare.SolutionSchemaFile) + " is a directory: nothing was written"}}
	c.run(t)
	if _, err := os.Stat(filepath.Join(dir, declare.TypeScriptFile)); err == nil {
		t.Errorf("%s was written beside the refused target", declare.TypeScriptFile)
	}
}

// What toolgate declarations refuses, it says, naming the file, the id or
// the diagnostics, exits non-zero and writes nothing.
func TestDeclarationsRefusalsSayWhyAndWriteNothing(t *testing.T) {
	t.Parallel()
	at := []string{"--toolsets", toolsetFiles}
	dir := t.TempDir()
	tampered := filepath.Join(t.TempDir(), "demo.lock.json")
	lock := readFile(t, filepath.Join(toolsetFiles, "demo.lock.json"))
	if err := os.WriteFile(tampered, []byte(strings.Replace(lock, `"timeout_seconds": 30`, `"timeout_seconds": 300`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	missingLock := filepath.Join(t.TempDir(), "gone.lock.json")
	refused := filepath.Join(solutions, "refuse-no-review.yaml")
	unknownSolution := filepath.Join(t.TempDir(), "unknown-toolset.yaml")
	src := strings.Replace(readFile(t, filepath.Join(toolsetFiles, "solutions", "demo-ticket.yaml")), demoID, unknownID, 1)
	if err := os.WriteFile(unknownSolution, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := []string{"-o", dir}
	for _, c := range []toolsetCase{
		{name: "no argument", args: append([]string{"declarations"}, out...), code: ExitMisuse,
			stderr: []string{"toolgate declarations: name one lock file, toolset id or Solution file", "Usage:\n  toolgate declarations (LOCK | ID | SOLUTION) -o DIR"}},
		{name: "two arguments", args: append([]string{"declarations", demoID, reviewedID}, append(out, at...)...), code: ExitMisuse,
			stderr: []string{"name one lock file, toolset id or Solution file"}},
		{name: "no -o", args: append([]string{"declarations", demoID}, at...), code: ExitMisuse,
			stderr: []string{"toolgate declarations: -o DIR is required", "Usage:"}},
		{name: "a lock file that is not there", args: append([]string{"declarations", missingLock}, out...), code: ExitMisuse,
			stderr: []string{"toolgate declarations: ", missingLock}},
		{name: "a lock whose content is not its id's", args: append([]string{"declarations", tampered}, out...), code: ExitErrors,
			stderr: []string{"toolgate declarations: lock " + tampered + ": toolset " + demoID + " is refused [toolset-digest]"}},
		{name: "an id no lock holds and no publish function is named", args: append([]string{"declarations", unknownID}, append(out, at...)...), code: ExitErrors,
			stderr: []string{"toolgate declarations: toolset " + unknownID + ": not found: no lock file (*.lock.json) in --toolsets " + toolsetFiles + " holds it", "--url or $" + EnvPublishURL}},
		{name: "a malformed id", args: append([]string{"declarations", "ts_8DFE1BDA"}, out...), code: ExitMisuse,
			stderr: []string{`"ts_8DFE1BDA" is neither a toolset id (^ts_[0-9a-f]{32}$) nor a file`}},
		{name: "a Solution the resolver refuses", args: append([]string{"declarations", refused}, out...), code: ExitErrors,
			stderr: []string{refused + ":21:9: error: [review-before-tool]", "toolgate declarations: " + refused + " has errors: no declarations were written"}},
		{name: "a Solution naming a toolset nothing holds", args: append([]string{"declarations", unknownSolution}, append(out, at...)...), code: ExitErrors,
			stderr: []string{unknownSolution + ":6:10: error: [toolset] toolset " + unknownID + " is not found", "has errors: no declarations were written"}},
		{name: "a toolset file", args: append([]string{"declarations", filepath.Join(toolsetFiles, "demo.yaml")}, out...), code: ExitMisuse,
			stderr: []string{"demo.yaml is a toolset file: name its lock (toolgate toolset lock"}},
		{name: "--as without --function-endpoint", args: append([]string{"declarations", demoID, "--as", "alice"}, append(out, at...)...), code: ExitMisuse,
			stderr: []string{"--as is for the local stack, with --function-endpoint"}},
	} {
		t.Run(c.name, c.run)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused command lines wrote %v", entries)
	}
}
