package ledger

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/table"
)

// publishedKey is the key of Solution name's published item
// (table.Published: pk SOLUTION#<name>, sk "PUBLISHED"): the last version
// the publish function published of the Solution in this stage, with the
// bounds a parent that starts it is checked against (docs/solutions.md,
// "Workflow steps"). Only the publish function writes or reads them.
func publishedKey(name string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrPK: str(table.Published.Key(name)), AttrSK: str(table.Published.SKValue)}
}

// Published is a Solution's last published version.
type Published struct {
	Solution string
	// VersionARN is the state machine version a parent starts.
	VersionARN string
	Version    int
	ToolsetID  string
	// OutputBoundBytes bounds the runs' output, InputLimitBytes their
	// input (policy.input_limit_bytes), in bytes of JSON.
	OutputBoundBytes int
	InputLimitBytes  int
	// RunTimeoutSeconds is the version's run timeout (its state machine's
	// TimeoutSeconds), which a parent's derived run timeout counts; 0 in
	// records written before it was recorded.
	RunTimeoutSeconds int
	SourceDigest      string
	Publisher         string
}

// RecordPublished records p as its Solution's last published version
// (one PutItem, replacing the one before).
func (s *Store) RecordPublished(ctx context.Context, p Published) error {
	item, err := attributevalue.MarshalMap(publishedItem{PK: table.Published.Key(p.Solution), SK: table.Published.SKValue,
		VersionARN: p.VersionARN, Version: p.Version, ToolsetID: p.ToolsetID, OutputBoundBytes: p.OutputBoundBytes,
		RunTimeoutSeconds: p.RunTimeoutSeconds, InputLimitBytes: p.InputLimitBytes, SourceDigest: p.SourceDigest,
		Publisher: p.Publisher, PublishedAt: registeredAt(s.now())})
	if err != nil {
		return fmt.Errorf("encode published %s: %w", p.Solution, err)
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item}); err != nil {
		return fmt.Errorf("put published %s: %w", p.Solution, err)
	}
	return nil
}

// PublishedSolution returns the last published version of Solution name
// (consistent read), or ErrNotFound. An item lacking its version ARN or
// bounds, or holding an attribute of another type than it was written
// with, is an error.
func (s *Store) PublishedSolution(ctx context.Context, name string) (Published, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key: publishedKey(name)})
	if err != nil {
		return Published{}, fmt.Errorf("get published %s: %w", name, err)
	}
	if out.Item == nil {
		return Published{}, fmt.Errorf("solution %s: %w", name, ErrNotFound)
	}
	var it publishedItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return Published{}, fmt.Errorf("published %s: %w", name, err)
	}
	p := Published{Solution: name, VersionARN: it.VersionARN, Version: it.Version, ToolsetID: it.ToolsetID,
		OutputBoundBytes: it.OutputBoundBytes, InputLimitBytes: it.InputLimitBytes, RunTimeoutSeconds: it.RunTimeoutSeconds,
		SourceDigest: it.SourceDigest, Publisher: it.Publisher}
	if p.VersionARN == "" || p.OutputBoundBytes <= 0 || p.InputLimitBytes <= 0 {
		return Published{}, fmt.Errorf("published %s: the item lacks its version ARN or bounds", name)
	}
	return p, nil
}
