package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/table"
)

// An inbound event's status: RECEIVED (recorded, its message not yet
// taken by the inbound queue), QUEUED, then STARTED or FAILED.
const (
	StatusReceived = "RECEIVED"
	StatusQueued   = "QUEUED"
	StatusStarted  = "STARTED"
	StatusFailed   = "FAILED"
)

// Bounds of a FAILED event's problems: each says why the run was not
// started, in the consumer's words, never a value of the body.
const (
	MaxProblems     = 32
	MaxProblemBytes = 1000
)

// EventKey names an inbound event: its origin (inboundapi.OriginSource
// or inboundapi.OriginSchedule), the source's or schedule's name, and its
// id: the provider's event id (1 to inbound.MaxEventIDBytes printable
// ASCII), or the firing's scheduled time
// (inboundapi.ScheduledTimeLayout).
type EventKey struct{ Origin, Name, ID string }

// check refuses a key that breaks its origin's rules, before it reaches
// the table (inboundapi.Message.Check's rules).
func (k EventKey) check() error {
	var m inboundapi.Message
	switch k.Origin {
	case inboundapi.OriginSource:
		m = inboundapi.Message{Source: k.Name, EventID: k.ID}
	case inboundapi.OriginSchedule:
		m = inboundapi.Message{Schedule: k.Name, ScheduledTime: k.ID}
	default:
		return fmt.Errorf("event key: origin must be %s or %s: %w", inboundapi.OriginSource, inboundapi.OriginSchedule, ErrInvalid)
	}
	if err := m.Check(); err != nil {
		return fmt.Errorf("event key: %w: %w", err, ErrInvalid)
	}
	return nil
}

// String is the key as its item's partition key writes it, without the
// prefix: "<origin>/<name>/<id>".
func (k EventKey) String() string { return k.Origin + "/" + k.Name + "/" + k.ID }

func (k EventKey) item() map[string]types.AttributeValue {
	return key(table.InboundEventPK(k.Origin, k.Name, k.ID), table.InboundEventSK)
}

// KeyOf is the key of the event a queue message names.
func KeyOf(m inboundapi.Message) EventKey {
	origin, name, id := m.Origin()
	return EventKey{Origin: origin, Name: name, ID: id}
}

// Event is an inbound event as stored.
type Event struct {
	Key EventKey
	// Status is StatusReceived, StatusQueued, StatusStarted or
	// StatusFailed.
	Status string
	// EventType is the provider's event type; "" when none was given.
	EventType string
	// BodySHA256 is "sha256:" and the hex SHA-256 of the body.
	BodySHA256 string
	// ExecutionARN is the run's, once STARTED.
	ExecutionARN string
	// Body is the delivery's exact raw body, held until the event is
	// STARTED or FAILED; nil for a firing, and where a read leaves it out.
	Body []byte
	// ReceivedAt is when the delivery or firing arrived: whole seconds,
	// UTC.
	ReceivedAt time.Time
	// QueuedAt is when the inbound queue took its message (zero before).
	QueuedAt time.Time
	// Problems say why a FAILED event's run was not started.
	Problems []string
}

// eventItem is a table.InboundEvent item as written and read.
type eventItem struct {
	PK           string   `dynamodbav:"pk"`
	SK           string   `dynamodbav:"sk"`
	Status       string   `dynamodbav:"status"`
	EventType    string   `dynamodbav:"event_type,omitempty"`
	Body         []byte   `dynamodbav:"body,omitempty"`
	BodySHA256   string   `dynamodbav:"body_sha256,omitempty"`
	ReceivedAt   string   `dynamodbav:"received_at,omitempty"`
	Unqueued     int      `dynamodbav:"unqueued,omitempty"`
	QueuedAt     string   `dynamodbav:"queued_at,omitempty"`
	ExecutionARN string   `dynamodbav:"execution_arn,omitempty"`
	StartedAt    string   `dynamodbav:"started_at,omitempty"`
	Problems     []string `dynamodbav:"problems,omitempty"`
	FailedAt     string   `dynamodbav:"failed_at,omitempty"`
	ExpiresAt    int64    `dynamodbav:"expires_at,omitempty"`
}

