package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

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
// idempotency key, step, tool, toolset, input digest, the call's external
// key (Record.ExternalKey: the key its tool sends to third parties, the
// readable idempotency key for a call claimed before external keys),
// state, error code, the SHA-256 of the recorded result (hex; "" without
// one), the attempt count and the claim token of the attempt that wrote
// the state (Record.Attempts, Record.Token), and the first attempt's start
// (Record.FirstStartedAt, RFC 3339 with ns in UTC; "" when zero, and ""
// in the claim's own seal, IN_PROGRESS at attempt 1: see checkSeal). So a
// state sealed once cannot be spliced onto a later attempt, and the start
// the name-reuse check reads cannot be moved. The lease, attempt_log
// (but its first start) and external_key_token are not sealed: they
// decide who may claim, never what is replayed or sent; a change to them
// that changes the key a call sends changes Record.ExternalKey, which the
// seal covers (docs/ledger.md, "Records are sealed by the function that
// writes them").
func sealFields(r *Record, state State, code string, result json.RawMessage) []string {
	digest := ""
	if len(result) > 0 {
		sum := sha256.Sum256(result)
		digest = hex.EncodeToString(sum[:])
	}
	first := ""
	if !r.FirstStartedAt.IsZero() && !(state == StateInProgress && r.Attempts == 1) {
		first = formatNano(r.FirstStartedAt)
	}
	fields := []string{r.Key, r.Step, r.Tool, r.ToolsetID, r.InputDigest, r.ExternalKey, string(state), code, digest,
		strconv.Itoa(r.Attempts), r.Token, first}
	if len(r.Options) > 0 {
		fields = append(fields, hex.EncodeToString(r.Options))
	}
	return fields
}

// sealOf is the seal of a state written on the call of r (its key, step,
// tool, toolset, digest, external key, attempts, token and first start);
// nil when the store has no key. A sealing store refuses a call without
// an external key: every call it seals has one (the stored one, or the
// readable key of a call claimed before external keys), and a seal over
// none would be refused on read.
func (s *Store) sealOf(r *Record, state State, code string, result json.RawMessage) (*string, error) {
	if !s.mac.Valid() {
		return nil, nil
	}
	if r.ExternalKey == "" {
		return nil, fmt.Errorf("seal %s: no external key", r.Key)
	}
	v := s.mac.Sum(seal.Call, sealFields(r, state, code, result)...)
	return &v, nil
}

// checkSeal sets r.Seal from the item's mac: Valid, Absent or Forged
// (seal.Check; a store without a key finds every seal Forged). stored and
// storedToken are the item's external_key and external_key_token
// attributes ("" when absent).
//
// A claim sets mac with if_not_exists, like every claim attribute, so that
// it never changes an existing item's seal; on an item in the previous
// layout, which has none, it adds the claim's own (IN_PROGRESS, no code,
// no result, over the external key it stored as well) while the state
// stays what it was and the call keeps its readable key (the claim is not
// the call's attempt 1). That claim seal covers attempt 1, the claim's
// token (which the claim also wrote as external_key_token) and no first
// start: the claim's attempt entry is not written on such an item (the
// attempt_log is set with if_not_exists too), so its start is nowhere to
// be read again; which is why every claim's seal leaves the first start
// out, and every later write (finish, release, reclaim, UNKNOWN) covers
// it. A record whose seal does not verify but whose mac
// is exactly that claim seal is therefore read as Absent, as it was before
// the claim: the upgrade rule decides (seal.Accept). That gives a forger
// nothing it lacks without it: it could remove the mac and the external
// key as well.
func (s *Store) checkSeal(r *Record, mac, stored, storedToken string) {
	r.Seal = s.mac.Check(mac, seal.Call, sealFields(r, r.State, r.ErrorCode, r.Result)...)
	if r.Seal != seal.Forged || !s.mac.Valid() {
		return
	}
	claim := &Record{Key: r.Key, Step: r.Step, Tool: r.Tool, ToolsetID: r.ToolsetID, InputDigest: r.InputDigest,
		ExternalKey: stored, Attempts: 1, Token: storedToken}
	if s.mac.Check(mac, seal.Call, sealFields(claim, StateInProgress, "", nil)...) == seal.Valid {
		r.Seal = seal.Absent
	}
}
