package credential

import (
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/tool"
)

func TestInvalidTokenReadsBearerChallenges(t *testing.T) {
	for _, c := range []struct {
		name   string
		fields []string
		want   bool
	}{
		{"RFC 6750 §3 example", []string{`Bearer realm="example", error="invalid_token", error_description="The access token expired"`}, true},
		{"error as a token", []string{`Bearer error=invalid_token`}, true},
		{"scheme in another case, spaces around =", []string{`bearer error = "invalid_token"`}, true},
		{"after another challenge with a token68", []string{`Basic YWxhZGRpbjpvcGVuc2VzYW1l==, Bearer error="invalid_token"`}, true},
		{"after another challenge with parameters", []string{`Newauth realm="apps", type=1, title="Login to \"apps\"", Bearer error="invalid_token"`}, true},
		{"in a second field", []string{`Basic realm="x"`, `Bearer error="invalid_token"`}, true},
		{"no error", []string{`Bearer realm="example"`}, false},
		{"insufficient scope", []string{`Bearer error="insufficient_scope", scope="a b"`}, false},
		{"invalid request", []string{`Bearer error="invalid_request"`}, false},
		{"another scheme's error", []string{`Basic error="invalid_token"`}, false},
		{"the value only in a description", []string{`Bearer error_description="invalid_token"`}, false},
		{"a value of another case", []string{`Bearer error="INVALID_TOKEN"`}, false},
		{"no field", nil, false},
		{"unterminated quote", []string{`Bearer error="invalid_token`}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for _, f := range c.fields {
				h.Add("WWW-Authenticate", f)
			}
			if got := InvalidToken(h); got != c.want {
				t.Errorf("InvalidToken(%q) = %v, want %v", c.fields, got, c.want)
			}
		})
	}
}

func TestRefusedParksNamingTheScopeAndTarget(t *testing.T) {
	c := cred("https://mcp.example.com", bearer, "canary")
	te := c.Refused()
	if te.Code != tool.CallParked || te.MaybeApplied || !strings.HasPrefix(te.Message, CauseExpired+": ") ||
		!strings.Contains(te.Message, "tickets") || !strings.Contains(te.Message, "toolset-scope") || strings.Contains(te.Error(), "canary") {
		t.Errorf("Refused() = %v", te)
	}
}

func FuzzInvalidToken(f *testing.F) {
	for _, s := range []string{`Bearer error="invalid_token"`, `Basic abc==, Bearer error=invalid_token`, `Bearer realm="a\"b", error="x"`,
		`Newauth realm="apps", type=1`, `,,, Bearer`, `Bearer =`, `"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, field string) {
		h := http.Header{"Www-Authenticate": {field}}
		got := InvalidToken(h)
		if got && !strings.Contains(field, "invalid_token") {
			t.Fatalf("InvalidToken(%q) without invalid_token in it", field)
		}
		if got && !strings.Contains(strings.ToLower(field), "bearer") {
			t.Fatalf("InvalidToken(%q) without a Bearer challenge", field)
		}
		// A field appended after a comma never hides a Bearer challenge
		// that is well formed on its own.
		if !strings.ContainsAny(field, "\"\\") && !InvalidToken(http.Header{"Www-Authenticate": {field + `, Bearer error="invalid_token"`}}) &&
			parsesWhole(field) {
			t.Fatalf("a Bearer invalid_token challenge after %q was not found", field)
		}
	})
}

// parsesWhole reports whether field is a comma-separated list of
// challenges of the simple form "scheme" or "scheme k=v" (tokens only).
func parsesWhole(field string) bool {
	for _, part := range strings.Split(field, ",") {
		part = strings.Trim(part, " \t")
		scheme, param, hasParam := strings.Cut(part, " ")
		if !isToken(scheme) {
			return false
		}
		if hasParam {
			k, v, ok := strings.Cut(param, "=")
			if !ok || !isToken(k) || !isToken(v) {
				return false
			}
		}
	}
	return true
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if !isTchar(s[i]) {
			return false
		}
	}
	return true
}
