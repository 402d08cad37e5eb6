package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/webhook"
)

// Retention is how long events are kept before DynamoDB's TTL
// (expires_at) ends them: 30 days, beyond the deliveries queue's
// retention and the dead-letter queue's 14 days, so that every message
// still queued finds its event (docs/webhooks.md).
const Retention = 30 * 24 * time.Hour

// DB is the part of the DynamoDB client Record calls.
type DB interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// Item is a table.WebhookEvent item as written and read: the one layout
// of the kind, which shared/webhook/store reads back.
type Item struct {
	PK         string `dynamodbav:"pk"`
	SK         string `dynamodbav:"sk"`
	Type       string `dynamodbav:"type"`
	Solution   string `dynamodbav:"solution,omitempty"`
	Data       string `dynamodbav:"data"`
	ProducedAt string `dynamodbav:"produced_at"`
	Unsent     int    `dynamodbav:"unsent,omitempty"`
	SentAt     string `dynamodbav:"sent_at,omitempty"`
	ExpiresAt  int64  `dynamodbav:"expires_at,omitempty"`
}

// CallItem is a table.WebhookCallEvent item as written and read: Item's
// layout and the source the event's id derives from.
type CallItem struct {
	Item
	Source string `dynamodbav:"source"`
}

// Stamp is the form of every time an event item holds: RFC 3339, UTC,
// whole seconds, so that string order is time order (the webhook-unsent
// index sorts by produced_at).
func Stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Record records e once in table tableName as a table.WebhookEvent
// item: one PutItem conditional on attribute_not_exists(pk), its id the
// dedupe key, with unsent set (table.WebhookUnsentFlag), which puts it in
// the webhook-unsent index until it is marked sent. It reports whether
// this call recorded it: false, with no error, when an event of the id was
// already there (a retried producer, a second status change), which the
// caller must then not send. produced_at is e.Timestamp (now when zero),
// whole seconds; expires_at now and Retention. e needs an id of
// webhook.IDPattern, a type, and Data that is JSON; an error names the
// event's id and type, never its data. Review-request, review-decision and
// webhook-delivery record so (table access RecordWebhookEvents); a tool
// function records through a Recorder.
func Record(ctx context.Context, db DB, tableName string, e webhook.Event, now time.Time) (bool, error) {
	return put(ctx, db, tableName, table.WebhookEvent, "", e, now)
}

// RecordCall records e as Record does, as a table.WebhookCallEvent item
// with its source: the only events a tool function's role may put (table
// access RecordCallWebhookEvents). e must pass webhook.CheckCallEvent.
func RecordCall(ctx context.Context, db DB, tableName string, e webhook.Event, now time.Time) (bool, error) {
	if err := webhook.CheckCallEvent(e); err != nil {
		return false, fmt.Errorf("record event: %w", err)
	}
	return put(ctx, db, tableName, table.WebhookCallEvent, e.Source, e, now)
}

// put is Record's and RecordCall's PutItem of e as an item of kind.
func put(ctx context.Context, db DB, tableName string, kind *table.Kind, source string, e webhook.Event, now time.Time) (bool, error) {
	if !webhook.IDPattern.MatchString(e.ID) {
		return false, fmt.Errorf("record event: event id %q: want evt_ and 26 lower-case base32 characters", e.ID)
	}
	switch {
	case e.Type == "":
		return false, fmt.Errorf("record event %s: no type", e.ID)
	case !json.Valid(e.Data):
		return false, fmt.Errorf("record event %s (%s): its data is not JSON", e.ID, e.Type)
	}
	produced := e.Timestamp
	if produced.IsZero() {
		produced = now
	}
	it := Item{
		PK: kind.Key(e.ID), SK: kind.SKValue, Type: string(e.Type), Solution: e.Solution,
		Data: string(e.Data), ProducedAt: Stamp(produced), Unsent: table.WebhookUnsentFlag, ExpiresAt: now.Add(Retention).Unix(),
	}
	var v any = it
	if kind == table.WebhookCallEvent {
		v = CallItem{Item: it, Source: source}
	}
	item, err := attributevalue.MarshalMap(v)
	if err != nil {
		return false, fmt.Errorf("record event %s: %w", e.ID, err)
	}
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(tableName), Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": table.PK},
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("record event %s (%s): %w", e.ID, e.Type, err)
	}
	return true, nil
}

// Recorder records a call's events and sends none: the relay sends them
// (docs/webhooks.md). A tool function's dispatcher emits through it, so
// that its role needs PutItem on call event items only (table access
// RecordCallWebhookEvents) and no queue permission, and the call's path
// no SendMessage.
type Recorder struct {
	// DB is the DynamoDB client; Table the ledger table's name.
	DB    DB
	Table string
	// Now is the clock of expires_at (and of produced_at for an event
	// without a timestamp); nil: time.Now.
	Now func() time.Time
}

// Emit records ev (RecordCall); an event already recorded is not an
// error, and an event RecordCall refuses is.
func (r *Recorder) Emit(ctx context.Context, ev webhook.Event) error {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	if _, err := RecordCall(ctx, r.DB, r.Table, ev, now()); err != nil {
		return fmt.Errorf("emit: %w", err)
	}
	return nil
}
