package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/toolgate/toolgate/shared/tool"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/table"
)

// State of an idempotency record: a call item's state attribute
// (table.Call). Its values are named State*; a row's Status values,
// named Status*, share three of its strings (IN_PROGRESS, FAILED, UNKNOWN)
// but not their meaning.
type State string

const (
	// StateInProgress: an attempt holds the claim until LeaseUntil.
	StateInProgress State = "IN_PROGRESS"
	// StateCompleted: the call succeeded; Result is returned to every
	// replay.
	StateCompleted State = "COMPLETED"
	// StateFailed: a definite failure (the side effect did not happen); a
	// retry may claim the key again.
	StateFailed State = "FAILED"
	// StateUnknown: the side effect may have happened; an at_most_once tool
	// never runs again for this key, and a person reconciles it.
	StateUnknown State = "UNKNOWN"
)

// Record is the idempotency record of one call (one idempotency key,
// "<run_id>/<seq>"). It lives in the call's item (table.Call: pk
// RUN#<run_id>, sk "CALL#<seq's sort key>"), which also holds the call's
// attempts and counts its invocations (docs/ledger.md, "One item per
// call").
type Record struct {
	Key         string
	RunID       string
	Seq         tool.Seq
	Step        string
	Tool        string
	InputDigest string
	State       State
	// Attempts counts the claims of this key (the first is 1): the ledger's
	// count, never the caller's.
	Attempts   int
	LeaseUntil time.Time
	Result     json.RawMessage // StateCompleted only
	ErrorCode  string          // StateFailed and StateUnknown
	// UpdatedAt is the last write's time in a LayoutNamed record (its
	// updated_at); zero in a compact one, which keeps no such time.
	UpdatedAt time.Time
	// ToolsetID is the toolset the call was made under.
	ToolsetID string
	// InputBytes is the size of the call's input in bytes (its canonical
	// form's); the compact layout keeps it once per call, not per attempt.
	InputBytes int
	// Token identifies the attempt holding the claim: a claim whose
	// response was lost (and retried by the SDK) is recognised as ours, and
	// the attempt's entry in the item is keyed by it.
	Token string
	// StartedAt is when the claiming attempt started (its entry's start).
	StartedAt time.Time
	// ExternalKey is the key sent to third parties for this call
	// (docs/ledger.md, "The external key"). A claim writes the one it is
	// given (externalkey.New) with if_not_exists; read back it is the
	// stored one when the call's first claim wrote it, and Key for a call
	// first claimed before external keys (what it was sent before). A
	// sealing store's seal covers it, so a record whose stored key another
	// writer changed reads as Forged.
	ExternalKey string
	// FirstStartedAt is the earliest start of the call's attempts (its
	// attempt_log entries): when the key's first claim was made. Zero when
	// the item holds no attempt entry. The dispatcher compares it with the
	// execution's start to find a record an earlier execution of the same
	// name left (docs/ledger.md, "Execution names must not be reused").
	FirstStartedAt time.Time
	// Seal is what the reading store found of the item's seal
	// (docs/ledger.md, "Records are sealed by the function that writes
	// them"): seal.Valid, seal.Absent (the previous layout) or
	// seal.Forged. A record read is used (replayed, re-claimed) only once
	// seal.Accept takes it.
	Seal seal.Status
	// Options is the call's options digest: the first 16 bytes of the
	// SHA-256 of the RFC 8785 form of its keep, output_limit_bytes and
	// credential scope (OptionsDigest); nil for a call with none of them,
	// whose item holds none (docs/ledger.md, "The call item on the
	// wire"). The compact claim writes it once with the call; the seal
	// covers it. A fork's call reuses a parent call's result only when
	// the two are equal (docs/fork.md, "Matching").
	Options []byte
	// Approver is, on a claim (Claim) or a re-claim (Reclaim, on the
	// record read), the approver of the approval the claiming attempt runs
	// under ("" for a call no review gates): the compact layout writes it
	// on the attempt's entry with the claim, so that an attempt that never
	// ended (its function crashed, its lease passed) still names who
	// approved it, whom review-decision never lets reconcile the call
	// (ReconcileTarget; docs/fork.md, "Reconciling"). Not read back into
	// a record, and not sealed: it decides nothing the dispatcher does.
	Approver string

	// ReconciledBy is who reconciled the record, when a reconciliation
	// finished it (Store.FinishReconciled; docs/fork.md, "Reconciling"):
	// COMPLETED with the result it gave, or FAILED not applied and perhaps
	// claimed again since. "" for a record no reconciliation finished. The
	// seal does not cover it: it decides nothing; the state and result it
	// led to are sealed.
	ReconciledBy string
	// Layout is the layout of the call's item the record was read from
	// (LayoutCompact for a record a claim of today's code made): the
	// writes that carry it on (Reclaim, MarkUnknown, and Finish and Release
	// through Row.Layout) keep it, and the dispatcher applies the upgrade
	// rule to a LayoutNamed one (docs/ledger.md, "The call item on the
	// wire").
	Layout Layout
}

