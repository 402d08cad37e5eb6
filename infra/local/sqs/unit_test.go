package sqs_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/toolgate/toolgate/infra/local/sqs"
)

func TestDoneFollowsTheEventSourceMappingsPartialBatchRules(t *testing.T) {
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "a"}, {MessageId: "b"}, {MessageId: "c"}}}
	fail := func(ids ...string) events.SQSEventResponse {
		var r events.SQSEventResponse
		for _, id := range ids {
			r.BatchItemFailures = append(r.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		}
		return r
	}
	for _, tc := range []struct {
		name string
		resp events.SQSEventResponse
		err  error
		want string
	}{
		{name: "no failures deletes all", want: "a,b,c"},
		{name: "failed items stay", resp: fail("b"), want: "a,c"},
		{name: "an item reported twice stays", resp: fail("c", "c"), want: "a,b"},
		{name: "every item failed deletes none", resp: fail("a", "b", "c"), want: ""},
		{name: "invocation error deletes none", resp: fail("b"), err: errors.New("function error"), want: ""},
		{name: "empty itemIdentifier fails the batch", resp: fail("b", ""), want: ""},
		{name: "unknown itemIdentifier fails the batch", resp: fail("z"), want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ids []string
			for _, r := range sqs.Done(ev, tc.resp, tc.err) {
				ids = append(ids, r.MessageId)
			}
			if got := strings.Join(ids, ","); got != tc.want {
				t.Errorf("deleted %q, want %q", got, tc.want)
			}
		})
	}
}

func TestQueueRegionIsTheARNsRegion(t *testing.T) {
	for _, tc := range []struct{ arn, want string }{
		{"arn:aws:sqs:eu-west-1:123456789012:q", "eu-west-1"},
		{"arn:aws:sns:eu-west-1:123456789012:q", ""},
		{"http://127.0.0.1:1/000000000000/q", ""},
		{"", ""},
	} {
		if got := (sqs.Queue{ARN: tc.arn}).Region(); got != tc.want {
			t.Errorf("Region of %q = %q, want %q", tc.arn, got, tc.want)
		}
	}
}

func TestPollerRunRefusesAFieldItCannotRunWith(t *testing.T) {
	s := sqs.StartForTest(t)
	q, err := s.CreateQueue(t.Context(), "checked", sqs.QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ok := sqs.Poller{Client: s.Client(), Queue: q, Invoke: succeed}
	for _, tc := range []struct {
		name  string
		edit  func(*sqs.Poller)
		field string
	}{
		{"no client", func(p *sqs.Poller) { p.Client = nil }, "Client"},
		{"no invoke", func(p *sqs.Poller) { p.Invoke = nil }, "Invoke"},
		{"no queue URL", func(p *sqs.Poller) { p.Queue.URL = "" }, "URL"},
		{"queue URL as ARN", func(p *sqs.Poller) { p.Queue.ARN = p.Queue.URL }, "ARN"},
		{"batch of 11", func(p *sqs.Poller) { p.BatchSize = 11 }, "BatchSize"},
		{"negative batch", func(p *sqs.Poller) { p.BatchSize = -1 }, "BatchSize"},
		{"wait of 21 s", func(p *sqs.Poller) { p.WaitTime = 21 * time.Second }, "WaitTime"},
		{"wait of 1.5 s", func(p *sqs.Poller) { p.WaitTime = 1500 * time.Millisecond }, "WaitTime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ok
			tc.edit(&p)
			err := p.Run(t.Context())
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("Run: %v, want an error naming %s", err, tc.field)
			}
		})
	}
}
