package schemashape

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, doc string) *Shape {
	t.Helper()
	s, err := Parse(json.RawMessage(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func path(steps ...any) []Step {
	var out []Step
	for _, s := range steps {
		switch x := s.(type) {
		case string:
			out = append(out, Member(x))
		case int:
			out = append(out, Index(x))
		}
	}
	return out
}

func TestAtReadsMembersTypesAndClosedObjects(t *testing.T) {
	fetch := mustParse(t, `{"type":"object","additionalProperties":false,
		"properties":{"status":{"type":"integer"},"data":true,"items":{"type":"array","items":{"type":"string"}}}}`)
	cases := []struct {
		name    string
		path    []Step
		types   TypeSet
		cannot  bool
		naming  Naming
		members []string
	}{
		{"root", nil, Object, false, Named, nil},
		{"declared member", path("status"), Integer, false, Named, nil},
		{"member the closed object does not name", path("stats"), 0, true, Unconstrained, []string{"data", "items", "status"}},
		{"open subtree", path("data", "x", 3), Any, false, Unconstrained, nil},
		{"array element", path("items", 0), String, false, Named, nil},
		{"any element", path("items", AnyIndex), String, false, Named, nil},
		{"index into an integer", path("status", 0), 0, true, Unconstrained, nil},
		{"member of a string", path("items", 0, "x"), 0, true, Unconstrained, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := fetch.At(c.path)
			if r.Types != c.types || r.Cannot != c.cannot || r.Naming != c.naming || !slices.Equal(r.Members, c.members) {
				t.Errorf("At = %+v, want types %v cannot %v naming %v members %v", r, c.types, c.cannot, c.naming, c.members)
			}
		})
	}
}

func TestAtWarnsOnlyWhereOpenObjectsDeclareProperties(t *testing.T) {
	s := mustParse(t, `{"type":"object","properties":{"a":{"type":"object"}}}`)
	if r := s.At(path("b")); r.Cannot || r.Naming != Undeclared || !slices.Equal(r.Members, []string{"a"}) {
		t.Errorf("undeclared member: %+v", r)
	}
	if r := s.At(path("a", "z")); r.Cannot || r.Naming != Unconstrained {
		t.Errorf("member of an object without properties: %+v", r)
	}
}

func TestAtFollowsAlternativesRefsAndDraft07(t *testing.T) {
	s := mustParse(t, `{"definitions":{"n":{"type":["number","null"]}},
		"anyOf":[{"type":"object","additionalProperties":false,"properties":{"text":{"type":"string"}}},
		         {"type":"object","additionalProperties":false,"properties":{"html":{"type":"string"},"n":{"$ref":"#/definitions/n"}}}],
		"items":[{"type":"string"}],"additionalItems":false}`)
	if r := s.At(path("text")); r.Cannot || r.Types != String {
		t.Errorf("text: %+v", r)
	}
	if r := s.At(path("n")); r.Types != Number|Integer|Null {
		t.Errorf("n through $ref: %+v", r)
	}
	if r := s.At(path("body")); !r.Cannot || !slices.Equal(r.Members, []string{"html", "n", "text"}) {
		t.Errorf("a member no alternative names: %+v", r)
	}
	if r := s.At(path(0)); !r.Cannot {
		t.Errorf("the anyOf allows only objects, so no index exists: %+v", r)
	}
	tuple := mustParse(t, `{"type":"array","items":[{"type":"string"}],"additionalItems":false}`)
	if r := tuple.At(path(1)); !r.Cannot {
		t.Errorf("past a closed draft-07 tuple: %+v", r)
	}
	if r := tuple.At(path(0)); r.Types != String {
		t.Errorf("draft-07 tuple element: %+v", r)
	}
}

func TestAtIsBoundedOnRefCycles(t *testing.T) {
	s := mustParse(t, `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"anyOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`)
	r := s.At(path("x", "y"))
	if r.Cannot {
		t.Errorf("a cycle that says nothing cannot refuse a path: %+v", r)
	}
}

func TestAtPointerTakesDigitsAsMemberOrIndex(t *testing.T) {
	s := mustParse(t, `{"type":"object","properties":{"to":{"type":"array","items":{"type":"string"}},"m":{"type":"object","properties":{"0":{"type":"boolean"}}}}}`)
	for ptr, want := range map[string]TypeSet{"/to/0": String, "/m/0": Boolean, "": Object} {
		r, err := s.AtPointer(ptr)
		if err != nil || r.Types != want {
			t.Errorf("AtPointer(%q) = %+v, %v; want %v", ptr, r, err, want)
		}
	}
	if _, err := s.AtPointer("to"); err == nil {
		t.Error("a pointer without a leading / was accepted")
	}
}

func TestParseRefusesWhatIsNotASchema(t *testing.T) {
	for _, doc := range []string{`[]`, `1`, `{`, `{} {}`} {
		if _, err := Parse(json.RawMessage(doc)); err == nil {
			t.Errorf("Parse(%s) accepted", doc)
		}
	}
}

func TestTypeSetOverlapsTreatsIntegersAsNumbers(t *testing.T) {
	if !Integer.Overlaps(Number) || !(Number).Overlaps(Integer) {
		t.Error("integer and number do not overlap")
	}
	if String.Overlaps(Number | Integer) {
		t.Error("a string overlaps a number")
	}
	if got := (Number | Integer | Null).String(); got != "number or null" {
		t.Errorf("String() = %q", got)
	}
}

func FuzzShape(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"$ref":"#"}},"anyOf":[{"$ref":"#/properties/a"}]}`), "/a/a/0")
	f.Add([]byte(`{"items":[true,false],"additionalItems":{"$ref":"#/items/0"}}`), "/1")
	f.Fuzz(func(t *testing.T, doc []byte, ptr string) {
		s, err := Parse(doc)
		if err != nil {
			return
		}
		if r, err := s.AtPointer(ptr); err == nil && r.Cannot && r.Types != 0 {
			t.Fatalf("a path that cannot exist has types %v", r.Types)
		}
	})
}

func TestAtTakesAllOfAsConjunction(t *testing.T) {
	s := mustParse(t, `{"allOf":[{"properties":{"a":{"type":["string","integer"]}}},
		{"type":"object","additionalProperties":false,"properties":{"a":{"type":["integer","null"]},"b":true}}]}`)
	if r := s.At(path("a")); r.Types != Integer {
		t.Errorf("a: types %v, want the intersection integer", r.Types)
	}
	if r := s.At(path("c")); !r.Cannot || !slices.Equal(r.Members, []string{"a", "b"}) {
		t.Errorf("a member one conjunct closes: %+v", r)
	}
}

// In draft-07 (and the drafts before it) a schema object with $ref is the
// referenced schema alone: keywords beside $ref are ignored (draft-07
// Core, section 8.3), so an additionalProperties: false beside a $ref
// closes nothing. From 2019-09 on, they apply with it.
func TestAtIgnoresKeywordsBesideRefInDraft07(t *testing.T) {
	const body = `"definitions":{"o":{"type":"object","properties":{"a":{"type":"string"}}}},
		"type":"object","properties":{"r":{"$ref":"#/definitions/o","additionalProperties":false,"type":"string"}}}`
	for _, c := range []struct {
		name, schema string
		cannot       bool
	}{
		{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#",` + body, false},
		{"draft-06", `{"$schema":"http://json-schema.org/draft-06/schema#",` + body, false},
		{"draft-04", `{"$schema":"http://json-schema.org/draft-04/schema#",` + body, false},
		{"2020-12", `{"$schema":"https://json-schema.org/draft/2020-12/schema",` + body, true},
		{"no $schema (2020-12)", `{` + body, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := mustParse(t, c.schema).At(path("r", "zzz"))
			if r.Cannot != c.cannot {
				t.Errorf("At(r.zzz) = %+v, want cannot %v", r, c.cannot)
			}
			if !c.cannot && r.Types != Any {
				t.Errorf("At(r.zzz) types %v, want any type", r.Types)
			}
		})
	}
}

