package declare

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/toolset"
)

const (
	solutionsDir = "../../testdata/solutions"
	toolsetsDir  = "../../testdata/toolsets"
)

// compileSolutionSchema generates ts's solution.schema.json and compiles
// it as the JSON Schema it declares ($schema: draft-07), with the
// patterns' engines the resolver uses (shared/schema).
func compileSolutionSchema(t *testing.T, ts *toolset.Toolset) (*schema.Schema, map[string]any) {
	t.Helper()
	doc, err := SolutionSchema(ts)
	if err != nil {
		t.Fatalf("SolutionSchema: %v", err)
	}
	if !strings.HasSuffix(string(doc), "}\n") {
		t.Fatalf("solution.schema.json does not end in a newline")
	}
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	if m["$schema"] != Draft07 {
		t.Fatalf("$schema is %v, want %s", m["$schema"], Draft07)
	}
	// The library's own draft-07 compiler, as an editor's would read it:
	// the document is valid against draft-07's meta-schema and its every
	// $ref resolves.
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	if err := c.AddResource("urn:toolgate:solution-schema", v); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("urn:toolgate:solution-schema"); err != nil {
		t.Fatalf("solution.schema.json is not a valid draft-07 schema: %v", err)
	}
	// The resolver's schema package, whose patterns engines the tests
	// validate Solutions with.
	s, err := schema.Compile(doc)
	if err != nil {
		t.Fatalf("solution.schema.json does not compile: %v", err)
	}
	return s, m
}

// solutionData reads a Solution as the resolver reads it.
func solutionData(t *testing.T, file string) any {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	v, err := resolver.SolutionData(filepath.Base(file), src)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func readToolset(t *testing.T, file string) *toolset.Toolset {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := toolset.Parse(b)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return ts
}

func TestSolutionSchemaIsValidDraft07ForEveryLock(t *testing.T) {
	locks, _ := filepath.Glob(filepath.Join(toolsetsDir, "*"+resolver.LockSuffix))
	if len(locks) == 0 {
		t.Fatal("no locks")
	}
	for _, l := range locks {
		t.Run(filepath.Base(l), func(t *testing.T) { compileSolutionSchema(t, readToolset(t, l)) })
	}
}

// schemaToolInput matches a diagnostic the schema must also give: a
// literal tool input that its input schema refuses (checkToolInputs, as
// opposed to the resolver's own rules reported as [tool-input]), a key
// the grammar does not have, or a required key missing.
var schemaToolInput = regexp.MustCompile(`\[tool-input\] step "[^"]*" \([^)]*\) with|\[unknown-field\]|\[missing-field\]`)

func TestSolutionSchemaAcceptsEveryAcceptedSolutionAndRefusesInvalidToolInputAndKeys(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(solutionsDir, "*"))
	accepted, refused := 0, 0
	for _, f := range files {
		if !strings.HasSuffix(f, ".yaml") && !(strings.HasSuffix(f, ".json") && !strings.HasSuffix(f, ".asl.json") && !strings.HasSuffix(f, ".toolset.json")) {
			continue
		}
		stem := strings.TrimSuffix(strings.TrimSuffix(f, ".yaml"), ".json")
		if _, err := os.Stat(stem + ".toolset.json"); err == nil {
			accepted++
			t.Run(filepath.Base(f), func(t *testing.T) {
				s, _ := compileSolutionSchema(t, readToolset(t, stem+".toolset.json"))
				if err := s.Validate(solutionData(t, f)); err != nil {
					t.Errorf("an accepted Solution does not validate against its toolset's schema:\n%v", err)
				}
			})
			continue
		}
		errs, err := os.ReadFile(stem + ".err")
		if err != nil || !schemaToolInput.Match(errs) {
			continue
		}
		refused++
		t.Run(filepath.Base(f), func(t *testing.T) {
			// A Solution naming no toolset is checked against the catalog's
			// tools, whose pinned schemas a derived toolset copies.
			data := solutionData(t, f)
			ts, err := toolset.FromCatalog(catalog.Default(), catalog.Default().Names(), nil, nil)
			if id, ok := data.(map[string]any)["toolset"].(string); ok {
				ts, err = resolver.LockLookup(toolsetsDir)(id)
			}
			if err != nil {
				t.Fatal(err)
			}
			s, _ := compileSolutionSchema(t, ts)
			if err := s.Validate(data); err == nil {
				t.Errorf("a Solution refused for its literal tool input or its keys validates against the schema")
			}
		})
	}
	if accepted < 10 || refused < 2 {
		t.Fatalf("only %d accepted and %d refused-for-input Solutions found in %s", accepted, refused, solutionsDir)
	}
}

// The Solutions on registered toolsets (testdata/toolsets/solutions) are
// checked against the schema of the toolset each names, as the resolver
// finds it among the locks: those the resolver accepts validate.
func TestSolutionSchemaAcceptsTheSolutionsOnRegisteredToolsets(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(toolsetsDir, "solutions", "*.yaml"))
	lookup := resolver.LockLookup(toolsetsDir)
	checked := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		res := resolver.Compile(filepath.Base(f), src, resolver.Options{Toolsets: lookup})
		if !res.OK() {
			continue
		}
		checked++
		t.Run(filepath.Base(f), func(t *testing.T) {
			data := solutionData(t, f)
			id, _ := data.(map[string]any)["toolset"].(string)
			ts, err := lookup(id)
			if err != nil {
				t.Fatalf("toolset %s: %v", id, err)
			}
			s, _ := compileSolutionSchema(t, ts)
			if err := s.Validate(data); err != nil {
				t.Errorf("an accepted Solution does not validate against its toolset's schema:\n%v", err)
			}
		})
	}
	if checked < 3 {
		t.Fatalf("only %d accepted Solutions in %s", checked, filepath.Join(toolsetsDir, "solutions"))
	}
}
