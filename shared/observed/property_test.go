package observed_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/observed"
	"github.com/toolgate/toolgate/shared/schema"
)

// gen makes random results whose every string value, and every data-like
// key, holds a distinctive canary (recorded in canaries), and whose
// numbers are distinctive too.
type gen struct {
	r        *rand.Rand
	canaries []string
}

var plainKeys = []string{"id", "name", "items", "data", "next", "total", "tags", "owner", "_meta", "Value2"}

func (g *gen) canary() string {
	c := fmt.Sprintf("cnry%08x", g.r.Uint32())
	g.canaries = append(g.canaries, c)
	return c
}

func (g *gen) value(depth int) any {
	k := g.r.IntN(9)
	if depth >= 5 {
		k = g.r.IntN(5)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return g.r.IntN(2) == 0
	case 2:
		return 9_000_000 + g.r.IntN(1_000_000)
	case 3:
		return 0.5 + float64(g.r.IntN(1000))
	case 4:
		return "v-" + g.canary()
	case 5, 6:
		n := g.r.IntN(5)
		out := make([]any, n)
		for i := range out {
			out[i] = g.value(depth + 1)
		}
		return out
	default:
		out := map[string]any{}
		switch g.r.IntN(4) {
		case 0: // data-like keys: not identifiers
			for range 1 + g.r.IntN(3) {
				out[g.canary()+"@example.com"] = g.value(depth + 1)
			}
		case 1: // data-like keys: too many
			for range observed.MaxKeys + 1 + g.r.IntN(4) {
				out["k"+g.canary()] = g.value(5) // a scalar
			}
		default:
			for range g.r.IntN(5) {
				out[plainKeys[g.r.IntN(len(plainKeys))]] = g.value(depth + 1)
			}
		}
		return out
	}
}

// forbidden are the JSON Schema keywords that would carry a value, a
// length or a range.
var forbidden = []string{`"const"`, `"enum"`, `"default"`, `"examples"`, `"minimum"`, `"maximum"`, `"exclusiveMinimum"`,
	`"exclusiveMaximum"`, `"minLength"`, `"maxLength"`, `"minItems"`, `"maxItems"`, `"pattern"`, `"minProperties"`,
	`"maxProperties"`, `"multipleOf"`, `"additionalProperties":false`}

// The merged shape accepts every result merged into it, through its JSON
// Schema as shared/schema validates results, and holds no value: no
// string value, no data-like key, no value-bearing keyword, in its item or
// its schema; it reads back as written and stays within its bounds.
func TestPropertyMergedShapeAcceptsEveryResultAndHoldsNoValue(t *testing.T) {
	for seed := range uint64(200) {
		g := &gen{r: rand.New(rand.NewPCG(seed, 7))}
		s := &observed.Shape{}
		var results []any
		for range 1 + g.r.IntN(6) {
			v := g.value(0)
			raw, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			s.Merge(mustObserve(t, string(raw)))
			var decoded any
			if err := json.Unmarshal(raw, &decoded); err != nil {
				t.Fatal(err)
			}
			results = append(results, decoded)
		}
		item := marshal(t, s)
		doc := s.Schema()
		compiled, err := schema.CompileUncached(doc)
		if err != nil {
			t.Fatalf("seed %d: schema does not compile: %v\n%s", seed, err, doc)
		}
		for i, r := range results {
			if err := compiled.Validate(r); err != nil {
				t.Fatalf("seed %d: result %d refused by the merged schema: %v\nschema %s", seed, i, err, doc)
			}
		}
		for _, text := range []string{item, string(doc)} {
			for _, c := range g.canaries {
				if strings.Contains(text, c) {
					t.Fatalf("seed %d: canary %s in %s", seed, c, text)
				}
			}
			for _, kw := range forbidden {
				if strings.Contains(text, kw) {
					t.Fatalf("seed %d: %s in %s", seed, kw, text)
				}
			}
			if strings.Contains(text, "900") {
				// Every number the results hold starts 9 000 000 or is x.5;
				// names and flags never hold digits "900".
				t.Fatalf("seed %d: a number in %s", seed, text)
			}
		}
		if n := s.Count(); n > observed.MaxPaths {
			t.Fatalf("seed %d: %d nodes", seed, n)
		}
		back, err := observed.Unmarshal([]byte(item))
		if err != nil || marshal(t, back) != item {
			t.Fatalf("seed %d: does not read back: %v", seed, err)
		}
		if back.Merge(s) {
			t.Fatalf("seed %d: merging a shape into its own copy changed it", seed)
		}
	}
}

// FuzzShapeItem: Unmarshal never panics, and what it accepts is
// canonical (Marshal gives the same bytes), bounded, compiles as a JSON
// Schema, and merges into itself and into an observed shape within the
// bounds.
func FuzzShapeItem(f *testing.F) {
	f.Add([]byte(`{"t":["object"],"m":{"a":{"t":["integer","string"]},"b":{"t":["array"],"i":{"t":["null"]},"o":true}}}`))
	f.Add([]byte(`{"t":["object"],"v":{"u":true}}`))
	f.Add([]byte(`{"u":true}`))
	f.Add([]byte(`{"t":["string"],"o":true}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := observed.Unmarshal(data)
		if err != nil {
			return
		}
		if got := marshal(t, s); got != string(data) {
			t.Fatalf("not canonical: %s read as %s", data, got)
		}
		if s.Count() > observed.MaxPaths {
			t.Fatalf("%d nodes", s.Count())
		}
		if _, err := schema.CompileUncached(s.Schema()); err != nil {
			t.Fatalf("schema does not compile: %v", err)
		}
		if s.Clone().Merge(s) {
			t.Fatal("merging a shape into its copy changed it")
		}
		o := mustObserve(t, `{"a":[1,{"b":"x"}],"c":{"d":null}}`)
		o.Merge(s)
		if o.Count() > observed.MaxPaths {
			t.Fatalf("merged: %d nodes", o.Count())
		}
		if _, err := observed.Unmarshal([]byte(marshal(t, o))); err != nil {
			t.Fatalf("merged shape does not read back: %v", err)
		}
	})
}
