package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhook/outbox"
)

// eventItem is a table.WebhookEvent item as written and read: outbox's
// layout, the kind's only one.
type eventItem = outbox.Item

func eventKey(id string) map[string]types.AttributeValue {
	return key(table.WebhookEvent.Key(id), table.WebhookEvent.SKValue)
}

// RecordEvent records e once (outbox.Record, at the store's clock): one
// PutItem conditional on attribute_not_exists(pk), its id the dedupe key,
// with unsent set (table.WebhookUnsentFlag), which puts it in the
// webhook-unsent index until MarkSent. It reports whether this call
// recorded it: false, with no error, when an event of the id was already
// there (a retried producer, a second status-change event), which the
// caller must then not send. produced_at is e.Timestamp (the store's clock
// when zero), whole seconds; expires_at the store's clock and Retention.
// e needs an id (evt_ and 26 base32 characters), a type, and Data that is
// JSON.
func (st *Store) RecordEvent(ctx context.Context, e webhook.Event) (bool, error) {
	return outbox.Record(ctx, st.db, st.table, e, st.now())
}

// MarkSent records that the event id names was handed to the events
// queue: one UpdateItem removing unsent (and so its webhook-unsent index
// entry) and setting sent_at, conditional on the event existing
// (ErrNotFound).
func (st *Store) MarkSent(ctx context.Context, id string) error {
	if err := checkEventID(id); err != nil {
		return fmt.Errorf("mark event sent: %w", err)
	}
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(st.table), Key: eventKey(id),
		UpdateExpression:          aws.String("REMOVE #unsent SET #sent = :now"),
		ConditionExpression:       aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames:  map[string]string{"#unsent": "unsent", "#sent": "sent_at", "#pk": table.PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": s(stamp(st.now()))},
	})
	switch {
	case isConditionFailed(err):
		return fmt.Errorf("mark event %s sent: %w", id, ErrNotFound)
	case err != nil:
		return fmt.Errorf("mark event %s sent: %w", id, err)
	}
	return nil
}

// Event returns the event id names (a consistent GetItem projecting
// table.WebhookEventRead), and false when there is none. Its Timestamp is
// produced_at.
func (st *Store) Event(ctx context.Context, id string) (webhook.Event, bool, error) {
	if err := checkEventID(id); err != nil {
		return webhook.Event{}, false, fmt.Errorf("read event: %w", err)
	}
	names := map[string]string{}
	var proj []string
	for i, a := range table.WebhookEventRead {
		ph := "#a" + strconv.Itoa(i)
		names[ph] = a
		proj = append(proj, ph)
	}
	out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(st.table), Key: eventKey(id), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String(strings.Join(proj, ", ")), ExpressionAttributeNames: names,
	})
	if err != nil {
		return webhook.Event{}, false, fmt.Errorf("read event %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return webhook.Event{}, false, nil
	}
	var it eventItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return webhook.Event{}, false, fmt.Errorf("read event %s: %w", id, err)
	}
	return webhook.Event{ID: id, Type: webhook.Type(it.Type), Timestamp: parseStamp(it.ProducedAt), Solution: it.Solution,
		Data: json.RawMessage(it.Data)}, true, nil
}

// Unsent returns the ids of at most limit (1 or more) events recorded and
// not yet marked sent whose produced_at is before before, oldest first:
// a Query of the sparse index table.WebhookUnsent, paged until limit. The
// index is eventually consistent: an event marked sent a moment ago may
// still be listed, and is then sent twice (delivery is at least once;
// receivers dedupe on the event id).
func (st *Store) Unsent(ctx context.Context, before time.Time, limit int32) ([]string, error) {
	if limit < 1 {
		return nil, fmt.Errorf("list unsent events: limit %d: want 1 or more", limit)
	}
	ix := table.WebhookUnsent
	in := &dynamodb.QueryInput{
		TableName: aws.String(st.table), IndexName: aws.String(ix.Name),
		KeyConditionExpression:   aws.String("#unsent = :unsent AND #produced < :before"),
		ProjectionExpression:     aws.String("#pk"),
		ExpressionAttributeNames: map[string]string{"#unsent": ix.PK, "#produced": ix.SK, "#pk": table.PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":unsent": n(table.WebhookUnsentFlag), ":before": s(stamp(before)),
		},
		ScanIndexForward: aws.Bool(true),
		Limit:            aws.Int32(limit),
	}
	var ids []string
	for {
		page, err := st.db.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list unsent events: %w", err)
		}
		for _, raw := range page.Items {
			pk, _ := raw[table.PK].(*types.AttributeValueMemberS)
			if pk == nil {
				return nil, fmt.Errorf("list unsent events: an index entry without %s", table.PK)
			}
			id, ok := table.WebhookEvent.ID(pk.Value)
			if !ok {
				return nil, fmt.Errorf("list unsent events: %q is not an event's key", pk.Value)
			}
			ids = append(ids, id)
		}
		if len(page.LastEvaluatedKey) == 0 || int32(len(ids)) >= limit {
			return ids, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
		in.Limit = aws.Int32(limit - int32(len(ids)))
	}
}
