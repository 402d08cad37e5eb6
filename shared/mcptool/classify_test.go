package mcptool

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// pinnedDef is the definition each case of TestClassify changes: an
// object input with a required id and an optional note, nested address
// properties, and an output schema that refuses additional properties.
var pinnedDef = Definition{
	Description: "Looks a customer up.",
	InputSchema: json.RawMessage(`{"type":"object","required":["id"],"properties":{
		"id":{"type":"string","pattern":"^c_"},
		"note":{"type":"string","maxLength":100},
		"address":{"type":"object","properties":{"city":{"type":"string"}}}}}`),
	OutputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"name":{"type":"string"},
		"tags":{"type":"object","properties":{}}}}`),
	Annotations: json.RawMessage(`{"readOnlyHint":true}`),
}

// edit returns pinnedDef with its schemas replaced where set.
func edit(f func(d *Definition)) *Definition {
	d := pinnedDef
	f(&d)
	return &d
}

func TestClassifyNamesEachChangedPointerAdditiveOrBreaking(t *testing.T) {
	input := func(s string) *Definition {
		return edit(func(d *Definition) { d.InputSchema = json.RawMessage(s) })
	}
	output := func(s string) *Definition {
		return edit(func(d *Definition) { d.OutputSchema = json.RawMessage(s) })
	}
	const (
		inID      = `"id":{"type":"string","pattern":"^c_"}`
		inNote    = `"note":{"type":"string","maxLength":100}`
		inAddress = `"address":{"type":"object","properties":{"city":{"type":"string"}}}`
		outName   = `"name":{"type":"string"}`
		outTags   = `"tags":{"type":"object","properties":{}}`
	)
	tests := []struct {
		name    string
		current *Definition
		want    []string // "<class> <pointer>: <why>"
	}{
		{"unchanged", edit(func(*Definition) {}), nil},
		{"tool removed", nil, []string{"breaking : the tool was removed"}},
		{"new optional input property", input(`{"type":"object","required":["id"],"properties":{` + inID + `,` + inNote + `,` + inAddress + `,"lang":{"type":"string"}}}`),
			[]string{"additive /inputSchema/properties/lang: a new optional input property"}},
		{"new optional nested input property", input(`{"type":"object","required":["id"],"properties":{` + inID + `,` + inNote + `,"address":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string"}}}}}`),
			[]string{"additive /inputSchema/properties/address/properties/zip: a new optional input property"}},
		{"new required input property", input(`{"type":"object","required":["id","lang"],"properties":{` + inID + `,` + inNote + `,` + inAddress + `,"lang":{"type":"string"}}}`),
			[]string{"breaking /inputSchema/properties/lang: a new required input", "breaking /inputSchema/required/1: a new required input"}},
		{"input no longer required", input(`{"type":"object","properties":{` + inID + `,` + inNote + `,` + inAddress + `}}`),
			[]string{"additive /inputSchema/required: no input is newly required"}},
		{"input property renamed", input(`{"type":"object","required":["id"],"properties":{` + inID + `,"comment":{"type":"string","maxLength":100},` + inAddress + `}}`),
			[]string{"additive /inputSchema/properties/comment: a new optional input property", "breaking /inputSchema/properties/note: an input property was removed or renamed"}},
		{"type narrowed", input(`{"type":"object","required":["id"],"properties":{"id":{"type":"integer","pattern":"^c_"},` + inNote + `,` + inAddress + `}}`),
			[]string{"breaking /inputSchema/properties/id/type: a type changed"}},
		{"bound tightened", input(`{"type":"object","required":["id"],"properties":{` + inID + `,"note":{"type":"string","maxLength":10},` + inAddress + `}}`),
			[]string{"breaking /inputSchema/properties/note/maxLength: a bound changed"}},
		{"pattern changed", input(`{"type":"object","required":["id"],"properties":{"id":{"type":"string","pattern":"^cu_"},` + inNote + `,` + inAddress + `}}`),
			[]string{"breaking /inputSchema/properties/id/pattern: a pattern or format changed"}},
		{"enum added", input(`{"type":"object","required":["id"],"properties":{` + inID + `,"note":{"type":"string","maxLength":100,"enum":["a"]},` + inAddress + `}}`),
			[]string{"breaking /inputSchema/properties/note/enum: the allowed values changed"}},
		{"property described otherwise", input(`{"type":"object","required":["id"],"properties":{` + inID + `,"note":{"type":"string","maxLength":100,"description":"in cents"},` + inAddress + `}}`),
			[]string{"breaking /inputSchema/properties/note/description: a property's description changed"}},
		{"input keyword unknown to the rules", input(`{"type":"object","required":["id"],"properties":{` + inID + `,` + inNote + `,` + inAddress + `},"allOf":[{}]}`),
			[]string{"breaking /inputSchema/allOf: the input schema changed"}},
		{"tool described otherwise", edit(func(d *Definition) { d.Description = "Deletes a customer." }),
			[]string{"breaking /description: the tool's description changed"}},
		{"annotation changed", edit(func(d *Definition) { d.Annotations = json.RawMessage(`{"readOnlyHint":false}`) }),
			[]string{"breaking /annotations/readOnlyHint: an annotation changed"}},
		{"output property added under additionalProperties false", output(`{"type":"object","additionalProperties":false,"properties":{` + outName + `,` + outTags + `,"email":{"type":"string"}}}`),
			[]string{"breaking /outputSchema/properties/email: a new output property, which the pinned output schema's additionalProperties: false refuses"}},
		{"output property added where the pinned schema allows it", output(`{"type":"object","additionalProperties":false,"properties":{` + outName + `,"tags":{"type":"object","properties":{"x":{"type":"string"}}}}}`),
			[]string{"additive /outputSchema/properties/tags/properties/x: a new output property, which the pinned output schema allows"}},
		{"output property removed", output(`{"type":"object","additionalProperties":false,"properties":{` + outTags + `}}`),
			[]string{"breaking /outputSchema/properties/name: an output property was removed or renamed"}},
		{"input schema replaced", input(`true`), []string{"breaking /inputSchema: the input schema changed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes, err := Classify(pinnedDef, tt.current)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range changes {
				got = append(got, string(c.Class)+" "+c.Pointer+": "+c.Why)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("changes (-want +got):\n%s", d)
			}
			additive := len(tt.want) > 0
			for _, w := range tt.want {
				additive = additive && strings.HasPrefix(w, "additive ")
			}
			if AllAdditive(changes) != additive {
				t.Errorf("AllAdditive = %v, want %v", !additive, additive)
			}
		})
	}
}

