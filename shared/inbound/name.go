package inbound

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// Prefixes of ExecutionName.
const (
	// PrefixInbound names a run an inbound event starts: ExecutionName of
	// (source, event id).
	PrefixInbound = "in-"
	// PrefixSchedule names a run a schedule's firing starts: ExecutionName
	// of (schedule, scheduled time).
	PrefixSchedule = "sc-"
)

// Execution name bounds (Step Functions StartExecution, "name": 1 to 80
// characters; toolgate keeps to [0-9A-Za-z_-], which CloudWatch Logs also
// accepts).
const (
	MaxExecutionNameChars = 80
	executionDigestChars  = 32
	// MaxPrefixChars leaves room for the digest.
	MaxPrefixChars = MaxExecutionNameChars - executionDigestChars
)

// ExecutionName returns prefix and 32 lower-case hex characters (128 bits)
// of HMAC-SHA256 under key, a per-deployment secret, over the length-
// prefixed a and b (each an 8-byte big-endian length, then its bytes), so
// ("ab", "c") and ("a", "bc") differ. The same inputs give the same name:
// a duplicate event's start finds ExecutionAlreadyExists. Without the key
// the name cannot be guessed, so no one can take it first.
//
// It panics on an empty key or a prefix that is not 0 to MaxPrefixChars
// characters of [0-9A-Za-z_-]: both are the deployment's own constants,
// checked when the function starts.
func ExecutionName(key []byte, prefix, a, b string) string {
	if len(key) == 0 {
		panic("inbound.ExecutionName: empty key")
	}
	if !validPrefix(prefix) {
		panic("inbound.ExecutionName: prefix is not 0 to 48 characters of [0-9A-Za-z_-]")
	}
	m := hmac.New(sha256.New, key)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(a)))
	m.Write(n[:])
	m.Write([]byte(a))
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	m.Write(n[:])
	m.Write([]byte(b))
	return prefix + hex.EncodeToString(m.Sum(nil)[:executionDigestChars/2])
}

func validPrefix(p string) bool {
	if len(p) > MaxPrefixChars {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
