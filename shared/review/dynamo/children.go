package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
)

// Child pointers (table.ChildPointer) record, in a run's start partition,
// each child run its workflow steps started: pk START#<run's execution
// ARN>, sk CHILD#<step id>#<loop index path>#<seq's sort key>. A fork of
// the run reads them to fork its own children from the run's (docs/fork.md,
// "Child runs").

// ErrLaterChild is RecordChildPointer's answer when the run's pointer for
// the step and seq names a later attempt's child, or another child of the
// same attempt: the pointer is never moved back.
var ErrLaterChild = errors.New("the run's child pointer for that step and seq names a later attempt's child")

// childPointerItem is a child pointer item (table.ChildPointer; access
// RecordChildPointers).
type childPointerItem struct {
	PK         string `dynamodbav:"pk"` // START#<run's execution ARN>
	SK         string `dynamodbav:"sk"` // CHILD#<step id>#<loop index path>#<seq's sort key>
	ChildRunID string `dynamodbav:"child_run_id"`
	Attempt    int    `dynamodbav:"child_attempt"`
	// ExpiresAt is the item's TTL, epoch seconds: StartRetention after it
	// was recorded, as the run's start record.
	ExpiresAt int64 `dynamodbav:"expires_at,omitempty"`
}

// pointerAttr is the expression name of a child pointer's attribute n.
func pointerAttr(n string) expression.NameBuilder { return attr(table.ChildPointer, n) }

// RecordChildPointer records that runID's workflow step p.Step started
// the child p.ChildRunID at p.Seq under p.Attempt's name (one PutItem on
// condition attribute_not_exists(pk) OR child_attempt < p.Attempt OR
// (child_attempt = p.Attempt AND child_run_id = p.ChildRunID)): recording
// the same again is a no-op (a retried Task), a later attempt's child
// replaces an earlier one's (the earlier name was held by another
// execution), and anything else is ErrLaterChild. p.Step must be a step
// id and p.Seq a valid seq. expires_at is StartRetention from the
// store's clock.
func (s *Store) RecordChildPointer(ctx context.Context, runID string, p review.ChildPointer) error {
	if p.Step == "" || !tool.NamePattern.MatchString(p.Step) || p.Seq.Valid() != nil {
		return fmt.Errorf("child pointer of %s: step %q at seq %q is not a step id and seq", runID, p.Step, p.Seq)
	}
	item, err := attributevalue.MarshalMap(childPointerItem{PK: table.ChildPointer.Key(runID),
		SK: table.ChildPointerSK(p.Step, p.Seq.LoopPath(), p.Seq.SortKey()), ChildRunID: p.ChildRunID, Attempt: p.Attempt,
		ExpiresAt: s.now().Add(StartRetention).Unix()})
	if err != nil {
		return fmt.Errorf("child pointer of %s: %w", runID, err)
	}
	a := expression.Value(p.Attempt)
	cond := notExists().Or(pointerAttr("child_attempt").LessThan(a),
		pointerAttr("child_attempt").Equal(a).And(pointerAttr("child_run_id").Equal(expression.Value(p.ChildRunID))))
	err = s.put(ctx, item, cond, "")
	if tabledef.IsConditionFailed(err) {
		return ErrLaterChild
	}
	if err != nil {
		return fmt.Errorf("put the child pointer of %s: %w", runID, err)
	}
	return nil
}

// ChildPointers returns runID's child pointers of step at the loop index
// path path, in seq order (one consistent Query of begins_with(sk,
// CHILD#<step>#<path>#), projecting the keys, the child and its attempt,
// followed through its pages). A pointer whose sort key holds no valid
// seq is an error.
func (s *Store) ChildPointers(ctx context.Context, runID, step string, path []int64) ([]review.ChildPointer, error) {
	kc := expression.Key(table.PK).Equal(expression.Value(table.ChildPointer.Key(runID))).
		And(expression.Key(table.SK).BeginsWith(table.ChildPointerPlaceSK(step, path)))
	proj := expression.NamesList(pointerAttr(table.PK), pointerAttr(table.SK), pointerAttr("child_run_id"), pointerAttr("child_attempt"))
	ex, err := expression.NewBuilder().WithKeyCondition(kc).WithProjection(proj).Build()
	if err != nil {
		return nil, fmt.Errorf("query the child pointers of %s: build the request: %w", runID, err)
	}
	var out []review.ChildPointer
	var start map[string]types.AttributeValue
	for {
		res, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(s.table), KeyConditionExpression: ex.KeyCondition(), ProjectionExpression: ex.Projection(),
			ExpressionAttributeNames: ex.Names(), ExpressionAttributeValues: ex.Values(), ConsistentRead: aws.Bool(true),
			ExclusiveStartKey: start, Select: types.SelectSpecificAttributes,
		})
		if err != nil {
			return nil, fmt.Errorf("query the child pointers of %s: %w", runID, err)
		}
		for _, it := range res.Items {
			var p childPointerItem
			if err := attributevalue.UnmarshalMap(it, &p); err != nil {
				return nil, fmt.Errorf("a child pointer of %s: %w", runID, err)
			}
			k, ok := table.ChildPointerSeqSortKey(p.SK)
			if !ok {
				return nil, fmt.Errorf("a child pointer of %s: sort key %q is not a child pointer's", runID, p.SK)
			}
			seq, err := tool.SeqOfSortKey(k)
			if err != nil {
				return nil, fmt.Errorf("a child pointer of %s: %w", runID, err)
			}
			out = append(out, review.ChildPointer{Step: step, Seq: seq, ChildRunID: p.ChildRunID, Attempt: p.Attempt})
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = res.LastEvaluatedKey
	}
}
