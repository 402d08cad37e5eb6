package credential

import (
	"errors"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/shared/toolset"
)

// CheckSecret reports whether secret may be stored for a target presented
// as auth says, so that no request built with it later can fail on it,
// and no transport error can echo it (docs/credentials.md, "Setting a
// credential"). The rules:
//
//   - 1 to MaxSecretBytes bytes, none of them CR, LF or NUL (header
//     injection, RFC 9110 §5.5);
//   - a header with Scheme "Bearer" (any case): an RFC 6750 §2.1
//     b64token, 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" )
//     *"=";
//   - any other header: visible US-ASCII only (VCHAR, RFC 5234 B.1;
//     %x21-7E). RFC 9110 §5.5 allows spaces and tabs inside a field value
//     and obsolete non-ASCII bytes, but a space is where a scheme ends and
//     intermediaries trim and fold whitespace, so neither is accepted;
//   - a path segment: RFC 3986 §2.3 unreserved characters only (ALPHA /
//     DIGIT / "-" / "." / "_" / "~"), so the segment needs no
//     percent-encoding and cannot end the path or start a query.
//
// An auth that names neither a header nor a path segment, or both, is an
// error too. Errors name the rule and the byte offset (from 0), never a
// byte of the secret.
func CheckSecret(secret []byte, auth toolset.Auth) error {
	switch {
	case len(secret) == 0:
		return errors.New("the credential is empty")
	case len(secret) > MaxSecretBytes:
		return fmt.Errorf("the credential is %d bytes, over the limit of %d", len(secret), MaxSecretBytes)
	}
	for i, b := range secret {
		switch b {
		case '\r', '\n', 0:
			return fmt.Errorf("the credential has a CR, LF or NUL byte at offset %d", i)
		}
	}
	switch {
	case auth.Header != "" && auth.PathSegment != 0:
		return errors.New("the target's auth names both a header and a path segment")
	case auth.Header != "" && strings.EqualFold(auth.Scheme, "Bearer"):
		return checkB64Token(secret)
	case auth.Header != "":
		return checkEach(secret, isVisibleASCII, "a visible US-ASCII character (RFC 5234 VCHAR) as a header value requires")
	case auth.PathSegment > 0:
		return checkEach(secret, isUnreserved, "an RFC 3986 unreserved character (ALPHA, DIGIT, - . _ ~) as a path segment requires")
	}
	return errors.New("the target's auth names neither a header nor a path segment")
}

// checkB64Token holds secret to RFC 6750 §2.1's b64token.
func checkB64Token(secret []byte) error {
	end := len(secret)
	for end > 0 && secret[end-1] == '=' {
		end--
	}
	if end == 0 {
		return errors.New("the credential is not an RFC 6750 b64token, as a Bearer token must be: it has no character before its padding")
	}
	for i, b := range secret[:end] {
		if !isUnreserved(b) && b != '+' && b != '/' {
			return fmt.Errorf("the credential is not an RFC 6750 b64token, as a Bearer token must be: the byte at offset %d is not ALPHA, DIGIT, - . _ ~ + / or trailing =", i)
		}
	}
	return nil
}

// checkEach holds every byte of secret to ok.
func checkEach(secret []byte, ok func(byte) bool, want string) error {
	for i, b := range secret {
		if !ok(b) {
			return fmt.Errorf("the credential's byte at offset %d is not %s", i, want)
		}
	}
	return nil
}

// isVisibleASCII reports VCHAR (RFC 5234 B.1).
func isVisibleASCII(b byte) bool { return b >= 0x21 && b <= 0x7e }

// isUnreserved reports RFC 3986 §2.3's unreserved.
func isUnreserved(b byte) bool {
	return 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9' ||
		b == '-' || b == '.' || b == '_' || b == '~'
}
