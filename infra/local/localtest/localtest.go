// Package localtest starts infra/local's stand-ins from tests: each helper
// starts a fresh stand-in, registers t.Cleanup(Stop), and fails the test
// (never skips it) when the stand-in cannot start.
package localtest

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local"
)

// Dynalite starts dynalite (DynamoDB in memory) for t.
func Dynalite(t testing.TB) *local.Process {
	t.Helper()
	p, err := local.StartDynalite(t.Context())
	return started(t, p, err)
}

// SES starts aws-ses-v2-local for t.
func SES(t testing.TB) *local.Process {
	t.Helper()
	p, err := local.StartSES(t.Context())
	return started(t, p, err)
}

// RIE runs bootstrap under the Lambda Runtime Interface Emulator for t.
// See local.StartRIE for name, timeout and env.
func RIE(t testing.TB, name, bootstrap string, timeout time.Duration, env map[string]string) *local.Process {
	t.Helper()
	p, err := local.StartRIE(t.Context(), name, bootstrap, timeout, env)
	return started(t, p, err)
}

func started(t testing.TB, p *local.Process, err error) *local.Process {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if s := p.Stderr(); s != "" {
				t.Logf("%s (pid %d) stderr:\n%s", p.Name, p.PID, lastLines(s, 40))
			}
			if s := p.Stdout(); s != "" {
				t.Logf("%s (pid %d) stdout:\n%s", p.Name, p.PID, lastLines(s, 40))
			}
		}
		if err := p.Stop(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// builds caches one build per package and tags within the test binary: the
// binary's bytes, so each test gets its own copy in its own t.TempDir() and
// no test depends on another test's temporary directory.
var builds sync.Map // key string -> *build

type build struct {
	once sync.Once
	bin  []byte
	err  error
}

// Bootstrap builds the Go main package pkg (an import path, or a path
// relative to the test's package directory) for the RIE with tags added to
// lambda.norpc, and returns the path of the executable inside t.TempDir().
// The package is compiled once per test binary.
func Bootstrap(t testing.TB, pkg string, tags ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bootstrap")
	v, _ := builds.LoadOrStore(pkg+"\x00"+strings.Join(tags, ","), &build{})
	b := v.(*build)
	built := false
	b.once.Do(func() {
		built = true
		if b.err = local.BuildBootstrap(t.Context(), pkg, out, tags...); b.err == nil {
			b.bin, b.err = os.ReadFile(out)
		}
	})
	if b.err != nil {
		t.Fatalf("build bootstrap %s: %v", pkg, b.err)
	}
	if !built {
		if err := os.WriteFile(out, b.bin, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
