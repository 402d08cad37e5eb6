package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/table"
)

// Start items (table.Start) record who started an execution, as its
// Starter state proved it: pk "START#<execution ARN>", sk "START". Review
// Tasks of the execution take their requester from it, whatever their
// payload says, so that even a state machine definition written by hand
// cannot name another requester (docs/identity.md).
func startKey(executionARN string) map[string]types.AttributeValue {
	return keyOf(table.Start, executionARN)
}

// StartRetention keeps a start item as long as a review of the execution
// can be asked for: a year (an execution's longest life,
// tool.MaxReviewTimeout) and a day.
const StartRetention = time.Duration(review.MaxTimeout)*time.Second + 24*time.Hour

// RecordStart records starter as the starter of executionARN (one
// conditional PutItem); recording the same starter again is a no-op.
func (s *Store) RecordStart(ctx context.Context, executionARN, starter string) error {
	key := startKey(executionARN)
	item := map[string]types.AttributeValue{tabledef.AttrPK: key[tabledef.AttrPK], tabledef.AttrSK: key[tabledef.AttrSK],
		"starter": str(starter), tabledef.AttrExpiresAt: tabledef.N(s.now().Add(StartRetention).Unix())}
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item,
		ConditionExpression:       aws.String("attribute_not_exists(pk) OR starter = :s"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": str(starter)}})
	if tabledef.IsConditionFailed(err) {
		return review.ErrStartConflict
	}
	if err != nil {
		return fmt.Errorf("put start of %s: %w", executionARN, err)
	}
	return nil
}

// RecordChildStart records, for a child execution a parent's workflow
// step is about to start, the parent's verified starter, the parent's run
// id and the digest of the child's input (one conditional PutItem on the
// child's start item). Recording the same again is a no-op (a retried
// Task); anything else already recorded for that ARN is
// review.ErrStartConflict.
func (s *Store) RecordChildStart(ctx context.Context, childARN string, rec review.ChildRecord) error {
	key := startKey(childARN)
	item := map[string]types.AttributeValue{tabledef.AttrPK: key[tabledef.AttrPK], tabledef.AttrSK: key[tabledef.AttrSK],
		"starter": str(rec.Starter), "parent_run_id": str(rec.ParentRunID), "input_digest": str(rec.InputDigest),
		"state_machine_arn": str(rec.StateMachineARN), tabledef.AttrExpiresAt: tabledef.N(s.now().Add(StartRetention).Unix())}
	// A retried record Task writes the same again; once a child took the
	// record (child_started_at), nothing replaces it.
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk) OR (starter = :s AND parent_run_id = :p AND input_digest = :d AND state_machine_arn = :m AND attribute_not_exists(child_started_at))"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":s": str(rec.Starter), ":p": str(rec.ParentRunID), ":d": str(rec.InputDigest), ":m": str(rec.StateMachineARN)}})
	if tabledef.IsConditionFailed(err) {
		return review.ErrStartConflict
	}
	if err != nil {
		return fmt.Errorf("put child start of %s: %w", childARN, err)
	}
	return nil
}

// ChildStart returns what a parent recorded for the child execution
// childARN (consistent read): review.ErrNotFound when nothing is recorded,
// or only a person's start (no parent).
func (s *Store) ChildStart(ctx context.Context, childARN string) (review.ChildRecord, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key: startKey(childARN)})
	if err != nil {
		return review.ChildRecord{}, fmt.Errorf("get start of %s: %w", childARN, err)
	}
	rec := review.ChildRecord{Starter: getS(out.Item, "starter"), ParentRunID: getS(out.Item, "parent_run_id"), InputDigest: getS(out.Item, "input_digest"),
		StateMachineARN: getS(out.Item, "state_machine_arn"), StartedAt: getS(out.Item, "child_started_at")}
	if out.Item == nil || rec.ParentRunID == "" {
		return review.ChildRecord{}, review.ErrNotFound
	}
	return rec, nil
}

// TakeChildStart marks the parent's record for childARN as taken by the
// execution that started at startTime (one conditional UpdateItem of
// child_started_at): the same execution again (a retried start Task) is a
// no-op; any other is review.ErrChildTaken.
func (s *Store) TakeChildStart(ctx context.Context, childARN, startTime string) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.table),
		Key:                       startKey(childARN),
		UpdateExpression:          aws.String("SET child_started_at = :t"),
		ConditionExpression:       aws.String("attribute_exists(parent_run_id) AND (attribute_not_exists(child_started_at) OR child_started_at = :t)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": str(startTime)}})
	if tabledef.IsConditionFailed(err) {
		return review.ErrChildTaken
	}
	if err != nil {
		return fmt.Errorf("take child start of %s: %w", childARN, err)
	}
	return nil
}

// Starter returns the recorded starter of executionARN (consistent read),
// or ErrNotFound.
func (s *Store) Starter(ctx context.Context, executionARN string) (string, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key: startKey(executionARN)})
	if err != nil {
		return "", fmt.Errorf("get start of %s: %w", executionARN, err)
	}
	if out.Item == nil {
		return "", review.ErrNotFound
	}
	return getS(out.Item, "starter"), nil
}
