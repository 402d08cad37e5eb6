package declare

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/toolset"
)

// A "$ref" inside a subschema with its own "$id" resolves against that
// $id (JSON Schema 2020-12 Core §8.2.1): here p's "#/$defs/q" is p's own
// string, not the root's integer. shared/schema, which validates the
// tool's input, agrees.
const idScoped = `{
  "type": "object",
  "additionalProperties": false,
  "$defs": {"q": {"type": "integer"}},
  "properties": {
    "p": {"$id": "https://tools.example/p", "$ref": "#/$defs/q", "$defs": {"q": {"type": "string"}}}
  }
}`

// Neither rendering reads such a reference as a pointer into the tool's
// schema: tools.d.ts declares it unknown, noted, and solution.schema.json
// drops it, so that neither refuses what the tool's schema accepts.
func TestReferenceInsideAnIDResourceIsNotReadAgainstTheToolSchema(t *testing.T) {
	s, err := schema.Compile(json.RawMessage(idScoped))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(map[string]any{"p": "text"}); err != nil {
		t.Fatalf("shared/schema refuses p as a string: %v", err)
	}
	ts := &toolset.Toolset{Tools: map[string]toolset.Tool{"scoped": {InputSchema: json.RawMessage(idScoped)}}}
	out, err := TypeScript(ts)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "type scoped_Input_q") || !strings.Contains(string(out), `"p"?: unknown;`) {
		t.Errorf("tools.d.ts reads p's reference against the tool's schema:\n%s", out)
	}
	ss, _ := compileSolutionSchema(t, ts)
	if err := ss.Validate(oneToolSolution(t, "scoped", `{"p": "text"}`)); err != nil {
		t.Errorf("solution.schema.json refuses p as a string, which the tool accepts: %v", err)
	}
	if err := ss.Validate(oneToolSolution(t, "scoped", `{"other": 1}`)); err == nil {
		t.Error("solution.schema.json accepts an unknown member")
	}
}
