package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/table"
)

// ErrForkedElsewhere is RecordFork's answer when the parent's fork item
// names another fork, or the same fork by another forker or with other
// reads; the item read back is returned with it.
var ErrForkedElsewhere = errors.New("the run was already forked as another execution")

// ForkRetention keeps a fork item as long as the parent's start record
// (StartRetention): the fork's start lane reads it, and the dispatcher's
// reuse of the parent's calls ends with the ledger's own retention.
const ForkRetention = StartRetention

// forkTime is a fork item's forked_at: RFC 3339 UTC with milliseconds.
const forkTime = "2006-01-02T15:04:05.000Z"

// forkItem is a fork item (table.Fork; access RecordForks).
type forkItem struct {
	PK           string `dynamodbav:"pk"` // FORK#<parent run id>
	SK           string `dynamodbav:"sk"` // "FORK"
	ForkRunID    string `dynamodbav:"fork_run_id"`
	ForkedBy     string `dynamodbav:"forked_by"`
	ForkedAt     string `dynamodbav:"forked_at"`
	RerunReads   bool   `dynamodbav:"rerun_reads"`
	ParentStatus string `dynamodbav:"parent_status"`
	ExpiresAt    int64  `dynamodbav:"expires_at"`
}

func (it forkItem) fork() (*review.Fork, error) {
	parent, ok := table.Fork.ID(it.PK)
	if !ok || it.SK != table.Fork.SKValue {
		return nil, fmt.Errorf("item %s %s is no fork item", it.PK, it.SK)
	}
	at, err := time.Parse(time.RFC3339Nano, it.ForkedAt)
	if err != nil {
		return nil, fmt.Errorf("fork item of %s: forked_at %q is not RFC 3339", parent, it.ForkedAt)
	}
	return &review.Fork{ParentRunID: parent, ForkRunID: it.ForkRunID, ForkedBy: it.ForkedBy, ForkedAt: at, RerunReads: it.RerunReads,
		ParentStatus: it.ParentStatus}, nil
}

// RecordFork records f, once per parent: one PutItem conditional on
// attribute_not_exists(pk) OR (fork_run_id = :f AND forked_by = :b AND
// rerun_reads = :r), so that the same forker asking again for the same
// fork rewrites it (idempotent; ForkedAt then moves), and another fork,
// the same fork by another forker or with other reads (two requests
// racing past run.fork's read included) is refused with
// ErrForkedElsewhere and the fork item as stored (a consistent GetItem):
// the forker the start lane admits is the one whose request was recorded
// first. expires_at is ForkRetention from the store's clock.
func (s *Store) RecordFork(ctx context.Context, f review.Fork) (*review.Fork, error) {
	item, err := attributevalue.MarshalMap(forkItem{PK: table.Fork.Key(f.ParentRunID), SK: table.Fork.SKValue, ForkRunID: f.ForkRunID,
		ForkedBy: f.ForkedBy, ForkedAt: f.ForkedAt.UTC().Format(forkTime), RerunReads: f.RerunReads, ParentStatus: f.ParentStatus,
		ExpiresAt: s.now().Add(ForkRetention).Unix()})
	if err != nil {
		return nil, fmt.Errorf("fork item of %s: %w", f.ParentRunID, err)
	}
	cond := notExists().Or(expression.And(attr(table.Fork, "fork_run_id").Equal(expression.Value(f.ForkRunID)),
		attr(table.Fork, "forked_by").Equal(expression.Value(f.ForkedBy)), attr(table.Fork, "rerun_reads").Equal(expression.Value(f.RerunReads))))
	err = s.put(ctx, item, cond, "")
	if tabledef.IsConditionFailed(err) {
		cur, gerr := s.Fork(ctx, f.ParentRunID)
		if gerr != nil {
			return nil, gerr
		}
		return cur, ErrForkedElsewhere
	}
	if err != nil {
		return nil, fmt.Errorf("put the fork item of %s: %w", f.ParentRunID, err)
	}
	return &f, nil
}

// Fork reads the fork item of parent (one consistent GetItem; access
// ReadForks): review.ErrNotFound when the run was never forked.
func (s *Store) Fork(ctx context.Context, parent string) (*review.Fork, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key: keyOf(table.Fork, parent)})
	if err != nil {
		return nil, fmt.Errorf("get the fork item of %s: %w", parent, err)
	}
	if out.Item == nil {
		return nil, review.ErrNotFound
	}
	var it forkItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return nil, fmt.Errorf("read the fork item of %s: %w", parent, err)
	}
	return it.fork()
}
