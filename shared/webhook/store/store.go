package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/webhook/outbox"
)

// DB is the part of the DynamoDB client the Store calls.
type DB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Errors the Store returns, wrapped with what failed.
var (
	// ErrNotFound: no subscription or event of the id.
	ErrNotFound = errors.New("not found")
	// ErrExists: Subscribe of an id that is taken.
	ErrExists = errors.New("already exists")
	// ErrConflict: Rotate of a subscription whose version is no longer
	// the one read (another rotate-secret or a disable came between).
	ErrConflict = errors.New("changed since it was read")
)

// Retention is how long events and attempts are kept before DynamoDB's
// TTL (expires_at) ends them: outbox.Retention, 30 days, beyond the
// deliveries queue's retention and the dead-letter queue's 14 days, so
// that every message still queued finds its event (docs/webhooks.md).
const Retention = outbox.Retention

// Store keeps webhook subscriptions, events and attempts in the ledger
// table (table.WebhookSubscription, table.WebhookEvent,
// table.WebhookAttempt).
type Store struct {
	db    DB
	table string
	now   func() time.Time
}

// New returns a Store on the named table; now is its clock (time.Now when
// nil), which stamps created_at, updated_at, sent_at, at and expires_at
// and ages secrets in Rotate.
func New(db DB, tableName string, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, table: tableName, now: now}
}

// stamp is the form of every time the store writes: RFC 3339, UTC, whole
// seconds, so that string order is time order (the webhook-unsent index
// sorts by produced_at).
func stamp(t time.Time) string { return outbox.Stamp(t) }

// parseStamp reads a stamp; the zero time for "" or another form.
func parseStamp(s string) time.Time {
	t, _ := time.Parse(time.RFC3339, s)
	return t
}

// Ids: "sub_" or "evt_" and 26 lower-case base32 characters (16 bytes,
// no padding; docs/webhooks.md).
var (
	subscriptionID = regexp.MustCompile(`^sub_[a-z2-7]{26}$`)
	eventID        = regexp.MustCompile(`^evt_[a-z2-7]{26}$`)
)

// checkSubscriptionID refuses an id that is not a subscription's, before
// it reaches a key.
func checkSubscriptionID(id string) error {
	if !subscriptionID.MatchString(id) {
		return fmt.Errorf("subscription id %q: want sub_ and 26 lower-case base32 characters", id)
	}
	return nil
}

// checkEventID refuses an id that is not an event's.
func checkEventID(id string) error {
	if !eventID.MatchString(id) {
		return fmt.Errorf("event id %q: want evt_ and 26 lower-case base32 characters", id)
	}
	return nil
}

// key is an item's primary key.
func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{table.PK: s(pk), table.SK: s(sk)}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: fmt.Sprint(v)}
}

// isConditionFailed reports a failed conditional write.
func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}
