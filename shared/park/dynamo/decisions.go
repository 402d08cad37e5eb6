package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/table"
)

// Now is the store's clock.
func (s *Store) Now() time.Time { return s.now() }

// RowReview returns the review id the PARKED row of park r recorded (the
// approval a gated call carried when it parked; "" when it names none):
// one GetItem of the row (table.Row.Key of the run, sk r.RowSK) projecting
// review_id only. park.ErrNotFound when the row is gone.
func (s *Store) RowReview(ctx context.Context, r *park.Park) (string, error) {
	ex, err := expression.NewBuilder().WithProjection(expression.NamesList(expression.Name(table.Row.Names("review_id")[0]))).Build()
	if err != nil {
		return "", err
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			table.PK: &types.AttributeValueMemberS{Value: table.Row.Prefix + r.RunID},
			table.SK: &types.AttributeValueMemberS{Value: r.RowSK},
		},
		ProjectionExpression: ex.Projection(), ExpressionAttributeNames: ex.Names()})
	if err != nil {
		return "", fmt.Errorf("read the parked row of park %s: %w", r.ID, err)
	}
	if len(out.Item) == 0 {
		return "", ErrNotFound
	}
	var it struct {
		ReviewID string `dynamodbav:"review_id"`
	}
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return "", fmt.Errorf("read the parked row of park %s: %w", r.ID, err)
	}
	return it.ReviewID, nil
}

// ForkedFrom returns the parent run of the run runID when it is a fork
// (its start record's forked_from, which review-request's start lane
// recorded after run.fork; docs/fork.md, "Forking a run"): one consistent
// GetItem projecting forked_from only. "" when the run is no fork or has
// no start record.
func (s *Store) ForkedFrom(ctx context.Context, runID string) (string, error) {
	return s.startString(ctx, runID, "forked_from")
}

// Starter returns the recorded starter of the run runID (its start
// record; a workflow step's child holds its parent's): one consistent
// GetItem projecting starter only. "" when the run has no start record.
func (s *Store) Starter(ctx context.Context, runID string) (string, error) {
	return s.startString(ctx, runID, "starter")
}

// startString reads the string attribute name of runID's start item with
// one consistent GetItem projecting it alone (access ReadParkStarters):
// "" when the item, or the attribute, is absent; an error when the
// request fails or the attribute is not a string.
func (s *Store) startString(ctx context.Context, runID, name string) (string, error) {
	attr := table.Start.Names(name)[0]
	ex, err := expression.NewBuilder().WithProjection(expression.NamesList(expression.Name(attr))).Build()
	if err != nil {
		return "", err
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			table.PK: &types.AttributeValueMemberS{Value: table.Start.Key(runID)},
			table.SK: &types.AttributeValueMemberS{Value: table.Start.SKValue},
		},
		ProjectionExpression: ex.Projection(), ExpressionAttributeNames: ex.Names()})
	if err != nil {
		return "", fmt.Errorf("read the start record of %s: %w", runID, err)
	}
	var v string
	if av, ok := out.Item[attr]; ok {
		if err := attributevalue.Unmarshal(av, &v); err != nil {
			return "", fmt.Errorf("read the start record of %s: %s: %w", runID, attr, err)
		}
	}
	return v, nil
}
