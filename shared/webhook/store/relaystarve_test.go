package store

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/webhook/outbox"
)

// A tool function's role may PutItem any item whose partition key starts
// with WHCALL# (dynamodb:LeadingKeys WHCALL#*), with the attributes of
// WebhookCallEventRecorded: unsent and produced_at among them, and any
// sort key. An item whose sort key is not EVENT, or whose id is not an
// event id, enters the webhook-unsent index, but the relay can never mark
// it sent (markSent updates the EVENT item, or refuses the id). Put
// RelayLimit of them with the oldest produced_at, and every run of the
// relay reads only them, oldest first: no other call's event (which only
// the relay sends) is ever sent again. One team's tool function must not
// be able to suppress every other event the relay hands over.
func TestRelayIsNotStarvedByCallItemsItCannotMarkSent(t *testing.T) {
	f := newFixture(t)
	for i := 0; i < RelayLimit; i++ {
		pk := table.WebhookCallEvent.Key(evtID(10_000 + i))
		sk := "FORGED"
		if i%2 == 1 {
			// Or an id that is no event's: markSent refuses it.
			pk, sk = table.WebhookCallEvent.Key(fmt.Sprintf("x%d", i)), table.WebhookCallEvent.SKValue
		}
		item, err := attributevalue.MarshalMap(callEventItem{Item: eventItem{PK: pk, SK: sk, Type: "call.unknown",
			Data: `{}`, ProducedAt: "1970-01-01T00:00:00Z", Unsent: table.WebhookUnsentFlag}, Source: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.store.db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(f.store.table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	// Another team's dispatcher records a real call's event: only the
	// relay sends it.
	real := callEvent(t, "RUN#arn\nCALL#1")
	if err := (&outbox.Recorder{DB: f.store.db, Table: f.store.table, Now: f.clock.Now}).Emit(t.Context(), real); err != nil {
		t.Fatal(err)
	}
	q := &queue{}
	for run := 0; run < 3; run++ {
		_, _ = Relay(t.Context(), f.store, q, queueURL, t0.Add(time.Duration(run+1)*time.Hour), time.Minute)
	}
	if ids := q.ids(t); !slices.Contains(ids, real.ID) {
		t.Errorf("after 3 relay runs the real call event %s was never sent (%d messages, all naming forged items)", real.ID, len(ids))
	}
}