// A properties keyword added where the schema had none is additive only
// when none of its members is required.
func TestClassifyCallsAWholeNewPropertiesKeywordAdditiveOnlyWithoutARequiredMember(t *testing.T) {
	pinned := Definition{InputSchema: json.RawMessage(`{"type":"object"}`)}
	for _, tt := range []struct {
		schema string
		want   Class
	}{
		{`{"type":"object","properties":{"a":{}}}`, Additive},
		{`{"type":"object","properties":{"a":{}},"required":["a"]}`, Breaking},
	} {
		changes, err := Classify(pinned, &Definition{InputSchema: json.RawMessage(tt.schema)})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(changes, func(c Change) bool { return c.Pointer == "/inputSchema/properties" })
		if i < 0 || changes[i].Class != tt.want {
			t.Errorf("%s: %+v, want /inputSchema/properties %s", tt.schema, changes, tt.want)
		}
	}
}

// FuzzClassify checks that Classify accepts any two JSON schemas, names
// each pointer once with a known class and never calls two differing
// definitions unchanged.
func FuzzClassify(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{}}}`, `{"type":"object","properties":{"a":{},"b":{}}}`, "x", "y")
	f.Add(`{"required":["a"],"properties":{"a":{}}}`, `{"properties":{"properties":{"properties":{}}}}`, "", "")
	f.Add(`true`, `{"properties":{"a/b~c":{"required":["x"]}}}`, "d", "d")
	f.Fuzz(func(t *testing.T, in1, in2, desc1, desc2 string) {
		if !json.Valid([]byte(in1)) || !json.Valid([]byte(in2)) {
			return
		}
		a := Definition{Description: desc1, InputSchema: json.RawMessage(in1), OutputSchema: json.RawMessage(in2)}
		b := Definition{Description: desc2, InputSchema: json.RawMessage(in2), OutputSchema: json.RawMessage(in1)}
		changes, err := Classify(a, &b)
		if err != nil {
			return // a number RFC 8785 would change
		}
		pa, errA := definition(a.Description, a.InputSchema, a.OutputSchema, a.Annotations)
		pb, errB := definition(b.Description, b.InputSchema, b.OutputSchema, b.Annotations)
		if errA != nil || errB != nil {
			t.Fatalf("Classify passed, definition failed: %v, %v", errA, errB)
		}
		if (len(changes) == 0) != (pa.digest == pb.digest) {
			t.Fatalf("%d changes, digests %s and %s", len(changes), pa.digest, pb.digest)
		}
		seen := map[string]bool{}
		for _, c := range changes {
			if c.Class != Additive && c.Class != Breaking || c.Why == "" || seen[c.Pointer] {
				t.Fatalf("change %+v (seen %v)", c, seen[c.Pointer])
			}
			seen[c.Pointer] = true
			if c.Class == Additive && !strings.HasPrefix(c.Pointer, "/inputSchema/") && !strings.HasPrefix(c.Pointer, "/outputSchema/") {
				t.Fatalf("additive outside the schemas: %+v", c)
			}
		}
	})
}

// A new output property is additive only where the pinned schema holding
// it says nothing of the properties it does not list: a pinned
// additionalProperties or unevaluatedProperties schema, patternProperties,
// propertyNames, maxProperties, dependentRequired, dependentSchemas or a
// combinator may refuse a result carrying the new property, which the
// pinned output check then fails after the call was sent.
func TestClassifyCallsANewOutputPropertyBreakingWhereThePinnedSchemaConstrainsUnlistedProperties(t *testing.T) {
	for _, tt := range []struct {
		name, holder string
	}{
		{"additionalProperties schema", `"additionalProperties":{"type":"string"}`},
		{"unevaluatedProperties schema", `"unevaluatedProperties":{"type":"string"}`},
		{"patternProperties", `"patternProperties":{"^c":{"type":"string"}}`},
		{"propertyNames", `"propertyNames":{"enum":["name"]}`},
		{"maxProperties", `"maxProperties":1`},
		{"dependentRequired", `"dependentRequired":{"count":["other"]}`},
		{"dependentSchemas", `"dependentSchemas":{"count":false}`},
		{"allOf", `"allOf":[{"additionalProperties":false,"properties":{"name":{}}}]`},
		{"not", `"not":{"required":["count"]}`},
		{"$ref", `"$ref":"#/$defs/closed","$defs":{"closed":{"additionalProperties":false,"properties":{"name":{}}}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pinned := Definition{InputSchema: json.RawMessage(`{"type":"object"}`),
				OutputSchema: json.RawMessage(`{"type":"object",` + tt.holder + `,"properties":{"name":{"type":"string"}}}`)}
			current := pinned
			current.OutputSchema = json.RawMessage(`{"type":"object",` + tt.holder + `,"properties":{"name":{"type":"string"},"count":{"type":"integer"}}}`)
			changes, err := Classify(pinned, &current)
			if err != nil {
				t.Fatal(err)
			}
			if len(changes) != 1 || changes[0].Pointer != "/outputSchema/properties/count" || changes[0].Class != Breaking {
				t.Errorf("changes %+v, want /outputSchema/properties/count breaking", changes)
			}
			if AllAdditive(changes) {
				t.Error("AllAdditive: a result carrying count may fail the pinned output schema")
			}
		})
	}
}

// A new input property with a default says what every call that leaves
// it out now means, and every pinned call leaves it out: the change is
// breaking, as a changed default of an existing property is. Its nested
// properties' defaults apply only where a call sends it, which no pinned
// call does.
func TestClassifyCallsANewInputPropertyWithADefaultBreaking(t *testing.T) {
	pinned := Definition{InputSchema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"}}}`)}
	for _, tt := range []struct {
		name, property string
		want           Class
	}{
		{"a default", `{"type":"boolean","default":true}`, Breaking},
		{"a default of null", `{"type":["string","null"],"default":null}`, Breaking},
		{"no default", `{"type":"boolean"}`, Additive},
		{"a default nested in it", `{"type":"object","properties":{"fast":{"default":true}}}`, Additive},
	} {
		t.Run(tt.name, func(t *testing.T) {
			current := Definition{InputSchema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"},"settle_now":` + tt.property + `}}`)}
			changes, err := Classify(pinned, &current)
			if err != nil {
				t.Fatal(err)
			}
			if len(changes) != 1 || changes[0].Pointer != "/inputSchema/properties/settle_now" || changes[0].Class != tt.want {
				t.Errorf("changes %+v, want /inputSchema/properties/settle_now %s", changes, tt.want)
			}
		})
	}
}
