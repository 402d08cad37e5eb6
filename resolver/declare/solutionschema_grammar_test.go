package declare

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/toolset"
)

// TestSolutionSchemaKnowsEveryGrammarKey walks resolver.Grammar: each
// context's mapping is in solution.schema.json at its place, with exactly
// its keys (additionalProperties false) and its required ones, so a key
// added to the resolver's grammar fails here until the schema knows it.
func TestSolutionSchemaKnowsEveryGrammarKey(t *testing.T) {
	ts, err := toolset.FromCatalog(catalog.Default(), catalog.Default().Names(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, doc := compileSolutionSchema(t, ts)
	defs := doc["definitions"].(map[string]any)
	places := map[string]bool{}
	for ctx, m := range resolver.Grammar() {
		var at map[string]any
		switch ctx {
		case resolver.GrammarSolution:
			at = doc
		case resolver.GrammarAuth:
			// A Solution's http host entry refuses auth, which a toolset
			// file declares (docs/toolsets.md): the key is there, false.
			host := defs[resolver.GrammarHTTPHost].(map[string]any)["properties"].(map[string]any)
			if host["auth"] != false {
				t.Errorf("http_host.auth is %v in the schema, want false: a Solution declares no credential", host["auth"])
			}
			continue
		default:
			d, ok := defs[ctx].(map[string]any)
			if !ok {
				t.Errorf("grammar context %q is not in the schema's definitions", ctx)
				continue
			}
			at = d
			places[ctx] = true
		}
		if at["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties is %v, want false (the resolver refuses unknown keys)", ctx, at["additionalProperties"])
		}
		props, _ := at["properties"].(map[string]any)
		var keys []string
		for k := range props {
			keys = append(keys, k)
		}
		if want := slices.Sorted(slices.Values(m.Keys)); !slices.Equal(slices.Sorted(slices.Values(keys)), want) {
			t.Errorf("%s: the schema's keys are %v, the grammar's %v", ctx, slices.Sorted(slices.Values(keys)), want)
		}
		var req []string
		if r, ok := at["required"].([]any); ok {
			for _, x := range r {
				req = append(req, x.(string))
			}
		}
		if !slices.Equal(slices.Sorted(slices.Values(req)), slices.Sorted(slices.Values(m.Required))) {
			t.Errorf("%s: the schema requires %v, the grammar %v", ctx, req, m.Required)
		}
	}
	// No mapping of the schema that the grammar lacks: every closed
	// object among the definitions is a grammar context or a tool's input.
	for name, d := range defs {
		m, ok := d.(map[string]any)
		if !ok || m["additionalProperties"] != false || places[name] || strings.HasPrefix(name, toolDefPrefix) {
			continue
		}
		t.Errorf("definition %q is a closed mapping that resolver.Grammar does not have", name)
	}
	// A step has exactly one kind key: the schema's step lists each.
	var kinds []string
	for _, alt := range defs[stepDef].(map[string]any)["oneOf"].([]any) {
		kinds = append(kinds, alt.(map[string]any)["required"].([]any)[0].(string))
	}
	if !slices.Equal(kinds, resolver.KindKeys()) {
		t.Errorf("the schema's step kinds are %v, the grammar's %v", kinds, resolver.KindKeys())
	}
	// when: value and one of the choice operators.
	when := defs[resolver.GrammarWhen].(map[string]any)["properties"].(map[string]any)
	for _, op := range resolver.ChoiceOperators() {
		if _, ok := when[op]; !ok {
			t.Errorf("when lacks the choice operator %s", op)
		}
	}
}