func (it eventItem) event() (Event, error) {
	origin, name, id, ok := table.InboundEventKeyOf(it.PK)
	if !ok || it.SK != table.InboundEventSK {
		return Event{}, fmt.Errorf("item %s/%s is not an inbound event", it.PK, it.SK)
	}
	return Event{Key: EventKey{Origin: origin, Name: name, ID: id}, Status: it.Status, EventType: it.EventType,
		BodySHA256: it.BodySHA256, ExecutionARN: it.ExecutionARN, Body: it.Body, ReceivedAt: parseStamp(it.ReceivedAt),
		QueuedAt: parseStamp(it.QueuedAt), Problems: it.Problems}, nil
}

// BodyDigest is "sha256:" and the hex SHA-256 of body.
func BodyDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Receive records a source's delivery e, RECEIVED with its body and
// unqueued set (so that the relay finds it until MarkQueued): one PutItem
// conditional on attribute_not_exists(pk), expiring at expires. When the
// event is recorded already (a provider's retry, a replay), nothing is
// written and existing is the item as a consistent read finds it, without
// its body; err is nil either way. e needs a source key, a body of 1 to
// inboundapi.MaxBodyBytes bytes and a ReceivedAt; BodySHA256 is computed
// (a different one given is ErrInvalid); ReceivedAt is kept in whole
// seconds.
func (st *Store) Receive(ctx context.Context, e Event, expires time.Time) (existing *Event, err error) {
	if err := e.Key.check(); err != nil {
		return nil, fmt.Errorf("receive event: %w", err)
	}
	switch digest := BodyDigest(e.Body); {
	case e.Key.Origin != inboundapi.OriginSource:
		return nil, fmt.Errorf("receive event %s: a delivery is a source's: %w", e.Key, ErrInvalid)
	case len(e.Body) == 0 || len(e.Body) > inboundapi.MaxBodyBytes:
		return nil, fmt.Errorf("receive event %s: a body of %d bytes, want 1 to %d: %w", e.Key, len(e.Body), inboundapi.MaxBodyBytes, ErrInvalid)
	case e.BodySHA256 != "" && e.BodySHA256 != digest:
		return nil, fmt.Errorf("receive event %s: body_sha256 is not the body's: %w", e.Key, ErrInvalid)
	case e.ReceivedAt.IsZero() || expires.IsZero():
		return nil, fmt.Errorf("receive event %s: no received_at or expires_at: %w", e.Key, ErrInvalid)
	case len(e.EventType) > inbound.MaxEventTypeBytes:
		return nil, fmt.Errorf("receive event %s: event_type longer than %d bytes: %w", e.Key, inbound.MaxEventTypeBytes, ErrInvalid)
	default:
		e.BodySHA256 = digest
	}
	item, err := attributevalue.MarshalMap(eventItem{
		PK: table.InboundEventPK(e.Key.Origin, e.Key.Name, e.Key.ID), SK: table.InboundEventSK, Status: StatusReceived,
		EventType: e.EventType, Body: e.Body, BodySHA256: e.BodySHA256, ReceivedAt: stamp(e.ReceivedAt),
		Unqueued: table.InboundUnqueuedFlag, ExpiresAt: expires.Unix(),
	})
	if err != nil {
		return nil, fmt.Errorf("receive event %s: %w", e.Key, err)
	}
	return st.putOnce(ctx, e.Key, item, table.InboundEvent.Names(table.PK, table.SK, "status", "event_type", "body_sha256", "received_at", "queued_at"))
}

// PutFiring records schedule's firing k (origin inboundapi.OriginSchedule,
// the id its scheduled time), QUEUED without a body, received and queued
// at now: one PutItem conditional on attribute_not_exists(pk), expiring
// at expires. When the firing is recorded already (a redelivered
// message), nothing is written and existing is the item as a consistent
// read finds it; err is nil either way.
func (st *Store) PutFiring(ctx context.Context, k EventKey, now, expires time.Time) (existing *Event, err error) {
	if err := k.check(); err != nil {
		return nil, fmt.Errorf("put firing: %w", err)
	}
	if k.Origin != inboundapi.OriginSchedule {
		return nil, fmt.Errorf("put firing %s: a firing is a schedule's: %w", k, ErrInvalid)
	}
	if now.IsZero() || expires.IsZero() {
		return nil, fmt.Errorf("put firing %s: no time or expires_at: %w", k, ErrInvalid)
	}
	item, err := attributevalue.MarshalMap(eventItem{
		PK: table.InboundEventPK(k.Origin, k.Name, k.ID), SK: table.InboundEventSK, Status: StatusQueued,
		ReceivedAt: stamp(now), QueuedAt: stamp(now), ExpiresAt: expires.Unix(),
	})
	if err != nil {
		return nil, fmt.Errorf("put firing %s: %w", k, err)
	}
	return st.putOnce(ctx, k, item, nil)
}

