package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/table"
)

// ProofAPI is the part of the DynamoDB client ProofTable uses.
type ProofAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// ProofTable keeps caller proof records (caller.Proofs) in the ledger
// table: one item per accepted proof (table.Proof: pk "PROOF#<ID>", sk
// "PROOF"), written with a conditional put and expiring (TTL expires_at)
// when the proof's window has ended.
type ProofTable struct {
	DB    ProofAPI
	Table string
}

// Record implements caller.Proofs: a put on attribute_not_exists(pk) that
// returns the existing item when the condition fails
// (ReturnValuesOnConditionCheckFailure ALL_OLD), or, where the answer
// leaves it out (dynalite), reads it with a consistent GetItem.
func (t ProofTable) Record(ctx context.Context, rec caller.ProofRecord) (caller.ProofRecord, bool, error) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	_, err := t.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(t.Table),
		Item: map[string]types.AttributeValue{
			AttrPK: s(table.Proof.Key(rec.ID)), AttrSK: s(table.Proof.SKValue), "binding": s(rec.Binding), "arn": s(rec.ARN),
			AttrExpiresAt: &types.AttributeValueMemberN{Value: strconv.FormatInt(rec.ExpiresAt.Unix(), 10)},
		},
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return rec, true, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return caller.ProofRecord{}, false, fmt.Errorf("put proof record: %w", err)
	}
	item := ccf.Item
	if item == nil {
		out, err := t.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.Table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{AttrPK: s(table.Proof.Key(rec.ID)), AttrSK: s(table.Proof.SKValue)}})
		if err != nil {
			return caller.ProofRecord{}, false, fmt.Errorf("get proof record: %w", err)
		}
		item = out.Item
	}
	old := caller.ProofRecord{ID: rec.ID}
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
