package store

import (
	"context"
	"encoding/json"
	"errors"
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
// layout, the kind's only one; callEventItem a table.WebhookCallEvent
// item.
type (
	eventItem     = outbox.Item
	callEventItem = outbox.CallItem
)

// eventKey is the key of event id's item of kind (table.WebhookEvent or
// table.WebhookCallEvent).
func eventKey(kind *table.Kind, id string) map[string]types.AttributeValue {
	return key(kind.Key(id), kind.SKValue)
}

// ErrRefusedCallEvent wraps Event's error for an item under the call
// events' prefix that fails webhook.CheckCallEvent: not an event a
// dispatcher recorded, so that it is never delivered (docs/webhooks.md,
// "Who may record an event").
var ErrRefusedCallEvent = errors.New("refused: not a call's event as a dispatcher records it")

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

// MarkSent records that the event id names (a table.WebhookEvent item)
// was handed to the events queue: one UpdateItem removing unsent (and so
// its webhook-unsent index entry) and setting sent_at, conditional on the
// event existing (ErrNotFound).
func (st *Store) MarkSent(ctx context.Context, id string) error {
	return st.markSent(ctx, ref{id: id})
}

// markSent is MarkSent of the event r names, a call's (the relay's) or
// another.
func (st *Store) markSent(ctx context.Context, r ref) error {
	id := r.id
	if err := checkEventID(id); err != nil {
		return fmt.Errorf("mark event sent: %w", err)
	}
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(st.table), Key: eventKey(r.kind(), id),
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

// Event returns the event id names, and false when there is none: a
// consistent GetItem of its table.WebhookEvent item projecting
// table.WebhookEventRead, and only when there is none, one of its
// table.WebhookCallEvent item projecting table.WebhookCallEventRead. An
// event of review-request, review-decision or webhook-delivery is thus
// read before any call's event of the same id, and a call's event is
// returned only when it passes webhook.CheckCallEvent (an error wrapping
// ErrRefusedCallEvent otherwise). Its Timestamp is produced_at; its
// Source a call's event's source.
func (st *Store) Event(ctx context.Context, id string) (webhook.Event, bool, error) {
	if err := checkEventID(id); err != nil {
		return webhook.Event{}, false, fmt.Errorf("read event: %w", err)
	}
	it, ok, err := st.eventItem(ctx, table.WebhookEvent, id, table.WebhookEventRead)
	if err == nil && !ok {
		it, ok, err = st.eventItem(ctx, table.WebhookCallEvent, id, table.WebhookCallEventRead)
	}
	if err != nil || !ok {
		return webhook.Event{}, false, err
	}
	e := webhook.Event{ID: id, Type: webhook.Type(it.Type), Timestamp: parseStamp(it.ProducedAt), Solution: it.Solution,
		Data: json.RawMessage(it.Data), Source: it.Source}
	if strings.HasPrefix(it.PK, table.WebhookCallEvent.Prefix) {
		if err := webhook.CheckCallEvent(e); err != nil {
			return webhook.Event{}, false, fmt.Errorf("read event %s: %w: %w", id, ErrRefusedCallEvent, err)
		}
	}
	return e, true, nil
}

// eventItem is event id's item of kind, read consistently and projecting
// names (Source "" for a table.WebhookEvent item); false when there is
// none.
func (st *Store) eventItem(ctx context.Context, kind *table.Kind, id string, names []string) (callEventItem, bool, error) {
	placeholders := map[string]string{}
	var proj []string
	for i, a := range names {
		ph := "#a" + strconv.Itoa(i)
		placeholders[ph] = a
		proj = append(proj, ph)
	}
	out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(st.table), Key: eventKey(kind, id), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String(strings.Join(proj, ", ")), ExpressionAttributeNames: placeholders,
	})
	if err != nil {
		return callEventItem{}, false, fmt.Errorf("read event %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return callEventItem{}, false, nil
	}
	var it callEventItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return callEventItem{}, false, fmt.Errorf("read event %s: %w", id, err)
	}
	return it, true, nil
}

