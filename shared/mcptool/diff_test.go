package mcptool

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func decode(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name, a, b string
		limit      int
		want       []string
		more       int
	}{
		{"equal", `{"a":[1,{"b":null}]}`, `{"a":[1,{"b":null}]}`, 20, nil, 0},
		{"member added, removed, changed", `{"a":1,"b":2}`, `{"b":3,"c":4}`, 20, []string{"removed /a", "changed /b", "added /c"}, 0},
		{"array grown and shrunk", `[1,2,3]`, `[1,5]`, 20, []string{"changed /1", "removed /2"}, 0},
		{"type changed", `{"a":{"x":1}}`, `{"a":[1]}`, 20, []string{"changed /a"}, 0},
		{"scalar to object", `{"a":1}`, `{"a":{}}`, 20, []string{"changed /a"}, 0},
		{"whole value", `1`, `"1"`, 20, []string{"changed /"}, 0},
		{"names escaped", `{"a/b":{"~c":1}}`, `{"a/b":{"~c":2}}`, 20, []string{"changed /a~1b/~0c"}, 0},
		{"bounded", `{"a":1,"b":1,"c":1,"d":1}`, `{}`, 2, []string{"removed /a", "removed /b"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes, more := diff(decode(t, tt.a), decode(t, tt.b), tt.limit)
			var got []string
			for _, c := range changes {
				got = append(got, c.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" || more != tt.more {
				t.Errorf("changes (-want +got):\n%s\nmore %d, want %d", diff, more, tt.more)
			}
		})
	}
	if got := describe([]change{{"added", "/a"}}, 3); got != "added /a, and 3 more" {
		t.Errorf("describe: %q", got)
	}
}

func TestClean(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"a\x00b\nc\u202ed\xffe", "a b c d e"},
		{"  many   blanks  ", "many blanks"},
		{strings.Repeat("é", 150), strings.Repeat("é", 100) + "…"},
	}
	for _, tt := range tests {
		if got := clean(tt.in, MaxServerText); got != tt.want {
			t.Errorf("clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// resolve follows an RFC 6901 pointer into v.
func resolve(v any, ptr string) (any, bool) {
	if ptr == "" {
		return v, true
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// FuzzDiff: the diff of two JSON values is empty exactly when they are
// equal, bounded, symmetric, and each path resolves where its operation
// says.
func FuzzDiff(f *testing.F) {
	for _, s := range [][2]string{
		{`{"a":1}`, `{"a":2}`},
		{`{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}`, `{"type":"object","properties":{"x":{"type":"integer"},"y":{}}}`},
		{`[1,[2,[3]]]`, `[1,[2]]`},
		{`{"a/b~":{"":null}}`, `{"a/b~":{"":false}}`},
		{`null`, `{}`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, as, bs string) {
		var a, b any
		if json.Unmarshal([]byte(as), &a) != nil || json.Unmarshal([]byte(bs), &b) != nil {
			return
		}
		changes, more := diff(a, b, maxDiffPaths)
		if len(changes) > maxDiffPaths || more < 0 || more > 0 && len(changes) < maxDiffPaths {
			t.Fatalf("%d changes and %d more", len(changes), more)
		}
		if equal := reflect.DeepEqual(a, b); equal != (len(changes) == 0) {
			t.Fatalf("equal %v, but %d changes", equal, len(changes))
		}
		if self, n := diff(a, a, maxDiffPaths); len(self) != 0 || n != 0 {
			t.Fatalf("a value differs from itself: %v", self)
		}
		back, backMore := diff(b, a, maxDiffPaths)
		if len(back)+backMore != len(changes)+more {
			t.Fatalf("%d changes one way, %d the other", len(changes)+more, len(back)+backMore)
		}
		for _, c := range changes {
			_, inA := resolve(a, c.path)
			_, inB := resolve(b, c.path)
			if c.op == "added" && (inA || !inB) || c.op == "removed" && (!inA || inB) || c.op == "changed" && (!inA || !inB) {
				t.Fatalf("%s: in a %v, in b %v", c, inA, inB)
			}
			if s := c.String(); !utf8.ValidString(s) || len(s) > len("changed ")+maxPathBytes+len("…") {
				t.Fatalf("shown as %q", s)
			}
		}
	})
}
