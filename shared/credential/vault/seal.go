package vault

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// nonceBytes is the GCM nonce length, in bytes: 12, the standard size
// (NIST SP 800-38D §8.2), a fresh random one per seal.
const nonceBytes = 12

// The members of a credential's encryption context (docs/credentials.md,
// "Encryption"). The key policy conditions kms:Decrypt on
// kms:EncryptionContext:purpose and kms:EncryptionContextKeys, so these
// names are part of the deployed policy.
const (
	ContextPurpose     = "purpose"
	ContextToolsetName = "toolset_name"
	ContextTarget      = "target"
	ContextOrigin      = "origin"
	ContextScope       = "scope"
)

// EncryptionContext is the KMS encryption context of t's credential in
// scope s: purpose credential.PurposeToolCredential, toolset_name, target (t.Name),
// origin and scope. It is given to GenerateDataKey and Decrypt, and, with
// the presentation, is the AES-GCM additional data (additionalData), so a
// ciphertext moved to another toolset, target, origin, scope or purpose
// does not open.
func EncryptionContext(t credential.Target, s credential.Scope) map[string]string {
	return map[string]string{
		ContextPurpose:     credential.PurposeToolCredential,
		ContextToolsetName: t.ToolsetName,
		ContextTarget:      t.Name,
		ContextOrigin:      t.Origin,
		ContextScope:       string(s),
	}
}

// presentation is the member of the GCM additional data, beside the
// encryption context's, that binds a credential to how it is presented.
const presentation = "presentation"

// additionalData is the AES-GCM additional data of t's credential under
// encryption context ec: ec with the member "presentation", t.Auth's JSON
// (the header, scheme or path segment the credential was set to be
// presented in), in RFC 8785 form (ContextAAD). So a credential set for
// one presentation does not open for another: a toolset of the same name,
// target and origin that declares another header, or a {secret} path
// segment, gets nothing (docs/credentials.md, "Envelope encryption").
// KMS never sees the presentation: the key policy's context keys stay
// the five of EncryptionContext.
func additionalData(ec map[string]string, auth toolset.Auth) ([]byte, error) {
	a, err := json.Marshal(auth)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(ec)+1)
	for k, v := range ec {
		m[k] = v
	}
	m[presentation] = string(a)
	return ContextAAD(m)
}

// ContextAAD is m as a JSON object in RFC 8785 form, from the contract's
// one canonicaliser (tool.InputDigest; the digest is not used): the
// AES-GCM additional data that binds a sealed value to its encryption
// context and whatever else m holds. Equal maps give equal bytes.
func ContextAAD(m map[string]string) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	canonical, _, err := tool.InputDigest(b)
	return canonical, err
}

// checkBinding reports a target or scope that cannot bind a credential.
func checkBinding(t credential.Target, s credential.Scope) error {
	switch {
	case t.ToolsetName == "":
		return errors.New("the target has no toolset name")
	case t.Name == "":
		return errors.New("the target has no name")
	case t.Origin == "":
		return fmt.Errorf("target %s has no origin", t.Name)
	}
	return credential.ParseScope(string(s))
}

// Seal encrypts secret for t in scope s (SealWith): under the encryption
// context EncryptionContext(t, s), with additionalData (the context and
// t.Auth) as the GCM additional data. secret must pass
// credential.CheckSecret(secret, t.Auth). Errors name the target and scope
// kind, never the secret.
func Seal(ctx context.Context, k KMS, keyID string, t credential.Target, s credential.Scope, secret []byte) (Sealed, error) {
	if err := checkBinding(t, s); err != nil {
		return Sealed{}, fmt.Errorf("seal credential: %w", err)
	}
	if err := credential.CheckSecret(secret, t.Auth); err != nil {
		return Sealed{}, fmt.Errorf("seal credential for target %s: %w", t.Name, err)
	}
	ec := EncryptionContext(t, s)
	aad, err := additionalData(ec, t.Auth)
	if err != nil {
		return Sealed{}, fmt.Errorf("seal credential for target %s: encryption context: %w", t.Name, err)
	}
	sealed, err := SealWith(ctx, k, keyID, ec, aad, secret)
	if err != nil {
		return Sealed{}, fmt.Errorf("seal credential for target %s (%s scope): %w", t.Name, s.Kind(), err)
	}
	return sealed, nil
}

// Open decrypts what Seal sealed for t in scope s (OpenWith, under
// EncryptionContext(t, s) and additionalData). A ciphertext sealed for
// another toolset, target, origin, scope or purpose fails, at KMS
// (InvalidCiphertextException) or at GCM; one sealed for another
// presentation (t.Auth) fails at GCM. Errors name the target and scope
// kind, never a byte of plaintext.
func Open(ctx context.Context, k KMS, t credential.Target, s credential.Scope, sealed Sealed) ([]byte, error) {
	if err := checkBinding(t, s); err != nil {
		return nil, fmt.Errorf("open credential: %w", err)
	}
	ec := EncryptionContext(t, s)
	aad, err := additionalData(ec, t.Auth)
	if err != nil {
		return nil, fmt.Errorf("open credential for target %s: encryption context: %w", t.Name, err)
	}
	secret, err := OpenWith(ctx, k, ec, aad, sealed)
	if errors.Is(err, ErrNotAuthentic) {
		return nil, fmt.Errorf("open credential for target %s (%s scope): the ciphertext does not authenticate under its encryption context and presentation (set for another header, scheme or path segment, or moved)", t.Name, s.Kind())
	}
	if err != nil {
		return nil, fmt.Errorf("open credential for target %s (%s scope): %w", t.Name, s.Kind(), err)
	}
	return secret, nil
}

