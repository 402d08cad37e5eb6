package toolcall

import (
	"errors"
	"fmt"
	"testing"

	"github.com/toolgate/toolgate/shared/tool"
)

func TestInvalidTokenReadsTheErrorParameterOfAChallenge(t *testing.T) {
	cases := []struct {
		name   string
		values []string
		want   bool
	}{
		{"RFC 6750's example", []string{`Bearer realm="example", error="invalid_token", error_description="The access token expired"`}, true},
		{"error first, token form", []string{`Bearer error=invalid_token`}, true},
		{"parameter name in another case", []string{`Bearer ERROR="invalid_token"`}, true},
		{"spaces around the equals sign", []string{`Bearer error = "invalid_token"`}, true},
		{"quoted-pair in the value", []string{`Bearer error="invalid\_token"`}, true},
		{"second challenge of a field line", []string{`Basic realm="x", Bearer error="invalid_token"`}, true},
		{"second field line", []string{`Basic realm="x"`, `Bearer error="invalid_token"`}, true},
		{"after a token68 with padding", []string{`Negotiate abc==, Bearer error="invalid_token"`}, true},
		{"after a token68 with one pad", []string{`Negotiate abc=, Bearer error="invalid_token"`}, true},
		{"insufficient_scope is not an expired credential", []string{`Bearer error="insufficient_scope", scope="read"`}, false},
		{"no error parameter", []string{`Bearer realm="example"`}, false},
		{"no header", nil, false},
		{"the words in a description only", []string{`Bearer error_description="error=\"invalid_token\""`}, false},
		{"value differs in case", []string{`Bearer error="Invalid_Token"`}, false},
		{"unterminated quote before it", []string{`Bearer realm="x, error="invalid_token"`}, false},
		{"the value as a token68", []string{`Bearer invalid_token`}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := InvalidToken(c.values); got != c.want {
				t.Errorf("InvalidToken(%q) = %v, want %v", c.values, got, c.want)
			}
		})
	}
}

func TestExpiredErrorIsTheOneParkedCauseATool(t *testing.T) {
	e := ExpiredError("the toolset scope's credential for %s was refused", "crm")
	if e.Code != tool.CallParked || e.MaybeApplied || e.Message != "credentials.expired: the toolset scope's credential for crm was refused" {
		t.Fatalf("ExpiredError = %+v", e)
	}
	if !IsExpired(fmt.Errorf("call: %w", e)) {
		t.Error("IsExpired misses a wrapped ExpiredError")
	}
	for _, other := range []error{
		tool.Errorf(tool.CallParked, "tool.schema_changed: crm.create_ticket"),
		tool.Errorf(tool.PermissionDenied, "credentials.expired: not parked"),
		errors.New("credentials.expired: untyped"),
		(*tool.Error)(nil),
	} {
		if IsExpired(other) {
			t.Errorf("IsExpired(%v) = true", other)
		}
	}
}

// FuzzInvalidToken: any text is read without a panic, and what follows a
// challenge found expired never changes the answer.
func FuzzInvalidToken(f *testing.F) {
	for _, s := range []string{`Bearer error="invalid_token"`, `Basic abc==`, `Bearer realm="a\"b", error=x`, `,,, ,`, `"`, `a=b=c`} {
		f.Add(s, ", Bearer")
	}
	f.Fuzz(func(t *testing.T, s, tail string) {
		if InvalidToken([]string{s}) && !InvalidToken([]string{s + ", " + tail}) {
			t.Errorf("%q reads as invalid_token, and not once the list element %q follows it", s, tail)
		}
	})
}
