package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
)

// ReconcileOutcome is a reconciler's word on a call whose outcome was
// unknown (table.Reconciliation "outcome"; docs/fork.md, "Reconciling").
type ReconcileOutcome string

const (
	// Applied: the call's effect happened. With a result, the call's
	// record is finished COMPLETED with it and replayed; without one, the
	// call fails CALL_RECONCILED_NO_RESULT.
	Applied ReconcileOutcome = "applied"
	// NotApplied: the call's effect did not happen. Its record is
	// finished FAILED, and the call may be sent again under the same key.
	NotApplied ReconcileOutcome = "not_applied"
)

// Valid reports whether o is Applied or NotApplied.
func (o ReconcileOutcome) Valid() bool { return o == Applied || o == NotApplied }

// MaxReconcileReason bounds a reconciliation's reason, in characters
// (runes): the same bound as a review's reason (docs/fork.md,
// "Reconciling").
const MaxReconcileReason = 1000

// HiddenInReason reports whether r may not stand in a reconciliation's
// reason: a control character other than newline and tab (as a review's
// reason may hold none), or a bidirectional embedding, override,
// isolate or mark (U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), which
// reorder what a person reading the reason sees (the Unicode
// Bidirectional Algorithm, UAX 9) so that "not applied" could show as something else.
func HiddenInReason(r rune) bool {
	switch {
	case r < 0x20:
		return r != '\n' && r != '\t'
	case r == 0x7f || (r >= 0x80 && r <= 0x9f):
		return true
	case r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
		return true
	}
	return false
}

// ErrReconciled is returned by PutReconciliation for a call reconciled
// already: a call is reconciled once (docs/fork.md, "Reconciling").
var ErrReconciled = errors.New("the call was reconciled already")

// Reconciliation is a person's word on a call whose outcome was unknown
// (table.Reconciliation; docs/fork.md, "Reconciling"): Key is the call's
// idempotency key ("<run_id>/<seq>"), Attempts the record's attempt count
// it speaks for, StateBefore the record's state then (UNKNOWN, or
// IN_PROGRESS with its lease passed). Result is the call's result's JSON,
// only with Applied and only when the reconciler gave one: it is never
// logged.
type Reconciliation struct {
	Key          string
	Outcome      ReconcileOutcome
	Result       json.RawMessage
	Reason       string
	ReconciledBy string
	ReconciledAt time.Time
	StateBefore  State
	Attempts     int
}

// reconciliationItem is a reconciliation as stored (table.Reconciliation),
// mapped with attributevalue: a mistyped attribute is an error.
type reconciliationItem struct {
	PK           string `dynamodbav:"pk"`
	SK           string `dynamodbav:"sk"`
	Outcome      string `dynamodbav:"outcome"`
	Result       string `dynamodbav:"result,omitempty"`
	Reason       string `dynamodbav:"reason,omitempty"`
	ReconciledBy string `dynamodbav:"reconciled_by"`
	ReconciledAt string `dynamodbav:"reconciled_at"` // RFC 3339 UTC ms
	StateBefore  string `dynamodbav:"state_before"`
	Attempts     int    `dynamodbav:"attempts"`
	ExpiresAt    int64  `dynamodbav:"expires_at"` // epoch seconds
}

// reconciliationKey is the key of key's reconciliation.
func reconciliationKey(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrPK: str(table.ReconciliationKey(key)), AttrSK: str(table.Reconciliation.SKValue)}
}

// reconciliationProjection reads table.ReconciliationRecorded.
var reconciliationProjection, reconciliationProjectionNames = projectionOf(table.ReconciliationRecorded)

