package catalog

import (
	"encoding/json"
	"testing"
)

// Every member EffectTargets names is a top-level property of its
// built-in tool's input schema: a renamed member would otherwise become
// editable without anyone noticing.
func TestEffectTargetsAreInputMembersOfTheirTools(t *testing.T) {
	for name := range effectTargets {
		tl, ok := Default().Lookup(name)
		if !ok {
			t.Errorf("%s is not a built-in tool", name)
			continue
		}
		var doc struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(tl.InputSchema, &doc); err != nil {
			t.Fatal(err)
		}
		for _, m := range EffectTargets(name) {
			if doc.Properties[m] == nil {
				t.Errorf("%s: %q is not a property of its input schema", name, m)
			}
		}
	}
	if EffectTargets("workflow-validator") != nil {
		t.Error("a tool without effect targets has some")
	}
}
