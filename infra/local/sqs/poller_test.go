package sqs_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/sqs"
)

// within bounds every wait for the stand-in: long enough never to fail a
// working run, so it orders nothing.
const within = 30 * time.Second

// running is a Poller run by a test: its batches in order, and stop.
type running struct {
	batches chan sqs.Batch
	stop    func()
}

// run starts p on its own goroutine; stop (also a cleanup) ends it and
// fails t when Run returned an error.
func run(t *testing.T, p sqs.Poller) *running {
	t.Helper()
	r := &running{batches: make(chan sqs.Batch, 100)}
	p.OnBatch = func(b sqs.Batch) { r.batches <- b }
	if p.WaitTime == 0 {
		p.WaitTime = time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(within):
				t.Errorf("Run did not return within %v of its context's end", within)
			}
		})
	}
	t.Cleanup(r.stop)
	return r
}

// next is the poller's next batch, or fails t after within.
func (r *running) next(t *testing.T) sqs.Batch {
	t.Helper()
	select {
	case b := <-r.batches:
		return b
	case <-time.After(within):
		t.Fatalf("no batch within %v", within)
		return sqs.Batch{}
	}
}

func send(t *testing.T, c *awssqs.Client, q sqs.Queue, body string, attrs map[string]types.MessageAttributeValue) string {
	t.Helper()
	out, err := c.SendMessage(t.Context(), &awssqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(body), MessageAttributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.MessageId)
}

