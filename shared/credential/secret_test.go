package credential

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"

	"github.com/toolgate/toolgate/shared/toolset"
)

var (
	bearer      = toolset.Auth{Header: "Authorization", Scheme: "Bearer"}
	apiKey      = toolset.Auth{Header: "X-Api-Key"}
	pathSegment = toolset.Auth{PathSegment: 2}
)

func TestCheckSecretHoldsEachPresentationToItsGrammar(t *testing.T) {
	for _, c := range []struct {
		name   string
		secret string
		auth   toolset.Auth
		ok     bool
	}{
		{"bearer b64token", "mF_9.B5f-4.1JqM~+/x==", bearer, true},
		{"bearer scheme in another case", "abc", toolset.Auth{Header: "Authorization", Scheme: "bearer"}, true},
		{"bearer with a space", "abc def", bearer, false},
		{"bearer padding only", "==", bearer, false},
		{"bearer padding not at the end", "ab=c", bearer, false},
		{"bearer with a quote", `ab"c`, bearer, false},
		{"header visible ASCII", `k!"#$%&'()*+,-./:;<=>?@[\]^_{|}~`, apiKey, true},
		{"header with a space", "a b", apiKey, false},
		{"header with a tab", "a\tb", apiKey, false},
		{"header with DEL", "a\x7fb", apiKey, false},
		{"header with non-ASCII", "cl\u00e9", apiKey, false},
		{"path segment unreserved", "AZaz09-._~", pathSegment, true},
		{"path segment with a slash", "a/b", pathSegment, false},
		{"path segment with a percent", "a%2F", pathSegment, false},
		{"path segment with a question mark", "a?b", pathSegment, false},
		{"CR", "ab\rc", apiKey, false},
		{"LF", "ab\nc", pathSegment, false},
		{"NUL", "ab\x00c", bearer, false},
		{"empty", "", apiKey, false},
		{"at the limit", strings.Repeat("a", MaxSecretBytes), apiKey, true},
		{"over the limit", strings.Repeat("a", MaxSecretBytes+1), apiKey, false},
		{"auth with neither", "abc", toolset.Auth{}, false},
		{"auth with both", "abc", toolset.Auth{Header: "X-Api-Key", PathSegment: 1}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckSecret([]byte(c.secret), c.auth)
			if (err == nil) != c.ok {
				t.Fatalf("CheckSecret = %v, want ok %v", err, c.ok)
			}
		})
	}
}

func TestCheckSecretErrorsNeverQuoteTheSecret(t *testing.T) {
	for _, c := range []struct {
		secret string
		auth   toolset.Auth
	}{
		{"canary-SECRET\r\nX: y", apiKey},
		{"canary SECRET", bearer},
		{"canary/SECRET", pathSegment},
		{"canary SECRET", apiKey},
		{strings.Repeat("canarySECRET", MaxSecretBytes/10), apiKey},
	} {
		err := CheckSecret([]byte(c.secret), c.auth)
		if err == nil {
			t.Fatalf("CheckSecret(%q) accepted it", c.secret)
		}
		if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("error quotes the secret: %v", err)
		}
	}
}

var b64token = regexp.MustCompile(`^[A-Za-z0-9\-._~+/]+=*$`)

func FuzzCheckSecret(f *testing.F) {
	for _, s := range []string{"abc", "a b", "mF_9.B5f-4.1JqM==", "a\r\nb", "", "x/y", "\xff", "a=b", "~"} {
		for i := range 3 {
			f.Add([]byte(s), i)
		}
	}
	auths := []toolset.Auth{bearer, apiKey, pathSegment}
	f.Fuzz(func(t *testing.T, secret []byte, which int) {
		if which < 0 {
			which = -which
		}
		auth := auths[which%len(auths)]
		err := CheckSecret(secret, auth)
		if err != nil {
			if len(secret) >= 16 && strings.Contains(err.Error(), string(secret)) {
				t.Fatalf("the error quotes the secret: %v", err)
			}
			return
		}
		if len(secret) == 0 || len(secret) > MaxSecretBytes || bytes.ContainsAny(secret, "\r\n\x00") {
			t.Fatalf("accepted a credential of %d bytes with CR, LF or NUL or out of bounds", len(secret))
		}
		switch {
		case auth.PathSegment > 0:
			for _, b := range secret {
				if !isUnreserved(b) {
					t.Fatalf("accepted a path segment with %q", b)
				}
			}
		case auth.Scheme == "Bearer":
			if !b64token.Match(secret) || !httpguts.ValidHeaderFieldValue("Bearer "+string(secret)) {
				t.Fatalf("accepted %q, not a b64token", secret)
			}
		default:
			if !httpguts.ValidHeaderFieldValue(string(secret)) || bytes.ContainsAny(secret, " \t") {
				t.Fatalf("accepted %q, not a header value of visible ASCII", secret)
			}
		}
	})
}