// putOnce puts item unless its key exists; then it reads the existing
// item consistently, projecting names (nil: whole).
func (st *Store) putOnce(ctx context.Context, k EventKey, item map[string]types.AttributeValue, names []string) (*Event, error) {
	_, err := st.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(st.table), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(#pk)"), ExpressionAttributeNames: map[string]string{"#pk": table.PK},
	})
	switch {
	case err == nil:
		return nil, nil
	case !isConditionFailed(err):
		return nil, fmt.Errorf("record event %s: %w", k, err)
	}
	e, err := st.event(ctx, k, names)
	if err != nil {
		return nil, fmt.Errorf("record event %s: its condition failed, then: %w", k, err)
	}
	return &e, nil
}

// event is a consistent GetItem of event k, projecting names (nil: whole).
func (st *Store) event(ctx context.Context, k EventKey, names []string) (Event, error) {
	in := &dynamodb.GetItemInput{TableName: aws.String(st.table), Key: k.item(), ConsistentRead: aws.Bool(true)}
	if len(names) > 0 {
		in.ProjectionExpression, in.ExpressionAttributeNames = projection(names)
	}
	out, err := st.db.GetItem(ctx, in)
	if err != nil {
		return Event{}, fmt.Errorf("read event %s: %w", k, err)
	}
	if len(out.Item) == 0 {
		return Event{}, fmt.Errorf("read event %s: %w", k, ErrNotFound)
	}
	var it eventItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return Event{}, fmt.Errorf("read event %s: %w", k, err)
	}
	return it.event()
}

// Event reads event k whole, its body with it while it holds one: a
// consistent GetItem (inbound-start); ErrNotFound when there is none.
func (st *Store) Event(ctx context.Context, k EventKey) (Event, error) {
	if err := k.check(); err != nil {
		return Event{}, fmt.Errorf("read event: %w", err)
	}
	return st.event(ctx, k, nil)
}