func createQueue(t *testing.T, s *sqs.Server, name string, o sqs.QueueOptions) sqs.Queue {
	t.Helper()
	q, err := s.CreateQueue(t.Context(), name, o)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// depth is how many messages q holds, visible or not.
func depth(t *testing.T, c *awssqs.Client, q sqs.Queue) int {
	t.Helper()
	out, err := c.GetQueueAttributes(t.Context(), &awssqs.GetQueueAttributesInput{
		QueueUrl: aws.String(q.URL),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible} {
		v, err := strconv.Atoi(out.Attributes[string(k)])
		if err != nil {
			t.Fatalf("%s: %q", k, out.Attributes[string(k)])
		}
		n += v
	}
	return n
}

// receiveOne waits (long polls) for one message on q and deletes it.
func receiveOne(t *testing.T, c *awssqs.Client, q sqs.Queue) types.Message {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		out, err := c.ReceiveMessage(t.Context(), &awssqs.ReceiveMessageInput{
			QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 1, WaitTimeSeconds: 5,
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}, //nolint:staticcheck // the stand-in reads only this
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 1 {
			if _, err := c.DeleteMessage(t.Context(), &awssqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: out.Messages[0].ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
			return out.Messages[0]
		}
	}
	t.Fatalf("no message on %s within %v", q.Name, within)
	return types.Message{}
}

func count(t *testing.T, r events.SQSMessage) int {
	t.Helper()
	n, err := strconv.Atoi(r.Attributes["ApproximateReceiveCount"])
	if err != nil {
		t.Fatalf("ApproximateReceiveCount %q: %v", r.Attributes["ApproximateReceiveCount"], err)
	}
	return n
}

func succeed(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return events.SQSEventResponse{}, nil
}

func failAll(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, r := range ev.Records {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
	}
	return resp, nil
}

func TestPollerInvokesWithTheRecordLambdaBuildsAndDeletesOnSuccess(t *testing.T) {
	t.Parallel()
	s := sqs.StartForTest(t)
	c := s.Client()
	q := createQueue(t, s, "plain", sqs.QueueOptions{})
	id := send(t, c, q, `{"event_id":"evt_1"}`, map[string]types.MessageAttributeValue{
		"kind": {DataType: aws.String("String"), StringValue: aws.String("delivery")},
	})

	p := run(t, sqs.Poller{Client: c, Queue: q, Invoke: succeed})
	b := p.next(t)
	if b.Err != nil || len(b.Event.Records) != 1 {
		t.Fatalf("batch: err %v, %d records", b.Err, len(b.Event.Records))
	}
	r := b.Event.Records[0]
	for _, c := range []struct{ field, got, want string }{
		{"messageId", r.MessageId, id},
		{"body", r.Body, `{"event_id":"evt_1"}`},
		{"eventSource", r.EventSource, "aws:sqs"},
		{"eventSourceARN", r.EventSourceARN, "arn:aws:sqs:" + local.Region + ":" + local.LocalAccountID + ":plain"},
		{"awsRegion", r.AWSRegion, local.Region},
		{"attributes.ApproximateReceiveCount", r.Attributes["ApproximateReceiveCount"], "1"},
		{"messageAttributes.kind", aws.ToString(r.MessageAttributes["kind"].StringValue), "delivery"},
		{"messageAttributes.kind.dataType", r.MessageAttributes["kind"].DataType, "String"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.field, c.got, c.want)
		}
	}
	if r.ReceiptHandle == "" || r.Md5OfBody == "" || r.Attributes["SentTimestamp"] == "" {
		t.Errorf("receiptHandle %q, md5OfBody %q, SentTimestamp %q: want all set", r.ReceiptHandle, r.Md5OfBody, r.Attributes["SentTimestamp"])
	}
	if len(b.Deleted) != 1 || b.Deleted[0] != id {
		t.Errorf("deleted %v, want [%s]", b.Deleted, id)
	}
	if n := depth(t, c, q); n != 0 {
		t.Errorf("queue holds %d messages after a successful batch, want 0", n)
	}
}

func TestPollerDeletesAllButTheReportedBatchItemFailures(t *testing.T) {
	t.Parallel()
	s := sqs.StartForTest(t)
	c := s.Client()
	q := createQueue(t, s, "partial", sqs.QueueOptions{VisibilityTimeout: time.Hour})
	var ids []string
	for _, body := range []string{"ok-1", "fail", "ok-2"} {
		ids = append(ids, send(t, c, q, body, nil))
	}
	// One batch of all three: the messages are there before the first
	// receive, which takes up to BatchSize without waiting.
	p := run(t, sqs.Poller{Client: c, Queue: q, Invoke: func(_ context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, r := range ev.Records {
			if r.Body == "fail" {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
		}
		return resp, nil
	}})
	b := p.next(t)
	if len(b.Event.Records) != 3 {
		t.Fatalf("batch of %d records, want 3", len(b.Event.Records))
	}
	got := map[string]bool{}
	for _, id := range b.Deleted {
		got[id] = true
	}
	if len(got) != 2 || !got[ids[0]] || !got[ids[2]] || got[ids[1]] {
		t.Errorf("deleted %v, want %s and %s", b.Deleted, ids[0], ids[2])
	}
	if n := depth(t, c, q); n != 1 {
		t.Errorf("queue holds %d messages, want the failed one", n)
	}
}

func TestMessageFailingTwiceThenSucceedingIsSeenWithReceiveCounts123(t *testing.T) {
	t.Parallel()
	s := sqs.StartForTest(t)
	c := s.Client()
	q := createQueue(t, s, "retried", sqs.QueueOptions{VisibilityTimeout: time.Second})
	id := send(t, c, q, "once more", nil)

	// First a failed invocation (nothing deleted), then a reported batch
	// item failure, then success.
	attempt := 0
	p := run(t, sqs.Poller{Client: c, Queue: q, Invoke: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		attempt++
		switch attempt {
		case 1:
			return events.SQSEventResponse{}, errors.New("function error")
		case 2:
			return failAll(ctx, ev)
		}
		return succeed(ctx, ev)
	}})
	var counts []int
	for range 3 {
		b := p.next(t)
		if len(b.Event.Records) != 1 || b.Event.Records[0].MessageId != id {
			t.Fatalf("batch %+v, want message %s alone", b.Event.Records, id)
		}
		counts = append(counts, count(t, b.Event.Records[0]))
		if want := len(counts) == 3; (len(b.Deleted) == 1) != want {
			t.Errorf("attempt %d deleted %v", len(counts), b.Deleted)
		}
	}
	if counts[0] != 1 || counts[1] != 2 || counts[2] != 3 {
		t.Errorf("ApproximateReceiveCount %v, want [1 2 3]", counts)
	}
	if n := depth(t, c, q); n != 0 {
		t.Errorf("queue holds %d messages after the successful attempt, want 0", n)
	}
}

// schedule is a per-attempt visibility schedule: after the n-th failed
// attempt the handler sets the message's visibility timeout to
// schedule[n-1], as the webhook delivery function does.
var schedule = []time.Duration{time.Second, 2 * time.Second}

// scheduled is an Invoke that fails every attempt, setting the visibility
// timeout of schedule after each one that has an entry, and records the
// receive counts and when it saw them.
type scheduled struct {
	c      *awssqs.Client
	q      sqs.Queue
	counts []int
	seen   []time.Time
	// succeedAt, when > 0, is the attempt that succeeds.
	succeedAt int
}

func (h *scheduled) invoke(t *testing.T) sqs.Invoke {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		r := ev.Records[0]
		h.counts = append(h.counts, count(t, r))
		h.seen = append(h.seen, time.Now())
		n := len(h.counts)
		if n == h.succeedAt {
			return succeed(ctx, ev)
		}
		if n <= len(schedule) {
			if _, err := h.c.ChangeMessageVisibility(ctx, &awssqs.ChangeMessageVisibilityInput{
				QueueUrl: aws.String(h.q.URL), ReceiptHandle: aws.String(r.ReceiptHandle),
				VisibilityTimeout: int32(schedule[n-1] / time.Second),
			}); err != nil {
				return events.SQSEventResponse{}, err
			}
		}
		return failAll(ctx, ev)
	}
}

func TestChangeMessageVisibilityScheduleDelaysEachRedeliveryAtLeastItsEntry(t *testing.T) {
	t.Parallel()
	s := sqs.StartForTest(t)
	c := s.Client()
	// The queue's own visibility timeout is far longer than the schedule:
	// a redelivery within it comes from ChangeMessageVisibility.
	q := createQueue(t, s, "scheduled", sqs.QueueOptions{VisibilityTimeout: time.Hour})
	send(t, c, q, "retry me", nil)
	h := &scheduled{c: c, q: q, succeedAt: len(schedule) + 1}
	p := run(t, sqs.Poller{Client: c, Queue: q, Invoke: h.invoke(t)})
	for range len(schedule) + 1 {
		p.next(t)
	}
	if want := []int{1, 2, 3}; !equal(h.counts, want) {
		t.Errorf("ApproximateReceiveCount %v, want %v: ChangeMessageVisibility must not count as a receive", h.counts, want)
	}
	for i, d := range schedule {
		if gap := h.seen[i+1].Sub(h.seen[i]); gap < d {
			t.Errorf("attempt %d came %v after attempt %d, before its visibility timeout of %v", i+2, gap, i+1, d)
		}
	}
}

func TestMessageAlwaysFailingMovesToTheDeadLetterQueueAfterMaxReceiveCountDeliveries(t *testing.T) {
	t.Parallel()
	s := sqs.StartForTest(t)
	c := s.Client()
	dlq := createQueue(t, s, "always-dlq", sqs.QueueOptions{})
	const maxReceiveCount = 3
	for _, tc := range []struct {
		name string
		// visibility: the handler sets schedule's visibility timeouts
		// (else the queue's 1 s applies).
		visibility bool
	}{
		{name: "queue's visibility timeout"},
		{name: "ChangeMessageVisibility schedule", visibility: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := createQueue(t, s, "always-"+strconv.FormatBool(tc.visibility), sqs.QueueOptions{
				DeadLetter: &dlq, MaxReceiveCount: maxReceiveCount, VisibilityTimeout: time.Second,
			})
			id := send(t, c, q, "never", nil)
			h := &scheduled{c: c, q: q}
			invoke := h.invoke(t)
			if !tc.visibility {
				invoke = func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
					h.counts = append(h.counts, count(t, ev.Records[0]))
					return failAll(ctx, ev)
				}
			}
			p := run(t, sqs.Poller{Client: c, Queue: q, Invoke: invoke})
			m := receiveOne(t, c, dlq)
			// The message has left q: no delivery can follow.
			p.stop()
			if aws.ToString(m.MessageId) != id || aws.ToString(m.Body) != "never" {
				t.Errorf("dead-letter queue holds %s %q, want %s", aws.ToString(m.MessageId), aws.ToString(m.Body), id)
			}
			if want := []int{1, 2, 3}; !equal(h.counts, want) {
				t.Errorf("delivered with ApproximateReceiveCount %v, want %v", h.counts, want)
			}
		})
	}
}

