package seal

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"
)

// Domain opens every sealed message: the scheme's name and version. A
// change of the encoding takes a new version, so that no message of one
// version reads as another's.
const Domain = "toolgate-ledger-mac/1"

// MinKeyBytes is the shortest key NewKey accepts: 32 bytes, HMAC-SHA256's
// output size (RFC 2104 §3 recommends a key at least as long as the
// hash's output).
const MinKeyBytes = 32

// Kind names what a seal covers, so that a seal of one kind of item never
// verifies another's fields.
type Kind string

// The kinds of sealed items.
const (
	Call    Kind = "call"    // a call item's record (shared/ledger)
	Binding Kind = "binding" // a binding item (shared/review/dynamo)
	// Cover is a cover item: an approved definition change that covers a
	// run's later calls of its tool (shared/ledger covers.go;
	// docs/parking.md, "Approvals that cover later calls").
	Cover Kind = "cover"
	// ReuseClaim is a fork's reuse claim: the fork run, the parent call's
	// sort key and the fork call holding it (shared/ledger reuse.go;
	// docs/fork.md, "The reuse claim").
	ReuseClaim Kind = "reuse-claim"
)

// Key is a function's sealing key. The zero Key seals nothing: Sum panics
// and Check reports every seal forged.
type Key struct{ k []byte }

// ErrShortKey is NewKey's error for a key under MinKeyBytes.
var ErrShortKey = errors.New("seal: the key is shorter than 32 bytes")

// NewKey returns a Key over a copy of b, at least MinKeyBytes long.
func NewKey(b []byte) (Key, error) {
	if len(b) < MinKeyBytes {
		return Key{}, ErrShortKey
	}
	return Key{k: append([]byte(nil), b...)}, nil
}

// Valid reports whether k was made by NewKey.
func (k Key) Valid() bool { return len(k.k) >= MinKeyBytes }

// Sum returns the seal of fields under kind: base64 (standard, padded) of
// HMAC-SHA256 over Domain, kind and each field, each preceded by its
// length as 4 bytes big-endian, so that no two field lists share an
// encoding. It panics on the zero Key (a programming error: dispatch.New
// refuses a store without a key).
func (k Key) Sum(kind Kind, fields ...string) string {
	if !k.Valid() {
		panic("seal: Sum with the zero key")
	}
	// The message is built in one buffer and written once: each field's
	// own write cost a conversion and an allocation, on every call's
	// claim and finish.
	size := 4*(2+len(fields)) + len(Domain) + len(kind)
	for _, f := range fields {
		size += len(f)
	}
	msg := make([]byte, 0, size)
	msg = appendField(msg, Domain)
	msg = appendField(msg, string(kind))
	for _, f := range fields {
		msg = appendField(msg, f)
	}
	m := hmac.New(sha256.New, k.k)
	m.Write(msg)
	var sum [sha256.Size]byte
	return base64.StdEncoding.EncodeToString(m.Sum(sum[:0]))
}

// appendField appends f's length as 4 bytes big-endian, then f.
func appendField(msg []byte, f string) []byte {
	return append(binary.BigEndian.AppendUint32(msg, uint32(len(f))), f...)
}

// Status is what Check found.
type Status int

const (
	// Forged: the item has a seal that is not the key's over its fields (or
	// the key is the zero Key): another writer made or changed it.
	Forged Status = iota
	// Valid: the item's seal is the key's over its fields.
	Valid
	// Absent: the item has no seal; it was written before seals, or forged
	// to look so (Accept decides).
	Absent
)

// String is the status as docs/ledger.md names it.
func (s Status) String() string {
	switch s {
	case Valid:
		return "valid"
	case Absent:
		return "absent"
	}
	return "forged"
}

// Check compares an item's seal (its "mac" attribute; "" when the item
// has none) with the key's over fields, in constant time.
func (k Key) Check(mac string, kind Kind, fields ...string) Status {
	if mac == "" {
		return Absent
	}
	if !k.Valid() {
		return Forged
	}
	if hmac.Equal([]byte(mac), []byte(k.Sum(kind, fields...))) {
		return Valid
	}
	return Forged
}

// Reason words for a refused item, as ToolInvocation rows carry them
// (ledger.Row.Reason) and logs print them.
const (
	ReasonRecordForged  = "record-forged"
	ReasonBindingForged = "binding-forged"
	// ReasonReuseClaimForged is the log's word (never a row's) for a
	// fork's call that met a reuse claim, held by another key, whose seal
	// is not the function's (docs/fork.md, "The reuse claim").
	ReasonReuseClaimForged = "reuse-claim-forged"
)

// Accept applies the upgrade rule (docs/ledger.md, "Records are sealed by
// the function that writes them") to a seal's status: a Valid item is
// accepted; a Forged one never; an Absent one only for a run that started
// (runStart, the envelope's run_started_at, known reports whether the
// envelope has one) before since, the stage's first deploy with seals
// (secrets.Ledger.Since). A call without a run start (the direct lane, or
// a definition published before run_started_at) accepts no unsealed item:
// nothing dates it before the upgrade.
func Accept(s Status, runStart time.Time, known bool, since time.Time) bool {
	switch s {
	case Valid:
		return true
	case Absent:
		return known && !since.IsZero() && runStart.Before(since)
	}
	return false
}
