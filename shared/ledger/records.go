package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// State of an idempotency record.
type State string

const (
	// InProgress: an attempt holds the claim until LeaseUntil.
	InProgress State = "IN_PROGRESS"
	// Completed: the call succeeded; Result is returned to every replay.
	Completed State = "COMPLETED"
	// Failed: a definite failure (the side effect did not happen); a retry
	// may claim the key again.
	Failed State = "FAILED"
	// Unknown: the side effect may have happened; an at_most_once tool never
	// runs again for this key, and a person reconciles it.
	Unknown State = "UNKNOWN"
)

// Record is the idempotency record of one key: pk "KEY#<key>", sk "RECORD".
type Record struct {
	Key         string
	RunID       string
	Seq         int64
	Step        string
	Tool        string
	InputDigest string
	State       State
	// Attempts counts the claims of this key (the first is 1): the ledger's
	// count, never the caller's.
	Attempts   int
	LeaseUntil time.Time
	Result     json.RawMessage // Completed only
	ErrorCode  string          // Failed and Unknown
	UpdatedAt  time.Time
	// ToolsetID is the toolset the call was made under.
	ToolsetID string
	// Token identifies the attempt holding the claim: a claim whose
	// response was lost (and retried by the SDK) is recognised as ours.
	Token string
}

// NewToken returns a random claim token.
func NewToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

const recordSK = "RECORD"

func recordKey(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrPK: str("KEY#" + key), AttrSK: str(recordSK)}
}

// SameCall reports whether other describes the same call as r: the same
// tool, step, seq, input digest and toolset.
func (r *Record) SameCall(other *Record) bool {
	return r.Tool == other.Tool && r.Step == other.Step && r.Seq == other.Seq && r.InputDigest == other.InputDigest && r.ToolsetID == other.ToolsetID
}

// Claim creates the record of a key that has none, as IN_PROGRESS with
// Attempts 1, the given lease and r.Token (one conditional PutItem). When
// the key already has a record, it reads it back with a consistent GetItem
// and returns it with claimed false, unless the record holds r.Token: then
// this very claim was applied and its response lost, and it is claimed.
func (s *Store) Claim(ctx context.Context, r *Record) (claimed bool, existing *Record, err error) {
	now := s.now()
	if r.Token == "" {
		r.Token = NewToken()
	}
	item := recordKey(r.Key)
	item["toolset_id"] = str(r.ToolsetID)
	item["token"] = str(r.Token)
	item["run_id"] = str(r.RunID)
	item["seq"] = num(r.Seq)
	item["step"] = str(r.Step)
	item["tool"] = str(r.Tool)
	item["input_digest"] = str(r.InputDigest)
	item["state"] = str(string(InProgress))
	item["attempts"] = num(1)
	item["lease_until"] = num(r.LeaseUntil.UnixMilli())
	item["updated_at"] = num(now.UnixMilli())
	item[AttrExpiresAt] = s.expires()
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if err == nil {
		r.State, r.Attempts, r.UpdatedAt = InProgress, 1, now
		return true, nil, nil
	}
	if !IsConditionFailed(err) {
		return false, nil, fmt.Errorf("claim %s: %w", r.Key, err)
	}
	existing, err = s.Record(ctx, r.Key)
	if err != nil {
		return false, nil, err
	}
	if existing.Token == r.Token && existing.State == InProgress && existing.Attempts == 1 {
		r.State, r.Attempts, r.UpdatedAt = InProgress, 1, now
		return true, nil, nil
	}
	return false, existing, nil
}

// Record reads a key's record with a consistent read; ErrNotFound when the
// key has none.
func (s *Store) Record(ctx context.Context, key string) (*Record, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: recordKey(key), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("get record %s: %w", key, err)
	}
	if out.Item == nil {
		return nil, fmt.Errorf("record %s: %w", key, ErrNotFound)
	}
	it := out.Item
	r := &Record{
		Key:         key,
		RunID:       getS(it, "run_id"),
		Seq:         getN(it, "seq"),
		Step:        getS(it, "step"),
		Tool:        getS(it, "tool"),
		InputDigest: getS(it, "input_digest"),
		State:       State(getS(it, "state")),
		Attempts:    int(getN(it, "attempts")),
		LeaseUntil:  time.UnixMilli(getN(it, "lease_until")),
		ErrorCode:   getS(it, "error_code"),
		UpdatedAt:   time.UnixMilli(getN(it, "updated_at")),
		ToolsetID:   getS(it, "toolset_id"),
		Token:       getS(it, "token"),
	}
	if res := getS(it, "result"); res != "" {
		r.Result = json.RawMessage(res)
	}
	return r, nil
}

