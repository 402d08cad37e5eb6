package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/toolgate/toolgate/shared/seal"
)

// AttrMAC is a call item's seal (table.Call "mac"): seal.Key.Sum of the
// record's fields under the writing function's key (docs/ledger.md,
// "Records are sealed by the function that writes them").
const AttrMAC = "mac"

// WithMAC returns a copy of the store that seals every state it writes on
// a call item with key, in the same request as the state, and checks the
// seal of every record it reads (Record.Seal). A store without a key
// writes the previous layout (no mac attribute), as the code before seals
// did: dispatch.New refuses one.
func (s *Store) WithMAC(key seal.Key) *Store {
	c := *s
	c.mac = key
	return &c
}

// Sealed reports whether the store seals what it writes (WithMAC).
func (s *Store) Sealed() bool { return s.mac.Valid() }

// sealFields are the fields a call's seal covers, in order: the
// idempotency key, step, tool, toolset, input digest, state, error code
// and the SHA-256 of the recorded result (hex; "" without one). The lease,
// token, attempt count and attempt_log are not sealed: they decide who may
// claim, never what is replayed.
func sealFields(key, step, tool, toolsetID, inputDigest string, state State, code string, result json.RawMessage) []string {
	digest := ""
	if len(result) > 0 {
		sum := sha256.Sum256(result)
		digest = hex.EncodeToString(sum[:])
	}
	return []string{key, step, tool, toolsetID, inputDigest, string(state), code, digest}
}

// sealOf is the seal of a state written on the call of r (its key, step,
// tool, toolset and digest); nil when the store has no key.
func (s *Store) sealOf(r *Record, state State, code string, result json.RawMessage) *string {
	if !s.mac.Valid() {
		return nil
	}
	v := s.mac.Sum(seal.Call, sealFields(r.Key, r.Step, r.Tool, r.ToolsetID, r.InputDigest, state, code, result)...)
	return &v
}

// checkSeal sets r.Seal from the item's mac: Valid, Absent or Forged
// (seal.Check; a store without a key finds every seal Forged).
//
// A claim sets mac with if_not_exists, like every claim attribute, so that
// it never changes an existing item's seal; on an item in the previous
// layout, which has none, it adds the claim's own (IN_PROGRESS, no code,
// no result) while the state stays what it was. An item whose state is
// not IN_PROGRESS and whose mac is exactly that claim seal is therefore
// read as Absent, as it was before the claim: the upgrade rule decides
// (seal.Accept). That gives a forger nothing it lacks without it: it could
// remove the mac as well.
func (s *Store) checkSeal(r *Record, mac string) {
	r.Seal = s.mac.Check(mac, seal.Call, sealFields(r.Key, r.Step, r.Tool, r.ToolsetID, r.InputDigest, r.State, r.ErrorCode, r.Result)...)
	if r.Seal == seal.Forged && r.State != StateInProgress && s.mac.Valid() &&
		s.mac.Check(mac, seal.Call, sealFields(r.Key, r.Step, r.Tool, r.ToolsetID, r.InputDigest, StateInProgress, "", nil)...) == seal.Valid {
		r.Seal = seal.Absent
	}
}
