package dynamo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/table"
)

// API is the part of the DynamoDB client the review store uses: the same
// item-level actions as the ledger's, all implemented by dynalite.
type API = tabledef.API

// MaxList bounds one listing.
const MaxList = 1000

// Store reads and writes the items of kinds table.Review, table.Binding
// and table.Start in the ledger table (docs/reviews.md).
type Store struct {
	db    API
	table string
	now   func() time.Time
	// retention keeps a decided review as long as the ledger's rows
	// (tabledef.DefaultRetention).
	retention time.Duration
	// mac seals the binding items Bind writes and checks the one it finds
	// (WithMAC); the zero Key writes the previous layout.
	mac seal.Key
}

// WithMAC returns a copy of the store whose Bind seals the binding item it
// writes with key (a tool function's own, secrets.Ledger.MAC) and checks
// the seal of one already there (review.Review.BindingSeal).
func (s *Store) WithMAC(key seal.Key) *Store {
	c := *s
	c.mac = key
	return &c
}

// Sealed reports whether the store seals the bindings it writes
// (WithMAC).
func (s *Store) Sealed() bool { return s.mac.Valid() }

// Transient reports whether a DynamoDB failure may pass if the same
// request is made again: throttling, a server fault, or no answer at all
// (a network error, a cancelled or timed-out request); not a client fault
// such as a ValidationException (AWS SDK for Go v2, smithy.APIError).
func Transient(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return true
	}
	switch ae.ErrorCode() {
	case "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded", "LimitExceededException":
		return true
	}
	return ae.ErrorFault() != smithy.FaultClient
}

// NewStore returns a Store on the named table.
func NewStore(db API, table string) *Store {
	return &Store{db: db, table: table, now: time.Now, retention: tabledef.DefaultRetention}
}

// WithClock returns a copy of the store that reads time from now (tests).
func (s *Store) WithClock(now func() time.Time) *Store {
	c := *s
	c.now = now
	return &c
}

// Now returns the store's clock.
func (s *Store) Now() time.Time { return s.now() }

// CreateTable creates the ledger table with the reviews-by-status index,
// for the local stack and tests (tabledef.CreateTable).
func CreateTable(ctx context.Context, db interface {
	CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
}, table string) error {
	return tabledef.CreateTable(ctx, db, table)
}

// keyOf is the key of the item of kind k that id names: pk k.Key(id), sk
// the kind's constant sort key (shared/table).
func keyOf(k *table.Kind, id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		table.PK: &types.AttributeValueMemberS{Value: k.Key(id)},
		table.SK: &types.AttributeValueMemberS{Value: k.SKValue},
	}
}

// attr is the expression name of kind k's attribute n: one the
// declaration holds (table.Kind.Names panics on another, a programming
// error every test of the method finds), so that a request names no
// attribute its access could not list.
func attr(k *table.Kind, n string) expression.NameBuilder { return expression.Name(k.Names(n)[0]) }

// notExists is the condition that the item is not there yet:
// attribute_not_exists(pk).
func notExists() expression.ConditionBuilder {
	return expression.AttributeNotExists(expression.Name(table.PK))
}

// put sends one PutItem of item on condition cond, built with the SDK's
// expression package; onFailure, when set, asks for the item as it was
// when the condition failed.
func (s *Store) put(ctx context.Context, item map[string]types.AttributeValue, cond expression.ConditionBuilder, onFailure types.ReturnValuesOnConditionCheckFailure) error {
	ex, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("build the condition: %w", err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table), Item: item, ConditionExpression: ex.Condition(),
		ExpressionAttributeNames: ex.Names(), ExpressionAttributeValues: ex.Values(),
		ReturnValuesOnConditionCheckFailure: onFailure,
	})
	return err
}

// update sends one UpdateItem of u on key on condition cond, built with
// the SDK's expression package, asking for nothing back.
func (s *Store) update(ctx context.Context, key map[string]types.AttributeValue, u expression.UpdateBuilder, cond expression.ConditionBuilder) error {
	ex, err := expression.NewBuilder().WithUpdate(u).WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("build the update: %w", err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key, UpdateExpression: ex.Update(), ConditionExpression: ex.Condition(),
		ExpressionAttributeNames: ex.Names(), ExpressionAttributeValues: ex.Values(),
	})
	return err
}

// newToken is a decision's token: 16 random bytes, 32 hex digits.
func newToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
