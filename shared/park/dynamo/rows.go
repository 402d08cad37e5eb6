package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/table"
)

// Row is what the park route reads of one of a call's rows
// (table.ParkedRowAttributes): its key, status, call and, on a PARKED row,
// what parked it (docs/parking.md, "Recording a park").
type Row struct {
	PK              string     `dynamodbav:"pk"` // table.Row.Key(run id)
	SK              string     `dynamodbav:"sk"` // a row item's sort key (table.Row)
	Status          string     `dynamodbav:"status"`
	IdempotencyKey  string     `dynamodbav:"idempotency_key"`
	Tool            string     `dynamodbav:"tool"`
	Step            string     `dynamodbav:"step"`
	Cause           park.Cause `dynamodbav:"park_cause"`
	PinnedDigest    string     `dynamodbav:"pinned_digest"`
	CurrentDigest   string     `dynamodbav:"current_digest"`
	ChangedPointers []string   `dynamodbav:"changed_pointers"`
	// AdditivePointers are those of ChangedPointers whose change is
	// additive; absent on rows written before changes were classified.
	AdditivePointers []string `dynamodbav:"additive_pointers"`
	Target           string   `dynamodbav:"park_target"`
	Scope            string   `dynamodbav:"park_scope"`
	StartedAt        string   `dynamodbav:"started_at"` // RFC 3339 with ns, UTC
}

// rowProjection is table.ParkedRowAttributes as a projection.
func rowProjection() expression.ProjectionBuilder {
	a := table.ParkedRowAttributes
	names := make([]expression.NameBuilder, len(a))
	for i, n := range a {
		names[i] = expression.Name(n)
	}
	return expression.NamesList(names[0], names[1:]...)
}

// ParkedRows returns the row items of one call, newest first: one Query
// (paged) of the run's partition, RUN#<runID>, whose sort keys begin
// with the call's and "#" (table.RowSK: only that call's rows, not the
// call's item nor the rows of calls inside a loop that took its seq),
// projecting table.ParkedRowAttributes, with a consistent read. seqSortKey
// is the call's tool.Seq SortKey.
func (s *Store) ParkedRows(ctx context.Context, runID, seqSortKey string) ([]Row, error) {
	kc := expression.Key(table.PK).Equal(expression.Value(table.Row.Key(runID))).
		And(expression.Key(table.SK).BeginsWith(table.CallSK(seqSortKey) + "#"))
	ex, err := expression.NewBuilder().WithKeyCondition(kc).WithProjection(rowProjection()).Build()
	if err != nil {
		return nil, fmt.Errorf("query the rows of %s/%s: build the request: %w", runID, seqSortKey, err)
	}
	var out []Row
	var start map[string]types.AttributeValue
	for {
		res, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(s.table), KeyConditionExpression: ex.KeyCondition(), ProjectionExpression: ex.Projection(),
			ExpressionAttributeNames: ex.Names(), ExpressionAttributeValues: ex.Values(), ConsistentRead: aws.Bool(true),
			ScanIndexForward: aws.Bool(false), ExclusiveStartKey: start, Select: types.SelectSpecificAttributes,
		})
		if err != nil {
			return nil, fmt.Errorf("query the rows of %s/%s: %w", runID, seqSortKey, err)
		}
		for _, it := range res.Items {
			var r Row
			if err := attributevalue.UnmarshalMap(it, &r); err != nil {
				return nil, fmt.Errorf("a row of %s/%s: %w", runID, seqSortKey, err)
			}
			out = append(out, r)
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = res.LastEvaluatedKey
	}
}