// PutReconciliation records r once, with one PutItem conditional on
// attribute_not_exists(pk), expiring the ledger's retention from now
// (ReconciledAt is set to now when zero). A call reconciled already is
// refused with an error wrapping ErrReconciled, and the reconciliation
// recorded first is returned with it (read by one consistent GetItem);
// nothing is written then. Only review-decision's role may make this
// request (table.Accesses, RecordReconciliations).
func (s *Store) PutReconciliation(ctx context.Context, r Reconciliation) (*Reconciliation, error) {
	if _, _, err := splitKey(r.Key); err != nil {
		return nil, err
	}
	if !r.Outcome.Valid() {
		return nil, fmt.Errorf("reconcile %s: outcome %q is not applied or not_applied", r.Key, r.Outcome)
	}
	if r.Outcome == NotApplied && len(r.Result) > 0 {
		return nil, fmt.Errorf("reconcile %s: a call not applied has no result", r.Key)
	}
	if r.ReconciledAt.IsZero() {
		r.ReconciledAt = s.now()
	}
	item, err := attributevalue.MarshalMap(reconciliationItem{
		PK: table.ReconciliationKey(r.Key), SK: table.Reconciliation.SKValue, Outcome: string(r.Outcome), Result: string(r.Result),
		Reason: r.Reason, ReconciledBy: r.ReconciledBy, ReconciledAt: registeredAt(r.ReconciledAt), StateBefore: string(r.StateBefore),
		Attempts: r.Attempts, ExpiresAt: s.now().Add(s.retention).Unix(),
	})
	if err != nil {
		return nil, fmt.Errorf("encode the reconciliation of %s: %w", r.Key, err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if IsConditionFailed(err) {
		first, rerr := s.Reconciliation(ctx, r.Key)
		if rerr != nil {
			return nil, fmt.Errorf("reconcile %s: %w (and reading it: %v)", r.Key, ErrReconciled, rerr)
		}
		return first, fmt.Errorf("reconcile %s: %w", r.Key, ErrReconciled)
	}
	if err != nil {
		return nil, fmt.Errorf("put the reconciliation of %s: %w", r.Key, err)
	}
	return &r, nil
}

// Reconciliation reads the reconciliation of the call whose idempotency
// key is key, with one consistent GetItem projecting
// table.ReconciliationRecorded; ErrNotFound when there is none. A
// mistyped attribute, an unknown outcome, or a result on a call not
// applied is an error: a dispatcher then applies nothing.
func (s *Store) Reconciliation(ctx context.Context, key string) (*Reconciliation, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: reconciliationKey(key), ConsistentRead: aws.Bool(true),
		ProjectionExpression: reconciliationProjection, ExpressionAttributeNames: reconciliationProjectionNames,
	})
	if err != nil {
		return nil, fmt.Errorf("get the reconciliation of %s: %w", key, err)
	}
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("reconciliation of %s: %w", key, ErrNotFound)
	}
	var it reconciliationItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return nil, fmt.Errorf("reconciliation of %s: %w", key, err)
	}
	r := &Reconciliation{Key: key, Outcome: ReconcileOutcome(it.Outcome), Reason: it.Reason, ReconciledBy: it.ReconciledBy,
		StateBefore: State(it.StateBefore), Attempts: it.Attempts}
	if it.Result != "" {
		r.Result = json.RawMessage(it.Result)
	}
	if r.ReconciledAt, err = time.Parse(time.RFC3339Nano, it.ReconciledAt); err != nil {
		return nil, fmt.Errorf("reconciliation of %s: reconciled_at %q is not RFC 3339", key, it.ReconciledAt)
	}
	switch {
	case !r.Outcome.Valid():
		return nil, fmt.Errorf("reconciliation of %s: outcome %q is not applied or not_applied", key, it.Outcome)
	case r.Outcome == NotApplied && len(r.Result) > 0:
		return nil, fmt.Errorf("reconciliation of %s: a call not applied holds a result", key)
	case len(r.Result) > 0 && !json.Valid(r.Result):
		return nil, fmt.Errorf("reconciliation of %s: its result is not JSON", key)
	}
	return r, nil
}

// ReconcileTarget is what review-decision knows of the call a
// reconciliation names (Store.ReconcileTarget): its state, lease, attempt
// count, tool and toolset, and the approvers of its attempts. Never its
// result.
type ReconcileTarget struct {
	Key        string
	State      State
	LeaseUntil time.Time
	Attempts   int
	Tool       string
	ToolsetID  string
	// Approvers are the approvers of the call's attempts, each once: the
	// one each attempt's claim recorded (an attempt that never ended has
	// no row), then those of their rows.
	Approvers []string
}

// Unknown reports whether the call's outcome is unknown at now: UNKNOWN,
// or IN_PROGRESS with its lease passed. Only such a call may be reconciled
// (docs/fork.md, "Reconciling").
func (t *ReconcileTarget) Unknown(now time.Time) bool {
	return t.State == StateUnknown || (t.State == StateInProgress && !t.LeaseUntil.After(now))
}

// ReconcileTarget reads the call whose idempotency key is key, with one
// consistent GetItem projecting table.ReconcileCallAttributes (never its
// result); ErrNotFound when the key has no record.
func (s *Store) ReconcileTarget(ctx context.Context, key string) (*ReconcileTarget, error) {
	runID, seq, err := splitKey(key)
	if err != nil {
		return nil, err
	}
	proj, names := projectionOf(table.ReconcileCallAttributes)
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: callKey(runID, seq), ConsistentRead: aws.Bool(true),
		ProjectionExpression: proj, ExpressionAttributeNames: names,
	})
	if err != nil {
		return nil, fmt.Errorf("get record %s: %w", key, err)
	}
	if out.Item == nil || (!isCompact(out.Item) && getS(out.Item, "state") == "") {
		return nil, fmt.Errorf("record %s: %w", key, ErrNotFound)
	}
	t := &ReconcileTarget{Key: key}
	var rows []Row
	if isCompact(out.Item) {
		c, _, _, err := decodeCompact(out.Item)
		if err != nil {
			return nil, fmt.Errorf("record %s: %w", key, err)
		}
		t.State, t.LeaseUntil, t.Attempts, t.Tool = c.Call.state(), time.UnixMilli(c.Call.LeaseUntil), len(c.Call.Attempts), c.Call.Tool
		t.ToolsetID = toolsetPrefix + fmt.Sprintf("%x", c.Call.Toolset)
		rows = c.rows(runID, seq)
		for _, a := range c.Call.Attempts {
			// The approver its claim recorded: an attempt that never
			// ended has no row naming it.
			if a.Approver != "" && !slices.Contains(t.Approvers, a.Approver) {
				t.Approvers = append(t.Approvers, a.Approver)
			}
		}
	} else {
		c, err := decodeCall(out.Item)
		if err != nil {
			return nil, fmt.Errorf("record %s: %w", key, err)
		}
		t.State, t.LeaseUntil, t.Attempts, t.Tool, t.ToolsetID = c.State, time.UnixMilli(c.LeaseUntil), c.Attempts, c.Tool, c.ToolsetID
		for _, e := range c.AttemptLog {
			rows = append(rows, c.row(e))
		}
	}
	for _, r := range rows {
		if r.Approver != "" && !slices.Contains(t.Approvers, r.Approver) {
			t.Approvers = append(t.Approvers, r.Approver)
		}
	}
	return t, nil
}

