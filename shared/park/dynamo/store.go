package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/table"
)

// API is the part of the DynamoDB client the park store uses: the
// ledger's item-level actions, all implemented by dynalite.
type API = tabledef.API

// ErrNotFound is a park that has no item.
var ErrNotFound = errors.New("no such park")

// ErrNotParked is a decision on a park that is no longer PARKED: decided,
// cancelled or timed out already.
var ErrNotParked = errors.New("the park is decided already")

// MaxList bounds one listing (ListByStatus).
const MaxList = 1000

// Store reads and writes park items (table.Park) and reads a call's
// PARKED rows (table.Row) in the ledger table.
type Store struct {
	db    API
	table string
	now   func() time.Time
	// retention keeps a park as long as the ledger's rows
	// (tabledef.DefaultRetention) after its deadline or its decision.
	retention time.Duration
}

// New returns a Store on the named table, reading time from now
// (time.Now when nil).
func New(db API, table string, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, table: table, now: now, retention: tabledef.DefaultRetention}
}

// item is a park's item as Record writes it and the reads map it
// (table.Park), with the SDK's attributevalue: times park.TimeFormat
// strings, the deadline and expires_at epoch seconds. A read with a
// projection leaves the rest zero.
type item struct {
	PK               string   `dynamodbav:"pk"` // table.Park.Key(park id)
	SK               string   `dynamodbav:"sk"` // "PARK"
	RunID            string   `dynamodbav:"run_id"`
	Step             string   `dynamodbav:"step"`
	Seq              string   `dynamodbav:"seq"`
	IdempotencyKey   string   `dynamodbav:"idempotency_key"`
	Tool             string   `dynamodbav:"tool"`
	ToolsetID        string   `dynamodbav:"toolset_id"`
	Cause            string   `dynamodbav:"cause"`
	Gated            bool     `dynamodbav:"gated"`
	PinnedDigest     string   `dynamodbav:"pinned_digest,omitempty"`
	CurrentDigest    string   `dynamodbav:"current_digest,omitempty"`
	ChangedPointers  []string `dynamodbav:"changed_pointers,omitempty"`
	AdditivePointers []string `dynamodbav:"additive_pointers,omitempty"`
	Target           string   `dynamodbav:"park_target,omitempty"`
	Scope            string   `dynamodbav:"park_scope,omitempty"`
	RowSK            string   `dynamodbav:"row_sk"`
	TaskToken        string   `dynamodbav:"task_token,omitempty"`
	Status           string   `dynamodbav:"status"`
	CreatedAt        string   `dynamodbav:"created_at"`
	Deadline         int64    `dynamodbav:"deadline"`
	ListPK           string   `dynamodbav:"park_list_pk"`
	ListSK           string   `dynamodbav:"park_list_sk"`
	ScopeKey         string   `dynamodbav:"park_scope_key,omitempty"`
	DecidedBy        string   `dynamodbav:"decided_by,omitempty"`
	DecidedAt        string   `dynamodbav:"decided_at,omitempty"`
	Reason           string   `dynamodbav:"reason,omitempty"`
	ExpiresAt        int64    `dynamodbav:"expires_at"`
}

// key is the key of park id's item: pk PARK#<id>, sk "PARK".
func key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		table.PK: &types.AttributeValueMemberS{Value: table.Park.Key(id)},
		table.SK: &types.AttributeValueMemberS{Value: table.Park.SKValue},
	}
}

// name is the expression name of a park item's attribute n, one the
// declaration holds (table.Kind.Names panics on another).
func name(n string) expression.NameBuilder { return expression.Name(table.Park.Names(n)[0]) }

// listPK is the parks-by-status partition key of status st: PARKS#<st>.
func listPK(st park.Status) string { return table.ParksByStatus.PKPrefix + string(st) }

// formatTime writes t as park.TimeFormat, in UTC.
func formatTime(t time.Time) string { return t.UTC().Format(park.TimeFormat) }

