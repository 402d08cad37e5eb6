package sqs_test

import (
	"context"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolgate/toolgate/infra/local/sqs"
)

func TestRedriveMovesDeadLettersBackAndThePollerDeliversThem(t *testing.T) {
	t.Parallel()
	s := sqs.StartForTest(t)
	c := s.Client()
	dlq := createQueue(t, s, "redrive-dlq", sqs.QueueOptions{})
	q := createQueue(t, s, "redrive", sqs.QueueOptions{DeadLetter: &dlq, MaxReceiveCount: 1, VisibilityTimeout: time.Second})
	send(t, c, q, "dead", map[string]types.MessageAttributeValue{
		"kind": {DataType: aws.String("String"), StringValue: aws.String("delivery")},
	})

	// One poller throughout: a receive it has given up on may still take
	// a message on the stand-in (and on SQS). Its function fails until the
	// message has been dead-lettered once, then succeeds.
	var redriven atomic.Bool
	p := run(t, sqs.Poller{Client: c, Queue: q, Invoke: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		if !redriven.Load() {
			return failAll(ctx, ev)
		}
		return events.SQSEventResponse{}, nil
	}})
	if b := p.next(t); len(b.Deleted) != 0 {
		t.Fatalf("the failed delivery deleted %v", b.Deleted)
	}
	waitDepth(t, c, dlq, 1)
	redriven.Store(true)

	moved, err := sqs.Redrive(t.Context(), c, dlq.URL, q.URL, 10)
	if err != nil || moved != 1 {
		t.Fatalf("Redrive: %d, %v; want 1 moved", moved, err)
	}
	if n := depth(t, c, dlq); n != 0 {
		t.Errorf("dead-letter queue holds %d messages after the redrive, want 0", n)
	}
	b := p.next(t)
	if len(b.Event.Records) != 1 || len(b.Deleted) != 1 {
		t.Fatalf("batch of %d records, %d deleted; want the redriven message delivered", len(b.Event.Records), len(b.Deleted))
	}
	r := b.Event.Records[0]
	if r.Body != "dead" || count(t, r) != 1 || aws.ToString(r.MessageAttributes["kind"].StringValue) != "delivery" {
		t.Errorf("redriven message: body %q, receive count %s, kind %v; want its body and attributes, a fresh count",
			r.Body, r.Attributes["ApproximateReceiveCount"], r.MessageAttributes["kind"].StringValue)
	}
}

func TestRedriveMovesAtMostMax(t *testing.T) {
	t.Parallel()
	s := sqs.StartForTest(t)
	c := s.Client()
	dlq := createQueue(t, s, "max-dlq", sqs.QueueOptions{})
	target := createQueue(t, s, "max-target", sqs.QueueOptions{})
	var sent []string
	for _, body := range []string{"m1", "m2", "m3"} {
		send(t, c, dlq, body, nil)
		sent = append(sent, body)
	}
	if moved, err := sqs.Redrive(t.Context(), c, dlq.URL, target.URL, 2); err != nil || moved != 2 {
		t.Fatalf("Redrive max 2: %d, %v", moved, err)
	}
	if moved, err := sqs.Redrive(t.Context(), c, dlq.URL, target.URL, 10); err != nil || moved != 1 {
		t.Fatalf("Redrive of the rest: %d, %v; want 1", moved, err)
	}
	if moved, err := sqs.Redrive(t.Context(), c, dlq.URL, target.URL, 10); err != nil || moved != 0 {
		t.Fatalf("Redrive of an empty queue: %d, %v; want 0", moved, err)
	}
	var got []string
	for range sent {
		got = append(got, aws.ToString(receiveOne(t, c, target).Body))
	}
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(sent, ",") {
		t.Errorf("target holds %v, want %v", got, sent)
	}
	if _, err := sqs.Redrive(t.Context(), c, dlq.URL, target.URL, 0); err == nil || !strings.Contains(err.Error(), "max") {
		t.Errorf("Redrive max 0: %v, want an error naming max", err)
	}
}

// waitDepth waits until q holds n messages, or fails t after within.
func waitDepth(t *testing.T, c *awssqs.Client, q sqs.Queue, n int) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for depth(t, c, q) != n {
		select {
		case <-deadline.C:
			t.Fatalf("%s does not hold %d messages within %v", q.Name, n, within)
		case <-tick.C:
		}
	}
}
