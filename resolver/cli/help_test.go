package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// commandPaths are the paths of every command toolgate has, cobra's own
// help and completion commands included, without "toolgate".
func commandPaths(t *testing.T) [][]string {
	t.Helper()
	root := testRoot()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	walk(root, nil)
	if len(paths) < 20 {
		t.Fatalf("only %d commands: %v", len(paths), paths)
	}
	return paths
}

// Every command and subcommand answers -h, --help and help COMMAND on
// stdout with its usage line, and exits 0.
func TestEveryCommandPrintsItsHelp(t *testing.T) {
	t.Parallel()
	for _, path := range commandPaths(t) {
		want := "Usage:\n  " + strings.Join(append([]string{"toolgate"}, path...), " ")
		for _, args := range [][]string{append(path, "-h"), append(path, "--help"), append([]string{"help"}, path...)} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				code, out, errs := run(args...)
				if code != ExitOK || errs != "" || !strings.Contains(out, want) {
					t.Fatalf("exit %d, want %d; stdout lacks %q?\n%s%s", code, ExitOK, want, out, errs)
				}
			})
		}
	}
}

// The help of toolgate lists every command, says what the exit codes mean
// and offers no line that runs toolgate without a command; a group's help
// does the same for its commands.
func TestHelpListsCommandsAndExitCodes(t *testing.T) {
	t.Parallel()
	_, out, _ := run("help")
	for _, want := range []string{"check ", "check-recipient ", "check-url ", "compile ", "completion ", "declarations ", "graph ", "invoke ", "ledger ",
		"publish ", "review ", "run ", "toolset ", "version ", "2 misuse", "3 check-recipient"} {
		if !strings.Contains(out, want) {
			t.Errorf("toolgate help lacks %q", want)
		}
	}
	if strings.Contains(out, "\n  toolgate\n") {
		t.Errorf("toolgate help offers toolgate alone:\n%s", out)
	}
	_, out, _ = run("review", "--help")
	if strings.Contains(out, "\n  toolgate review\n") || !strings.Contains(out, "\n  toolgate review [command]\n") || !strings.Contains(out, "approve") {
		t.Errorf("toolgate review --help:\n%s", out)
	}
	// toolset runs alone (with FILE) and has a subcommand: both lines.
	_, out, _ = run("toolset", "--help")
	if !strings.Contains(out, "\n  toolgate toolset FILE [--toolsets DIR]\n") || !strings.Contains(out, "\n  toolgate toolset [command]\n") {
		t.Errorf("toolgate toolset --help:\n%s", out)
	}
}

// A command line toolgate cannot run exits 2, with nothing on stdout and,
// on stderr, what is wrong and the usage of the command it reached.
func TestMisuseExitsTwoWithTheCommandsUsage(t *testing.T) {
	t.Parallel()
	good := filepath.Join(solutions, "newsletter.yaml")
	cases := []struct {
		name string
		args []string
		want []string // on stderr
	}{
		{"no command", nil, []string{"toolgate: ", "Usage:\n  toolgate [command]"}},
		{"unknown command", []string{"frobnicate"}, []string{`unknown command "frobnicate"`, "Usage:\n  toolgate [command]"}},
		{"misspelt command", []string{"chek", good}, []string{`unknown command "chek"`, "check"}},
		{"unknown flag", []string{"check", "--strict", good}, []string{"toolgate check: ", "--strict", "Usage:\n  toolgate check [--format text|json] [--summary] [--toolsets DIR] [--shapes FILE] FILE..."}},
		{"unknown one-dash flag", []string{"check", "-strict", good}, []string{"toolgate check: ", "Usage:\n  toolgate check"}},
		{"flag without its value", []string{"check", good, "--format"}, []string{"--format", "Usage:\n  toolgate check"}},
		{"missing argument", []string{"compile", good}, []string{"toolgate compile: ", "-o DIR", "Usage:\n  toolgate compile FILE -o DIR"}},
		{"flag of another command", []string{"compile", good, "-o", t.TempDir(), "--format", "json"}, []string{"--format", "Usage:\n  toolgate compile"}},
		{"group alone", []string{"review"}, []string{"toolgate review: ", "Usage:\n  toolgate review [command]"}},
		{"unknown subcommand", []string{"review", "frobnicate"}, []string{`unknown command "frobnicate"`, "Usage:\n  toolgate review [command]"}},
		{"misspelt subcommand", []string{"review", "aprove", "rv_1"}, []string{`unknown command "aprove"; did you mean approve?`}},
		{"subcommand without its argument", []string{"review", "show", "--url", "http://127.0.0.1:1"}, []string{"toolgate review show: ", "Usage:\n  toolgate review show ID"}},
		{"version with an argument", []string{"version", "now"}, []string{"toolgate version: ", "Usage:\n  toolgate version"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := run(c.args...)
			if code != ExitMisuse || out != "" {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, ExitMisuse, out, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
		})
	}
}

// toolgate completion writes cobra's completion script for each shell.
func TestCompletionWritesAScriptForEachShell(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		t.Run(shell, func(t *testing.T) {
			code, out, errs := run("completion", shell)
			if code != ExitOK || errs != "" || !strings.Contains(out, "toolgate") || len(out) < 1000 {
				t.Fatalf("exit %d, %d bytes\n%s", code, len(out), errs)
			}
		})
	}
	// The shell's request for completions names the commands.
	code, out, _ := run("__complete", "check-")
	if code != ExitOK || !strings.Contains(out, "check-recipient") || !strings.Contains(out, "check-url") {
		t.Fatalf("__complete check-: exit %d\n%s", code, out)
	}
}

