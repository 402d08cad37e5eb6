package store

import (
	"context"
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
)

// maxAttempt is the largest attempt number a sort key holds in
// table.WebhookAttemptDigits digits.
const maxAttempt = 999

// attemptItem is a table.WebhookAttempt item as written and read.
type attemptItem struct {
	PK         string `dynamodbav:"pk"`
	SK         string `dynamodbav:"sk"`
	StatusCode int    `dynamodbav:"status_code"`
	LatencyMS  int64  `dynamodbav:"latency_ms"`
	Outcome    string `dynamodbav:"outcome"`
	ErrorClass string `dynamodbav:"error_class,omitempty"`
	At         string `dynamodbav:"at"`
	ExpiresAt  int64  `dynamodbav:"expires_at,omitempty"`
}

// AttemptRow is one recorded delivery attempt of an event: to which
// subscription, its number (1 the first; the deliveries queue's
// ApproximateReceiveCount), when it was recorded, and the attempt.
type AttemptRow struct {
	SubscriptionID string
	N              int
	At             time.Time
	webhook.Attempt
}

// RecordAttempt records attempt n (1 to 999) of delivering event eventID
// to subscription subID: one PutItem of its status code, latency (whole
// ms), outcome and error class, never a body or a URL; at is the store's
// clock, expires_at that and Retention. A second record of the same
// attempt number replaces the first.
func (st *Store) RecordAttempt(ctx context.Context, eventID, subID string, n int, a webhook.Attempt) error {
	if err := checkEventID(eventID); err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	if err := checkSubscriptionID(subID); err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	if n < 1 || n > maxAttempt {
		return fmt.Errorf("record attempt of %s to %s: attempt %d: want 1 to %d", eventID, subID, n, maxAttempt)
	}
	now := st.now()
	item, err := attributevalue.MarshalMap(attemptItem{
		PK: table.WebhookAttempt.Key(eventID), SK: table.WebhookAttemptSK(subID, n), StatusCode: a.Status,
		LatencyMS: a.Latency.Milliseconds(), Outcome: string(a.Outcome), ErrorClass: a.ErrorClass, At: stamp(now),
		ExpiresAt: now.Add(Retention).Unix(),
	})
	if err != nil {
		return fmt.Errorf("record attempt %d of %s to %s: %w", n, eventID, subID, err)
	}
	if _, err := st.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(st.table), Item: item}); err != nil {
		return fmt.Errorf("record attempt %d of %s to %s: %w", n, eventID, subID, err)
	}
	return nil
}

// Attempts returns every recorded attempt to deliver event eventID, by
// subscription id and then attempt number: one consistent Query of the
// event's partition for sort keys starting table.WebhookAttemptSKPrefix,
// projecting table.WebhookDeliveriesRead (never the event's data), paged.
func (st *Store) Attempts(ctx context.Context, eventID string) ([]AttemptRow, error) {
	if err := checkEventID(eventID); err != nil {
		return nil, fmt.Errorf("read attempts: %w", err)
	}
	names := map[string]string{"#pk": table.PK, "#sk": table.SK}
	var proj []string
	for i, a := range table.WebhookDeliveriesRead {
		ph := "#a" + strconv.Itoa(i)
		names[ph] = a
		proj = append(proj, ph)
	}
	in := &dynamodb.QueryInput{
		TableName:                aws.String(st.table),
		KeyConditionExpression:   aws.String("#pk = :pk AND begins_with(#sk, :sk)"),
		ProjectionExpression:     aws.String(strings.Join(proj, ", ")),
		ExpressionAttributeNames: names,
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": s(table.WebhookAttempt.Key(eventID)), ":sk": s(table.WebhookAttemptSKPrefix),
		},
		ConsistentRead: aws.Bool(true),
	}
	var out []AttemptRow
	for {
		page, err := st.db.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("read attempts of %s: %w", eventID, err)
		}
		for _, raw := range page.Items {
			var it attemptItem
			if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
				return nil, fmt.Errorf("read attempts of %s: %w", eventID, err)
			}
			sub, num, ok := splitAttemptSK(it.SK)
			if !ok {
				return nil, fmt.Errorf("read attempts of %s: sort key %q is not an attempt's", eventID, it.SK)
			}
			out = append(out, AttemptRow{SubscriptionID: sub, N: num, At: parseStamp(it.At), Attempt: webhook.Attempt{
				Status: it.StatusCode, Latency: time.Duration(it.LatencyMS) * time.Millisecond,
				Outcome: webhook.Outcome(it.Outcome), ErrorClass: it.ErrorClass,
			}})
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// splitAttemptSK reads "ATTEMPT#<subscription id>#<n>".
func splitAttemptSK(sk string) (subID string, n int, ok bool) {
	rest, ok := strings.CutPrefix(sk, table.WebhookAttemptSKPrefix)
	if !ok {
		return "", 0, false
	}
	i := strings.LastIndexByte(rest, '#')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(rest[i+1:])
	return rest[:i], n, err == nil
}
