package ledger

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/table"
)

// ParkAttributes are what Park reads of a park item (the access
// ReadParkDecisions, table.ParkDecisionAttributes less the keys): never
// its task token, reason or listing keys.
var ParkAttributes = table.ParkDecisionAttributes[2:]

// parkState is a park item as Park reads it (table.Park).
type parkState struct {
	Status         string `dynamodbav:"status"`
	RunID          string `dynamodbav:"run_id"`
	IdempotencyKey string `dynamodbav:"idempotency_key"`
	Tool           string `dynamodbav:"tool"`
	PinnedDigest   string `dynamodbav:"pinned_digest,omitempty"`
	CurrentDigest  string `dynamodbav:"current_digest,omitempty"`
	DecidedBy      string `dynamodbav:"decided_by,omitempty"`
}

// parkProjection is ParkAttributes as a ProjectionExpression and its names.
var parkProjection, parkProjectionNames = projectionOf(ParkAttributes)

// Park reads park id's item (table.Park: pk PARK#<id>, sk PARK) with one
// consistent GetItem projecting ParkAttributes, for a call sent again
// under it (shared/dispatch, resume.go; docs/parking.md, "The
// dispatcher"); ErrNotFound when there is none. A mistyped attribute is
// an error.
func (s *Store) Park(ctx context.Context, id string) (park.State, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key:                      map[string]types.AttributeValue{AttrPK: str(table.Park.Key(id)), AttrSK: str(table.Park.SKValue)},
		ProjectionExpression:     parkProjection,
		ExpressionAttributeNames: parkProjectionNames,
	})
	if err != nil {
		return park.State{}, fmt.Errorf("get park %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return park.State{}, ErrNotFound
	}
	var p parkState
	if err := attributevalue.UnmarshalMap(out.Item, &p); err != nil {
		return park.State{}, fmt.Errorf("park %s: %w", id, err)
	}
	return park.State{ID: id, Status: park.Status(p.Status), RunID: p.RunID, IdempotencyKey: p.IdempotencyKey, Tool: p.Tool,
		PinnedDigest: p.PinnedDigest, CurrentDigest: p.CurrentDigest, DecidedBy: p.DecidedBy}, nil
}
