package store

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/credential/vault"
)

// ContextSubscription is the member of a webhook secret's encryption
// context that names its subscription (EncryptionContext).
const ContextSubscription = "subscription"

// Bounds of a signing key, in bytes: Standard Webhooks' secrets are 24 to
// 64 random bytes (webhook.ParseSecret); toolgate makes 32.
const (
	minKeyBytes = 24
	maxKeyBytes = 64
)

// EncryptionContext is the KMS encryption context of subscription subID's
// signing secrets: {purpose: webhook-subscription, subscription: subID}.
// The credentials key's policy lets the webhooks function generate data
// keys and webhook-delivery decrypt them only under this purpose
// (docs/webhooks.md). Its RFC 8785 form (vault.ContextAAD) is also the
// AES-GCM additional data, so a sealed secret copied into another
// subscription's item does not open.
func EncryptionContext(subID string) map[string]string {
	return map[string]string{vault.ContextPurpose: credential.PurposeWebhookSubscription, ContextSubscription: subID}
}

// SealSecret seals key, a subscription's signing key (24 to 64 bytes),
// for subscription subID with a data key from KMS key keyID
// (vault.SealUnder under EncryptionContext(subID)). Errors name the
// subscription, never a byte of the key.
func SealSecret(ctx context.Context, k vault.KMS, keyID, subID string, key []byte) (vault.Sealed, error) {
	if err := checkSubscriptionID(subID); err != nil {
		return vault.Sealed{}, fmt.Errorf("seal webhook secret: %w", err)
	}
	if len(key) < minKeyBytes || len(key) > maxKeyBytes {
		return vault.Sealed{}, fmt.Errorf("seal webhook secret of %s: a key of %d bytes, want %d to %d", subID, len(key), minKeyBytes, maxKeyBytes)
	}
	sealed, err := vault.SealUnder(ctx, k, keyID, EncryptionContext(subID), key)
	if err != nil {
		return vault.Sealed{}, fmt.Errorf("seal webhook secret of %s: %w", subID, err)
	}
	return sealed, nil
}

// OpenSecret opens what SealSecret sealed for subscription subID
// (vault.OpenUnder under EncryptionContext(subID)). A secret sealed for
// another subscription fails, at KMS or at GCM (vault.ErrNotAuthentic).
// Errors name the subscription, never a byte of the key.
func OpenSecret(ctx context.Context, k vault.KMS, subID string, sealed vault.Sealed) ([]byte, error) {
	if err := checkSubscriptionID(subID); err != nil {
		return nil, fmt.Errorf("open webhook secret: %w", err)
	}
	key, err := vault.OpenUnder(ctx, k, EncryptionContext(subID), sealed)
	if err != nil {
		return nil, fmt.Errorf("open webhook secret of %s: %w", subID, err)
	}
	return key, nil
}
