package dispatch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/ledger"
)

// powertoolsProtocol is the baseline BenchmarkDispatch measures the
// dispatcher against, on the same dynalite: the two-request idempotency
// protocol of Powertools for AWS Lambda (its DynamoDBPersistenceLayer), in
// Go. A first call is a conditional PutItem of an INPROGRESS record with
// an in-progress expiry (the lease), the handler, then an UpdateItem to
// COMPLETED with the result: 2 writes. A replay is the failed conditional
// PutItem and a consistent GetItem (dynalite ignores
// ReturnValuesOnConditionCheckFailure, which Powertools uses where
// DynamoDB honours it): 2 requests. The key is the SHA-256 of the event,
// as Powertools hashes the event it is configured with. It is a
// benchmark baseline, not a product path: no schema, no ledger row, no
// approvals.
type powertoolsProtocol struct {
	db    ledger.API
	table string
	lease time.Duration
	ttl   time.Duration
}

var errInProgress = errors.New("an invocation with this key is in progress")

func (p *powertoolsProtocol) handle(ctx context.Context, event json.RawMessage, run func(json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	var decoded map[string]any // what the Lambda runtime hands the handler
	if err := json.Unmarshal(event, &decoded); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(event)
	key := map[string]types.AttributeValue{
		ledger.AttrPK: &types.AttributeValueMemberS{Value: "PT#" + hex.EncodeToString(sum[:])},
		ledger.AttrSK: &types.AttributeValueMemberS{Value: "PT"},
	}
	now := time.Now()
	item := map[string]types.AttributeValue{
		"status":             &types.AttributeValueMemberS{Value: "INPROGRESS"},
		"expiration":         &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(p.ttl).Unix(), 10)},
		"in_progress_expiry": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(p.lease).UnixMilli(), 10)},
	}
	for k, v := range key {
		item[k] = v
	}
	_, err := p.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(p.table),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(pk) OR expiration < :now OR (#status = :inprogress AND in_progress_expiry < :now_ms)"),
		ExpressionAttributeNames: map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":        &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Unix(), 10)},
			":now_ms":     &types.AttributeValueMemberN{Value: strconv.FormatInt(now.UnixMilli(), 10)},
			":inprogress": &types.AttributeValueMemberS{Value: "INPROGRESS"},
		},
	})
	if ledger.IsConditionFailed(err) {
		out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(p.table), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, err
		}
		if s, _ := out.Item["status"].(*types.AttributeValueMemberS); s == nil || s.Value != "COMPLETED" {
			return nil, errInProgress
		}
		data, _ := out.Item["data"].(*types.AttributeValueMemberS)
		if data == nil {
			return nil, fmt.Errorf("completed record without data")
		}
		return json.RawMessage(data.Value), nil
	}
	if err != nil {
		return nil, err
	}
	result, err := run(event)
	if err != nil {
		p.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(p.table), Key: key,
			UpdateExpression: aws.String("REMOVE #status"), ExpressionAttributeNames: map[string]string{"#status": "status"}})
		return nil, err
	}
	_, err = p.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(p.table),
		Key:                      key,
		UpdateExpression:         aws.String("SET #status = :completed, #data = :data, expiration = :exp"),
		ExpressionAttributeNames: map[string]string{"#status": "status", "#data": "data"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":completed": &types.AttributeValueMemberS{Value: "COMPLETED"},
			":data":      &types.AttributeValueMemberS{Value: string(result)},
			":exp":       &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(p.ttl).Unix(), 10)},
		},
	})
	if err != nil {
		return nil, err
	}
	return result, nil
}
