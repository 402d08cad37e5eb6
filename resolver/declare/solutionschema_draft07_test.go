package declare

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/toolset"
)

// oneToolSolution is a Solution calling tool name with input with (JSON).
func oneToolSolution(t *testing.T, name, with string) any {
	t.Helper()
	src := `{"solution": "s", "version": 1, "steps": [{"id": "call", "tool": ` + quote(name) + `, "with": ` + with + `}]}`
	v, err := resolver.SolutionData("s.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A 2020-12 input schema with what draft-07 spells otherwise: $defs and
// $ref into them (also with siblings), prefixItems with items, and
// dependentRequired. The tool's name needs escaping in a JSON Pointer.
const converted2020 = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "urn:example:tool",
  "type": "object",
  "additionalProperties": false,
  "required": ["point", "owner"],
  "$defs": {
    "name": {"type": "string", "minLength": 2},
    "person": {"type": "object", "required": ["name"], "properties": {"name": {"$ref": "#/$defs/name"}, "email": {"type": "string"}}, "additionalProperties": false}
  },
  "properties": {
    "point": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"}], "items": false},
    "owner": {"$ref": "#/$defs/person", "description": "who"},
    "ownerName": {"$ref": "#/$defs/person/properties/name"},
    "x": {"$ref": "#/properties/point/prefixItems/0"},
    "y": {"$ref": "#/properties/boxed/properties/v"},
    "boxed": {"$ref": "#/$defs/name", "properties": {"v": {"type": "boolean"}}},
    "card": {"type": "string"},
    "cvc": {"type": "string"},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "unevaluatedItems": false}
  },
  "dependentRequired": {"card": ["cvc"]}
}`

func TestSolutionSchemaConvertsA2020ToolSchemaToDraft07(t *testing.T) {
	const name = "a/b~c d"
	ts := &toolset.Toolset{Tools: map[string]toolset.Tool{name: {InputSchema: json.RawMessage(converted2020)}}}
	s, doc := compileSolutionSchema(t, ts)
	in := doc["definitions"].(map[string]any)[toolDefPrefix+name].(map[string]any)
	for _, gone := range []string{"$schema", "$id", "$defs", "dependentRequired"} {
		if _, ok := in[gone]; ok {
			t.Errorf("the converted schema keeps %s", gone)
		}
	}
	cases := []struct {
		name, with string
		valid      bool
	}{
		{"literal input", `{"point": [1, 2], "owner": {"name": "Ann"}}`, true},
		{"bindings at value positions", `{"point": ["${input.x}", 2], "owner": {"name": "${input.n}", "email": "${input.e}"}, "tags": "${input.tags}"}`, true},
		{"whole member bound", `{"point": "${input.p}", "owner": "${steps.a.output.owner}"}`, true},
		{"prefixItems: a third item", `{"point": [1, 2, 3], "owner": {"name": "Ann"}}`, false},
		{"prefixItems: a string item", `{"point": [1, "x"], "owner": {"name": "Ann"}}`, false},
		{"$defs: name too short", `{"point": [1, 2], "owner": {"name": "A"}}`, false},
		{"$ref siblings kept: unknown member", `{"point": [1, 2], "owner": {"name": "Ann", "x": 1}}`, false},
		{"$ref to a wrapped property", `{"point": [1, 2], "owner": {"name": "Ann"}, "ownerName": "B"}`, false},
		{"$ref through a wrapped property", `{"point": [1, 2], "owner": {"name": "Ann"}, "x": "one"}`, false},
		{"$ref through a wrapped property, valid", `{"point": [1, 2], "owner": {"name": "Ann"}, "x": 1, "y": true}`, true},
		{"$ref through a $ref with siblings", `{"point": [1, 2], "owner": {"name": "Ann"}, "y": "yes"}`, false},
		{"dependentRequired", `{"point": [1, 2], "owner": {"name": "Ann"}, "card": "4111"}`, false},
		{"required member missing", `{"point": [1, 2]}`, false},
		{"additionalProperties false", `{"point": [1, 2], "owner": {"name": "Ann"}, "other": 1}`, false},
		{"not a binding: no such execution field", `{"point": [1, "${execution.foo}"], "owner": {"name": "Ann"}}`, false},
		{"$${ is literal text, not a binding", `{"point": [1, "$${input.x}"], "owner": {"name": "Ann"}}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := s.Validate(oneToolSolution(t, name, c.with))
			if (err == nil) != c.valid {
				t.Errorf("with %s: valid %v, want %v (%v)", c.with, err == nil, c.valid, err)
			}
		})
	}
}

