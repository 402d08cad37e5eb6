package resolver

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every fuzz target in the repository is one `make fuzz` runs: the
// Makefile's FUZZ_TARGETS lists each as ./package/:FuzzName.
func TestMakeFuzzRunsEveryFuzzTarget(t *testing.T) {
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz[A-Za-z0-9_]*)\(`)
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "cdk.out" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllSubmatch(src, -1) {
			target := "./" + filepath.ToSlash(strings.TrimPrefix(filepath.Dir(path), "../")) + "/:" + string(m[1])
			if !strings.Contains(string(makefile), target+" ") && !strings.Contains(string(makefile), target+"\n") {
				t.Errorf("%s is not in the Makefile's FUZZ_TARGETS", target)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