// ref names an event item: its id and whether it is a call's
// (table.WebhookCallEvent) or another producer's (table.WebhookEvent).
// An entry of the webhook-unsent index that names no event an id can
// reach (bad: a sort key other than the kinds' EVENT, or an id of another
// shape, which a tool function's role may put under WHCALL#) keeps its
// exact key, so that the relay can take it out of the index.
type ref struct {
	id     string
	call   bool
	bad    bool
	pk, sk string
}

// kind is the item kind r names.
func (r ref) kind() *table.Kind {
	if r.call {
		return table.WebhookCallEvent
	}
	return table.WebhookEvent
}

// Unsent returns the ids of at most limit (1 or more) events recorded and
// not yet marked sent whose produced_at is before before, oldest first:
// a Query of the sparse index table.WebhookUnsent, paged until limit. The
// index is eventually consistent: an event marked sent a moment ago may
// still be listed, and is then sent twice (delivery is at least once;
// receivers dedupe on the event id).
func (st *Store) Unsent(ctx context.Context, before time.Time, limit int32) ([]string, error) {
	refs, err := st.unsent(ctx, before, limit)
	var ids []string
	for _, r := range refs {
		if !r.bad {
			ids = append(ids, r.id)
		}
	}
	return ids, err
}

// unsent is Unsent naming each event's item.
func (st *Store) unsent(ctx context.Context, before time.Time, limit int32) ([]ref, error) {
	if limit < 1 {
		return nil, fmt.Errorf("list unsent events: limit %d: want 1 or more", limit)
	}
	ix := table.WebhookUnsent
	in := &dynamodb.QueryInput{
		TableName: aws.String(st.table), IndexName: aws.String(ix.Name),
		KeyConditionExpression:   aws.String("#unsent = :unsent AND #produced < :before"),
		ProjectionExpression:     aws.String("#pk, #sk"),
		ExpressionAttributeNames: map[string]string{"#unsent": ix.PK, "#produced": ix.SK, "#pk": table.PK, "#sk": table.SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":unsent": n(table.WebhookUnsentFlag), ":before": s(stamp(before)),
		},
		ScanIndexForward: aws.Bool(true),
		Limit:            aws.Int32(limit),
	}
	var refs []ref
	for {
		page, err := st.db.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list unsent events: %w", err)
		}
		for _, raw := range page.Items {
			pk, _ := raw[table.PK].(*types.AttributeValueMemberS)
			sk, _ := raw[table.SK].(*types.AttributeValueMemberS)
			if pk == nil || sk == nil {
				return nil, fmt.Errorf("list unsent events: an index entry without %s or %s", table.PK, table.SK)
			}
			refs = append(refs, refOf(pk.Value, sk.Value))
		}
		if len(page.LastEvaluatedKey) == 0 || int32(len(refs)) >= limit {
			return refs, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
		in.Limit = aws.Int32(limit - int32(len(refs)))
	}
}

// refOf names the event item of key (pk, sk), bad when it is no event's
// item an id reaches.
func refOf(pk, sk string) ref {
	r := ref{pk: pk, sk: sk}
	if id, ok := table.WebhookEvent.ID(pk); ok {
		r.id = id
	} else if id, ok := table.WebhookCallEvent.ID(pk); ok {
		r.id, r.call = id, true
	}
	r.bad = r.id == "" || sk != table.WebhookEvent.SKValue || checkEventID(r.id) != nil
	return r
}

// clear takes the index entry of bad ref r out of the webhook-unsent
// index, sending nothing: one UpdateItem of its exact key removing unsent,
// conditional on the item existing. Only an item under a call events'
// prefix can be bad (no other producer's role writes a malformed one).
func (st *Store) clear(ctx context.Context, r ref) error {
	if !strings.HasPrefix(r.pk, table.WebhookCallEvent.Prefix) {
		return fmt.Errorf("clear %.120q: not a call's event item", r.pk)
	}
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(st.table), Key: key(r.pk, r.sk),
		UpdateExpression:          aws.String("REMOVE #unsent SET #sent = :now"),
		ConditionExpression:       aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames:  map[string]string{"#unsent": "unsent", "#sent": "sent_at", "#pk": table.PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": s(stamp(st.now()))},
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("clear %.120q: %w", r.pk, err)
	}
	return nil
}