// parseTime reads a park.TimeFormat time; the zero time when s is empty
// or not one.
func parseTime(s string) time.Time {
	t, err := time.Parse(park.TimeFormat, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// toItem is p's item as Record writes it.
func (s *Store) toItem(p *park.Park) item {
	return item{
		PK: table.Park.Key(p.ID), SK: table.Park.SKValue, RunID: p.RunID, Step: p.Step, Seq: p.Seq, IdempotencyKey: p.IdempotencyKey,
		Tool: p.Tool, ToolsetID: p.ToolsetID, Cause: string(p.Cause), Gated: p.Gated, PinnedDigest: p.PinnedDigest,
		CurrentDigest: p.CurrentDigest, ChangedPointers: p.ChangedPointers, AdditivePointers: p.AdditivePointers, Target: p.Target, Scope: p.Scope, RowSK: p.RowSK,
		TaskToken: p.TaskToken, Status: string(p.Status), CreatedAt: formatTime(p.CreatedAt), Deadline: p.Deadline.Unix(),
		ListPK: listPK(p.Status), ListSK: formatTime(p.CreatedAt) + "#" + p.ID, ScopeKey: p.ScopeKey(),
		ExpiresAt: p.Deadline.Add(s.retention).Unix(),
	}
}

// toPark is the park an item holds.
func (i *item) toPark() *park.Park {
	id, _ := table.Park.ID(i.PK)
	p := &park.Park{
		ID: id, RunID: i.RunID, Step: i.Step, Seq: i.Seq, IdempotencyKey: i.IdempotencyKey, Tool: i.Tool, ToolsetID: i.ToolsetID,
		Cause: park.Cause(i.Cause), Gated: i.Gated, PinnedDigest: i.PinnedDigest, CurrentDigest: i.CurrentDigest,
		Target: i.Target, Scope: i.Scope, RowSK: i.RowSK, TaskToken: i.TaskToken, Status: park.Status(i.Status),
		CreatedAt: parseTime(i.CreatedAt), DecidedBy: i.DecidedBy, DecidedAt: parseTime(i.DecidedAt), Reason: i.Reason,
	}
	if i.Deadline != 0 {
		p.Deadline = time.Unix(i.Deadline, 0).UTC()
	}
	if len(i.ChangedPointers) > 0 {
		p.ChangedPointers = i.ChangedPointers
	}
	if len(i.AdditivePointers) > 0 {
		p.AdditivePointers = i.AdditivePointers
	}
	return p
}

// decode maps an item with the SDK's attributevalue: an attribute its
// field cannot hold is an error, never a zero value.
func decode(it map[string]types.AttributeValue) (*park.Park, error) {
	var i item
	if err := attributevalue.UnmarshalMap(it, &i); err != nil {
		return nil, fmt.Errorf("a park's item: %w", err)
	}
	return i.toPark(), nil
}

// Record stores p, PARKED, created now (UTC, whole ms) with its deadline
// timeoutSeconds later (one conditional PutItem, attribute_not_exists(pk)):
// created true. When the park is there already (a park Task retried for
// the same PARKED row) it is read back (Get), and, while it is PARKED
// under another task token, its token becomes p's (one UpdateItem
// conditional on status PARKED): the latest Task is the one that waits.
// It returns the park as stored. p.ID, RowSK and the call's names must be
// set; Status, CreatedAt and Deadline are set by Record.
func (s *Store) Record(ctx context.Context, p *park.Park, timeoutSeconds int) (created bool, cur *park.Park, err error) {
	if !park.IDPattern.MatchString(p.ID) {
		return false, nil, fmt.Errorf("record park: %q is not a park id", p.ID)
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	p.Status, p.CreatedAt = park.StatusParked, now
	p.Deadline = time.Unix(now.Unix()+int64(timeoutSeconds), 0).UTC()
	it, err := attributevalue.MarshalMap(s.toItem(p))
	if err != nil {
		return false, nil, fmt.Errorf("park %s's item: %w", p.ID, err)
	}
	ex, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name(table.PK))).Build()
	if err != nil {
		return false, nil, fmt.Errorf("record park %s: build the condition: %w", p.ID, err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table), Item: it, ConditionExpression: ex.Condition(),
		ExpressionAttributeNames: ex.Names(), ExpressionAttributeValues: ex.Values(),
	})
	if err == nil {
		return true, p, nil
	}
	if !tabledef.IsConditionFailed(err) {
		return false, nil, fmt.Errorf("put park %s: %w", p.ID, err)
	}
	cur, err = s.Get(ctx, p.ID)
	if err != nil {
		return false, nil, err
	}
	if cur.Status != park.StatusParked || cur.TaskToken == p.TaskToken || p.TaskToken == "" {
		return false, cur, nil
	}
	// SET task_token, only while PARKED.
	u := expression.Set(name("task_token"), expression.Value(p.TaskToken))
	cond := name("status").Equal(expression.Value(park.StatusParked))
	err = s.update(ctx, p.ID, u, cond)
	switch {
	case tabledef.IsConditionFailed(err):
		// Decided meanwhile: the park as it now is.
		cur, err = s.Get(ctx, p.ID)
		return false, cur, err
	case err != nil:
		return false, nil, fmt.Errorf("update park %s's task token: %w", p.ID, err)
	}
	cur.TaskToken = p.TaskToken
	return false, cur, nil
}