// NewToken returns a random claim token.
func NewToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// callSK is the sort key of a call's item (table.Call.SKShape):
// table.Call.SKPrefix and seq's SortKey, each component padded to 19
// digits, so that a run's calls sort in call order (a top-level seq's is
// "CALL#<seq, 19 digits>", as before for_each).
func callSK(seq tool.Seq) string { return table.CallSK(seq.SortKey()) }

// callKey is the key of the call's item of runID and seq.
func callKey(runID string, seq tool.Seq) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrPK: str(table.Call.Key(runID)), AttrSK: str(callSK(seq))}
}

// splitKey parses an idempotency key "<run_id>/<seq>" (the run id may hold
// slashes; the seq, a tool.Seq, is after the last).
func splitKey(key string) (string, tool.Seq, error) {
	i := strings.LastIndexByte(key, '/')
	if i < 0 || tool.Seq(key[i+1:]).Valid() != nil {
		return "", "", fmt.Errorf("idempotency key %q is not run_id/seq", key)
	}
	return key[:i], tool.Seq(key[i+1:]), nil
}

// SameCall reports whether other describes the same call as r: the same
// tool, step, seq, input digest and toolset.
func (r *Record) SameCall(other *Record) bool {
	return r.Tool == other.Tool && r.Step == other.Step && r.Seq == other.Seq && r.InputDigest == other.InputDigest && r.ToolsetID == other.ToolsetID
}

// Attempt entries: the call item's "attempt_log" map, keyed by the
// attempt's claim token, holds one entry per claim, so that a claim or a
// finish the SDK sends twice writes the same entry twice, never two.
const attrAttemptLog = "attempt_log"

// Claim takes the call's item for a first attempt, or reads it, in one
// UpdateItem of the compact layout (docs/ledger.md, "The call item on the
// wire"): the call (r's step, tool, toolset, input digest and size,
// r.ExternalKey, required, the lease, and the first attempt's token and
// start, sealed) is set once with if_not_exists, the invocation is counted
// (i + 1, ls), and ReturnValues ALL_NEW answers with the item as it now
// is. The claim is ours when the item holds r.Token as its one attempt (a
// claim whose response was lost and which the SDK sent again finds its
// own token); otherwise the existing record comes back from the same
// answer with claimed false, and a replay of a COMPLETED call needs no
// other request.
//
// The claim's condition refuses an item that exists without the compact
// call: one in the previous layout (LayoutNamed) is then read and counted
// by a second, conditional UpdateItem (Touch's), and its record answered
// with claimed false, never claimed afresh; an item without a record's
// state (a whole-item PutItem of its key alone, which another tool
// function's role may send, wipes the record) gets claimed false and a
// record of that key whose Seal is seal.Forged (and no other field), so
// that the caller refuses the call as it does any record it did not seal
// (docs/ledger.md, "Records are sealed by the function that writes
// them").
func (s *Store) Claim(ctx context.Context, r *Record) (claimed bool, existing *Record, err error) {
	now := s.now()
	if r.Token == "" {
		r.Token = newCompactToken()
		if s.layout == LayoutNamed {
			r.Token = NewToken()
		}
	}
	if r.RunID, r.Seq, err = splitKey(r.Key); err != nil {
		return false, nil, err
	}
	if r.ExternalKey == "" {
		return false, nil, fmt.Errorf("claim %s: no external key", r.Key)
	}
	if r.StartedAt.IsZero() {
		r.StartedAt = now
	}
	if s.layout == LayoutNamed {
		return s.namedClaim(ctx, r, now)
	}
	claimed, existing, done, err := s.compactClaim(ctx, r, now)
	if done || err != nil {
		return claimed, existing, err
	}
	// The item is not a compact call's: a call claimed before the compact
	// layout, read and counted as it is (its record carried on in its
	// layout), or an item without a record's state, which is never claimed
	// afresh (claimCondition): forged.
	existing, err = s.namedTouch(ctx, r.Key, r.RunID, r.Seq)
	if errors.Is(err, ErrNotFound) {
		return false, &Record{Key: r.Key, RunID: r.RunID, Seq: r.Seq, Seal: seal.Forged}, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("claim %s: %w", r.Key, err)
	}
	return false, existing, nil
}

