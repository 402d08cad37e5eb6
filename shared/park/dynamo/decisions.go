package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/table"
)

// DecisionAPI is the part of the DynamoDB client Decisions uses.
type DecisionAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// MaxList bounds one listing of parks.
const MaxList = 1000

// Decisions is review-decision's side of the parked-call items (table.Park;
// docs/parking.md, "Deciding"): it reads a park, lists parks by status
// (parks-by-status) and records a decision with one conditional
// UpdateItem, and reads the review id of the PARKED row a park came from.
// Its requests are the accesses table.Accesses declares for review-decision.
type Decisions struct {
	db    DecisionAPI
	table string
	now   func() time.Time
}

// NewDecisions returns the Decisions of the named table.
func NewDecisions(db DecisionAPI, tableName string) *Decisions {
	return &Decisions{db: db, table: tableName, now: time.Now}
}

// WithClock returns a copy that reads time from now (tests).
func (d *Decisions) WithClock(now func() time.Time) *Decisions {
	c := *d
	c.now = now
	return &c
}

// Now is the store's clock.
func (d *Decisions) Now() time.Time { return d.now() }

// parkItem is a park item's attributes as review-decision reads them.
type parkItem struct {
	PK              string   `dynamodbav:"pk"`
	RunID           string   `dynamodbav:"run_id"`
	Step            string   `dynamodbav:"step"`
	Seq             string   `dynamodbav:"seq"`
	IdempotencyKey  string   `dynamodbav:"idempotency_key"`
	Tool            string   `dynamodbav:"tool"`
	ToolsetID       string   `dynamodbav:"toolset_id"`
	Cause           string   `dynamodbav:"cause"`
	Gated           bool     `dynamodbav:"gated"`
	PinnedDigest    string   `dynamodbav:"pinned_digest"`
	CurrentDigest   string   `dynamodbav:"current_digest"`
	ChangedPointers []string `dynamodbav:"changed_pointers"`
	Target          string   `dynamodbav:"park_target"`
	Scope           string   `dynamodbav:"park_scope"`
	RowSK           string   `dynamodbav:"row_sk"`
	TaskToken       string   `dynamodbav:"task_token"`
	Status          string   `dynamodbav:"status"`
	CreatedAt       string   `dynamodbav:"created_at"`
	Deadline        int64    `dynamodbav:"deadline"`
	DecidedBy       string   `dynamodbav:"decided_by"`
	DecidedAt       string   `dynamodbav:"decided_at"`
	Reason          string   `dynamodbav:"reason"`
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func decodePark(raw map[string]types.AttributeValue) (*park.Record, error) {
	var it parkItem
	if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
		return nil, err
	}
	id, ok := table.Park.ID(it.PK)
	if !ok || !park.IDPattern.MatchString(id) {
		return nil, fmt.Errorf("item %q is not a park", it.PK)
	}
	r := &park.Record{ID: id, RunID: it.RunID, Step: it.Step, Seq: it.Seq, IdempotencyKey: it.IdempotencyKey, Tool: it.Tool,
		ToolsetID: it.ToolsetID, Cause: park.Cause(it.Cause), Gated: it.Gated, PinnedDigest: it.PinnedDigest,
		CurrentDigest: it.CurrentDigest, ChangedPointers: it.ChangedPointers, Target: it.Target, Scope: it.Scope,
		RowSK: it.RowSK, TaskToken: it.TaskToken, Status: park.Status(it.Status), CreatedAt: parseTime(it.CreatedAt),
		DecidedBy: it.DecidedBy, DecidedAt: parseTime(it.DecidedAt), Reason: it.Reason}
	if it.Deadline > 0 {
		r.Deadline = time.Unix(it.Deadline, 0).UTC()
	}
	return r, nil
}

func parkKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		table.PK: &types.AttributeValueMemberS{Value: table.Park.Key(id)},
		table.SK: &types.AttributeValueMemberS{Value: table.Park.SKValue},
	}
}

// parkName is the expression name of a declared park attribute (Names
// panics on another: a programming error every test finds).
func parkName(n string) expression.NameBuilder { return expression.Name(table.Park.Names(n)[0]) }

// Get reads park id (consistent read), or park.ErrNotFound.
func (d *Decisions) Get(ctx context.Context, id string) (*park.Record, error) {
	out, err := d.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.table), Key: parkKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("get park %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return nil, park.ErrNotFound
	}
	r, err := decodePark(out.Item)
	if err != nil {
		return nil, fmt.Errorf("get park %s: %w", id, err)
	}
	return r, nil
}

// ListPK is parks-by-status's partition key of status st: "PARKS#<st>".
func ListPK(st park.Status) string { return table.ParksByStatus.PKPrefix + string(st) }

