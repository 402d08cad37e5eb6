package store

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/inbound"
)

// KMSAPI is the part of the KMS client sealing and opening call
// (vault.KMS: GenerateDataKey, Decrypt).
type KMSAPI = vault.KMS

// ContextSource is the member of a source secret's encryption context
// that names its source (EncryptionContext).
const ContextSource = "source"

// MaxSecretBytes bounds a source's secret, in bytes: GitHub's are up to
// 255 characters, Standard Webhooks' and Stripe's "whsec_" secrets far
// shorter; 1 KiB leaves room without admitting a document.
const MaxSecretBytes = 1024

// EncryptionContext is the KMS encryption context of source's secrets:
// {purpose: webhook-source, source: <name>}. The credentials key's policy
// lets the sources function generate data keys and webhook-receiver
// decrypt them only under this purpose (docs/webhooks.md, "Receiving
// events"). Its RFC 8785 form (vault.ContextAAD) is also the AES-GCM
// additional data, so a sealed secret copied into another source's item
// does not open.
func EncryptionContext(source string) map[string]string {
	return map[string]string{vault.ContextPurpose: credential.PurposeWebhookSource, ContextSource: source}
}

// SealSecret seals secret, a source's verification secret (1 to
// MaxSecretBytes bytes), for source with a data key from KMS key keyID
// (vault.SealUnder under EncryptionContext(source)). Errors name the
// source, never a byte of the secret.
func SealSecret(ctx context.Context, kms KMSAPI, keyID, source string, secret []byte) (vault.Sealed, error) {
	if err := inbound.CheckName(source); err != nil {
		return vault.Sealed{}, fmt.Errorf("seal source secret: source %w", err)
	}
	if len(secret) == 0 || len(secret) > MaxSecretBytes {
		return vault.Sealed{}, fmt.Errorf("seal source secret of %s: a secret of %d bytes, want 1 to %d: %w", source, len(secret), MaxSecretBytes, ErrInvalid)
	}
	sealed, err := vault.SealUnder(ctx, kms, keyID, EncryptionContext(source), secret)
	if err != nil {
		return vault.Sealed{}, fmt.Errorf("seal source secret of %s: %w", source, err)
	}
	return sealed, nil
}

// OpenSecret opens what SealSecret sealed for source (vault.OpenUnder
// under EncryptionContext(source)). A secret sealed for another source
// fails, at KMS or at GCM (vault.ErrNotAuthentic). Errors name the
// source, never a byte of the secret.
func OpenSecret(ctx context.Context, kms KMSAPI, source string, sealed vault.Sealed) ([]byte, error) {
	if err := inbound.CheckName(source); err != nil {
		return nil, fmt.Errorf("open source secret: source %w", err)
	}
	secret, err := vault.OpenUnder(ctx, kms, EncryptionContext(source), sealed)
	if err != nil {
		return nil, fmt.Errorf("open source secret of %s: %w", source, err)
	}
	return secret, nil
}
