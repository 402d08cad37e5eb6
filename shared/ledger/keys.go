package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/table"
)

// keyItem is a key pointer as stored (table.Key), mapped with
// attributevalue.
type keyItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	RunID     string `dynamodbav:"run_id"`
	ExpiresAt int64  `dynamodbav:"expires_at"` // epoch seconds
}

// MaxExecutionDuration is the longest a Step Functions Standard execution
// runs (AWS quota: one year). A key pointer, written once with the run's
// first call, lasts that much longer than the ledger's retention, so it
// outlives every call item of its run, whose expires_at each write renews.
const MaxExecutionDuration = 366 * 24 * time.Hour

// PutKeyPointer records that opaqueRunID (externalkey.RunID) stands for
// runID (table.Key: pk KEY#<opaqueRunID>, sk "KEY"), with one conditional
// PutItem (attribute_not_exists(pk)); a pointer already there (this
// run's, written by an attempt before) is left as it is and is no error.
// docs/ledger.md, "The key pointer", says which claim writes it.
func (s *Store) PutKeyPointer(ctx context.Context, opaqueRunID, runID string) error {
	item, err := attributevalue.MarshalMap(keyItem{PK: table.Key.Key(opaqueRunID), SK: table.Key.SKValue, RunID: runID,
		ExpiresAt: s.now().Add(s.retention + MaxExecutionDuration).Unix()})
	if err != nil {
		return fmt.Errorf("encode key pointer: %w", err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if err != nil && !IsConditionFailed(err) {
		return fmt.Errorf("put key pointer: %w", err)
	}
	return nil
}

// KeyPointer returns the run id that opaqueRunID stands for, read with a
// consistent GetItem projecting run_id (the operator's access
// ReadKeyPointers); ErrNotFound when no pointer holds it.
func (s *Store) KeyPointer(ctx context.Context, opaqueRunID string) (string, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key:                      map[string]types.AttributeValue{AttrPK: str(table.Key.Key(opaqueRunID)), AttrSK: str(table.Key.SKValue)},
		ProjectionExpression:     aws.String("#r"),
		ExpressionAttributeNames: map[string]string{"#r": "run_id"},
	})
	if err != nil {
		return "", fmt.Errorf("get key pointer: %w", err)
	}
	var it keyItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return "", fmt.Errorf("key pointer: %w", err)
	}
	if it.RunID == "" {
		return "", fmt.Errorf("key pointer: %w", ErrNotFound)
	}
	return it.RunID, nil
}