// TestStandInAsPublishedCountsChangeMessageVisibilityAsAReceive measures
// what the launcher corrects: local-aws-sqs 2.0.2 as published adds one to
// ApproximateReceiveCount on every ChangeMessageVisibility, so a consumer
// following a visibility schedule sees counts 1, 3 and its message moves
// to the dead-letter queue after 2 deliveries of maxReceiveCount 3. Should
// this fail, the library changed and the correction in server.mjs may be
// dropped.
func TestStandInAsPublishedCountsChangeMessageVisibilityAsAReceive(t *testing.T) {
	t.Parallel()
	s := sqs.StartAsPublishedForTest(t)
	c := s.Client()
	dlq := createQueue(t, s, "raw-dlq", sqs.QueueOptions{})
	q := createQueue(t, s, "raw", sqs.QueueOptions{DeadLetter: &dlq, MaxReceiveCount: 3, VisibilityTimeout: time.Second})
	send(t, c, q, "never", nil)
	h := &scheduled{c: c, q: q}
	p := run(t, sqs.Poller{Client: c, Queue: q, Invoke: h.invoke(t)})
	receiveOne(t, c, dlq)
	p.stop()
	if want := []int{1, 3}; !equal(h.counts, want) {
		t.Errorf("as published, delivered with ApproximateReceiveCount %v, want %v", h.counts, want)
	}
}

func TestPollerDeletesNothingWhenABatchItemFailureNamesNoMessageOfTheBatch(t *testing.T) {
	t.Parallel()
	s := sqs.StartForTest(t)
	c := s.Client()
	q := createQueue(t, s, "malformed", sqs.QueueOptions{VisibilityTimeout: time.Hour})
	send(t, c, q, "a", nil)
	p := run(t, sqs.Poller{Client: c, Queue: q, Invoke: func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "not-in-this-batch"}}}, nil
	}})
	if b := p.next(t); len(b.Deleted) != 0 {
		t.Errorf("deleted %v, want none", b.Deleted)
	}
	if n := depth(t, c, q); n != 1 {
		t.Errorf("queue holds %d messages, want 1", n)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
