package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhook/outbox"
)

// Each item type maps onto its declared kind (table.Conform), and the type
// reads map an item into holds every attribute the kind declares.
func TestItemTypesConformToTheirKinds(t *testing.T) {
	for _, c := range []struct {
		name string
		kind *table.Kind
		item any
	}{
		{"subscriptionItem", table.WebhookSubscription, subscriptionItem{}},
		{"eventItem", table.WebhookEvent, eventItem{}},
		{"callEventItem", table.WebhookCallEvent, callEventItem{}},
		{"attemptItem", table.WebhookAttempt, attemptItem{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := table.Conform(c.kind, c.item); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range reflect.VisibleFields(reflect.TypeOf(c.item)) {
				if f.Anonymous {
					continue // its fields are visible too
				}
				name, _, _ := strings.Cut(f.Tag.Get("dynamodbav"), ",")
				names = append(names, name)
			}
			for _, n := range c.kind.AllNames() {
				if !slices.Contains(names, n) {
					t.Errorf("%s has no field for %s's attribute %s", c.name, c.kind.Name, n)
				}
			}
		})
	}
}

// request is one DynamoDB request as IAM sees it: its action, the kind
// its partition key names or the index it queries, and the attributes it
// names.
type request struct {
	action     table.Action
	kind       *table.Kind
	index      *table.Index
	attributes []string
	returns    string
}

// on names the kind or index a request reaches.
func (q request) on() string {
	switch {
	case q.index != nil:
		return "index " + q.index.Name
	case q.kind != nil:
		return q.kind.Name + " items"
	}
	return "no declared kind"
}

// recorder passes requests to the table and records them.
type recorder struct {
	DB
	reqs []request
}

// kindOf is the declared kind of an item's key: its prefix, then its sort
// key (the kinds sharing WHEVT# differ there).
func kindOf(key map[string]types.AttributeValue) *table.Kind {
	pk, _ := key[table.PK].(*types.AttributeValueMemberS)
	sk, _ := key[table.SK].(*types.AttributeValueMemberS)
	for _, k := range table.Kinds {
		if pk == nil || !strings.HasPrefix(pk.Value, k.Prefix) {
			continue
		}
		if sk == nil || k.SKValue == sk.Value || k.SKPrefix != "" && strings.HasPrefix(sk.Value, k.SKPrefix) {
			return k
		}
	}
	return nil
}

func (r *recorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	names := slices.Concat(slices.Collect(maps.Keys(in.Key)), table.ExpressionAttributes(in.ProjectionExpression, in.ExpressionAttributeNames))
	r.reqs = append(r.reqs, request{action: table.GetItem, kind: kindOf(in.Key), attributes: names})
	return r.DB.GetItem(ctx, in, opts...)
}

func (r *recorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	names := slices.Concat(slices.Collect(maps.Keys(in.Item)), table.ExpressionAttributes(in.ConditionExpression, in.ExpressionAttributeNames))
	r.reqs = append(r.reqs, request{action: table.PutItem, kind: kindOf(in.Item), attributes: names, returns: string(in.ReturnValues)})
	return r.DB.PutItem(ctx, in, opts...)
}

func (r *recorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	names := slices.Concat(slices.Collect(maps.Keys(in.Key)), table.ExpressionAttributes(in.UpdateExpression, in.ExpressionAttributeNames),
		table.ExpressionAttributes(in.ConditionExpression, in.ExpressionAttributeNames))
	r.reqs = append(r.reqs, request{action: table.UpdateItem, kind: kindOf(in.Key), attributes: names, returns: string(in.ReturnValues)})
	return r.DB.UpdateItem(ctx, in, opts...)
}

func (r *recorder) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	var names []string
	for _, e := range []*string{in.KeyConditionExpression, in.FilterExpression, in.ProjectionExpression} {
		names = append(names, table.ExpressionAttributes(e, in.ExpressionAttributeNames)...)
	}
	q := request{action: table.Query, attributes: names}
	if in.IndexName != nil {
		for _, ix := range table.Indexes {
			if ix.Name == aws.ToString(in.IndexName) {
				q.index = ix
			}
		}
	} else {
		q.kind = kindOf(map[string]types.AttributeValue{table.PK: in.ExpressionAttributeValues[":pk"], table.SK: in.ExpressionAttributeValues[":sk"]})
	}
	r.reqs = append(r.reqs, q)
	return r.DB.Query(ctx, in, opts...)
}

// allowedBy reports whether an access of principal p allows q: its
// action on q's kind or index, naming only attributes the access names
// (when it names any), with its ReturnValues.
func allowedBy(p table.Principal, q request) bool {
	for _, a := range table.Of(p) {
		if q.kind == nil && q.index == nil || !a.Allows(p, q.action, q.kind, q.index) {
			continue
		}
		if a.Attributes != nil && slices.ContainsFunc(q.attributes, func(n string) bool { return !slices.Contains(a.Attributes, n) }) {
			continue
		}
		if a.ReturnValues != "" && cmpOr(q.returns, "NONE") != a.ReturnValues {
			continue
		}
		return true
	}
	return false
}