// MarkQueued records that the inbound queue took event k's message: one
// UpdateItem RECEIVED to QUEUED, setting queued_at now and removing
// unqueued (and with it the inbound-unqueued entry), conditional on the
// event being RECEIVED. An event past RECEIVED (queued by the relay or a
// retry, or already started) is left as it is and is no error;
// ErrNotFound when there is no event.
func (st *Store) MarkQueued(ctx context.Context, k EventKey, now time.Time) error {
	if err := k.check(); err != nil {
		return fmt.Errorf("mark event queued: %w", err)
	}
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(st.table), Key: k.item(),
		UpdateExpression:         aws.String("SET #status = :queued, #queued_at = :now REMOVE #unqueued"),
		ConditionExpression:      aws.String("#status = :received"),
		ExpressionAttributeNames: map[string]string{"#status": "status", "#queued_at": "queued_at", "#unqueued": "unqueued"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":queued": s(StatusQueued), ":received": s(StatusReceived), ":now": s(stamp(now)),
		},
	})
	if isConditionFailed(err) {
		if _, err := st.event(ctx, k, table.InboundEvent.Names(table.PK, table.SK, "status")); err != nil {
			return fmt.Errorf("mark event queued: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("mark event %s queued: %w", k, err)
	}
	return nil
}

// MarkStarted records that event k's run started as executionARN: one
// UpdateItem to STARTED, setting execution_arn and started_at now and
// removing the body and unqueued, conditional on the event being RECEIVED
// or QUEUED. An event STARTED as that execution already is no error;
// STARTED as another or FAILED is ErrConflict; ErrNotFound when there is
// no event.
func (st *Store) MarkStarted(ctx context.Context, k EventKey, executionARN string, now time.Time) error {
	if err := k.check(); err != nil {
		return fmt.Errorf("mark event started: %w", err)
	}
	if executionARN == "" {
		return fmt.Errorf("mark event %s started: no execution ARN: %w", k, ErrInvalid)
	}
	return st.finish(ctx, k, "SET #status = :to, #arn = :arn, #at = :now REMOVE #body, #unqueued",
		map[string]string{"#arn": "execution_arn", "#at": "started_at"},
		map[string]types.AttributeValue{":to": s(StatusStarted), ":arn": s(executionARN), ":now": s(stamp(now))},
		func(cur Event) bool { return cur.Status == StatusStarted && cur.ExecutionARN == executionARN })
}

// MarkFailed records that event k's run was not started, and why
// (problems: 1 to MaxProblems, each 1 to MaxProblemBytes bytes, never a
// value of the body): one UpdateItem to FAILED, setting problems and
// failed_at now and removing the body and unqueued, conditional on the
// event being RECEIVED or QUEUED. An event FAILED already is no error
// (its first problems stay); STARTED is ErrConflict; ErrNotFound when
// there is no event.
func (st *Store) MarkFailed(ctx context.Context, k EventKey, problems []string, now time.Time) error {
	if err := k.check(); err != nil {
		return fmt.Errorf("mark event failed: %w", err)
	}
	if len(problems) == 0 || len(problems) > MaxProblems {
		return fmt.Errorf("mark event %s failed: %d problems, want 1 to %d: %w", k, len(problems), MaxProblems, ErrInvalid)
	}
	for i, p := range problems {
		if p == "" || len(p) > MaxProblemBytes {
			return fmt.Errorf("mark event %s failed: problem %d of %d bytes, want 1 to %d: %w", k, i+1, len(p), MaxProblemBytes, ErrInvalid)
		}
	}
	list, err := attributevalue.Marshal(problems)
	if err != nil {
		return fmt.Errorf("mark event %s failed: %w", k, err)
	}
	return st.finish(ctx, k, "SET #status = :to, #problems = :problems, #at = :now REMOVE #body, #unqueued",
		map[string]string{"#problems": "problems", "#at": "failed_at"},
		map[string]types.AttributeValue{":to": s(StatusFailed), ":problems": list, ":now": s(stamp(now))},
		func(cur Event) bool { return cur.Status == StatusFailed })
}

// finish moves event k from RECEIVED or QUEUED to its end by update; when
// the condition fails, the event as read is no error if done says so.
func (st *Store) finish(ctx context.Context, k EventKey, update string, names map[string]string, values map[string]types.AttributeValue,
	done func(Event) bool) error {
	names["#status"], names["#body"], names["#unqueued"] = "status", "body", "unqueued"
	values[":received"], values[":queued"] = s(StatusReceived), s(StatusQueued)
	_, err := st.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(st.table), Key: k.item(), UpdateExpression: aws.String(update),
		ConditionExpression:      aws.String("#status IN (:received, :queued)"),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
	if isConditionFailed(err) {
		cur, err := st.event(ctx, k, nil)
		if err != nil {
			return fmt.Errorf("finish event: %w", err)
		}
		if done(cur) {
			return nil
		}
		return fmt.Errorf("finish event %s: it is %s: %w", k, cur.Status, ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("finish event %s: %w", k, err)
	}
	return nil
}

// Unqueued returns the keys of at most limit events still RECEIVED
// (unqueued set) that were received before before, oldest first: a Query
// of the sparse index inbound-unqueued, page after page, the keys only.
// The relay queues each and marks it (MarkQueued).
func (st *Store) Unqueued(ctx context.Context, before time.Time, limit int) ([]EventKey, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []EventKey
	var start map[string]types.AttributeValue
	for len(out) < limit {
		q, err := st.db.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(st.table), IndexName: aws.String(table.InboundUnqueued.Name),
			KeyConditionExpression:   aws.String("#flag = :flag AND #at < :before"),
			ExpressionAttributeNames: map[string]string{"#flag": table.InboundUnqueued.PK, "#at": table.InboundUnqueued.SK},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":flag": n(table.InboundUnqueuedFlag), ":before": s(stamp(before)),
			},
			ScanIndexForward: aws.Bool(true), Limit: aws.Int32(int32(min(limit-len(out), 100))), ExclusiveStartKey: start,
		})
		if err != nil {
			return nil, fmt.Errorf("list unqueued events: %w", err)
		}
		for _, item := range q.Items {
			pk, _ := item[table.PK].(*types.AttributeValueMemberS)
			if pk == nil {
				continue
			}
			if origin, name, id, ok := table.InboundEventKeyOf(pk.Value); ok && len(out) < limit {
				out = append(out, EventKey{Origin: origin, Name: name, ID: id})
			}
		}
		if start = q.LastEvaluatedKey; len(start) == 0 {
			break
		}
	}
	return out, nil
}

// ExpiresAt is an event item's end: retentionDays (EnvRetentionDays,
// inboundapi.MinRetentionDays to MaxRetentionDays) days after now.
func ExpiresAt(now time.Time, retentionDays int) time.Time {
	return now.Add(time.Duration(retentionDays) * 24 * time.Hour)
}
