package resolver

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const toolsetsDir = "../testdata/toolsets"

// compileToolsetFile resolves one file of testdata/toolsets, its bases
// looked up among the locks there.
func compileToolsetFile(t *testing.T, f string) *ToolsetResult {
	t.Helper()
	src, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return CompileToolset(filepath.Base(f), src, ToolsetOptions{Lookup: LockLookup(toolsetsDir), ReadFile: DirReader(filepath.Dir(f))})
}

// TestToolsetGolden resolves every toolset file in testdata/toolsets and
// compares its lock, or its diagnostics, with the golden files
// (<stem>.lock.json, <stem>.err). Run with -update to rewrite them.
func TestToolsetGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(toolsetsDir, "*.yaml"))
	if len(files) < 6 {
		t.Fatalf("only %d toolset files in %s", len(files), toolsetsDir)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			res := compileToolsetFile(t, f)
			stem := strings.TrimSuffix(f, ".yaml")
			want := map[string][]byte{}
			if res.OK() {
				lock, err := res.Toolset.MarshalIndent()
				if err != nil {
					t.Fatal(err)
				}
				want[stem+LockSuffix] = lock
			} else {
				var b bytes.Buffer
				for _, d := range res.Diagnostics {
					b.WriteString(d.String() + "\n")
				}
				want[stem+".err"] = b.Bytes()
			}
			compareGolden(t, want, stem, []string{LockSuffix, ".err"}, map[bool]string{true: "the toolset file now resolves", false: "the toolset file is now refused"}[res.OK()])
		})
	}
}

// The same content gives the same id whatever the format, key order or
// spacing; any changed schema value gives another id.
func TestToolsetIDIgnoresFormatting(t *testing.T) {
	yamlSrc := `toolset: one
tools:
  send-email: {}
  ping:
    function: ${FunctionPing}
    input_schema: {type: object, properties: {n: {type: integer, maximum: 5}}}
    output_schema: true
    timeout_seconds: 10
`
	jsonSrc := `{"tools": {"ping": {"timeout_seconds": 10, "output_schema": true,
   "input_schema": {"properties": {"n": {"maximum": 5, "type": "integer"}}, "type": "object"},
   "function": "${FunctionPing}"}, "send-email": null}, "toolset": "one"}`
	changed := strings.Replace(yamlSrc, "maximum: 5", "maximum: 6", 1)
	ids := map[string]string{}
	for name, src := range map[string]string{"a.yaml": yamlSrc, "b.json": jsonSrc, "c.yaml": changed} {
		res := CompileToolset(name, []byte(src), ToolsetOptions{})
		if !res.OK() {
			t.Fatalf("%s: %v", name, res.Diagnostics)
		}
		ids[name] = res.Toolset.ID
	}
	if ids["a.yaml"] != ids["b.json"] {
		t.Fatalf("YAML %s and JSON %s of the same content differ", ids["a.yaml"], ids["b.json"])
	}
	if ids["a.yaml"] == ids["c.yaml"] {
		t.Fatalf("a changed schema value kept the id %s", ids["a.yaml"])
	}
}

// A derived toolset has its base's tools with stricter policies, its own
// workflows, and names its base; its lock is the golden demo-reviewed.
func TestDerivedToolset(t *testing.T) {
	base := compileToolsetFile(t, filepath.Join(toolsetsDir, "demo.yaml"))
	derived := compileToolsetFile(t, filepath.Join(toolsetsDir, "demo-reviewed.yaml"))
	if !base.OK() || !derived.OK() {
		t.Fatalf("diagnostics: %v %v", base.Diagnostics, derived.Diagnostics)
	}
	b, d := base.Toolset, derived.Toolset
	if d.Base != b.ID || d.ID == b.ID || len(d.Tools) != len(b.Tools) {
		t.Fatalf("derived %+v from %s", d, b.ID)
	}
	if !d.Tools["create-ticket"].ReviewRequired || b.Tools["create-ticket"].ReviewRequired {
		t.Fatal("the derived toolset does not tighten create-ticket")
	}
	if d.Tools["create-ticket"].Function != b.Tools["create-ticket"].Function {
		t.Fatal("the derived toolset changed the function")
	}
	if strings.Join(d.Workflows, ",") != "fetch-and-notify" {
		t.Fatalf("workflows %v", d.Workflows)
	}
}