// Record reads a call's record with a consistent read; ErrNotFound when the
// key has none.
func (s *Store) Record(ctx context.Context, key string) (*Record, error) {
	runID, seq, err := splitKey(key)
	if err != nil {
		return nil, err
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: callKey(runID, seq), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("get record %s: %w", key, err)
	}
	if out.Item == nil || (!isCompact(out.Item) && getS(out.Item, "state") == "") {
		return nil, fmt.Errorf("record %s: %w", key, ErrNotFound)
	}
	return s.recordFromItem(key, out.Item)
}

// recordFromItem is the record of key in item it, of either layout, its
// seal checked.
func (s *Store) recordFromItem(key string, it map[string]types.AttributeValue) (*Record, error) {
	if isCompact(it) {
		c, result, _, err := decodeCompact(it)
		if err != nil {
			return nil, fmt.Errorf("record %s: %w", key, err)
		}
		r := c.record(key, result)
		if r == nil {
			return nil, fmt.Errorf("record %s: a call's item holds no attempt", key)
		}
		r.Seal = s.mac.Check(c.Call.MAC, seal.Call, sealFields(r, r.State, r.ErrorCode, r.Result)...)
		return r, nil
	}
	c, err := decodeCall(it)
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", key, err)
	}
	r := c.record(key)
	s.checkSeal(r, c.MAC, c.ExternalKey, c.ExternalKeyToken)
	return r, nil
}

// guard is the condition that the record is still exactly as read: same
// state, same attempts, same lease.
func guard(old *Record) expression.ConditionBuilder {
	return expression.Name("state").Equal(expression.Value(old.State)).
		And(expression.Name("attempts").Equal(expression.Value(old.Attempts))).
		And(expression.Name("lease_until").Equal(expression.Value(old.LeaseUntil.UnixMilli())))
}

// update sends one UpdateItem on key, its expressions built with the SDK's
// expression package (names and values placeholders included).
func (s *Store) update(ctx context.Context, key map[string]types.AttributeValue, u expression.UpdateBuilder, cond *expression.ConditionBuilder, ret types.ReturnValue) (*dynamodb.UpdateItemOutput, error) {
	b := expression.NewBuilder().WithUpdate(u)
	if cond != nil {
		b = b.WithCondition(*cond)
	}
	ex, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("build the update: %w", err)
	}
	return s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key, ReturnValues: ret,
		UpdateExpression: ex.Update(), ConditionExpression: ex.Condition(),
		ExpressionAttributeNames: ex.Names(), ExpressionAttributeValues: ex.Values(),
	})
}

// logEntry is the name of an attempt's entry in a call's attempt_log.
func logEntry(token string) expression.NameBuilder {
	return expression.Name(attrAttemptLog + "." + token)
}

