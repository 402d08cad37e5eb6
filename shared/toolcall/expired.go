package toolcall

import (
	"errors"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/shared/tool"
)

// CredentialsExpired is the cause of a call parked because its credential
// has expired (docs/credentials.md, "Expiry"): the first word of the
// CALL_PARKED error's message, as tool.schema_changed is an MCP tool's
// that changed on its server.
const CredentialsExpired = "credentials.expired"

// ExpiredError returns the CALL_PARKED error, cause CredentialsExpired,
// that a tool answers when the server refused the credential the call
// carried as an invalid token (RFC 6750 §3.1: expired, revoked or
// malformed), and that the resolver answers for a credential past its
// expiry before the claim. The message is "credentials.expired: " and
// format's text, which names the scope kind and the target, never a
// value. It is never maybe applied: the server refused the request.
func ExpiredError(format string, args ...any) *tool.Error {
	return &tool.Error{Code: tool.CallParked, Message: CredentialsExpired + ": " + fmt.Sprintf(format, args...)}
}

// IsExpired reports whether err is a CALL_PARKED error whose cause is
// CredentialsExpired (ExpiredError): the one CALL_PARKED the dispatcher
// takes from a tool that ran, for a call that carried a credential.
func IsExpired(err error) bool {
	var te *tool.Error
	return errors.As(err, &te) && te != nil && te.Code == tool.CallParked && strings.HasPrefix(te.Message, CredentialsExpired+":")
}

// InvalidToken reports whether the WWW-Authenticate field values of a 401
// response (every field line, in order) hold a challenge with the
// auth-param error="invalid_token" (RFC 6750 §3.1), whatever its scheme:
// the server refused the credential it was sent as expired, revoked or
// malformed. The grammar is RFC 9110 §11.6.1's: challenges separated by
// commas, each an auth-scheme and then either a token68 or auth-params
// (token BWS "=" BWS (token / quoted-string)); parameter names are
// case-insensitive, the value compared exactly once a quoted-string is
// unescaped. Text that does not parse ends the reading with what was read
// before it: a 401 without error=, or unreadable, is not an expired
// credential, and stays TOOL_PERMISSION_DENIED.
func InvalidToken(values []string) bool {
	return ChallengeError(values, "invalid_token")
}

// ChallengeError reports whether the WWW-Authenticate field values hold a
// challenge whose error auth-param is code (RFC 6750 §3.1's
// "invalid_request", "invalid_token", "insufficient_scope"), read as
// InvalidToken reads them.
func ChallengeError(values []string, code string) bool {
	for _, v := range values {
		if challengeErrors(v, func(c string) bool { return c == code }) {
			return true
		}
	}
	return false
}

// challengeErrors walks the challenges of one WWW-Authenticate field
// value and reports whether match accepts the value of one of their
// error auth-params.
func challengeErrors(s string, match func(string) bool) bool {
	p := &authParser{s: s}
	for {
		p.skipListSeparators()
		if p.done() {
			return false
		}
		name := p.token()
		if name == "" {
			return false // not a token: unreadable from here on
		}
		p.skipBWS()
		if !p.peek('=') {
			continue // an auth-scheme: the challenge's params follow
		}
		// name= is an auth-param, or name (a token68) ends in '=' padding.
		eq := p.i
		for p.peek('=') {
			p.i++
		}
		if p.i-eq > 1 {
			continue // token68 padding ("abc=="), not a parameter
		}
		p.skipBWS()
		var value string
		switch {
		case p.peek('"'):
			v, ok := p.quoted()
			if !ok {
				return false
			}
			value = v
		default:
			value = p.token()
			if value == "" {
				continue // "abc=" then a comma or the end: a token68
			}
		}
		if strings.EqualFold(name, "error") && match(value) {
			return true
		}
	}
}

// authParser reads RFC 9110's challenge grammar from s, at byte i.
type authParser struct {
	s string
	i int
}

func (p *authParser) done() bool       { return p.i >= len(p.s) }
func (p *authParser) peek(b byte) bool { return p.i < len(p.s) && p.s[p.i] == b }

// skipBWS skips spaces and tabs.
func (p *authParser) skipBWS() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// skipListSeparators skips spaces, tabs and commas (RFC 9110 §5.6.1: a
// list may hold empty elements).
func (p *authParser) skipListSeparators() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == ',') {
		p.i++
	}
}

// token reads a token (RFC 9110 §5.6.2), or a token68's characters
// (§11.2: ALPHA, DIGIT, "-._~+/"), which a token holds but "/"; "" when
// none is there.
func (p *authParser) token() string {
	start := p.i
	for p.i < len(p.s) && (isTchar(p.s[p.i]) || p.s[p.i] == '/') {
		p.i++
	}
	return p.s[start:p.i]
}

// quoted reads a quoted-string (RFC 9110 §5.6.4) and returns its value
// with its quoted-pairs unescaped; ok is false for one that never ends.
func (p *authParser) quoted() (string, bool) {
	var b strings.Builder
	for p.i++; p.i < len(p.s); p.i++ {
		switch c := p.s[p.i]; c {
		case '"':
			p.i++
			return b.String(), true
		case '\\':
			if p.i+1 >= len(p.s) {
				return "", false
			}
			p.i++
			b.WriteByte(p.s[p.i])
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}

// isTchar reports whether c is a tchar (RFC 9110 §5.6.2).
func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
