package resolver

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/solutions")

const solutionsDir = "../testdata/solutions"

// solutionFiles lists the example Solutions: *.yaml and the JSON ones
// (every *.json that is not a golden output).
func solutionFiles(t testing.TB) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(solutionsDir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range all {
		switch {
		case strings.HasSuffix(f, ".asl.json"), strings.HasSuffix(f, ".toolset.json"), strings.HasSuffix(f, ".err"):
		case strings.HasSuffix(f, ".yaml"), strings.HasSuffix(f, ".json"):
			out = append(out, f)
		}
	}
	if len(out) < 8 {
		t.Fatalf("only %d example Solutions in %s", len(out), solutionsDir)
	}
	return out
}

func stem(f string) string {
	return strings.TrimSuffix(strings.TrimSuffix(f, ".yaml"), ".json")
}

// TestGolden compiles every example Solution and compares the definition
// and toolset, or the diagnostics, with the golden files. Run with -update
// to rewrite them.
func TestGolden(t *testing.T) {
	for _, f := range solutionFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			res := Compile(filepath.Base(f), src, Options{})
			want := map[string][]byte{}
			if res.OK() {
				ts, err := res.Toolset.MarshalIndent()
				if err != nil {
					t.Fatal(err)
				}
				want[stem(f)+".asl.json"] = res.Definition
				want[stem(f)+".toolset.json"] = ts
			} else {
				var b bytes.Buffer
				for _, d := range res.Diagnostics {
					b.WriteString(d.String() + "\n")
				}
				want[stem(f)+".err"] = b.Bytes()
			}
			compareGolden(t, want, stem(f), []string{".asl.json", ".toolset.json", ".err"}, map[bool]string{true: "the Solution now compiles", false: "the Solution is now refused"}[res.OK()])
		})
	}
}

// repoRoot is the module root, where make installs the npm tools.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// validateASL runs asl-validator 4.0.0 on one definition.
func validateASL(t *testing.T, def []byte) {
	t.Helper()
	validator := filepath.Join(repoRoot(t), "node_modules", ".bin", "asl-validator")
	path := filepath.Join(t.TempDir(), "def.asl.json")
	if err := os.WriteFile(path, def, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(validator, "--json-path", path).CombinedOutput(); err != nil {
		t.Fatalf("asl-validator refused the definition: %v\n%s", err, out)
	}
}

// TestASLValidator runs asl-validator 4.0.0 (package.json) on every golden
// definition.
func TestASLValidator(t *testing.T) {
	validator := filepath.Join(repoRoot(t), "node_modules", ".bin", "asl-validator")
	if _, err := os.Stat(validator); err != nil {
		t.Fatalf("asl-validator is not installed (%v): run `make test`, which runs npm ci", err)
	}
	defs, err := filepath.Glob(filepath.Join(solutionsDir, "*.asl.json"))
	if err != nil || len(defs) < 3 {
		t.Fatalf("golden definitions: %v %v", defs, err)
	}
	for _, def := range defs {
		t.Run(filepath.Base(def), func(t *testing.T) {
			out, err := exec.Command(validator, "--json-path", def).CombinedOutput()
			if err != nil {
				t.Fatalf("asl-validator refused %s: %v\n%s", def, err, out)
			}
		})
	}
	// The validator must be able to fail: a definition whose Next names no
	// state is refused.
	bad := filepath.Join(t.TempDir(), "bad.asl.json")
	os.WriteFile(bad, []byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"Nowhere"}}}`), 0o644)
	if out, err := exec.Command(validator, "--json-path", bad).CombinedOutput(); err == nil {
		t.Fatalf("asl-validator accepted a broken definition:\n%s", out)
	}
}

// compareGolden compares the files a test produced (want, by path) with
// the golden files stem+ext for each ext, or rewrites them with -update:
// a file it did not produce must not exist; now says what changed when
// one does.
func compareGolden(t *testing.T, want map[string][]byte, stem string, exts []string, now string) {
	t.Helper()
	for _, ext := range exts {
		path := stem + ext
		got, ok := want[path]
		if *update {
			if ok {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				os.Remove(path)
			}
			continue
		}
		golden, err := os.ReadFile(path)
		switch {
		case ok && err != nil:
			t.Fatalf("%s: %v (run go test ./resolver -update)", path, err)
		case !ok && err == nil:
			t.Fatalf("%s exists, but %s", path, now)
		case ok:
			if diff := cmp.Diff(string(golden), string(got)); diff != "" {
				t.Errorf("%s differs (-golden +got):\n%s", path, diff)
			}
		}
	}
}

// TestGateSummary compares the one-line summary (check --summary, compile)
// of the Solutions that have a .summary golden file with it: Gate A names
// the reviews whose approval can be the last before each gated call.
func TestGateSummary(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(solutionsDir, "*.summary"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .summary golden files: %v", err)
	}
	for _, f := range files {
		src, err := os.ReadFile(strings.TrimSuffix(f, ".summary") + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		res := Compile(filepath.Base(strings.TrimSuffix(f, ".summary")+".yaml"), src, Options{})
		compareGolden(t, map[string][]byte{f: []byte(res.Summary() + "\n")}, strings.TrimSuffix(f, ".summary"), []string{".summary"}, "")
	}
}
