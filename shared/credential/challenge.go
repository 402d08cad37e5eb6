package credential

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/tool"
)

// maxChallengeBytes bounds how much of the WWW-Authenticate fields
// InvalidToken reads: 8 KiB, far above any challenge a server sends.
const maxChallengeBytes = 8 << 10

// InvalidToken reports whether h, a 401 response's header, holds a Bearer
// challenge whose error parameter is "invalid_token" (RFC 6750 §3, §3.1:
// the token is expired, revoked or malformed), in any of its
// WWW-Authenticate fields, parsed as RFC 9110 §11.6.1 writes challenges
// (auth-scheme case-insensitive, auth-params as token or quoted-string,
// several challenges per field). A server saying so refused the request
// before acting on it: the call is parked (Refused), not failed.
// A challenge without error=, or with another error
// (insufficient_scope, invalid_request), is not one.
func InvalidToken(h http.Header) bool {
	n := 0
	for _, field := range h.Values("Www-Authenticate") {
		if n += len(field); n > maxChallengeBytes {
			return false
		}
		for _, c := range parseChallenges(field) {
			if strings.EqualFold(c.scheme, "Bearer") && c.params["error"] == "invalid_token" {
				return true
			}
		}
	}
	return false
}

// Refused is the CALL_PARKED error of a call whose server refused c as
// InvalidToken says: cause CauseExpired, the scope kind and the target,
// never the value; not applied (docs/credentials.md, "Expiry"). Its Err
// is a *park.Detail naming the target and the scope.
func (c *Credential) Refused() *tool.Error {
	return tool.Wrap(tool.CallParked, &park.Detail{Cause: park.CredentialsExpired, Target: c.Target.Name, Scope: string(c.Scope)}, "%s: the server of target %s (%s) of toolset %s refused its %s-scope credential as invalid_token (RFC 6750); nothing was applied",
		CauseExpired, c.Target.Name, c.Target.Origin, c.Target.ToolsetName, c.Scope.Kind())
}

// challenge is one parsed challenge: its scheme and its auth-params (names
// lowercased; a token68 challenge has none).
type challenge struct {
	scheme string
	params map[string]string
}

// parseChallenges parses one WWW-Authenticate field value, as far as it is
// well formed (RFC 9110 §11.6.1):
//
//	challenge  = auth-scheme [ 1*SP ( token68 / [ auth-param *( OWS "," OWS auth-param ) ] ) ]
//	auth-param = token BWS "=" BWS ( token / quoted-string )
//
// Challenges are separated by commas too, so after a comma a token
// followed by "=" is a parameter of the current challenge and any other
// token starts the next one.
func parseChallenges(s string) []challenge {
	var out []challenge
	i := 0
	skipOWS := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	token := func() string {
		j := i
		for i < len(s) && isTchar(s[i]) {
			i++
		}
		return s[j:i]
	}
	for i < len(s) {
		skipOWS()
		if i < len(s) && s[i] == ',' {
			i++
			continue
		}
		if len(out) > 0 && isParamStart(s, i) {
			// An auth-param of the current challenge.
			name := token()
			skipOWS()
			i++ // "="
			skipOWS()
			v, ok := paramValue(s, &i)
			if !ok {
				return out
			}
			out[len(out)-1].params[strings.ToLower(name)] = v
			continue
		}
		name := token()
		if name == "" {
			return out // not well formed from here on
		}
		out = append(out, challenge{scheme: name, params: map[string]string{}})
		if i < len(s) && s[i] == ' ' {
			skipOWS()
			if !isParamStart(s, i) {
				// A token68: a token's characters and "/", then "="s, up
				// to a comma or the end; skipped.
				j := i
				for j < len(s) && (isTchar(s[j]) || s[j] == '/') {
					j++
				}
				for j < len(s) && s[j] == '=' {
					j++
				}
				if rest := strings.TrimLeft(s[j:], " \t"); j > i && (rest == "" || rest[0] == ',') {
					i = j
				}
			}
		}
	}
	return out
}

// isParamStart reports whether an auth-param starts at s[i:]: a token,
// optional whitespace, "=", optional whitespace and a token or a
// quoted-string (so that a token68's trailing "=" is not taken for one).
func isParamStart(s string, i int) bool {
	j := i
	for j < len(s) && isTchar(s[j]) {
		j++
	}
	if j == i {
		return false
	}
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	if j >= len(s) || s[j] != '=' {
		return false
	}
	j++
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	return j < len(s) && (isTchar(s[j]) || s[j] == '"')
}

// paramValue reads a token or a quoted-string (RFC 9110 §5.6.4, with
// quoted-pairs) at s[*i:].
func paramValue(s string, i *int) (string, bool) {
	if *i < len(s) && s[*i] == '"' {
		var b strings.Builder
		for j := *i + 1; j < len(s); j++ {
			switch c := s[j]; {
			case c == '"':
				*i = j + 1
				return b.String(), true
			case c == '\\' && j+1 < len(s):
				j++
				b.WriteByte(s[j])
			case c == '\t' || c >= 0x20 && c != 0x7f:
				b.WriteByte(c)
			default:
				return "", false
			}
		}
		return "", false
	}
	j := *i
	for *i < len(s) && isTchar(s[*i]) {
		*i++
	}
	return s[j:*i], *i > j
}

// isTchar reports RFC 9110 §5.6.2's tchar.
func isTchar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// Name names c in a message by its scope's kind and its target, never its
// value: "the toolset-scope credential for crm".
func (c *Credential) Name() string {
	return fmt.Sprintf("the %s-scope credential for %s", c.Scope.Kind(), c.Target.Name)
}

// RedactError passes te's message and cause through c's Redact, so that
// no text a server or host sent back (an echoed header, a URL with its
// filled path segment) carries the secret the request presented
// (docs/credentials.md, "Never recorded"). A nil c or te is returned as
// it is.
func (c *Credential) RedactError(te *tool.Error) *tool.Error {
	if te == nil || c == nil {
		return te
	}
	te.Message = c.Redact(te.Message)
	if te.Err != nil {
		te.Err = errors.New(c.Redact(te.Err.Error()))
	}
	return te
}
