package resolver

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzParse feeds arbitrary bytes through the whole resolver: it must never
// panic, every diagnostic must carry a position and a rule, and whatever
// compiles must be JSON within Step Functions' quota. The locks of
// testdata/toolsets are registered, so that Solutions naming a toolset
// (platform tools, workflow steps) compile too.
func FuzzParse(f *testing.F) {
	files := solutionFiles(f)
	onToolsets, err := filepath.Glob(filepath.Join(toolsetsDir, "solutions", "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range append(files, onToolsets...) {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	lookup := LockLookup(toolsetsDir)
	f.Add([]byte("solution: x\nversion: 1\nsteps: [{id: a, pass: {v: \"${input.a[0].b}\"}}]"))
	f.Add([]byte("{}"))
	f.Add([]byte("- a\n- b"))
	f.Add([]byte("&a [*a]"))
	f.Fuzz(func(t *testing.T, src []byte) {
		// A compile that takes seconds is a defect too: crash the worker so
		// that the fuzzer records the input.
		slow := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("Compile took over 10s on %q", src)) })
		res := Compile("fuzz.yaml", src, Options{Toolsets: lookup})
		slow.Stop()
		for _, d := range res.Diagnostics {
			if d.Line < 1 || d.Column < 1 || d.Rule == "" || d.Message == "" || d.File != "fuzz.yaml" {
				t.Fatalf("malformed diagnostic %+v", d)
			}
			if i := strings.IndexFunc(d.Message, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
				t.Fatalf("diagnostic holds a control character: %q", d.Message)
			}
		}
		if !res.OK() {
			if res.Definition != nil || res.Toolset != nil {
				t.Fatal("a refused Solution produced output")
			}
			return
		}
		var def map[string]any
		if err := json.Unmarshal(res.Definition, &def); err != nil {
			t.Fatalf("definition is not JSON: %v", err)
		}
		if def["StartAt"] != stateStart {
			t.Fatalf("StartAt %v", def["StartAt"])
		}
		states := def["States"].(map[string]any)
		for name, st := range states {
			if next, ok := st.(map[string]any)["Next"].(string); ok {
				if _, exists := states[next]; !exists {
					t.Fatalf("state %s: Next %q names no state", name, next)
				}
			}
		}
	})
}
