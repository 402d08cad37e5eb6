package externalkey

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/shared/tool"
)

const (
	// RunIDLength is the length of an opaque run id: the first 22
	// characters of the unpadded base64url (RFC 4648 §5) form of
	// HMAC-SHA256 (RFC 2104) of the run id, 132 bits.
	RunIDLength = 22
	// MaxLength bounds an external key, in characters (each visible
	// US-ASCII). Neither MCP nor the HTTP Idempotency-Key draft sets a
	// length; 64 is the tightest bound common idempotency tokens have (an
	// AWS API's ClientToken: at most 64 ASCII characters), so that a
	// server may keep the key in any such field (docs/ledger.md, "The
	// external key").
	MaxLength = 64
	// MaxSeqLength is the longest seq an external key holds: MaxLength
	// less the opaque run id and the "/". A Step Functions run's seqs are
	// far shorter (its 25,000 history events bound every counter and
	// index to 5 digits); only a direct-lane call can name a longer one.
	MaxSeqLength = MaxLength - RunIDLength - 1
	// MinSecretBytes is the shortest stage secret accepted: 32 bytes, the
	// HMAC-SHA256 output length (RFC 2104 §3 recommends a key no shorter).
	MinSecretBytes = 32
)

// ErrSecret is the error of a secret shorter than MinSecretBytes.
var ErrSecret = fmt.Errorf("the external key secret must be at least %d bytes", MinSecretBytes)

// RunID is the opaque run id of runID under secret: RunIDLength
// characters of base64url. The same secret and run id give the same value;
// without the secret it tells nothing of the run id.
func RunID(secret []byte, runID string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(runID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))[:RunIDLength]
}

// New is the external key of the call runID/seq under secret:
// "<RunID(secret, runID)>/<seq>". It fails for a secret shorter than
// MinSecretBytes (ErrSecret), an invalid seq, or a seq longer than
// MaxSeqLength (the key would be over MaxLength).
func New(secret []byte, runID string, seq tool.Seq) (string, error) {
	if len(secret) < MinSecretBytes {
		return "", ErrSecret
	}
	if err := seq.Valid(); err != nil {
		return "", err
	}
	if len(seq) > MaxSeqLength {
		return "", fmt.Errorf("seq is %d characters, over the %d an external idempotency key holds (%d in all)", len(seq), MaxSeqLength, MaxLength)
	}
	return RunID(secret, runID) + "/" + string(seq), nil
}

// Parse splits an external key into its opaque run id and its seq. It
// fails for a key over MaxLength, an opaque run id that is not
// RunIDLength characters of base64url, or an invalid seq; the error quotes
// nothing of the key but the seq (tool.ParseSeq).
func Parse(key string) (runID string, seq tool.Seq, err error) {
	if len(key) > MaxLength {
		return "", "", fmt.Errorf("an external key is at most %d characters, this one %d", MaxLength, len(key))
	}
	run, s, ok := strings.Cut(key, "/")
	if !ok {
		return "", "", errors.New("an external key is <opaque run id>/<seq>: it has no \"/\"")
	}
	if len(run) != RunIDLength || strings.Trim(run, alphabet) != "" {
		return "", "", fmt.Errorf("an external key's opaque run id is %d characters of base64url (A-Z, a-z, 0-9, - and _)", RunIDLength)
	}
	if _, err := tool.ParseSeq(s); err != nil {
		return "", "", fmt.Errorf("an external key's seq: %w", err)
	}
	return run, tool.Seq(s), nil
}

// alphabet is base64url's (RFC 4648 §5).
const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// IsFirstSeq reports whether seq is the lowest a run can give a call: "1",
// "1.0.1" or "1.0.1.0.1" (every counter 1, every index 0). The dispatcher
// writes a run's key pointer with the claim that created such a call's
// item (docs/ledger.md, "The key pointer").
func IsFirstSeq(seq tool.Seq) bool {
	parts, err := tool.ParseSeq(string(seq))
	if err != nil {
		return false
	}
	for i, n := range parts {
		if (i%2 == 0 && n != 1) || (i%2 == 1 && n != 0) {
			return false
		}
	}
	return true
}
