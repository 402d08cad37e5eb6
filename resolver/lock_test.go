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
	if _, p, err := parseYAML([]byte(strings.Repeat("- id: a\n  pass: {x: 1}\n", MaxMappingKeys+10))); err != nil {
		t.Fatalf("a long sequence of small mappings counted as one mapping (at %v): %v", p, err)
	}
}

// The key count sees mappings as the YAML parser does: text inside a block
// scalar or a quoted scalar holds no key, keys of sibling mappings count
// apart, and a flow mapping counts its entries as a block mapping counts
// its keys.
func TestYAMLKeyCountCountsKeysOfRealMappingsOnly(t *testing.T) {
	lines := func(n int, indent string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "%sk%d: %d\n", indent, i, i)
		}
		return b.String()
	}
	flow := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "k%d: %d", i, i)
		}
		return b.String()
	}
	over := MaxMappingKeys + 1
	cases := []struct {
		name    string
		src     string
		refused bool
	}{
		{"block mapping at the bound", lines(MaxMappingKeys, ""), false},
		{"block mapping over the bound", lines(over, ""), true},
		{"lines of a literal block scalar", "text: |\n" + lines(6000, "  "), false},
		{"lines of a folded block scalar", "text: >-\n" + lines(6000, "  "), false},
		{"lines of a double-quoted string", "text: \"start\n" + lines(6000, "  ") + "  end\"\n", false},
		{"lines of a single-quoted string", "text: 'start\n" + lines(6000, "  ") + "  end'\n", false},
		{"two sibling mappings", "a:\n" + lines(3000, "  ") + "b:\n" + lines(3000, "  "), false},
		{"sequence items' mappings", "- " + strings.ReplaceAll(strings.TrimSuffix(lines(3000, ""), "\n"), "\n", "\n- ") + "\n", false},
		{"flow mapping at the bound", "m: {" + flow(MaxMappingKeys) + "}\n", false},
		{"flow mapping over the bound", "m: {" + flow(over) + "}\n", true},
		{"flow mapping of keys without values", "m: {" + strings.Repeat("k, ", over) + "}\n", true},
		{"flow mapping over the bound on many lines", "m: {\n" + strings.ReplaceAll(flow(over), ", ", ",\n  ") + "\n}\n", true},
		{"flow sequence of one-key mappings", "m: [" + flow(over) + "]\n", false},
		{"explicit keys over the bound", strings.Repeat("? k\n: v\n", over), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, p, err := parseYAML([]byte(c.src))
			refused := err != nil && strings.Contains(err.Error(), "more than 5000 keys")
			if refused != c.refused {
				t.Fatalf("refused %v at %v, want %v: %v", refused, p, c.refused, err)
			}
		})
	}
}
