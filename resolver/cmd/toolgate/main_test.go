package main

import (
	"github.com/toolgate/toolgate/resolver/changelog"

	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// build builds this command into a temporary directory, with flags for
// go build, and returns the binary's path.
func build(t testing.TB, flags ...string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build with")
	}
	bin := filepath.Join(t.TempDir(), "toolgate")
	args := append(append([]string{"build"}, flags...), "-o", bin, ".")
	if out, err := exec.Command(gobin, args...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// toolgate runs bin with args and returns its stdout and exit code.
func toolgate(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command(bin, args...).Output()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return string(out), 0
}

// stampTarget is the variable the Makefile's build target stamps with -X:
// the commit (the version comes from CHANGELOG.md, the same in every
// build of a commit).
func stampTarget(t *testing.T) string {
	t.Helper()
	makefile, err := os.ReadFile("../../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	ms := regexp.MustCompile(`-X ([\w./-]+\.(version|commit))=`).FindAllStringSubmatch(string(makefile), -1)
	if len(ms) != 1 || ms[0][2] != "commit" {
		t.Fatalf("the Makefile stamps %v; want the commit only", ms)
	}
	return ms[0][1]
}

// A binary stamped as make build stamps it prints CHANGELOG.md's version
// and the stamped commit; an unstamped one (go build with -buildvcs=false,
// as on these machines, or go run) prints the same version and "unknown".
func TestVersionOfStampedAndUnstampedBinaries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command twice")
	}
	src, err := os.ReadFile("../../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := changelog.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	version := cl.Version()
	stamped := build(t, "-ldflags", "-X "+stampTarget(t)+"=feedbee-dirty")
	if out, code := toolgate(t, stamped, "version"); code != 0 || out != "toolgate version "+version+" (commit feedbee-dirty)\n" {
		t.Errorf("stamped: exit %d, %q", code, out)
	}
	plain := build(t, "-buildvcs=false")
	if out, code := toolgate(t, plain, "version"); code != 0 || out != "toolgate version "+version+" (commit unknown)\n" {
		t.Errorf("unstamped: exit %d, %q", code, out)
	}
}

// The process exits with the code the command returns.
func TestExitCodesReachTheProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := build(t, "-buildvcs=false")
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"help", []string{"--help"}, 0},
		{"refuse", []string{"check-recipient", "bob@example.com"}, 1},
		{"unknown command", []string{"frobnicate"}, 2},
		{"invalid", []string{"check-recipient", "--allow", "@example.com", "Bob <bob@example.com>"}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if out, code := toolgate(t, bin, c.args...); code != c.code {
				t.Fatalf("exit %d, want %d\n%s", code, c.code, strings.TrimSpace(out))
			}
		})
	}
}