// Reclaim takes over a record read as old (FAILED, UNKNOWN, or IN_PROGRESS
// with an expired lease) for a new attempt, with one conditional
// UpdateItem: IN_PROGRESS, Attempts+1, the new lease, a new token and the
// attempt's entry. It reports false when another attempt changed the
// record first.
func (s *Store) Reclaim(ctx context.Context, old *Record, lease time.Time) (bool, error) {
	if old.Layout == LayoutCompact {
		return s.compactReclaim(ctx, old, lease)
	}
	token := NewToken()
	now := s.now()
	cond := guard(old)
	u := expression.Set(expression.Name("state"), expression.Value(StateInProgress)).
		Set(expression.Name("attempts"), expression.Value(old.Attempts+1)).
		Set(expression.Name("lease_until"), expression.Value(lease.UnixMilli())).
		Set(expression.Name("updated_at"), expression.Value(now.UnixMilli())).
		Set(expression.Name(AttrExpiresAt), expression.Value(s.expires())).
		Set(expression.Name("token"), expression.Value(token)).
		Set(logEntry(token), expression.Value(attemptStart(old.Attempts+1, now))).
		Remove(expression.Name("error_code"))
	next := *old
	next.Attempts, next.Token = old.Attempts+1, token
	if next.FirstStartedAt.IsZero() {
		next.FirstStartedAt = now // the item's only attempt entry is this one
	}
	mac, err := s.sealOf(&next, StateInProgress, "", nil)
	if err != nil {
		return false, err
	}
	if mac != nil {
		u = u.Set(expression.Name(AttrMAC), expression.Value(*mac))
	}
	_, err = s.update(ctx, callKey(old.RunID, old.Seq), u, &cond, types.ReturnValueNone)
	if IsConditionFailed(err) {
		// Our own update may have been applied and its response lost.
		cur, rerr := s.Record(ctx, old.Key)
		if rerr != nil || cur.Token != token {
			return false, nil
		}
	} else if err != nil {
		return false, fmt.Errorf("reclaim %s: %w", old.Key, err)
	}
	old.State, old.Attempts, old.LeaseUntil, old.Token, old.StartedAt, old.FirstStartedAt = StateInProgress, old.Attempts+1, lease, token, now, next.FirstStartedAt
	return true, nil
}

// MarkUnknown sets a record read as old to UNKNOWN, recording code. It
// reports false when another attempt changed the record first.
func (s *Store) MarkUnknown(ctx context.Context, old *Record, code string) (bool, error) {
	if old.Layout == LayoutCompact {
		return s.compactMarkUnknown(ctx, old, code)
	}
	cond := guard(old)
	u := expression.Set(expression.Name("state"), expression.Value(StateUnknown)).
		Set(expression.Name("error_code"), expression.Value(code)).
		Set(expression.Name("updated_at"), expression.Value(s.now().UnixMilli()))
	mac, err := s.sealOf(old, StateUnknown, code, nil)
	if err != nil {
		return false, err
	}
	if mac != nil {
		u = u.Set(expression.Name(AttrMAC), expression.Value(*mac))
	}
	_, err = s.update(ctx, callKey(old.RunID, old.Seq), u, &cond, types.ReturnValueNone)
	if IsConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("mark %s unknown: %w", old.Key, err)
	}
	old.State, old.ErrorCode = StateUnknown, code
	return true, nil
}

