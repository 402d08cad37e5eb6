package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Long flags written with one dash, as Go's flag package read them, are
// respelled with two, unknown ones too (so that pflag refuses them);
// values and arguments after "--" are left alone.
func TestGoFlagSpellingRespellsOnlyTheCommandsLongFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		args, to []string
	}{
		{"one-dash long flags", []string{"check", "-format", "json", "-summary", "f.yaml"}, []string{"check", "--format", "json", "--summary", "f.yaml"}},
		{"with an inline value", []string{"check", "-format=json", "-summary=false", "f.yaml"}, []string{"check", "--format=json", "--summary=false", "f.yaml"}},
		{"two dashes already", []string{"check", "--format", "json", "f.yaml"}, []string{"check", "--format", "json", "f.yaml"}},
		{"a one-letter flag", []string{"compile", "f.yaml", "-o", "out"}, []string{"compile", "f.yaml", "-o", "out"}},
		{"help", []string{"ledger", "-help"}, []string{"ledger", "--help"}},
		{"a value that looks like a flag", []string{"review", "reject", "rv_1", "-reason", "-json", "-json"}, []string{"review", "reject", "rv_1", "--reason", "-json", "--json"}},
		{"a value after two dashes", []string{"check-url", "--allow", "-resolve", "-resolve", "h=1.2.3.4", "u"}, []string{"check-url", "--allow", "-resolve", "--resolve", "h=1.2.3.4", "u"}},
		{"a flag of another command", []string{"compile", "-format", "json"}, []string{"compile", "--format", "json"}},
		{"an unknown flag that starts like a one-letter one", []string{"compile", "-output", "d", "f.yaml"}, []string{"compile", "--output", "d", "f.yaml"}},
		{"after --", []string{"check", "--", "-format"}, []string{"check", "--", "-format"}},
		{"a lone dash", []string{"check", "-"}, []string{"check", "-"}},
		{"a subcommand's flags", []string{"toolset", "register", "-tool", "x", "-fetch-host", "a"}, []string{"toolset", "register", "--tool", "x", "--fetch-host", "a"}},
		{"an unknown command", []string{"frobnicate", "-format"}, []string{"frobnicate", "-format"}},
		{"a shell's completion request", []string{"__complete", "check", "-form"}, []string{"__complete", "check", "-form"}},
		{"nothing", nil, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := goFlagSpelling(testRoot(), c.args)
			if got == nil || !slices.Equal(got, c.to) {
				t.Fatalf("goFlagSpelling(%q) = %q, want %q", c.args, got, c.to)
			}
		})
	}
}

// Command lines written for Go's flag package run as they did.
func TestOneDashLongFlagsStillWork(t *testing.T) {
	t.Parallel()
	good := filepath.Join(solutions, "newsletter.yaml")
	code, out, errs := run("check", "-format", "json", good)
	if code != ExitOK || !strings.Contains(out, `"valid": true`) {
		t.Fatalf("check -format json: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = run("check-url", "-allow", "api.example.com", "-resolve", "api.example.com=93.184.216.34", "https://api.example.com/x")
	if code != ExitOK || out != "allow\n" {
		t.Fatalf("check-url -allow -resolve: exit %d\n%s%s", code, out, errs)
	}
	// A value is never respelled: "-allow" is the (bad) allow-list entry.
	code, _, errs = run("check-recipient", "-allow", "-allow", "bob@example.com")
	if code != ExitMisuse || !strings.Contains(errs, `"-allow"`) {
		t.Fatalf("check-recipient -allow -allow: exit %d\n%s", code, errs)
	}
}

// An unknown one-dash flag is misuse, as it was with Go's flag package:
// -output is not -o with the value "utput", and nothing is written.
func TestUnknownOneDashFlagIsMisuse(t *testing.T) {
	good, err := filepath.Abs(filepath.Join(solutions, "newsletter.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	for _, args := range [][]string{
		{"compile", "-output", dir, good},
		{"compile", "-oDIR", good},
	} {
		code, _, errs := run(args...)
		if code != ExitMisuse || !strings.Contains(errs, "unknown flag") {
			t.Errorf("%q: exit %d, %s; want %d and unknown flag", args, code, errs, ExitMisuse)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused command wrote %d entries", len(entries))
	}
}
