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