// ErrNotAuthentic is OpenWith's error for a ciphertext whose GCM tag does
// not verify under the additional data given: it was sealed under another
// context or additional data, moved, or changed.
var ErrNotAuthentic = errors.New("the ciphertext does not authenticate under its encryption context and additional data")

// SealWith is the envelope encryption every sealed value shares
// (credentials, webhook signing secrets; docs/credentials.md, "Envelope
// encryption"): a fresh AES-256 data key from KMS GenerateDataKey (keyID, a
// key ARN or alias; encryption context ec, which the key policy's
// kms:EncryptionContext conditions read), then AES-256-GCM under it with a
// random 12-byte nonce and aad as additional data (ContextAAD of ec, or of
// ec and more). The plaintext data key is cleared before SealWith returns.
// Errors say which step failed, never a byte of secret.
func SealWith(ctx context.Context, k KMS, keyID string, ec map[string]string, aad []byte, secret []byte) (Sealed, error) {
	out, err := k.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{KeyId: aws.String(keyID), KeySpec: types.DataKeySpecAes256, EncryptionContext: ec})
	if err != nil {
		return Sealed{}, fmt.Errorf("kms generate data key: %w", err)
	}
	defer clear(out.Plaintext)
	gcm, err := newGCM(out.Plaintext)
	if err != nil {
		return Sealed{}, err
	}
	nonce := make([]byte, nonceBytes)
	if _, err := rand.Read(nonce); err != nil {
		return Sealed{}, fmt.Errorf("nonce: %w", err)
	}
	return Sealed{
		Ciphertext:   gcm.Seal(nil, nonce, secret, aad),
		Nonce:        nonce,
		EncryptedKey: out.CiphertextBlob,
		KeyID:        aws.ToString(out.KeyId),
	}, nil
}

// OpenWith decrypts what SealWith sealed under encryption context ec and
// additional data aad: KMS Decrypt of the data key under ec (and
// sealed.KeyID, when set), then AES-256-GCM with aad. Another context
// fails at KMS (InvalidCiphertextException, wrapped); another aad, or a
// changed ciphertext, fails at GCM with ErrNotAuthentic. The plaintext
// data key is cleared before OpenWith returns. Errors never hold a byte
// of plaintext.
func OpenWith(ctx context.Context, k KMS, ec map[string]string, aad []byte, sealed Sealed) ([]byte, error) {
	if len(sealed.Nonce) != nonceBytes {
		return nil, fmt.Errorf("nonce of %d bytes, want %d", len(sealed.Nonce), nonceBytes)
	}
	in := &kms.DecryptInput{CiphertextBlob: sealed.EncryptedKey, EncryptionContext: ec}
	if sealed.KeyID != "" {
		in.KeyId = aws.String(sealed.KeyID)
	}
	out, err := k.Decrypt(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("kms decrypt: %w", err)
	}
	defer clear(out.Plaintext)
	gcm, err := newGCM(out.Plaintext)
	if err != nil {
		return nil, err
	}
	secret, err := gcm.Open(nil, sealed.Nonce, sealed.Ciphertext, aad)
	if err != nil {
		return nil, ErrNotAuthentic
	}
	return secret, nil
}

// newGCM is AES-256-GCM under key, which must be 32 bytes.
func newGCM(key []byte) (cipher.AEAD, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("data key of %d bytes, want 32 (AES-256)", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// SealUnder is SealWith whose additional data is the encryption context
// itself (ContextAAD of ec): the sealing of a value bound by its context
// alone, as webhook subscriptions' and inbound sources' secrets are
// (docs/webhooks.md). Errors are SealWith's, or the context's
// canonicalisation's.
func SealUnder(ctx context.Context, k KMS, keyID string, ec map[string]string, secret []byte) (Sealed, error) {
	aad, err := ContextAAD(ec)
	if err != nil {
		return Sealed{}, err
	}
	return SealWith(ctx, k, keyID, ec, aad, secret)
}

// OpenUnder opens what SealUnder sealed under encryption context ec
// (OpenWith with ContextAAD of ec).
func OpenUnder(ctx context.Context, k KMS, ec map[string]string, sealed Sealed) ([]byte, error) {
	aad, err := ContextAAD(ec)
	if err != nil {
		return nil, err
	}
	return OpenWith(ctx, k, ec, aad, sealed)
}