// update sends one UpdateItem of u on park id's item on condition cond,
// asking for nothing back.
func (s *Store) update(ctx context.Context, id string, u expression.UpdateBuilder, cond expression.ConditionBuilder) error {
	ex, err := expression.NewBuilder().WithUpdate(u).WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("build the update: %w", err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key(id), UpdateExpression: ex.Update(), ConditionExpression: ex.Condition(),
		ExpressionAttributeNames: ex.Names(), ExpressionAttributeValues: ex.Values(), ReturnValues: types.ReturnValueNone,
	})
	return err
}

// Get reads park id whole, with a consistent read; ErrNotFound when there
// is none.
func (s *Store) Get(ctx context.Context, id string) (*park.Park, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("get park %s: %w", id, err)
	}
	if out.Item == nil {
		return nil, fmt.Errorf("park %s: %w", id, ErrNotFound)
	}
	p, err := decode(out.Item)
	if err != nil {
		return nil, fmt.Errorf("read park %s: %w", id, err)
	}
	return p, nil
}

// Decide moves park id from PARKED to status to (APPROVED, REJECTED,
// RESUMED or CANCELLED: a timeout is TimeOut's), by by, with reason (a rejection's;
// "" writes none), at now: one UpdateItem conditional on status PARKED
// that also moves the park in the parks-by-status listing, removes its
// park_scope_key and keeps it the ledger's retention from now. It
// returns the park as it now is (Get); ErrNotParked, with the park, when
// it was not PARKED (a second decision); ErrNotFound when there is none.
func (s *Store) Decide(ctx context.Context, id string, to park.Status, by, reason string) (*park.Park, error) {
	if !to.Decided() || to == park.StatusTimedOut {
		return nil, fmt.Errorf("decide park %s: %s is not a decision", id, to)
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	u := expression.Set(name("status"), expression.Value(to)).
		Set(name(table.ParksByStatus.PK), expression.Value(listPK(to))).
		Set(name("decided_by"), expression.Value(by)).
		Set(name("decided_at"), expression.Value(formatTime(now))).
		Set(name(table.ExpiresAt), expression.Value(now.Add(s.retention).Unix())).
		Remove(name(table.ParkScopeKey))
	if reason != "" {
		u = u.Set(name("reason"), expression.Value(reason))
	}
	err := s.update(ctx, id, u, name("status").Equal(expression.Value(park.StatusParked)))
	if err != nil && !tabledef.IsConditionFailed(err) {
		return nil, fmt.Errorf("decide park %s: %w", id, err)
	}
	cur, gerr := s.Get(ctx, id)
	if gerr != nil {
		return nil, gerr
	}
	if err != nil {
		// A write applied whose answer was lost and retried by the SDK
		// finds its own decision.
		if cur.Status == to && cur.DecidedBy == by && cur.DecidedAt.Equal(now) {
			return cur, nil
		}
		return cur, fmt.Errorf("decide park %s: %w (%s)", id, ErrNotParked, cur.Status)
	}
	return cur, nil
}

// TimeOut records park p, read PARKED past its deadline, TIMED_OUT: its
// park Task timed out at the deadline, and nothing recorded it then (the
// compiled `<id>-park-timed-out` is a Pass; docs/parking.md, "Timed out").
// One UpdateItem (the access DecideParks) conditional on status PARKED:
// SET status TIMED_OUT, decided_at p's deadline, the parks-by-status
// partition key of TIMED_OUT (listPK), REMOVE park_scope_key. decided_by stays unset (nobody
// decided) and expires_at the ledger's retention after the deadline, as
// Record wrote it. The deadline is checked on p, not in the condition:
// only review-request writes it, once, when it records the park, and
// review-decision's role may not name it (so it cannot move one). It
// returns the park as it now is (Get): TIMED_OUT, or, with ErrNotParked,
// as another request left it (decided first); ErrNotFound when there is
// none. An error, and no request, when p is not past its deadline.
func (s *Store) TimeOut(ctx context.Context, p *park.Park) (*park.Park, error) {
	if now := s.now(); p.Deadline.IsZero() || !p.Expired(now) {
		return nil, fmt.Errorf("time out park %s: its deadline %s has not passed", p.ID, formatTime(p.Deadline))
	}
	u := expression.Set(name("status"), expression.Value(park.StatusTimedOut)).
		Set(name(table.ParksByStatus.PK), expression.Value(listPK(park.StatusTimedOut))).
		Set(name("decided_at"), expression.Value(formatTime(p.Deadline))).
		Remove(name(table.ParkScopeKey))
	err := s.update(ctx, p.ID, u, name("status").Equal(expression.Value(park.StatusParked)))
	if err != nil && !tabledef.IsConditionFailed(err) {
		return nil, fmt.Errorf("time out park %s: %w", p.ID, err)
	}
	cur, gerr := s.Get(ctx, p.ID)
	if gerr != nil {
		return nil, gerr
	}
	if err != nil && cur.Status != park.StatusTimedOut {
		return cur, fmt.Errorf("time out park %s: %w (%s)", p.ID, ErrNotParked, cur.Status)
	}
	return cur, nil
}

// ListByStatus returns the parks of status st, oldest first, through the
// parks-by-status index (eventually consistent; no Scan), with the
// index's projection: no task token, changed pointers, pinned digest or
// reason. keep, when not nil, selects the parks returned; at most MaxList
// of them.
func (s *Store) ListByStatus(ctx context.Context, st park.Status, keep func(*park.Park) bool) ([]*park.Park, error) {
	ix := table.ParksByStatus
	ex, err := expression.NewBuilder().WithKeyCondition(expression.Key(ix.PK).Equal(expression.Value(listPK(st)))).Build()
	if err != nil {
		return nil, fmt.Errorf("list %s parks: build the key condition: %w", st, err)
	}
	var out []*park.Park
	var start map[string]types.AttributeValue
	for {
		res, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(s.table), IndexName: aws.String(ix.Name), KeyConditionExpression: ex.KeyCondition(),
			ExpressionAttributeNames: ex.Names(), ExpressionAttributeValues: ex.Values(), ExclusiveStartKey: start,
		})
		if err != nil {
			return nil, fmt.Errorf("list %s parks: %w", st, err)
		}
		for _, it := range res.Items {
			// Only park items are parks: another kind's item carrying the
			// index's attributes is skipped.
			pk, ok := it[table.PK].(*types.AttributeValueMemberS)
			sk, ok2 := it[table.SK].(*types.AttributeValueMemberS)
			if !ok || !ok2 || sk.Value != table.Park.SKValue {
				continue
			}
			if _, isPark := table.Park.ID(pk.Value); !isPark {
				continue
			}
			p, err := decode(it)
			if err != nil {
				return nil, fmt.Errorf("list %s parks: %w", st, err)
			}
			if keep != nil && !keep(p) {
				continue
			}
			out = append(out, p)
			if len(out) == MaxList {
				return out, nil
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = res.LastEvaluatedKey
	}
}