// Finish ends the attempt that holds the claim (IN_PROGRESS with this
// token), in one conditional UpdateItem: COMPLETED with result, or FAILED
// or UNKNOWN with row.ErrorCode, and the attempt's entry completed from row
// (its status, times, sizes and digests: the attempt's ToolInvocation row).
//
// When the condition fails, one consistent read tells why: the finish was
// applied and its response lost (the SDK sent it again), and it reports
// true; or the claim was lost (another attempt took over after the lease
// expired): the record is left to that attempt, the attempt's own entry
// still gets its row (a second conditional UpdateItem on that entry only),
// and it reports false. Either way the attempt's row is recorded once.
func (s *Store) Finish(ctx context.Context, key, token string, state State, result json.RawMessage, row *Row) (bool, error) {
	if row.Layout == LayoutCompact {
		return s.compactFinish(ctx, key, token, state, result, row)
	}
	runID, seq, err := splitKey(key)
	if err != nil {
		return false, err
	}
	values := map[string]types.AttributeValue{
		"in_progress": str(string(StateInProgress)), "token": str(token), "state": str(string(state)),
		"now": tabledef.N(s.now().UnixMilli()), "expires": s.expires(), "entry": entryFromRow(row),
	}
	code := row.ErrorCode
	if state == StateCompleted {
		values["result"], code = jsonAttr(result), ""
	} else {
		values["code"], result = str(code), nil
	}
	mac, err := s.sealOf(callOfRow(key, token, row), state, code, result)
	if err != nil {
		return false, err
	}
	if mac != nil {
		values[AttrMAC] = str(*mac)
	}
	t := finishTemplates[finishShape{completed: state == StateCompleted, sealed: mac != nil}]
	_, err = s.db.UpdateItem(ctx, t.input(s.table, callKey(runID, seq), values, map[string]string{"token": token}, types.ReturnValueNone))
	if IsConditionFailed(err) {
		return s.finishFailed(ctx, key, runID, seq, token, row)
	}
	if err != nil {
		return false, fmt.Errorf("finish %s: %w", key, err)
	}
	return true, nil
}

// callOfRow is the call a row of the attempt holding token describes, as
// far as its seal covers it: the row of a call's item carries the key its
// tool sent (Row.ExternalKey), its attempt (Row.Attempt, the record's
// count) and the call's first start (Row.FirstStartedAt; for attempt 1,
// when unset, the row's own start, which its entry holds).
func callOfRow(key, token string, row *Row) *Record {
	first := row.FirstStartedAt
	if first.IsZero() && row.Attempt == 1 {
		first = row.StartedAt
	}
	r := &Record{Key: key, Step: row.Step, Tool: row.Tool, ToolsetID: row.ToolsetID, InputDigest: row.InputDigest, ExternalKey: row.ExternalKey,
		Attempts: row.Attempt, Token: token, FirstStartedAt: first}
	if row.Layout == LayoutCompact {
		r.Options = row.Options // only a compact item holds the options digest
	}
	return r
}

// finishShape tells the finish's four UpdateItems apart.
type finishShape struct{ completed, sealed bool }

// finishTemplates are the finish's UpdateItems by shape.
var finishTemplates = map[finishShape]template{
	{false, false}: finishTemplate(false, false), {true, false}: finishTemplate(true, false),
	{false, true}: finishTemplate(false, true), {true, true}: finishTemplate(true, true),
}

// finishTemplate is the finish's UpdateItem: while the attempt holds the
// claim, its outcome on the record and its row on its entry; with the
// result (completed), or the error code; with the seal (sealed) in the
// same request.
func finishTemplate(completed, sealed bool) template {
	return newTemplate(func() (expression.UpdateBuilder, *expression.ConditionBuilder) {
		cond := expression.Name("state").Equal(expression.Value(slot("in_progress"))).
			And(expression.Name("token").Equal(expression.Value(slot("token"))))
		u := expression.Set(expression.Name("state"), expression.Value(slot("state"))).
			Set(expression.Name("updated_at"), expression.Value(slot("now"))).
			Set(expression.Name(AttrExpiresAt), expression.Value(slot("expires"))).
			Set(logEntry(slot("token")), expression.Value(slot("entry")))
		if completed {
			u = u.Set(expression.Name("result"), expression.Value(slot("result"))).Remove(expression.Name("error_code"))
		} else {
			u = u.Set(expression.Name("error_code"), expression.Value(slot("code")))
		}
		if sealed {
			u = u.Set(expression.Name(AttrMAC), expression.Value(slot(AttrMAC)))
		}
		return u, &cond
	})
}

