package vault

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"
)

// KMS is the part of the KMS client this package calls.
type KMS interface {
	GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, opts ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error)
	Decrypt(ctx context.Context, in *kms.DecryptInput, opts ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

// Sealed is a credential as stored: the AES-256-GCM ciphertext (with its
// tag), its 12-byte nonce, the KMS-encrypted data key and the key's id.
type Sealed struct {
	Ciphertext, Nonce, EncryptedKey []byte
	KeyID                           string
}

// CacheTTL is how long a Resolver keeps what it read, and so the longest
// a revoked or replaced credential is still presented by a warm
// container: 5 s (docs/credentials.md, "Revocation").
const CacheTTL = 5 * time.Second