func TestSolutionSchemaRequiresWithWhenEmptyInputIsInvalid(t *testing.T) {
	ts := &toolset.Toolset{Tools: map[string]toolset.Tool{
		"needs":    {InputSchema: json.RawMessage(`{"type": "object", "required": ["a"]}`)},
		"optional": {InputSchema: json.RawMessage(`{"type": "object", "properties": {"a": {"type": "string"}}}`)},
	}}
	s, _ := compileSolutionSchema(t, ts)
	for _, c := range []struct {
		src   string
		valid bool
	}{
		{`{"solution": "s", "version": 1, "steps": [{"id": "a", "tool": "needs"}]}`, false},
		{`{"solution": "s", "version": 1, "steps": [{"id": "a", "tool": "optional"}]}`, true},
		{`{"solution": "s", "version": 1, "steps": [{"id": "a", "tool": "other"}]}`, false},
	} {
		v, err := resolver.SolutionData("s.json", []byte(c.src))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(v); (err == nil) != c.valid {
			t.Errorf("%s: valid %v, want %v (%v)", c.src, err == nil, c.valid, err)
		}
	}
}

func TestSolutionSchemaRefusesAReferenceOutsideTheToolSchema(t *testing.T) {
	for _, ref := range []string{"https://example.com/s.json", "#anchor", "other.json#/a"} {
		ts := &toolset.Toolset{Tools: map[string]toolset.Tool{"t": {InputSchema: json.RawMessage(`{"properties": {"a": {"$ref": ` + quote(ref) + `}}}`)}}}
		_, err := SolutionSchema(ts)
		if err == nil || !strings.Contains(err.Error(), `tool "t"`) || !strings.Contains(err.Error(), "/properties/a/$ref") {
			t.Errorf("$ref %s: error %v, want one naming the tool and the location", ref, err)
		}
	}
}

func TestSolutionSchemaIsTheSameBytesEachTime(t *testing.T) {
	ts := readToolset(t, toolsetsDir+"/demo.lock.json")
	a, err := SolutionSchema(ts)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b, _ := SolutionSchema(ts)
		if !bytes.Equal(a, b) {
			t.Fatal("two renderings of one toolset differ")
		}
	}
}

func TestSolutionSchemaEnumeratesTheToolsetsToolsAndWorkflows(t *testing.T) {
	ts := &toolset.Toolset{
		Tools:     map[string]toolset.Tool{"b.tool": {InputSchema: json.RawMessage(`{}`)}, "a-tool": {InputSchema: json.RawMessage(`{}`)}},
		Workflows: []string{"child-one", "child-two"},
	}
	s, _ := compileSolutionSchema(t, ts)
	for _, c := range []struct {
		step  string
		valid bool
	}{
		{`{"id": "a", "tool": "a-tool"}`, true},
		{`{"id": "a", "tool": "b.tool"}`, true},
		{`{"id": "a", "tool": "c"}`, false},
		{`{"id": "a", "workflow": "child-two", "with": {"x": "${input.x}"}}`, true},
		{`{"id": "a", "workflow": "child-three"}`, false},
	} {
		v, err := resolver.SolutionData("s.json", []byte(`{"solution": "s", "version": 1, "steps": [`+c.step+`]}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(v); (err == nil) != c.valid {
			t.Errorf("%s: valid %v, want %v (%v)", c.step, err == nil, c.valid, err)
		}
	}
}

// FuzzSolutionSchema converts a fuzzed tool input schema as
// SolutionSchema does: whenever the resolver compiles that schema
// (2020-12, as a toolset pins it), the conversion either is refused with
// an error naming the tool, or gives a schema whose every $ref resolves
// and which compiles as draft-07 (here with a plain string as the binding
// definition, so that each run stays short).
func FuzzSolutionSchema(f *testing.F) {
	f.Add(converted2020)
	f.Add(`{"type": "object", "properties": {"a": {"$ref": "#"}}}`)
	f.Add(`{"$defs": {"x~/": {"type": "integer"}}, "items": {"$ref": "#/$defs/x~0~1"}}`)
	f.Add(`{"anyOf": [{"required": ["text"]}, {"required": ["html"]}], "dependentSchemas": {"a": {"required": ["b"]}}}`)
	f.Add(`{"properties": {"a b%": {"prefixItems": [{"$ref": "#/properties/a%20b%25/items/0"}], "items": {"$ref": "#/properties/a%20b%25/prefixItems/0"}}}}`)
	f.Add(`true`)
	const name = "t/~ x"
	f.Fuzz(func(t *testing.T, in string) {
		if _, err := schema.CompileUncached(json.RawMessage(in)); err != nil {
			return
		}
		conv, _, err := toolInput(name, json.RawMessage(in))
		if err != nil {
			if !strings.Contains(err.Error(), quote(name)) {
				t.Fatalf("error %v does not name the tool", err)
			}
			return
		}
		doc := map[string]any{
			"$schema":     Draft07,
			"definitions": map[string]any{bindingDef: map[string]any{"type": "string"}, toolDefPrefix + name: conv},
			"$ref":        "#/definitions/" + pointerToken(toolDefPrefix+name),
		}
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := schema.CompileUncached(b); err != nil {
			t.Fatalf("the converted schema does not compile as draft-07: %v\n%s", err, b)
		}
	})
}