// Output schemas are written by tool owners, not by the Solution's author:
// a schema within toolset.MaxSchemaBytes whose alternatives refer to
// themselves, or that holds many patterns, alternatives or properties,
// must not make a Solution's compile slow. Each case walks 300 distinct
// paths; before the walk shared its work, the self-referring one took
// most of a minute.
func TestAtStaysBoundedOnAdversarialSchemas(t *testing.T) {
	var patterns, selfRef, alts, props []string
	for i := range 1000 {
		patterns = append(patterns, fmt.Sprintf(`"^p%d_[a-z]+(x|y)*$":{"type":"string"}`, i))
	}
	for i := range 20 {
		selfRef = append(selfRef, fmt.Sprintf(`"^p%d_[a-z]+$":{"$ref":"#/$defs/n"}`, i))
	}
	for i := range 600 {
		alts = append(alts, fmt.Sprintf(`{"type":"object","additionalProperties":false,"properties":{"m%d":{"type":"string"}}}`, i))
	}
	for i := range 2000 {
		props = append(props, fmt.Sprintf(`"prop_%d":{"type":"string"}`, i))
	}
	for _, c := range []struct{ name, schema string }{
		{"1000 patterns", `{"type":"object","additionalProperties":false,"patternProperties":{` + strings.Join(patterns, ",") + `}}`},
		{"alternatives referring to themselves", `{"$defs":{"n":{"type":"object","patternProperties":{` + strings.Join(selfRef, ",") +
			`},"anyOf":[{"$ref":"#/$defs/n"},{"$ref":"#/$defs/n"},{"$ref":"#/$defs/n"}]}},"$ref":"#/$defs/n"}`},
		{"600 alternatives", `{"anyOf":[` + strings.Join(alts, ",") + `]}`},
		{"2000 properties", `{"type":"object","additionalProperties":false,"properties":{` + strings.Join(props, ",") + `}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if len(c.schema) > 64<<10 {
				t.Fatalf("schema of %d bytes, over toolset.MaxSchemaBytes", len(c.schema))
			}
			s := mustParse(t, c.schema)
			start := time.Now()
			for i := range 300 {
				s.At(path(fmt.Sprintf("a%d", i), "b", "c"))
				s.At(path(fmt.Sprintf("a%d", i)))
			}
			// Generous: under half a second on a loaded machine; most of
			// a minute when the walk is exponential.
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("600 walks took %v", d)
			}
			// A Solution binds the same path many times: it is walked
			// once.
			start = time.Now()
			for range 20000 {
				s.At(path("a0", "b", "c"))
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("20 000 walks of one path took %v", d)
			}
		})
	}
}

// A subschema with its own $id is a resource of its own: a "#…" $ref
// inside it is resolved against it, not the document's root (JSON Schema
// 2020-12 Core, sections 8.2.1 and 9.2). The walk does not resolve
// against embedded resources, so it follows no $ref in a document that
// has one: the place is open, never refused by the wrong target.
func TestAtFollowsNoRefInADocumentWithEmbeddedResources(t *testing.T) {
	for _, c := range []struct{ name, schema string }{
		{"2020-12", `{"type":"object","properties":{"r":{"$id":"http://x/sub.json","$defs":{"o":{"type":"string"}},"$ref":"#/$defs/o"}},
			"$defs":{"o":{"type":"object","additionalProperties":false}}}`},
		{"draft-07 through allOf", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"r":{"$id":"http://x/sub.json",
			"definitions":{"o":{"type":"string"}},"allOf":[{"$ref":"#/definitions/o"}]}},"definitions":{"o":{"type":"object","additionalProperties":false}}}`},
		{"draft-04 id", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"r":{"id":"http://x/sub.json",
			"definitions":{"o":{"type":"string"}},"allOf":[{"$ref":"#/definitions/o"}]}},"definitions":{"o":{"type":"object","additionalProperties":false}}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := mustParse(t, c.schema)
			if r := s.At(path("r")); r.Types&String == 0 {
				t.Errorf("At(r) = %+v, want a string allowed", r)
			}
			if r := s.At(path("r", "zzz")); r.Cannot {
				t.Errorf("At(r.zzz) = %+v, want open", r)
			}
		})
	}
	// Without an embedded resource, the same $ref is followed.
	s := mustParse(t, `{"type":"object","properties":{"r":{"$ref":"#/$defs/o"}},"$defs":{"o":{"type":"object","additionalProperties":false}}}`)
	if r := s.At(path("r", "zzz")); !r.Cannot {
		t.Errorf("At(r.zzz) = %+v, want refused", r)
	}
}

// prefixItems is a keyword of 2020-12 only: in a draft-07 or 2019-09
// document it is an unknown keyword, ignored, and items (a schema) holds
// for every element.
func TestAtReadsPrefixItemsOnlyIn202012(t *testing.T) {
	const body = `"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"integer"}}`
	for _, c := range []struct {
		name, schema string
		first        TypeSet
	}{
		{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#",` + body, Integer},
		{"2019-09", `{"$schema":"https://json-schema.org/draft/2019-09/schema",` + body, Integer},
		{"2020-12", `{"$schema":"https://json-schema.org/draft/2020-12/schema",` + body, String},
		{"no $schema (2020-12)", `{` + body, String},
	} {
		t.Run(c.name, func(t *testing.T) {
			if r := mustParse(t, c.schema).At(path(0)); r.Types != c.first {
				t.Errorf("At([0]) = %+v, want types %v", r, c.first)
			}
		})
	}
}
