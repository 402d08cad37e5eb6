package httptool

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/shared/externalkey"
	"github.com/toolgate/toolgate/shared/httprule"
)

// KeyHeaderValue writes key, the call's external idempotency key
// (toolcall.Call.ExternalKey), as the value of a host's idempotency
// header in format:
//
//   - httprule.FormatRaw (or ""): key as it is, which must be visible
//     US-ASCII (0x21–0x7E), as external keys are;
//   - httprule.FormatSFString: an RFC 8941 §3.3.3 sf-string, key between
//     double quotes with `\` and `"` escaped by a backslash, as the IETF
//     HTTPAPI draft "The Idempotency-Key HTTP Header Field" defines the
//     value; key must be printable US-ASCII (0x20–0x7E);
//   - httprule.FormatUUID: an RFC 9562 version 8 UUID in its lower-case
//     hex form, from the first 16 bytes of SHA-256(key) with the version
//     (8) and variant (10) bits set (RFC 9562 §5.8, Appendix B.2), so that
//     one key always gives one UUID.
//
// An empty key, one longer than externalkey.MaxLength (64), a key outside
// those characters or an unknown format is an error; its text names the rule, never the key.
func KeyHeaderValue(format, key string) (string, error) {
	if key == "" {
		return "", fmt.Errorf("the call has no external idempotency key")
	}
	if len(key) > externalkey.MaxLength {
		return "", fmt.Errorf("the external key is %d bytes, over the %d an external key has", len(key), externalkey.MaxLength)
	}
	switch format {
	case httprule.FormatRaw, "":
		for i := 0; i < len(key); i++ {
			if key[i] < 0x21 || key[i] > 0x7e {
				return "", fmt.Errorf("the external key is not visible US-ASCII (byte %d), so it cannot be sent raw", i)
			}
		}
		return key, nil
	case httprule.FormatSFString:
		var b strings.Builder
		b.Grow(len(key) + 2)
		b.WriteByte('"')
		for i := 0; i < len(key); i++ {
			c := key[i]
			if c < 0x20 || c > 0x7e {
				return "", fmt.Errorf("the external key is not printable US-ASCII (byte %d), so it is no RFC 8941 sf-string", i)
			}
			if c == '\\' || c == '"' {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
		b.WriteByte('"')
		return b.String(), nil
	case httprule.FormatUUID:
		sum := sha256.Sum256([]byte(key))
		u := sum[:16]
		u[6] = u[6]&0x0f | 0x80 // version 8 (RFC 9562 §5.8)
		u[8] = u[8]&0x3f | 0x80 // variant 10 (RFC 9562 §4.1)
		h := hex.EncodeToString(u)
		return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32], nil
	}
	return "", fmt.Errorf("idempotency format %q is not one of %s", format, strings.Join(httprule.Formats, ", "))
}
