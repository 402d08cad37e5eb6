package resolver

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A schema file is read inside the toolset file's directory: a symbolic
// link leading out of it is refused, so that no file of the machine can be
// copied into a lock and the table.
func TestDirReaderRefusesLinksLeadingOutOfTheDirectory(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "env.yaml")
	if err := os.WriteFile(secret, []byte("AWS_SECRET_ACCESS_KEY: not-a-real-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "schemas"), 0o755)
	if err := os.Symlink(secret, filepath.Join(dir, "schemas", "in.yaml")); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "schemas", "ok.json"), []byte(`{"type":"object"}`), 0o644)
	os.Symlink("ok.json", filepath.Join(dir, "schemas", "alias.json"))
	read := DirReader(dir)
	if data, err := read("schemas/in.yaml"); err == nil || strings.Contains(string(data), "not-a-real-key") {
		t.Fatalf("a link out of the directory was read: %q, %v", data, err)
	}
	if data, err := read("schemas/alias.json"); err != nil || string(data) != `{"type":"object"}` {
		t.Fatalf("a link inside the directory: %q, %v", data, err)
	}
}

// A YAML mapping of more than MaxMappingKeys keys is refused before the
// parser, whose time grows with the square of a mapping's keys, runs; a
// long sequence of small mappings (a Solution's steps) is not.
func TestYAMLMappingOfTooManyKeysIsRefusedBeforeParsing(t *testing.T) {
	var b strings.Builder
	b.WriteString("solution: many\nversion: 1\nsteps:\n  - id: a\n    pass:\n")
	for i := 0; i <= MaxMappingKeys; i++ {
		fmt.Fprintf(&b, "      k%d: 1\n", i)
	}
	res := Compile("many.yaml", []byte(b.String()), Options{})
	if res.OK() || len(res.Diagnostics) != 1 || res.Diagnostics[0].Rule != RuleSyntax || !strings.Contains(res.Diagnostics[0].Message, "more than 5000 keys") {
		t.Fatalf("a mapping of %d keys: %v", MaxMappingKeys+1, res.Diagnostics)
	}
	if p, wide := mappingTooWide([]byte(strings.Repeat("- id: a\n  pass: {x: 1}\n", MaxMappingKeys+10))); wide {
		t.Fatalf("a long sequence of small mappings counted as one mapping (at %v)", p)
	}
}
