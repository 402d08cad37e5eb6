package sources

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/webhook"
)

// Bounds of a source's secret as given (docs/webhooks.md, "Sources").
const (
	// MaxSecretBytes bounds a Stripe or GitHub secret
	// (inboundapi.MaxSecretBytes): GitHub's form takes any text, and
	// providers' secrets are far shorter (Stripe's "whsec_" and 32
	// letters and digits, GitHub's a passphrase).
	MaxSecretBytes = inboundapi.MaxSecretBytes
	// drawnBytes is how many random bytes a drawn secret holds: 32 (256
	// bits), the HMAC-SHA256 key size, in both drawn forms.
	drawnBytes = 32
)

// ErrSecretRequired: the scheme's provider makes the secret (Stripe shows
// an endpoint's signing secret once it is created), so the function
// cannot draw one.
var ErrSecretRequired = errors.New("stripe makes the endpoint's signing secret: give it (--secret-from-stdin)")

// DrawSecret draws a new secret for scheme: Standard Webhooks "whsec_" and
// the standard base64 of 32 random bytes (its specification's form,
// webhook.NewSecret), GitHub 64 lower-case hex characters of 32 random
// bytes (GitHub takes any text as a webhook's secret). Stripe:
// ErrSecretRequired.
func DrawSecret(scheme inbound.Scheme) (string, error) {
	switch scheme {
	case inbound.StandardWebhooks:
		whsec, _, err := webhook.NewSecret()
		return whsec, err
	case inbound.GitHub:
		b := make([]byte, drawnBytes)
		if _, err := rand.Read(b); err != nil {
			return "", fmt.Errorf("draw a secret: %w", err)
		}
		return hex.EncodeToString(b), nil
	case inbound.Stripe:
		return "", ErrSecretRequired
	}
	return "", fmt.Errorf("draw a secret: %w", inbound.ErrUnknownScheme)
}

// CheckSecret checks a given secret against scheme's form: Standard
// Webhooks "whsec_" and standard base64 of 24 to 64 bytes
// (webhook.ParseSecret, its specification), Stripe "whsec_" and 1 or more
// letters and digits (Stripe's endpoint secrets), GitHub 1 to
// MaxSecretBytes printable ASCII characters (space to tilde) without
// leading or trailing space. Errors name the rule, never a byte of the
// secret.
func CheckSecret(scheme inbound.Scheme, secret string) error {
	switch scheme {
	case inbound.StandardWebhooks:
		if _, err := webhook.ParseSecret(secret); err != nil {
			return errors.New(`a Standard Webhooks secret is "whsec_" and the standard base64 of 24 to 64 bytes`)
		}
		return nil
	case inbound.Stripe:
		rest, ok := strings.CutPrefix(secret, webhook.SecretPrefix)
		if !ok || rest == "" || len(secret) > MaxSecretBytes || strings.IndexFunc(rest, func(r rune) bool { return !isAlnum(r) }) >= 0 {
			return fmt.Errorf(`a Stripe secret is "whsec_" and letters and digits, at most %d characters`, MaxSecretBytes)
		}
		return nil
	case inbound.GitHub:
		if secret == "" || len(secret) > MaxSecretBytes || strings.TrimSpace(secret) != secret ||
			strings.IndexFunc(secret, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
			return fmt.Errorf("a GitHub secret is 1 to %d printable ASCII characters, without leading or trailing space", MaxSecretBytes)
		}
		return nil
	}
	return inbound.ErrUnknownScheme
}

func isAlnum(r rune) bool {
	return r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
}