// Each store method makes only requests its callers' principals are
// declared to make (table.Accesses): the action, on the declared kind or
// index, naming only the attributes the access names. A method that names
// one more attribute fails here before it fails on AWS.
func TestRequestsAreTheDeclaredAccesses(t *testing.T) {
	f := newFixture(t)
	rec := &recorder{DB: f.store.db}
	st := New(rec, f.store.table, f.clock.Now)
	ctx := t.Context()
	sub := subscription(t, 1)
	e := event(1, t0)
	call := callEvent(t, "RUN#arn\nCALL#1")
	q := &queue{}
	for _, c := range []struct {
		name string
		by   []table.Principal
		do   func() error
	}{
		{"Subscribe", []table.Principal{table.Webhooks}, func() error { return st.Subscribe(ctx, sub) }},
		{"Subscribe of a taken id", []table.Principal{table.Webhooks}, func() error {
			if err := st.Subscribe(ctx, sub); !errors.Is(err, ErrExists) {
				return fmt.Errorf("got %v", err)
			}
			return nil
		}},
		{"Subscriptions", []table.Principal{table.Webhooks, table.WebhookDelivery}, func() error { _, err := st.Subscriptions(ctx); return err }},
		{"Subscription", []table.Principal{table.Webhooks, table.WebhookDelivery}, func() error { _, _, err := st.Subscription(ctx, sub.ID); return err }},
		{"Rotate", []table.Principal{table.Webhooks}, func() error { return st.Rotate(ctx, sub.ID, sealedFor(2), time.Hour, 1) }},
		{"Disable", []table.Principal{table.Webhooks, table.WebhookDelivery}, func() error { return st.Disable(ctx, sub.ID, "410 Gone") }},
		{"RecordEvent", []table.Principal{table.ReviewRequest, table.ReviewDecision, table.WebhookDelivery}, func() error {
			_, err := st.RecordEvent(ctx, e)
			return err
		}},
		{"RecordEvent of a recorded event", []table.Principal{table.ReviewRequest, table.ReviewDecision, table.WebhookDelivery}, func() error {
			_, err := st.RecordEvent(ctx, e)
			return err
		}},
		{"Unsent", []table.Principal{table.WebhookDelivery}, func() error { _, err := st.Unsent(ctx, t0.Add(time.Hour), 10); return err }},
		{"MarkSent", []table.Principal{table.ReviewRequest, table.WebhookDelivery}, func() error { return st.MarkSent(ctx, e.ID) }},
		{"Emit", []table.Principal{table.ReviewRequest, table.WebhookDelivery}, func() error {
			return (&Emitter{Store: st, Queue: q, QueueURL: queueURL}).Emit(ctx, event(2, t0))
		}},
		{"Relay", []table.Principal{table.WebhookDelivery}, func() error {
			if _, err := st.RecordEvent(ctx, event(3, t0)); err != nil {
				return err
			}
			_, err := Relay(ctx, st, q, queueURL, t0.Add(time.Hour), time.Minute)
			return err
		}},
		{"Event", []table.Principal{table.WebhookDelivery, table.Webhooks}, func() error { _, _, err := st.Event(ctx, e.ID); return err }},
		{"outbox.Recorder.Emit", []table.Principal{table.ToolFunctions}, func() error {
			return (&outbox.Recorder{DB: rec, Table: f.store.table, Now: f.clock.Now}).Emit(ctx, call)
		}},
		{"Event of a call's event", []table.Principal{table.WebhookDelivery, table.Webhooks}, func() error {
			_, ok, err := st.Event(ctx, call.ID)
			if err == nil && !ok {
				return errors.New("not found")
			}
			return err
		}},
		{"Relay of a call's event", []table.Principal{table.WebhookDelivery}, func() error {
			n, err := Relay(ctx, st, q, queueURL, t0.Add(time.Hour), time.Minute)
			if err == nil && n != 1 {
				return fmt.Errorf("relayed %d, want the call's event", n)
			}
			return err
		}},
		{"RecordAttempt", []table.Principal{table.WebhookDelivery}, func() error {
			return st.RecordAttempt(ctx, e.ID, sub.ID, 1, webhook.Attempt{Status: 200, Outcome: "delivered"})
		}},
		{"Attempts", []table.Principal{table.Webhooks}, func() error { _, err := st.Attempts(ctx, e.ID); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec.reqs = nil
			if err := c.do(); err != nil {
				t.Fatal(err)
			}
			if len(rec.reqs) == 0 {
				t.Fatal("no request")
			}
			for _, q := range rec.reqs {
				for _, p := range c.by {
					if !allowedBy(p, q) {
						t.Errorf("%s may not make %s on %s naming %v", p, q.action, q.on(), q.attributes)
					}
				}
			}
		})
	}
}