// FinishReconciled finishes the record read as old by its reconciliation
// rc, with one conditional UpdateItem sealed like every record write
// (docs/fork.md, "Reconciling"): Applied with a result → COMPLETED with
// rc.Result (which the caller checked against the pinned output schema);
// NotApplied → FAILED (not applied), keeping the record's error code
// (TOOL_RETRY_REQUIRES_IDEMPOTENCY when it had none), so that a re-claim
// may send the call again under the same key. The item records the
// reconciliation's outcome, reconciler and time (c.rc: o, b, t unix ms);
// its seal covers the state, code and result it leads to, as any
// finish's. The condition is that old is still as read: its state (UNKNOWN,
// or IN_PROGRESS with the lease it had, now passed), its attempt count,
// and no reconciliation finished it before. It reports false when another
// writer changed the record first; nothing is written then.
//
// Applied without a result is refused (the record stays UNKNOWN and the
// call fails CALL_RECONCILED_NO_RESULT at each retry), and so is a
// reconciliation of another attempt than old's last (rc.Attempts), a
// record whose outcome is known, and a record of the previous call layout
// (LayoutNamed), which only runs that started before the compact layout
// hold.
func (s *Store) FinishReconciled(ctx context.Context, old *Record, rc *Reconciliation) (bool, error) {
	now := s.now()
	switch {
	case old.Layout != LayoutCompact:
		return false, fmt.Errorf("finish %s by its reconciliation: a record of the %s layout is not finished so", old.Key, old.Layout)
	case rc == nil || rc.Key != old.Key:
		return false, fmt.Errorf("finish %s by its reconciliation: the reconciliation is another call's", old.Key)
	case rc.Attempts != old.Attempts:
		return false, fmt.Errorf("finish %s by its reconciliation: it speaks for attempt %d, the record is at attempt %d", old.Key, rc.Attempts, old.Attempts)
	case old.State != StateUnknown && !(old.State == StateInProgress && !old.LeaseUntil.After(now)):
		return false, fmt.Errorf("finish %s by its reconciliation: its outcome is not unknown (%s)", old.Key, old.State)
	case rc.Outcome == Applied && len(rc.Result) == 0:
		return false, fmt.Errorf("finish %s by its reconciliation: applied without a result", old.Key)
	case !rc.Outcome.Valid():
		return false, fmt.Errorf("finish %s by its reconciliation: outcome %q", old.Key, rc.Outcome)
	}
	state, code, result := StateCompleted, "", rc.Result
	if rc.Outcome == NotApplied {
		state, code, result = StateFailed, old.ErrorCode, nil
		if code == "" {
			code = string(tool.RetryRequiresIdempotency)
		}
	}
	mac, err := s.sealOf(old, state, code, result)
	if err != nil {
		return false, err
	}
	values := map[string]types.AttributeValue{
		":n": tabledef.N(old.Attempts), ":s": str(string(state)),
		":rc": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"o": str(string(rc.Outcome)), "b": str(rc.ReconciledBy), "t": tabledef.N(rc.ReconciledAt.UnixMilli()),
		}},
	}
	cond := stateIs(old.State, values) + " AND size(c.a)=:n AND attribute_not_exists(c.rc)"
	if old.State == StateInProgress {
		values[":l"] = tabledef.N(old.LeaseUntil.UnixMilli())
		cond += " AND c.l=:l"
	}
	update := "SET c.st=:s,c.rc=:rc"
	if state == StateCompleted {
		update += ",r=:r REMOVE c.x"
		values[":r"] = str(string(result))
	} else {
		update += ",c.x=:x"
		values[":x"] = str(code)
	}
	_, err = s.updateCompact(ctx, callKey(old.RunID, old.Seq), withMAC(update, mac, values), cond, values, types.ReturnValueNone)
	if IsConditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("finish %s by its reconciliation: %w", old.Key, err)
	}
	old.State, old.ErrorCode, old.Result, old.ReconciledBy = state, code, result, rc.ReconciledBy
	return true, nil
}
