package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Every file a command names, and every lock and schema file it reads on
// the way, is refused when it is not a regular file or is over its bound,
// naming the file, without waiting on a named pipe or reading a 2 GiB
// file through.
func TestCommandsRefuseNamedPipesAndFilesOverTheirBound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := func(name string) string { return filepath.Join(dir, name) }
	if err := syscall.Mkfifo(in("pipe.yaml"), 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	if err := os.WriteFile(in("big.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(in("big.yaml"), 2<<30); err != nil {
		t.Skipf("no sparse file here: %v", err)
	}
	// A toolset file whose schema file is a named pipe.
	pipeSchema := filepath.Join(dir, "pipe-schema")
	copyFiles(t, pipeSchema, "demo.yaml")
	os.Mkdir(filepath.Join(pipeSchema, "schemas"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(pipeSchema, "schemas", "create-ticket.input.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A toolsets directory holding a named pipe as a lock.
	pipeLocks := filepath.Join(dir, "pipe-locks")
	os.Mkdir(pipeLocks, 0o755)
	if err := syscall.Mkfifo(filepath.Join(pipeLocks, "evil.lock.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	pinned := filepath.Join(toolsetFiles, "solutions", "demo-ticket.yaml")
	noLocks := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		code int
		says string // on stderr, or stdout for check's diagnostics
	}{
		{"check of a named pipe", []string{"check", in("pipe.yaml")}, ExitMisuse,
			"toolgate check: read " + in("pipe.yaml") + ": the file is a named pipe (FIFO), not a regular file"},
		{"check of 2 GiB", []string{"check", in("big.yaml")}, ExitMisuse,
			"toolgate check: read " + in("big.yaml") + ": the file is over 8 MiB (8388608 bytes), the most toolgate reads of a Solution or toolset file"},
		{"graph of a named pipe", []string{"graph", in("pipe.yaml")}, ExitMisuse, in("pipe.yaml") + ": the file is a named pipe"},
		{"declarations of a named pipe", []string{"declarations", in("pipe.yaml"), "-o", in("out")}, ExitMisuse, in("pipe.yaml") + ": the file is a named pipe"},
		{"declarations of 2 GiB", []string{"declarations", in("big.yaml"), "-o", in("out")}, ExitMisuse, in("big.yaml") + ": the file is over 8 MiB"},
		{"declarations of a lock that is a named pipe", []string{"declarations", filepath.Join(pipeLocks, "evil.lock.json"), "-o", in("out")}, ExitMisuse,
			filepath.Join(pipeLocks, "evil.lock.json") + ": the file is a named pipe"},
		{"toolset of a named pipe", []string{"toolset", in("pipe.yaml")}, ExitMisuse, in("pipe.yaml") + ": the file is a named pipe"},
		{"toolset lock of a named pipe", []string{"toolset", "lock", in("pipe.yaml"), "--toolsets", noLocks}, ExitMisuse,
			in("pipe.yaml") + ": the file is a named pipe"},
		{"toolset lock of 2 GiB", []string{"toolset", "lock", in("big.yaml"), "--toolsets", noLocks}, ExitMisuse,
			in("big.yaml") + ": the file is over 8 MiB"},
		{"a schema file that is a named pipe", []string{"toolset", "lock", filepath.Join(pipeSchema, "demo.yaml"), "--toolsets", noLocks}, ExitErrors,
			`demo.yaml:12:19: error: [tool-schema] tool "create-ticket" input_schema: the file "schemas/create-ticket.input.json" cannot be read: the file is a named pipe`},
		{"a lock that is a named pipe", []string{"check", "--toolsets", pipeLocks, pinned}, ExitErrors,
			filepath.Join(pipeLocks, "evil.lock.json") + ": the file is a named pipe"},
	} {
		t.Run(c.name, func(t *testing.T) {
			type result struct {
				code     int
				out, err string
			}
			done := make(chan result, 1)
			go func() {
				code, out, errs := run(c.args...)
				done <- result{code, out, errs}
			}()
			select {
			case r := <-done:
				if r.code != c.code || !strings.Contains(r.out+r.err, c.says) {
					t.Errorf("exit %d, want %d saying %q\nstdout: %s\nstderr: %s", r.code, c.code, c.says, r.out, r.err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the command still waits after 20 s")
			}
		})
	}
}
