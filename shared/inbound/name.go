package inbound

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
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

// MaxNameChars is the longest source or schedule name: 48 characters, so
// that a session name (SessionPrefixSchedule and the name, 54 at most)
// keeps within STS's RoleSessionName (2 to 64 of [\w+=,.@-]).
const MaxNameChars = 48

// Session name prefixes: inbound-start assumes the inbound-start role as
// "src-<source>" for a source's event and "sched-<schedule>" for a
// schedule's firing, and the start lane admits an origin only from the
// session of its name (docs/identity.md, "Four eyes").
const (
	SessionPrefixSource   = "src-"
	SessionPrefixSchedule = "sched-"
)

// CheckName checks a source's or a schedule's name: 1 to MaxNameChars
// characters of [a-z0-9-], the first a letter or a digit. The name is a
// sort key, a path segment of the receiver's route (POST /in/<source>),
// an EventBridge Scheduler schedule's name (1 to 64 of [0-9a-zA-Z-_.]) and
// part of an STS session name, which every one of those rules admits;
// it holds no "/", which an inbound event's key relies on
// (table.InboundEventPK). The error names the rule, never echoes more
// than the name's length.
func CheckName(name string) error {
	if name == "" || len(name) > MaxNameChars {
		return fmt.Errorf("name must be 1 to %d characters, not %d", MaxNameChars, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0:
		default:
			return fmt.Errorf("name must be characters of [a-z0-9-], the first a letter or a digit (character %d is not)", i+1)
		}
	}
	return nil
}
