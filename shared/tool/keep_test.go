package tool

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestKeepReturnsOnlyTheNamedFields(t *testing.T) {
	out := json.RawMessage(`{"status":200,"data":{"title":"T","count":3,"items":[1,2,3],"nested":{"a":1,"b":2}},"bytes":123}`)
	for _, c := range []struct {
		paths []string
		want  string
	}{
		{nil, string(out)},
		{[]string{"data.title", "data.count"}, `{"data":{"count":3,"title":"T"}}`},
		{[]string{"status"}, `{"status":200}`},
		{[]string{"data.nested.b", "bytes"}, `{"bytes":123,"data":{"nested":{"b":2}}}`},
		{[]string{"data", "data.title"}, `{"data":{"title":"T","count":3,"items":[1,2,3],"nested":{"a":1,"b":2}}}`},
		{[]string{"data.title", "data"}, `{"data":{"title":"T","count":3,"items":[1,2,3],"nested":{"a":1,"b":2}}}`},
		{[]string{"missing", "data.missing", "status.x", "data.items.x"}, `{}`},
	} {
		got, err := Keep(out, c.paths)
		if err != nil || string(got) != c.want {
			t.Errorf("Keep(%v) = %s, %v; want %s", c.paths, got, err, c.want)
		}
	}
}

func TestKeepPathRefusesWhatIsNotAFieldPath(t *testing.T) {
	for _, p := range []string{"", ".a", "a.", "a..b", "a[0]", "a b", "1a", "a.$", strings.Repeat("a", 257), "a/b"} {
		if _, err := KeepPath(p); err == nil {
			t.Errorf("KeepPath(%q) accepted", p)
		}
	}
	if names, err := KeepPath("data.title_2"); err != nil || strings.Join(names, "|") != "data|title_2" {
		t.Errorf("KeepPath(data.title_2) = %v, %v", names, err)
	}
}

func FuzzKeep(f *testing.F) {
	f.Add(`{"a":{"b":1,"c":[1,2]},"d":"x"}`, "a.b")
	f.Add(`{"a":1}`, "a")
	f.Fuzz(func(t *testing.T, out, path string) {
		if !json.Valid([]byte(out)) {
			return
		}
		got, err := Keep(json.RawMessage(out), []string{path})
		if err != nil {
			return
		}
		var kept map[string]json.RawMessage
		if err := json.Unmarshal(got, &kept); err != nil {
			t.Fatalf("Keep(%s, %q) = %s, not a JSON object: %v", out, path, got, err)
		}
		if len(kept) > 1 {
			t.Fatalf("Keep(%s, %q) = %s: one path keeps at most one member", out, path, got)
		}
	})
}

// A message over MaxMessageBytes is cut at a character boundary, so that
// the state data's bound holds (resolver: errorBytes).
func TestCapMessageCutsAtACharacterBoundary(t *testing.T) {
	long := strings.Repeat("é", MaxMessageBytes)
	got := CapMessage(long)
	if len(got) > MaxMessageBytes || !strings.HasSuffix(got, "...") || !utf8.ValidString(got) {
		t.Fatalf("CapMessage: %d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
	}
	if CapMessage("short") != "short" {
		t.Fatal("a short message changed")
	}
	// "<" is six bytes in aws-lambda-go's JSON: the cap counts them so.
	if got := CapMessage(strings.Repeat("<", MaxMessageBytes)); jsonLen(got) > MaxMessageBytes || !strings.HasSuffix(got, "...") {
		t.Fatalf("%d bytes of JSON", jsonLen(got))
	}
}
