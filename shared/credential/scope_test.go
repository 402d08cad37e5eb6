package credential

import (
	"strings"
	"testing"
)

func TestScopesAndTheirKinds(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	eu := EndUserScope(key, "alice@example.com")
	for _, c := range []struct {
		scope Scope
		kind  string
	}{
		{ScopeToolset, KindToolset},
		{RunScope("run-2026-12-02_a1"), KindRun},
		{eu, KindEndUser},
		{"run:", ""},
		{RunScope(strings.Repeat("a", 81)), ""},
		{RunScope("has space"), ""},
		{RunScope("has/slash"), ""},
		{RunScope("has#hash"), ""},
		{"end_user:alice", ""},
		{Scope("end_user:" + strings.Repeat("A", 64)), ""},
		{"Toolset", ""},
		{"", ""},
	} {
		if got := c.scope.Kind(); got != c.kind {
			t.Errorf("Scope(%q).Kind() = %q, want %q", c.scope, got, c.kind)
		}
	}
}

func TestEndUserScopeIsTheKeyedHashNotTheID(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	a := EndUserScope(key, "alice@example.com")
	if strings.Contains(string(a), "alice") {
		t.Errorf("scope %q holds the raw id", a)
	}
	// HMAC-SHA256 of the id under the key, computed independently:
	// printf %s alice@example.com | openssl dgst -sha256 -hmac <key>.
	const want = "end_user:841240d2a5b6654b3ae21fc4499db7b7867077cdd67c3e16cef1f9843e27d1fa"
	if a != want {
		t.Errorf("EndUserScope = %q, want %q", a, want)
	}
	if a != EndUserScope(key, "alice@example.com") {
		t.Error("the same id under the same key gave another scope")
	}
	if a == EndUserScope(key, "bob@example.com") {
		t.Error("two ids gave one scope")
	}
	if a == EndUserScope([]byte("another key, another stage......"), "alice@example.com") {
		t.Error("two keys gave one scope")
	}
}

// FuzzParseScope holds ParseScope to what the store relies on: an
// accepted scope is of one of the three kinds, holds no "#" (the sort
// key's separator) and no whitespace or control character, and a run
// scope's name is one RunScope gives back.
func FuzzParseScope(f *testing.F) {
	for _, s := range []string{"toolset", "run:r-1", "run:", "run:a#b", "end_user:" + strings.Repeat("ab", 32), "end_user:" + strings.Repeat("AB", 32), "run:a\u0085b", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ParseScope(s) != nil {
			if Scope(s).Kind() != "" {
				t.Fatalf("scope %q refused, and its kind is %q", s, Scope(s).Kind())
			}
			return
		}
		kind := Scope(s).Kind()
		if kind != KindToolset && kind != KindEndUser && kind != KindRun {
			t.Fatalf("scope %q accepted with kind %q", s, kind)
		}
		if strings.ContainsAny(s, "# \t\r\n\x00") {
			t.Fatalf("scope %q accepted with a # or whitespace", s)
		}
		if name, ok := strings.CutPrefix(s, KindRun+":"); ok && RunScope(name) != Scope(s) {
			t.Fatalf("run scope %q is not RunScope of its name", s)
		}
	})
}