// commandAt returns the command at path in a fresh command tree.
func commandAt(t *testing.T, path []string) *cobra.Command {
	t.Helper()
	root := testRoot()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	cmd, _, err := root.Find(path)
	if err != nil {
		t.Fatalf("%v: %v", path, err)
	}
	return cmd
}

// Every command's usage line names every flag it has (but --help): the
// Use line is the whole synopsis, since DisableFlagsInUseLine leaves out
// cobra's "[flags]".
func TestEveryUsageLineNamesItsFlags(t *testing.T) {
	t.Parallel()
	for _, path := range commandPaths(t) {
		cmd := commandAt(t, path)
		if len(path) > 0 && (path[0] == "help" || path[0] == "completion") {
			continue // cobra's own: their flags are cobra's
		}
		t.Run(strings.Join(append([]string{"toolgate"}, path...), " "), func(t *testing.T) {
			cmd.InitDefaultHelpFlag()
			cmd.Flags().VisitAll(func(f *pflag.Flag) {
				spelt := "--" + f.Name
				if f.Name == "o" {
					spelt = "-o"
				}
				if f.Name != "help" && !strings.Contains(cmd.Use+" ", spelt+" ") && !strings.Contains(cmd.Use, spelt+"]") && !strings.Contains(cmd.Use, spelt+")") {
					t.Errorf("the usage line %q does not name %s", cmd.Use, spelt)
				}
			})
		})
	}
}

// --toolsets is a flag of exactly the commands that read lock files; the
// others neither show it nor accept it.
func TestToolsetsIsAFlagOfTheCommandsThatReadLocks(t *testing.T) {
	t.Parallel()
	readers := map[string]bool{"check": true, "compile": true, "publish": true, "toolset": true, "toolset register": true, "toolset show": true, "toolset diff": true, "toolset lock": true, "graph": true, "declarations": true, "shapes": true,
		"fork": true, "parked fork": true}
	for _, path := range commandPaths(t) {
		name := strings.Join(path, " ")
		t.Run("toolgate "+name, func(t *testing.T) {
			has := commandAt(t, path).Flags().Lookup("toolsets") != nil
			_, help, _ := run(append(path, "--help")...)
			if has != readers[name] || strings.Contains(help, "--toolsets") != readers[name] {
				t.Errorf("has --toolsets %v, its help shows it %v; want %v\n%s", has, strings.Contains(help, "--toolsets"), readers[name], help)
			}
		})
	}
	if code, _, errs := run("version", "--toolsets", "x"); code != ExitMisuse || !strings.Contains(errs, "unknown flag: --toolsets") {
		t.Errorf("version --toolsets x: exit %d %s", code, errs)
	}
}
