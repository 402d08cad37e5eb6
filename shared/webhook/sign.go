package webhook

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Header names of a delivery (Standard Webhooks, "Webhook headers").
const (
	HeaderID        = standardwebhooks.HeaderWebhookID        // the event id
	HeaderTimestamp = standardwebhooks.HeaderWebhookTimestamp // the attempt's time, unix seconds
	HeaderSignature = standardwebhooks.HeaderWebhookSignature // Sign's value
)

// Tolerance is how far a delivery's timestamp may be from the receiver's
// clock, either way: the Standard Webhooks libraries' default, 5 minutes.
const Tolerance = 5 * time.Minute

// RotationGrace is how long the old secret keeps signing, next to the new
// one, after rotate-secret: receivers have a day to switch (docs/webhooks.md,
// "Rotating the secret").
const RotationGrace = 24 * time.Hour

// SecretPrefix starts every secret (Standard Webhooks, "Signature scheme").
const SecretPrefix = "whsec_"

// Secret sizes in bytes: the specification asks for 24 to 64; NewSecret
// makes 32.
const (
	MinSecretBytes = 24
	MaxSecretBytes = 64
	newSecretBytes = 32
)

// NewSecret makes a subscription's secret: 32 random bytes (crypto/rand),
// returned as key and as whsec, "whsec_" and their padded standard base64
// (RFC 4648 §4), the form shown to the subscriber once.
func NewSecret() (whsec string, key []byte, err error) {
	key = make([]byte, newSecretBytes)
	if _, err := rand.Read(key); err != nil {
		return "", nil, fmt.Errorf("new webhook secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(key), key, nil
}

// ParseSecret decodes a "whsec_" secret into its key: standard base64
// (RFC 4648 §4) with or without padding, decoding to 24..64 bytes.
// Errors never quote the secret.
func ParseSecret(s string) ([]byte, error) {
	b64, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return nil, errors.New(`webhook secret: does not start with "whsec_"`)
	}
	enc := base64.StdEncoding
	if len(b64)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	key, err := enc.Strict().DecodeString(b64)
	if err != nil {
		return nil, errors.New("webhook secret: not standard base64 after \"whsec_\"")
	}
	if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
		return nil, fmt.Errorf("webhook secret: %d bytes, want %d to %d", len(key), MinSecretBytes, MaxSecretBytes)
	}
	return key, nil
}

// Sign returns the webhook-signature value for one delivery: "v1,<sig>"
// for each key, in keys' order, space-separated, where sig is the standard
// base64 of HMAC-SHA256(key, id + "." + unix seconds of ts + "." + body)
// (Standard Webhooks, "Signature scheme"; computed by its Go library).
// During a rotation keys holds the new key and the old one. It fails on no
// keys, an empty key or an empty id.
func Sign(keys [][]byte, id string, ts time.Time, body []byte) (string, error) {
	if len(keys) == 0 {
		return "", errors.New("webhook sign: no key")
	}
	if id == "" {
		return "", errors.New("webhook sign: empty id")
	}
	sigs := make([]string, 0, len(keys))
	for i, k := range keys {
		if len(k) == 0 {
			return "", fmt.Errorf("webhook sign: key %d is empty", i)
		}
		wh, err := standardwebhooks.NewWebhookRaw(k)
		if err != nil {
			return "", fmt.Errorf("webhook sign: %w", err)
		}
		sig, err := wh.Sign(id, ts, body)
		if err != nil {
			return "", fmt.Errorf("webhook sign: %w", err)
		}
		sigs = append(sigs, sig)
	}
	return strings.Join(sigs, " "), nil
}

// Errors of Verify; test with errors.Is.
var (
	ErrMissingHeader  = errors.New("webhook verify: missing webhook-id, webhook-timestamp or webhook-signature")
	ErrBadTimestamp   = errors.New("webhook verify: webhook-timestamp is not whole unix seconds")
	ErrTooOld         = errors.New("webhook verify: timestamp older than the tolerance")
	ErrTooNew         = errors.New("webhook verify: timestamp newer than the tolerance")
	ErrNoMatchingSig  = errors.New("webhook verify: no signature matches")
	ErrNoVerifyingKey = errors.New("webhook verify: no key")
)

// Verify checks one delivery as a receiver does: id, timestamp and
// signature are the three headers' values and body the raw request body.
// The timestamp (decimal unix seconds) must lie within tolerance of now
// (Tolerance when tolerance is not positive), then one "v1," signature of
// the space-separated list must match key (the Go library's
// VerifyIgnoringTimestamp, since its Verify reads time.Now with a fixed
// tolerance). Errors are the Err* values above, wrapped.
func Verify(key []byte, id, timestamp, signature string, body []byte, now time.Time, tolerance time.Duration) error {
	if len(key) == 0 {
		return ErrNoVerifyingKey
	}
	if id == "" || timestamp == "" || signature == "" {
		return ErrMissingHeader
	}
	sec, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return ErrBadTimestamp
	}
	if tolerance <= 0 {
		tolerance = Tolerance
	}
	ts := time.Unix(sec, 0)
	switch {
	case now.Sub(ts) > tolerance:
		return ErrTooOld
	case ts.Sub(now) > tolerance:
		return ErrTooNew
	}
	wh, err := standardwebhooks.NewWebhookRaw(key)
	if err != nil {
		return fmt.Errorf("webhook verify: %w", err)
	}
	h := http.Header{}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, timestamp)
	h.Set(HeaderSignature, signature)
	if err := wh.VerifyIgnoringTimestamp(body, h); err != nil {
		if errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
			return ErrNoMatchingSig
		}
		return fmt.Errorf("webhook verify: %w", err)
	}
	return nil
}
