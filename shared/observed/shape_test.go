package observed_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/observed"
)

// mustObserve is Observe of a result the test writes.
func mustObserve(t testing.TB, result string) *observed.Shape {
	t.Helper()
	s, err := observed.Observe(json.RawMessage(result))
	if err != nil {
		t.Fatalf("observe %s: %v", result, err)
	}
	return s
}

// marshal is s's Marshal, for comparisons.
func marshal(t testing.TB, s *observed.Shape) string {
	t.Helper()
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// learn observes and merges results in order.
func learn(t testing.TB, results ...string) *observed.Shape {
	t.Helper()
	s := &observed.Shape{}
	for _, r := range results {
		s.Merge(mustObserve(t, r))
	}
	return s
}

// Observe records the JSON types at each path, integers apart from other
// numbers, and members present in every object as required: the shape's
// item, names and flags only.
func TestObserveRecordsTypesAndMembers(t *testing.T) {
	for _, c := range []struct{ name, results, want string }{
		{"scalars", `"x"`, `{"t":["string"]}`},
		{"an integer", `12`, `{"t":["integer"]}`},
		{"an integral number written with a fraction", `12.0`, `{"t":["integer"]}`},
		{"a number", `1.5`, `{"t":["number"]}`},
		{"null and boolean", `[null,true]`, `{"t":["array"],"i":{"t":["null","boolean"]}}`},
		{"an object", `{"id":1,"name":"a","ok":false}`,
			`{"t":["object"],"m":{"id":{"t":["integer"]},"name":{"t":["string"]},"ok":{"t":["boolean"]}}}`},
		{"array items merged", `{"items":[{"a":1},{"a":"x","b":null}]}`,
			`{"t":["object"],"m":{"items":{"t":["array"],"i":{"t":["object"],"m":{"a":{"t":["integer","string"]},"b":{"t":["null"],"o":true}}}}}}`},
		{"an empty array has no items", `[]`, `{"t":["array"]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := marshal(t, mustObserve(t, c.results)); got != c.want {
				t.Errorf("shape\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

// A member missing from some object at its place is optional, whether it
// came first or later; one present in every object is not.
func TestMembersMissingFromSomeObjectAreOptional(t *testing.T) {
	s := learn(t, `{"a":1,"b":2}`, `{"a":1,"c":3}`)
	want := `{"t":["object"],"m":{"a":{"t":["integer"]},"b":{"t":["integer"],"o":true},"c":{"t":["integer"],"o":true}}}`
	if got := marshal(t, s); got != want {
		t.Errorf("shape\n got %s\nwant %s", got, want)
	}
	// A string at the same place is no object lacking a member.
	s.Merge(mustObserve(t, `"text"`))
	if got := marshal(t, s); !strings.Contains(got, `"a":{"t":["integer"]}`) {
		t.Errorf("a is optional after a string: %s", got)
	}
}

// Objects whose keys look like data become maps: more than MaxKeys keys,
// or one key that is no plain identifier; their keys are never stored.
func TestDataLikeKeysMakeAMap(t *testing.T) {
	var many []string
	for i := range observed.MaxKeys + 1 {
		many = append(many, fmt.Sprintf(`"k%d":%d`, i, i))
	}
	for _, c := range []struct{ name, result, secret string }{
		{"over the key limit", "{" + strings.Join(many, ",") + "}", "k17"},
		{"an e-mail address as a key", `{"alice@example.com":{"n":1}}`, "alice"},
		{"a number as a key", `{"12345":{"n":1}}`, "12345"},
		{"a key too long", `{"` + strings.Repeat("a", 65) + `":{"n":1}}`, strings.Repeat("a", 65)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := marshal(t, mustObserve(t, c.result))
			if !strings.Contains(got, `"v":`) || strings.Contains(got, c.secret) {
				t.Errorf("not a map without its keys: %s", got)
			}
		})
	}
	// Members merged over results past the limit make it a map too, the
	// members' shapes merged into its values.
	var results []string
	for i := range observed.MaxKeys + 1 {
		results = append(results, fmt.Sprintf(`{"m%d":"x"}`, i))
	}
	if got := marshal(t, learn(t, results...)); got != `{"t":["object"],"v":{"t":["string"]}}` {
		t.Errorf("merged members: %s", got)
	}
}

// Past MaxDepth an object or array is unknown; past MaxPaths nodes, a
// node that needs a new child is.
func TestShapesAreBounded(t *testing.T) {
	deep := strings.Repeat(`{"a":`, observed.MaxDepth+3) + "1" + strings.Repeat("}", observed.MaxDepth+3)
	got := marshal(t, mustObserve(t, deep))
	if !strings.Contains(got, `{"u":true}`) || strings.Count(got, `"a"`) != observed.MaxDepth {
		t.Errorf("deep: %s", got)
	}
	// 20 objects of 20 members: 421 nodes unbounded.
	var outer []string
	for i := range 20 {
		var inner []string
		for j := range 20 {
			inner = append(inner, fmt.Sprintf(`"f%d":%d`, j, j))
		}
		outer = append(outer, fmt.Sprintf(`"o%d":{%s}`, i, strings.Join(inner, ",")))
	}
	s := mustObserve(t, "{"+strings.Join(outer, ",")+"}")
	if n := s.Count(); n > observed.MaxPaths {
		t.Errorf("%d nodes, over %d", n, observed.MaxPaths)
	}
	if got := marshal(t, s); !strings.Contains(got, `"u":true`) || !strings.Contains(got, `"f19"`) {
		t.Errorf("wide: want the first objects whole and the others unknown: %s", got)
	}
	if _, err := observed.Unmarshal([]byte(marshal(t, s))); err != nil {
		t.Errorf("a bounded shape does not read back: %v", err)
	}
}

// Merge reports a change only when something new is added, and never
// loses what was seen: merging a shape again, or a result it already
// covers, changes nothing.
func TestMergeIsMonotoneAndReportsOnlyNews(t *testing.T) {
	s := learn(t, `{"a":1,"b":[{"c":"x"}]}`)
	before := marshal(t, s)
	for _, same := range []string{`{"a":2,"b":[]}`, `{"a":3,"b":[{"c":"y"},{"c":"z"}]}`} {
		// b's items already held c; a and b are in both.
		if s.Merge(mustObserve(t, same)) {
			t.Errorf("merging %s changed %s into %s", same, before, marshal(t, s))
		}
	}
	for _, news := range []string{`{"a":1.5,"b":[]}`, `{"a":1,"b":[],"d":true}`, `{"a":1,"b":[{"c":null}]}`, `{"b":[]}`, `null`} {
		prev := marshal(t, s)
		if !s.Merge(mustObserve(t, news)) {
			t.Errorf("merging %s into %s reported no change", news, prev)
		}
		if s.Merge(mustObserve(t, news)) {
			t.Errorf("merging %s twice reported a change", news)
		}
	}
	// Merge is order-free on these results.
	a := learn(t, `{"a":1}`, `{"b":"x"}`, `[1]`)
	b := learn(t, `[1]`, `{"b":"x"}`, `{"a":1}`)
	if marshal(t, a) != marshal(t, b) {
		t.Errorf("order matters:\n%s\n%s", marshal(t, a), marshal(t, b))
	}
}

// Unmarshal reads what Marshal wrote, and refuses anything else: unknown
// members, another form of the same document, broken rules.
func TestUnmarshalIsStrict(t *testing.T) {
	good := marshal(t, learn(t, `{"a":[1,"x"],"b":{"c":null}}`, `{"a":[]}`))
	s, err := observed.Unmarshal([]byte(good))
	if err != nil || marshal(t, s) != good {
		t.Fatalf("round trip: %v", err)
	}
	for _, bad := range []string{
		``, `null`, `[]`, `{}`, `{"t":["string"],"x":1}`, ` {"t":["string"]}`, `{"t":["string"]} `,
		`{"t":["string","null"]}`, `{"t":["string","string"]}`, `{"t":["text"]}`,
		`{"t":["string"],"o":true}`, `{"u":true,"t":["string"]}`, `{"t":["string"],"i":{"t":["null"]}}`,
		`{"t":["object"],"m":{"a b":{"t":["null"]}}}`, `{"t":["object"],"m":{"a":{"t":["null"]}},"v":{"t":["null"]}}`,
		`{"t":["object"],"m":{"a":null}}`, `{"t":["object"],"m":{"a":{"t":["null"]},"a":{"t":["null"]}}}`,
		`{"t":["object"],"v":{"t":["null"],"o":true}}`,
		strings.Repeat(`{"t":["array"],"i":`, observed.MaxDepth+1) + `{"t":["null"]}` + strings.Repeat("}", observed.MaxDepth+1),
	} {
		if _, err := observed.Unmarshal([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

// Two identities differing in any field have different keys, and a key
// names none of them.
func TestIdentityKeysDiffer(t *testing.T) {
	base := observed.Identity{Tool: "structured-data-fetch", Source: observed.SourceCatalog, OutputSchemaDigest: "sha256:00", Host: "api.example.com"}
	seen := map[string]observed.Identity{}
	for _, id := range []observed.Identity{
		base,
		{Tool: base.Tool, Source: base.Source, OutputSchemaDigest: base.OutputSchemaDigest, Host: "other.example.com"},
		{Tool: base.Tool, Source: base.Source, OutputSchemaDigest: "sha256:01", Host: base.Host},
		{Tool: base.Tool, Source: "platform:x", OutputSchemaDigest: base.OutputSchemaDigest, Host: base.Host},
		{Tool: "http", Source: base.Source, OutputSchemaDigest: base.OutputSchemaDigest, Host: base.Host},
		{Tool: "a", Source: "bc"}, {Tool: "ab", Source: "c"},
	} {
		k := id.Key()
		if prev, ok := seen[k]; ok {
			t.Errorf("%+v and %+v share key %s", prev, id, k)
		}
		if len(k) != 64 || strings.Contains(k, "example") {
			t.Errorf("key %q", k)
		}
		seen[k] = id
	}
	// The partition key leaves the host out: every host of one tool is in
	// one partition, and nothing else is.
	other := base
	other.Host = "other.example.com"
	if base.PartitionKey() != other.PartitionKey() {
		t.Error("two hosts of one tool are in two partitions")
	}
	parts := map[string]bool{}
	for _, id := range []observed.Identity{base, {Tool: base.Tool, Source: base.Source, OutputSchemaDigest: "sha256:01"},
		{Tool: base.Tool, Source: "platform:x", OutputSchemaDigest: base.OutputSchemaDigest}, {Tool: "http", Source: base.Source, OutputSchemaDigest: base.OutputSchemaDigest},
		{Tool: "a", Source: "bc"}, {Tool: "ab", Source: "c"}} {
		k := id.PartitionKey()
		if parts[k] || len(k) != 64 || strings.Contains(k, "example") {
			t.Errorf("partition key %q of %+v", k, id)
		}
		parts[k] = true
	}
	d1, _ := observed.SchemaDigest(json.RawMessage(`{"type":"object","properties":{}}`))
	d2, _ := observed.SchemaDigest(json.RawMessage(`{ "properties":{}, "type":"object" }`))
	if d1 != d2 || !strings.HasPrefix(d1, "sha256:") {
		t.Errorf("digests of one schema differ: %s %s", d1, d2)
	}
	if d, err := observed.SchemaDigest(nil); d != "" || err != nil {
		t.Errorf("no schema: %q %v", d, err)
	}
}

// Observe refuses a result that is not one JSON value, and its error
// holds nothing of the result.
func TestObserveRefusesNonJSONWithoutItsText(t *testing.T) {
	for _, bad := range []string{`{"secret-canary":`, `"a" "secret-canary"`, `secret-canary`} {
		_, err := observed.Observe(json.RawMessage(bad))
		if err == nil || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "canary") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