// guard is the condition that the record is still exactly as read: same
// state, same attempts, same lease.
func guard(old *Record) (string, map[string]types.AttributeValue) {
	return "#state = :old_state AND attempts = :old_attempts AND lease_until = :old_lease", map[string]types.AttributeValue{
		":old_state":    str(string(old.State)),
		":old_attempts": num(old.Attempts),
		":old_lease":    num(old.LeaseUntil.UnixMilli()),
	}
}

// Reclaim takes over a record read as old (FAILED, UNKNOWN, or IN_PROGRESS
// with an expired lease) for a new attempt: IN_PROGRESS, Attempts+1, the new
// lease. It reports false when another attempt changed the record first.
func (s *Store) Reclaim(ctx context.Context, old *Record, lease time.Time) (bool, error) {
	token := NewToken()
	cond, vals := guard(old)
	vals[":token"] = str(token)
	vals[":in_progress"] = str(string(InProgress))
	vals[":attempts"] = num(old.Attempts + 1)
	vals[":lease"] = num(lease.UnixMilli())
	vals[":now"] = num(s.now().UnixMilli())
	vals[":expires"] = s.expires()
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       recordKey(old.Key),
		ConditionExpression:       aws.String(cond),
		UpdateExpression:          aws.String("SET #state = :in_progress, attempts = :attempts, lease_until = :lease, updated_at = :now, expires_at = :expires, #token = :token REMOVE error_code"),
		ExpressionAttributeNames:  map[string]string{"#state": "state", "#token": "token"},
		ExpressionAttributeValues: vals,
	})
	if IsConditionFailed(err) {
		// Our own update may have been applied and its response lost.
		cur, rerr := s.Record(ctx, old.Key)
		if rerr != nil || cur.Token != token {
			return false, nil
		}
	} else if err != nil {
		return false, fmt.Errorf("reclaim %s: %w", old.Key, err)
	}
	old.State, old.Attempts, old.LeaseUntil, old.Token = InProgress, old.Attempts+1, lease, token
	return true, nil
}

// MarkUnknown sets a record read as old to UNKNOWN, recording code. It
// reports false when another attempt changed the record first.
func (s *Store) MarkUnknown(ctx context.Context, old *Record, code string) (bool, error) {
	cond, vals := guard(old)
	vals[":unknown"] = str(string(Unknown))
	vals[":code"] = str(code)
	vals[":now"] = num(s.now().UnixMilli())
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       recordKey(old.Key),
		ConditionExpression:       aws.String(cond),
		UpdateExpression:          aws.String("SET #state = :unknown, error_code = :code, updated_at = :now"),
		ExpressionAttributeNames:  map[string]string{"#state": "state"},
		ExpressionAttributeValues: vals,
	})
	if IsConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("mark %s unknown: %w", old.Key, err)
	}
	old.State, old.ErrorCode = Unknown, code
	return true, nil
}

// Finish ends the attempt that holds the claim (IN_PROGRESS with this
// attempt number): COMPLETED with result, or FAILED or UNKNOWN with code.
// It reports false when the claim was lost (another attempt took over after
// the lease expired); the record is then left to that attempt.
func (s *Store) Finish(ctx context.Context, key string, attempt int, state State, result json.RawMessage, code string) (bool, error) {
	vals := map[string]types.AttributeValue{
		":in_progress": str(string(InProgress)),
		":attempt":     num(attempt),
		":state":       str(string(state)),
		":now":         num(s.now().UnixMilli()),
		":expires":     s.expires(),
	}
	update := "SET #state = :state, updated_at = :now, expires_at = :expires"
	if state == Completed {
		update += ", #result = :result REMOVE error_code"
		vals[":result"] = jsonAttr(result)
	} else {
		update += ", error_code = :code"
		vals[":code"] = str(code)
	}
	names := map[string]string{"#state": "state"}
	if state == Completed {
		names["#result"] = "result"
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       recordKey(key),
		ConditionExpression:       aws.String("#state = :in_progress AND attempts = :attempt"),
		UpdateExpression:          aws.String(update),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals,
	})
	if IsConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("finish %s: %w", key, err)
	}
	return true, nil
}
