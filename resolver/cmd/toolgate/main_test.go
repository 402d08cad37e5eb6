package main

import (
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
func build(t *testing.T, flags ...string) string {
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

// stampTargets are the variables the Makefile's build target stamps with
// -X, by name (version, commit).
func stampTargets(t *testing.T) map[string]string {
	t.Helper()
	makefile, err := os.ReadFile("../../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]string{}
	for _, m := range regexp.MustCompile(`-X ([\w./-]+\.(version|commit))=`).FindAllStringSubmatch(string(makefile), -1) {
		targets[m[2]] = m[1]
	}
	if len(targets) != 2 {
		t.Fatalf("the Makefile stamps %v; want version and commit", targets)
	}
	return targets
}

// A binary stamped as make build stamps it prints the stamped version and
// commit; an unstamped one (go build with -buildvcs=false, as on these
// machines, or go run) prints "devel" and "unknown".
func TestVersionOfStampedAndUnstampedBinaries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command twice")
	}
	targets := stampTargets(t)
	stamped := build(t, "-ldflags", "-X "+targets["version"]+"=v9.8.7-1-gfeedbee -X "+targets["commit"]+"=feedbee-dirty")
	if out, code := toolgate(t, stamped, "version"); code != 0 || out != "toolgate version v9.8.7-1-gfeedbee (commit feedbee-dirty)\n" {
		t.Errorf("stamped: exit %d, %q", code, out)
	}
	plain := build(t, "-buildvcs=false")
	if out, code := toolgate(t, plain, "version"); code != 0 || out != "toolgate version devel (commit unknown)\n" {
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
