package store

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/table"
)

// DynamoDBAPI is the part of the DynamoDB client the Store calls.
type DynamoDBAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Errors the Store returns, wrapped with what failed.
var (
	// ErrNotFound: no source, schedule or event of the name or key.
	ErrNotFound = errors.New("not found")
	// ErrExists: PutSource or PutSchedule of a name that is taken.
	ErrExists = errors.New("already exists")
	// ErrConflict: a change conditional on a version that is no longer
	// the item's (another change came between: read again), or an event
	// already marked otherwise (MarkStarted of a FAILED event).
	ErrConflict = errors.New("changed since it was read")
	// ErrInvalid: what was given breaks a rule of the item (a name, a
	// scheme, a bound); the error names the field and the rule.
	ErrInvalid = errors.New("invalid")
)

// Store keeps inbound sources, schedules and events in the ledger table.
type Store struct {
	db    DynamoDBAPI
	table string
}

// New returns a Store on the named table.
func New(db DynamoDBAPI, tableName string) *Store { return &Store{db: db, table: tableName} }

// stamp is the form of every time the store writes: RFC 3339, UTC, whole
// seconds, so that string order is time order (the inbound-unqueued index
// sorts by received_at).
func stamp(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// parseStamp reads a stamp; the zero time for "" or another form.
func parseStamp(s string) time.Time {
	t, _ := time.Parse(time.RFC3339, s)
	return t
}

// key is an item's primary key.
func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{table.PK: s(pk), table.SK: s(sk)}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// isConditionFailed reports a failed conditional write.
func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}
