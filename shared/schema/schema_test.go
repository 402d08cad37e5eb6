package schema

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

const sendSchema = `{"type":"object","additionalProperties":false,"required":["to","subject"],
 "anyOf":[{"required":["text"]},{"required":["html"]}],
 "properties":{"to":{"type":"array","items":{"type":"string"}},"subject":{"type":"string"},"text":{"type":"string"},"html":{"type":"string"}}}`

func TestProblems(t *testing.T) {
	s, err := Compile(json.RawMessage(sendSchema))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		instance string
		ignore   [][]string
		want     []string // locations with problems
	}{
		{"valid", `{"to":["a@example.com"],"subject":"s","text":"t"}`, nil, nil},
		{"missing required", `{"to":["a@example.com"],"text":"t"}`, nil, []string{""}},
		{"wrong item type", `{"to":[1],"subject":"s","text":"t"}`, nil, []string{"/to/0"}},
		{"wrong item type ignored", `{"to":[1],"subject":"s","text":"t"}`, [][]string{{"to", "0"}}, nil},
		{"anyOf unmet", `{"to":["a"],"subject":"s"}`, nil, []string{""}},
		{"unknown property", `{"to":["a"],"subject":"s","text":"t","from":"x"}`, nil, []string{""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var inst any
			if err := json.Unmarshal([]byte(c.instance), &inst); err != nil {
				t.Fatal(err)
			}
			err := s.Validate(inst)
			var got []string
			if err != nil {
				ignore := func(loc []string) bool {
					return slices.ContainsFunc(c.ignore, func(p []string) bool { return slices.Equal(p, loc) })
				}
				for _, p := range Problems(err, ignore) {
					got = append(got, p.Location)
					if p.Message == "" {
						t.Errorf("empty message at %q", p.Location)
					}
				}
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("problems at %q, want %q (err %v)", got, c.want, err)
			}
		})
	}
}

func TestRemoteRefRefused(t *testing.T) {
	_, err := Compile(json.RawMessage(`{"$ref":"https://example.com/s.json"}`))
	if err == nil || !strings.Contains(err.Error(), "self-contained") {
		t.Fatalf("remote $ref: %v", err)
	}
}

func TestPointerEscapes(t *testing.T) {
	if got := pointer([]string{"a/b", "c~d"}); got != "/a~1b/c~0d" {
		t.Fatal(got)
	}
}

// TestRedacted: the run-time form names the value's pointer, the keyword,
// its place in the schema and what it wants, and never a value or a
// property name of the instance.
func TestRedacted(t *testing.T) {
	s, err := Compile(json.RawMessage(`{"type":"object","required":["to","subject"],"additionalProperties":false,
		"properties":{"to":{"type":"array","maxItems":2,"items":{"type":"string","minLength":3,"pattern":"@"}},"subject":{"type":"string"},
		"n":{"type":"number","exclusiveMinimum":0.5,"multipleOf":2}}}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, instance string
		want           []string
	}{
		{"required", `{"to":["SECRET@x"]}`, []string{`/ fails "required" (schema /required): want property "subject"`}},
		{"two required", `{}`, []string{`/ fails "required" (schema /required): want properties "to", "subject"`}},
		{"type", `{"to":"SECRET","subject":"s"}`, []string{`/to fails "type" (schema /properties/to/type): want array, got string`}},
		{"items", `{"to":["SECRET","a@bc","x@y@z"],"subject":"s"}`, []string{
			`/to fails "maxItems" (schema /properties/to/maxItems): want at most 2 items`,
			`/to/0 fails "pattern" (schema /properties/to/items/pattern)`}},
		{"length", `{"to":["@"],"subject":"s"}`, []string{`/to/0 fails "minLength" (schema /properties/to/items/minLength): want at least 3 characters`}},
		{"numbers", `{"to":[],"subject":"s","n":0.25}`, []string{
			`/n fails "exclusiveMinimum" (schema /properties/n/exclusiveMinimum): want > 0.5`,
			`/n fails "multipleOf" (schema /properties/n/multipleOf): want a multiple of 2`}},
		{"additional", `{"to":[],"subject":"s","SECRET":1}`, []string{`/ fails "additionalProperties" (schema /additionalProperties): want no other properties`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v any
			d := json.NewDecoder(strings.NewReader(c.instance))
			d.UseNumber()
			if err := d.Decode(&v); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range Problems(s.Validate(v), nil) {
				got = append(got, p.Redacted())
				if strings.Contains(p.Redacted(), "SECRET") {
					t.Errorf("quotes the instance: %s", p.Redacted())
				}
			}
			slices.Sort(got)
			slices.Sort(c.want)
			if !slices.Equal(got, c.want) {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// RedactedLines puts root before each problem's redacted text and stops
// after n, saying how many more there are.
func TestRedactedLines(t *testing.T) {
	ps := []Problem{
		{Location: "/to", Keyword: "type", KeywordLocation: "/properties/to/type", Want: "array, got string", Message: "secret value"},
		{Keyword: "required", KeywordLocation: "/required", Want: `property "to"`},
		{Location: "/a", Keyword: "minimum"},
	}
	for _, c := range []struct {
		name string
		root string
		n    int
		want []string
	}{
		{"all under a root", "input", 3, []string{
			`input/to fails "type" (schema /properties/to/type): want array, got string`,
			`input/ fails "required" (schema /required): want property "to"`,
			`input/a fails "minimum"`}},
		{"cut after n", "output", 1, []string{`output/to fails "type" (schema /properties/to/type): want array, got string`, "and 2 more"}},
		{"no root", "", 2, []string{`/to fails "type" (schema /properties/to/type): want array, got string`, `/ fails "required" (schema /required): want property "to"`, "and 1 more"}},
		{"none", "input", 5, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := ps
			if c.want == nil {
				in = nil
			}
			got := RedactedLines(in, c.root, c.n)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") || len(got) != len(c.want) {
				t.Errorf("got %q\nwant %q", got, c.want)
			}
		})
	}
}