// List returns the parks of status st, oldest first, that keep admits (nil
// keeps all), at most MaxList: a Query of parks-by-status, whose
// projection holds no task token. Items of other kinds are skipped.
func (d *Decisions) List(ctx context.Context, st park.Status, keep func(*park.Record) bool) ([]*park.Record, error) {
	ix := table.ParksByStatus
	ex, err := expression.NewBuilder().WithKeyCondition(expression.Key(ix.PK).Equal(expression.Value(ListPK(st)))).Build()
	if err != nil {
		return nil, fmt.Errorf("list %s parks: build the key condition: %w", st, err)
	}
	var out []*park.Record
	var start map[string]types.AttributeValue
	for {
		res, err := d.db.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(d.table), IndexName: aws.String(ix.Name), KeyConditionExpression: ex.KeyCondition(),
			ExpressionAttributeNames: ex.Names(), ExpressionAttributeValues: ex.Values(), ExclusiveStartKey: start,
		})
		if err != nil {
			return nil, fmt.Errorf("list %s parks: %w", st, err)
		}
		for _, it := range res.Items {
			pk, _ := it[table.PK].(*types.AttributeValueMemberS)
			if pk == nil || !strings.HasPrefix(pk.Value, table.Park.Prefix) {
				continue
			}
			r, err := decodePark(it)
			if err != nil {
				continue // not a park item of this layout: never listed
			}
			if keep != nil && !keep(r) {
				continue
			}
			out = append(out, r)
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

// Decide records by's decision on park r: status PARKED → to (APPROVED,
// REJECTED, RESUMED or CANCELLED), with decided_by, decided_at and the
// reason (none: no reason attribute), parks-by-status moved to the new
// status and the credential's parks-by-scope key removed, on condition
// that the park is still PARKED and its deadline has not passed. applied
// false with the park as it is now when the condition failed (decided
// already, or expired); park.ErrNotFound when it is gone.
func (d *Decisions) Decide(ctx context.Context, r *park.Record, to park.Status, by, reason string) (bool, *park.Record, error) {
	now := d.now().UTC()
	at := now.Format(park.TimeFormat)
	u := expression.Set(parkName("status"), expression.Value(string(to))).
		Set(parkName("decided_by"), expression.Value(by)).
		Set(parkName("decided_at"), expression.Value(at)).
		Set(parkName(table.ParksByStatus.PK), expression.Value(ListPK(to))).
		Remove(parkName(table.ParksByScope.PK))
	if reason != "" {
		u = u.Set(parkName("reason"), expression.Value(reason))
	}
	cond := expression.AttributeExists(expression.Name(table.PK)).
		And(expression.Equal(parkName("status"), expression.Value(string(park.StatusParked)))).
		And(expression.GreaterThan(parkName("deadline"), expression.Value(now.Unix())))
	ex, err := expression.NewBuilder().WithUpdate(u).WithCondition(cond).Build()
	if err != nil {
		return false, nil, fmt.Errorf("decide park %s: build the update: %w", r.ID, err)
	}
	_, err = d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(d.table), Key: parkKey(r.ID), UpdateExpression: ex.Update(), ConditionExpression: ex.Condition(),
		ExpressionAttributeNames: ex.Names(), ExpressionAttributeValues: ex.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		if len(failed.Item) == 0 {
			return false, nil, park.ErrNotFound
		}
		cur, derr := decodePark(failed.Item)
		if derr != nil {
			return false, nil, fmt.Errorf("decide park %s: %w", r.ID, derr)
		}
		return false, cur, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("decide park %s: %w", r.ID, err)
	}
	c := *r
	c.Status, c.DecidedBy, c.DecidedAt, c.Reason = to, by, now, reason
	return true, &c, nil
}

// RowReview returns the review id the PARKED row of park r recorded (the
// approval a gated call carried when it parked; "" when it names none):
// one GetItem of the row (pk "RUN#<run_id>", sk r.RowSK) projecting
// review_id only. park.ErrNotFound when the row is gone.
func (d *Decisions) RowReview(ctx context.Context, r *park.Record) (string, error) {
	ex, err := expression.NewBuilder().WithProjection(expression.NamesList(expression.Name(table.Row.Names("review_id")[0]))).Build()
	if err != nil {
		return "", err
	}
	out, err := d.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			table.PK: &types.AttributeValueMemberS{Value: table.Row.Prefix + r.RunID},
			table.SK: &types.AttributeValueMemberS{Value: r.RowSK},
		},
		ProjectionExpression: ex.Projection(), ExpressionAttributeNames: ex.Names()})
	if err != nil {
		return "", fmt.Errorf("read the parked row of park %s: %w", r.ID, err)
	}
	if len(out.Item) == 0 {
		return "", park.ErrNotFound
	}
	var it struct {
		ReviewID string `dynamodbav:"review_id"`
	}
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return "", fmt.Errorf("read the parked row of park %s: %w", r.ID, err)
	}
	return it.ReviewID, nil
}

// Starter returns the recorded starter of the run runID (its start
// record; a workflow step's child holds its parent's): one consistent
// GetItem projecting starter only. "" when the run has no start record.
func (d *Decisions) Starter(ctx context.Context, runID string) (string, error) {
	ex, err := expression.NewBuilder().WithProjection(expression.NamesList(expression.Name(table.Start.Names("starter")[0]))).Build()
	if err != nil {
		return "", err
	}
	out, err := d.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			table.PK: &types.AttributeValueMemberS{Value: table.Start.Key(runID)},
			table.SK: &types.AttributeValueMemberS{Value: table.Start.SKValue},
		},
		ProjectionExpression: ex.Projection(), ExpressionAttributeNames: ex.Names()})
	if err != nil {
		return "", fmt.Errorf("read the start record of %s: %w", runID, err)
	}
	var it struct {
		Starter string `dynamodbav:"starter"`
	}
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return "", fmt.Errorf("read the start record of %s: %w", runID, err)
	}
	return it.Starter, nil
}
