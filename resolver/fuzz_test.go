package resolver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
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
//
// Every input is also read as a .json file (strict JSON, parseJSON), seeded
// with malformed JSON texts: the same promises hold, and what it accepts is
// JSON by encoding/json too, while a JSON text it refuses is one with a
// repeated or empty name, too deep, or one refusedNumbers refuses.
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
	f.Add([]byte("solution: x\nversion: 1\nsteps:\n  - id: a\n    pass: {x: [1, 2}\n  - id: b\n"))
	for _, c := range malformedJSON {
		f.Add([]byte(c.src))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		checkJSONAgainstStdlib(t, src)
		for _, file := range []string{"fuzz.yaml", "fuzz.json"} {
			checkCompile(t, file, src, lookup)
		}
	})
}

// checkJSONAgainstStdlib holds parseJSON to encoding/json: it accepts only
// JSON texts, and refuses a JSON text only for a rule of its own.
func checkJSONAgainstStdlib(t *testing.T, src []byte) {
	t.Helper()
	v, pos, err := parseJSON(src)
	valid := json.Valid(src)
	switch {
	case err == nil && !valid:
		t.Fatalf("parseJSON accepts what encoding/json refuses: %q", src)
	case err == nil:
		var want any
		dec := json.NewDecoder(bytes.NewReader(src))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if got := v.plain(); !reflect.DeepEqual(got, want) {
			t.Fatalf("parseJSON reads %q as %#v, encoding/json as %#v", src, got, want)
		}
	case valid && len(src) <= MaxSourceBytes:
		msg := err.Error()
		// encoding/json reads invalid UTF-8 and a lone surrogate escape
		// as U+FFFD; parseJSON refuses them (RFC 8259 §8.1, §7).
		ownRule := false
		for _, rule := range []string{"appears twice", "may not be empty", "nest deeper", "not valid UTF-8", `\u escape`} {
			ownRule = ownRule || strings.Contains(msg, rule)
		}
		if !ownRule {
			t.Fatalf("parseJSON refuses the JSON text %q at %v: %v", src, pos, err)
		}
	}
}

// checkCompile compiles src as the Solution and the toolset file named
// file and holds the results to what Compile and CompileToolset promise.
func checkCompile(t *testing.T, file string, src []byte, lookup func(string) (*toolset.Toolset, error)) {
	t.Helper()
	// A compile that takes seconds is a defect too: crash the worker so
	// that the fuzzer records the input.
	slow := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("Compile took over 10s on %q", src)) })
	res := Compile(file, src, Options{Toolsets: lookup})
	tres := CompileToolset(file, src, ToolsetOptions{Lookup: lookup})
	slow.Stop()
	for _, d := range append(res.Diagnostics, tres.Diagnostics...) {
		if d.Line < 1 || d.Column < 1 || d.Rule == "" || d.Message == "" || d.File != file {
			t.Fatalf("malformed diagnostic %+v", d)
		}
		if d.Line > bytes.Count(src, []byte("\n"))+1 {
			t.Fatalf("diagnostic past the last line: %+v", d)
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
