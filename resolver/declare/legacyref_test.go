package declare

import (
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/toolset"
)

// In a draft-07 tool schema the siblings of "$ref" are ignored (draft-07
// Core §8.3): solution.schema.json must not refuse what the tool's
// schema, so read, accepts, as tools.d.ts does not.
func TestSolutionSchemaIgnoresRefSiblingsInDraft07ToolSchemas(t *testing.T) {
	const legacy = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "definitions": {"n": {"type": "number"}},
  "properties": {"v": {"$ref": "#/definitions/n", "type": "string"}}
}`
	s, err := schema.Compile(json.RawMessage(legacy))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(map[string]any{"v": json.Number("1")}); err != nil {
		t.Fatalf("the tool's draft-07 schema refuses a number: %v", err)
	}
	ts := &toolset.Toolset{Tools: map[string]toolset.Tool{"old": {InputSchema: json.RawMessage(legacy)}}}
	ss, _ := compileSolutionSchema(t, ts)
	if err := ss.Validate(oneToolSolution(t, "old", `{"v": 1}`)); err != nil {
		t.Errorf("solution.schema.json refuses a number the tool's schema accepts: %v", err)
	}
	if err := ss.Validate(oneToolSolution(t, "old", `{"v": "x"}`)); err == nil {
		t.Error("solution.schema.json accepts a string the $ref refuses")
	}
}

// A draft-04 tool schema's boolean exclusiveMinimum/exclusiveMaximum
// (draft-04 Validation §5.1.2-3) is written as draft-07's number, so that
// solution.schema.json stays a valid draft-07 schema and still refuses
// the bound itself.
func TestSolutionSchemaConvertsDraft04ExclusiveBounds(t *testing.T) {
	const d4 = `{"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
  "properties": {"n": {"type": "number", "minimum": 1, "exclusiveMinimum": true, "maximum": 9, "exclusiveMaximum": false}}}`
	if _, err := schema.Compile(json.RawMessage(d4)); err != nil {
		t.Fatalf("the draft-04 schema does not compile: %v", err)
	}
	ts := &toolset.Toolset{Tools: map[string]toolset.Tool{"d4": {InputSchema: json.RawMessage(d4)}}}
	ss, _ := compileSolutionSchema(t, ts)
	for with, valid := range map[string]bool{`{"n": 1}`: false, `{"n": 1.5}`: true, `{"n": 9}`: true, `{"n": 10}`: false} {
		if err := ss.Validate(oneToolSolution(t, "d4", with)); (err == nil) != valid {
			t.Errorf("with %s: valid %v, want %v", with, err == nil, valid)
		}
	}
}
