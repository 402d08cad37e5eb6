package resolver

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/toolset"
)

// FuzzParse feeds arbitrary bytes through the whole resolver: it must never
// panic, every diagnostic must carry a position and a rule, and whatever
// compiles must be JSON within Step Functions' quota. The locks of
// testdata/toolsets are registered, so that Solutions naming a toolset
// (platform tools, workflow steps) compile too. The same bytes go through
// the toolset file grammar (CompileToolset, seeded with the toolset files
// of testdata/toolsets, MCP servers among them): a toolset it resolves
// passes the registration check, and a draft reads back as one
// (toolset.ParseDraft).
func FuzzParse(f *testing.F) {
	files := solutionFiles(f)
	onToolsets, err := filepath.Glob(filepath.Join(toolsetsDir, "solutions", "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	toolsetFiles, err := filepath.Glob(filepath.Join(toolsetsDir, "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range append(append(files, onToolsets...), toolsetFiles...) {
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
		tres := CompileToolset("fuzz.yaml", src, ToolsetOptions{Lookup: lookup})
		slow.Stop()
		for _, d := range append(res.Diagnostics, tres.Diagnostics...) {
			if d.Line < 1 || d.Column < 1 || d.Rule == "" || d.Message == "" || d.File != "fuzz.yaml" {
				t.Fatalf("malformed diagnostic %+v", d)
			}
			if i := strings.IndexFunc(d.Message, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
				t.Fatalf("diagnostic holds a control character: %q", d.Message)
			}
		}
		checkToolsetResult(t, tres)
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

// checkToolsetResult holds a resolved toolset file to what CompileToolset
// promises: a toolset only without errors; a draft without an id that
// toolset.ParseDraft reads back as the same draft; any other toolset
// passing the registration check.
func checkToolsetResult(t *testing.T, res *ToolsetResult) {
	t.Helper()
	switch {
	case !res.OK():
		if res.Toolset != nil || res.Draft {
			t.Fatal("a refused toolset file produced a toolset")
		}
	case res.Toolset == nil:
		t.Fatal("a toolset file without errors produced no toolset")
	case res.Draft:
		doc, err := res.Toolset.MarshalIndent()
		if err != nil {
			t.Fatal(err)
		}
		back, err := toolset.ParseDraft(doc)
		if err != nil {
			t.Fatalf("the draft does not read back: %v\n%s", err, doc)
		}
		again, _ := back.MarshalIndent()
		if res.Toolset.ID != "" || string(again) != string(doc) {
			t.Fatalf("the draft reads back as another:\n%s\n%s", doc, again)
		}
	default:
		if err := res.Toolset.Verify(catalog.Default()); err != nil {
			t.Fatalf("a resolved toolset fails the registration check: %v", err)
		}
	}
}
