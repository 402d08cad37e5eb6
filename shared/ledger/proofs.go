package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
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
// table: one item per accepted proof (table.Proof: pk PROOF#<ID>, sk
// "PROOF"), written with a conditional put and expiring (TTL expires_at)
// when the proof's window has ended.
type ProofTable struct {
	DB    ProofAPI
	Table string
}

// Record implements caller.Proofs: a put on attribute_not_exists(pk) that
// returns the existing item when the condition fails
// (ReturnValuesOnConditionCheckFailure ALL_OLD), or, where the answer
// leaves it out (dynalite), reads it with a consistent GetItem. An
// existing item holding an attribute of another type than it was written
// with is an error.
func (t ProofTable) Record(ctx context.Context, rec caller.ProofRecord) (caller.ProofRecord, bool, error) {
	item, err := attributevalue.MarshalMap(proofItem{PK: table.Proof.Key(rec.ID), SK: table.Proof.SKValue,
		Binding: rec.Binding, ARN: rec.ARN, ExpiresAt: rec.ExpiresAt.Unix()})
	if err != nil {
		return caller.ProofRecord{}, false, fmt.Errorf("encode proof record: %w", err)
	}
	_, err = t.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(t.Table),
		Item:                                item,
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
	item = ccf.Item
	if item == nil {
		out, err := t.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.Table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{AttrPK: str(table.Proof.Key(rec.ID)), AttrSK: str(table.Proof.SKValue)}})
		if err != nil {
			return caller.ProofRecord{}, false, fmt.Errorf("get proof record: %w", err)
		}
		item = out.Item
	}
	// The item recorded first; none (expired since) reads as a record of
	// another binding.
	var it proofItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return caller.ProofRecord{}, false, fmt.Errorf("proof record: %w", err)
	}
	old := caller.ProofRecord{ID: rec.ID, Binding: it.Binding, ARN: it.ARN}
	if it.ExpiresAt != 0 {
		old.ExpiresAt = time.Unix(it.ExpiresAt, 0)
	}
	return old, false, nil
}
