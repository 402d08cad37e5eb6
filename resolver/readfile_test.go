package resolver

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within fails the test when f does not return within 10 s: opening a
// named pipe for reading waits for a writer that never comes.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still waits after 10 s", what)
	}
}

// mkfifo makes a named pipe at path, or skips the test where there is none.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
}

// A named pipe, a directory or a device is refused, naming the file,
// without waiting for a writer; so is a schema file or a lock that is one.
func TestReadFileRefusesFilesThatAreNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "s.yaml")
	mkfifo(t, fifo)
	for _, c := range []struct {
		name, path, says string
	}{
		{"a named pipe", fifo, "named pipe"},
		{"a directory", dir, "a directory"},
		{"a device", os.DevNull, "a device"},
	} {
		t.Run(c.name, func(t *testing.T) {
			within(t, "ReadFile of "+c.name, func() {
				_, err := ReadFile(c.path, SourceFile)
				if err == nil || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "not a regular file") {
					t.Errorf("ReadFile(%s): %v, want it refused as %s, naming the file", c.path, err, c.says)
				}
			})
		})
	}
	t.Run("a schema file", func(t *testing.T) {
		within(t, "DirReader of a named pipe", func() {
			if _, err := DirReader(dir)("s.yaml"); err == nil || !strings.Contains(err.Error(), "s.yaml") || !strings.Contains(err.Error(), "named pipe") {
				t.Errorf("DirReader: %v", err)
			}
		})
	})
	t.Run("a lock", func(t *testing.T) {
		locks := t.TempDir()
		mkfifo(t, filepath.Join(locks, "evil"+LockSuffix))
		within(t, "LockLookup past a named pipe", func() {
			if _, err := LockLookup(locks)("ts_00000000000000000000000000000000"); err == nil || !strings.Contains(err.Error(), "evil.lock.json") || !strings.Contains(err.Error(), "named pipe") {
				t.Errorf("LockLookup: %v", err)
			}
		})
	})
}

// A file over its bound is refused once one byte past the bound is read,
// naming the file and the bound: a 2 GiB sparse file is not read through.
func TestReadFileRefusesFilesOverTheirBound(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 2<<30); err != nil {
		t.Skipf("no sparse file here: %v", err)
	}
	start := time.Now()
	if _, err := ReadFile(big, SourceFile); err == nil || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "over 8 MiB (8388608 bytes)") {
		t.Errorf("ReadFile of 2 GiB: %v, want it refused naming the file and 8 MiB", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusing a 2 GiB file took %v: it was read through", d)
	}
	at := func(n int) string {
		p := filepath.Join(dir, "schema.json")
		if err := os.WriteFile(p, []byte(strings.Repeat(" ", n)), 0o644); err != nil {
			t.Fatal(err)
		}
		return "schema.json"
	}
	if _, err := DirReader(dir)(at(int(SchemaFile.Max))); err != nil {
		t.Errorf("a schema file of exactly 1 MiB: %v", err)
	}
	if _, err := DirReader(dir)(at(int(SchemaFile.Max) + 1)); err == nil || !strings.Contains(err.Error(), "schema.json") || !strings.Contains(err.Error(), "over 1 MiB") {
		t.Errorf("a schema file of 1 MiB and one byte: %v", err)
	}
	lock := filepath.Join(dir, "big"+LockSuffix)
	if err := os.Rename(big, lock); err != nil {
		t.Fatal(err)
	}
	if _, err := LockLookup(dir)("ts_00000000000000000000000000000000"); err == nil || !strings.Contains(err.Error(), "big.lock.json") || !strings.Contains(err.Error(), "over 32 MiB") {
		t.Errorf("LockLookup past a 2 GiB lock: %v", err)
	}
}
