package caller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ProofPrefix is the partition key prefix of proof records in the ledger
// table (docs/ledger.md); their sort key is ProofSK.
const (
	ProofPrefix = "PROOF#"
	ProofSK     = "PROOF"
)

// TableAPI is the part of the DynamoDB client ProofTable uses.
type TableAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// ProofTable keeps proof records in the ledger table: one item per accepted
// proof, PROOF#<ID>, written with a conditional put and expiring (TTL
// expires_at) when the proof's window has ended.
type ProofTable struct {
	DB    TableAPI
	Table string
}

// Record implements Proofs: a put on attribute_not_exists(pk) that
// returns the existing item when the condition fails
// (ReturnValuesOnConditionCheckFailure ALL_OLD), or, where the answer
// leaves it out (dynalite), reads it with a consistent GetItem.
func (t ProofTable) Record(ctx context.Context, rec ProofRecord) (ProofRecord, bool, error) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	_, err := t.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(t.Table),
		Item: map[string]types.AttributeValue{
			"pk": s(ProofPrefix + rec.ID), "sk": s(ProofSK), "binding": s(rec.Binding), "arn": s(rec.ARN),
			"expires_at": &types.AttributeValueMemberN{Value: strconv.FormatInt(rec.ExpiresAt.Unix(), 10)},
		},
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return rec, true, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return ProofRecord{}, false, fmt.Errorf("put proof record: %w", err)
	}
	item := ccf.Item
	if item == nil {
		out, err := t.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.Table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": s(ProofPrefix + rec.ID), "sk": s(ProofSK)}})
		if err != nil {
			return ProofRecord{}, false, fmt.Errorf("get proof record: %w", err)
		}
		item = out.Item
	}
	old := ProofRecord{ID: rec.ID}
	if v, ok := item["binding"].(*types.AttributeValueMemberS); ok {
		old.Binding = v.Value
	}
	if v, ok := item["arn"].(*types.AttributeValueMemberS); ok {
		old.ARN = v.Value
	}
	if v, ok := item["expires_at"].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		old.ExpiresAt = time.Unix(n, 0)
	}
	return old, false, nil
}
