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
