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
