package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// readme is the repository's README, whose ```sh blocks these tests run.
const readme = "../../README.md"

// readmeLine is one command line of a ```sh block of the README.
type readmeLine struct {
	n       int    // line number in the README
	command string // without its comment
	comment string // after " # ", if any
}

// awsMark marks a README command line that needs a stage on AWS (or the
// local stack): the tests run its command's --help only.
const awsMark = "[AWS]"

// trailingComment is where a command line's comment starts.
var trailingComment = regexp.MustCompile(`\s+#\s`)

// readmeLines returns every command line of the README's ```sh blocks.
func readmeLines(t *testing.T) []readmeLine {
	t.Helper()
	f, err := os.Open(readme)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []readmeLine
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		switch {
		case !in && strings.TrimSpace(text) == "```sh":
			in = true
		case in && strings.TrimSpace(text) == "```":
			in = false
		case in && strings.TrimSpace(text) != "" && !strings.HasPrefix(strings.TrimSpace(text), "#"):
			l := readmeLine{n: n, command: strings.TrimSpace(text)}
			if loc := trailingComment.FindStringIndex(text); loc != nil {
				l.command, l.comment = strings.TrimSpace(text[:loc[0]]), strings.TrimSpace(text[loc[1]:])
			}
			lines = append(lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(lines) < 10 {
		t.Fatalf("%s: only %d command lines in its ```sh blocks", readme, len(lines))
	}
	return lines
}

// buildToolgate builds the CLI into dir/bin/toolgate, as make build does
// (without its version stamp).
func buildToolgate(t *testing.T, dir string) {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command builds bin/toolgate: %v", err)
	}
	build := exec.Command(gobin, "build", "-o", filepath.Join(dir, "bin", "toolgate"), "./resolver/cmd/toolgate")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
}

// snapshotFiles is every regular file under dir, by path, with its size
// and modification time: a file written again, even with the same bytes
// (writeAtomic renames a new file over it), shows as changed.
func snapshotFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[path] = fmt.Sprintf("%d bytes, modified %s", info.Size(), info.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every command line of the README's ```sh blocks runs as printed: the
// offline ones in bash, from a directory with bin/toolgate and a copy of
// this repository's testdata (toolgate toolset lock writes a lock there),
// exit 0 (1 where the comment says "exits 1"); make's are targets of the
// Makefile (make -n); those marked [AWS] name a command whose --help
// works, with flags it has. The repository's testdata is left as it was.
func TestREADMECommandLinesRunAsPrinted(t *testing.T) {
	t.Parallel()
	lines := readmeLines(t)
	work := t.TempDir()
	buildToolgate(t, work)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	testdata := filepath.Join(root, "testdata")
	before := snapshotFiles(t, testdata)
	defer func() {
		if diff := cmp.Diff(before, snapshotFiles(t, testdata)); diff != "" {
			t.Errorf("the README's command lines wrote the repository's testdata (-before +after):\n%s", diff)
		}
	}()
	if err := os.CopyFS(filepath.Join(work, "testdata"), os.DirFS(testdata)); err != nil {
		t.Fatal(err)
	}
	// Nothing of this machine's toolgate or AWS configuration.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull}
	var offline, aws int
	for _, l := range lines {
		t.Run(l.command, func(t *testing.T) {
			switch {
			case strings.HasPrefix(l.command, "make "):
				dry := exec.Command("make", "-n", "-C", root)
				dry.Args = append(dry.Args, strings.Fields(strings.TrimPrefix(l.command, "make "))...)
				if out, err := dry.CombinedOutput(); err != nil {
					t.Errorf("%s:%d: %s: make -n: %v\n%s", readme, l.n, l.command, err, out)
				}
			case strings.Contains(l.comment, awsMark):
				aws++
				awsHelp(t, work, env, l)
			case strings.Contains(l.command, "bin/toolgate"):
				offline++
				want := 0
				if strings.Contains(l.comment, "exits 1") {
					want = 1
				}
				sh := exec.Command("bash", "-e", "-o", "pipefail", "-c", l.command)
				sh.Dir, sh.Env = work, env
				var out, errb bytes.Buffer
				sh.Stdout, sh.Stderr = &out, &errb
				err := sh.Run()
				if code := sh.ProcessState.ExitCode(); code != want {
					t.Errorf("%s:%d: %s: exit %d (%v), want %d\nstdout: %s\nstderr: %s", readme, l.n, l.command, code, err, want, out.String(), errb.String())
				}
			default:
				t.Errorf("%s:%d: %s: neither make, bin/toolgate nor marked %s", readme, l.n, l.command, awsMark)
			}
		})
	}
	if offline == 0 || aws == 0 {
		t.Errorf("%d offline and %d %s command lines; want some of each", offline, aws, awsMark)
	}
}

// awsHelp runs the --help of the command an [AWS] line names, and checks
// that every --flag the line spells is one of that command's.
func awsHelp(t *testing.T, work string, env []string, l readmeLine) {
	t.Helper()
	words := strings.Fields(l.command)
	if len(words) < 2 || words[0] != "bin/toolgate" {
		t.Fatalf("%s:%d: %s: an %s line starts bin/toolgate COMMAND", readme, l.n, l.command, awsMark)
	}
	cmd, _, err := testRoot().Find(words[1:])
	if err != nil || !cmd.HasParent() {
		t.Fatalf("%s:%d: %s: names no toolgate command (%v)", readme, l.n, l.command, err)
	}
	path := strings.Fields(cmd.CommandPath())[1:]
	help := exec.Command(filepath.Join(work, "bin", "toolgate"), append(path, "--help")...)
	help.Dir, help.Env = work, env
	out, err := help.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Usage:\n  "+cmd.CommandPath()) {
		t.Errorf("%s:%d: bin/toolgate %s --help: %v\n%s", readme, l.n, strings.Join(path, " "), err, out)
	}
	for _, w := range words[1:] {
		if name, ok := strings.CutPrefix(w, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			if cmd.Flags().Lookup(name) == nil {
				t.Errorf("%s:%d: %s: toolgate %s has no flag --%s", readme, l.n, l.command, strings.Join(path, " "), name)
			}
		}
	}
}

// duration is a time as the README gives one: "40 s", "2–4 minutes".
var duration = regexp.MustCompile(`\d+(–\d+)? ?(s|min|minutes?)\b`)

// The README says how long each make command it shows takes: make build's
// line gives its time in its comment, make run's and make test's are in
// the paragraph after them.
func TestREADMEGivesEachMakeCommandsTime(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	var build bool
	for _, l := range readmeLines(t) {
		if l.command == "make build" {
			build = true
			if !duration.MatchString(l.comment) {
				t.Errorf("%s:%d: make build's comment %q gives no time", readme, l.n, l.comment)
			}
		}
	}
	if !build {
		t.Errorf("%s shows no make build line", readme)
	}
	for _, target := range []string{"make run", "make test"} {
		if !regexp.MustCompile("`" + target + "` (takes )?" + duration.String()).Match(src) {
			t.Errorf("%s gives no time for %s (\"`%s` takes N s\")", readme, target, target)
		}
	}
}