// finishFailed is Finish after its condition failed.
func (s *Store) finishFailed(ctx context.Context, key, runID string, seq tool.Seq, token string, row *Row) (bool, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: callKey(runID, seq), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return false, fmt.Errorf("read %s after its finish: %w", key, err)
	}
	if log, ok := out.Item[attrAttemptLog].(*types.AttributeValueMemberM); ok {
		if e, ok := log.Value[token].(*types.AttributeValueMemberM); ok && getS(e.Value, "status") != "" {
			if getS(out.Item, "token") != token {
				return false, nil
			}
			// Our finish, applied before: unless another writer changed
			// the record since, it holds our seal.
			if s.Sealed() {
				if r, err := s.recordFromItem(key, out.Item); err != nil || r.Seal != seal.Valid {
					return true, fmt.Errorf("record %s after its finish: %w", key, ErrForged)
				}
			}
			return true, nil
		}
	}
	cond := expression.AttributeExists(logEntry(token))
	_, err = s.update(ctx, callKey(runID, seq), expression.Set(logEntry(token), expression.Value(entryFromRow(row))), &cond, types.ReturnValueNone)
	if err != nil {
		return false, fmt.Errorf("record the row of %s after its claim was lost: %w", key, err)
	}
	return false, nil
}

// Release ends a first claim whose request failed although DynamoDB may
// have applied it (its response lost, or the ledger's deadline reached
// while it was in flight): when the call's item holds this token as an
// IN_PROGRESS first attempt, the record becomes FAILED with code (the
// tool never ran: a retry may claim the key again) and the attempt's
// entry gets row. It reports whether it released anything; a record
// without our claim is left as it is.
func (s *Store) Release(ctx context.Context, key, token, code string, row *Row) (bool, error) {
	if row.Layout == LayoutCompact {
		return s.compactRelease(ctx, key, token, code, row)
	}
	runID, seq, err := splitKey(key)
	if err != nil {
		return false, err
	}
	cond := expression.Name("state").Equal(expression.Value(StateInProgress)).
		And(expression.Name("token").Equal(expression.Value(token))).
		And(expression.Name("attempts").Equal(expression.Value(1)))
	u := expression.Set(expression.Name("state"), expression.Value(StateFailed)).
		Set(expression.Name("error_code"), expression.Value(code)).
		Set(expression.Name("updated_at"), expression.Value(s.now().UnixMilli())).
		Set(logEntry(token), expression.Value(entryFromRow(row)))
	mac, err := s.sealOf(callOfRow(key, token, row), StateFailed, code, nil)
	if err != nil {
		return false, err
	}
	if mac != nil {
		u = u.Set(expression.Name(AttrMAC), expression.Value(*mac))
	}
	_, err = s.update(ctx, callKey(runID, seq), u, &cond, types.ReturnValueNone)
	if IsConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("release %s: %w", key, err)
	}
	return true, nil
}

// Touch counts one more invocation on a call's existing item, of either
// layout, and returns its record, in one conditional UpdateItem (i + 1,
// the TTL renewed; ReturnValues ALL_NEW): the read of a replay that must not claim the key
// (a gated call whose approval has ended). ErrNotFound when the key has no
// record; nothing is written then.
func (s *Store) Touch(ctx context.Context, key string) (*Record, error) {
	runID, seq, err := splitKey(key)
	if err != nil {
		return nil, err
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: callKey(runID, seq),
		UpdateExpression: aws.String(touchUpdate), ConditionExpression: aws.String(touchCondition),
		ExpressionAttributeNames:  map[string]string{"#s": "state"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":e": s.expires(), ":i": tabledef.N(1)},
		ReturnValues:              types.ReturnValueAllNew,
	})
	if IsConditionFailed(err) {
		return nil, fmt.Errorf("record %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("touch record %s: %w", key, err)
	}
	return s.recordFromItem(key, out.Attributes)
}

// namedTouch is Touch on an item of the previous layout (LayoutNamed):
// ErrNotFound when it holds no record's state.
func (s *Store) namedTouch(ctx context.Context, key, runID string, seq tool.Seq) (*Record, error) {
	cond := expression.AttributeExists(expression.Name("state"))
	u := expression.Set(expression.Name("last_seen_at"), expression.Value(s.now().UnixMilli())).
		Add(expression.Name("invocations"), expression.Value(1))
	out, err := s.update(ctx, callKey(runID, seq), u, &cond, types.ReturnValueAllNew)
	if IsConditionFailed(err) {
		return nil, fmt.Errorf("record %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("touch record %s: %w", key, err)
	}
	return s.recordFromItem(key, out.Attributes)
}
