package sources

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolgate/toolgate/infra/local/sqs"
	"github.com/toolgate/toolgate/shared/inboundapi"
)

// dlq list shows the inbound dead-letter queue's messages by their event
// or firing, and leaves them there, visible; dlq redrive moves each back
// to the inbound queue, unchanged, and empties the dead-letter queue.
// On the SQS stand-in.
func TestDLQListShowsAndRedriveMovesTheInboundDeadLetters(t *testing.T) {
	e := newEnv(t, false)
	srv := sqs.StartForTest(t)
	dlq, err := srv.CreateQueue(t.Context(), "toolgate-test-inbound-dlq", sqs.QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := srv.CreateQueue(t.Context(), "toolgate-test-inbound", sqs.QueueOptions{DeadLetter: &dlq, MaxReceiveCount: 5})
	if err != nil {
		t.Fatal(err)
	}
	client := srv.Client()
	e.svc.Queue, e.svc.InboundQueue, e.svc.DLQ = client, in.URL, dlq.URL
	bodies := []string{string(inboundapi.SourceMessage("billing", "evt_1").Encode()),
		string(inboundapi.FiringMessage("nightly", time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)).Encode())}
	for _, b := range bodies {
		if _, err := client.SendMessage(t.Context(), &awssqs.SendMessageInput{QueueUrl: aws.String(dlq.URL), MessageBody: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	list := func() inboundapi.DLQResult {
		t.Helper()
		out, code, msg := e.direct(t, inboundapi.DirectRequest{Action: inboundapi.ActionDLQList, Proof: e.proof(t, operator, inboundapi.DLQListBinding())})
		var res inboundapi.DLQResult
		if code != "" || json.Unmarshal(out, &res) != nil {
			t.Fatalf("dlq list: %s %s %s", out, code, msg)
		}
		return res
	}
	for range 2 { // the listing leaves them visible
		res := list()
		var got []string
		for _, m := range res.Messages {
			got = append(got, string(m.Message.Encode()))
			if m.SentAt == "" {
				t.Errorf("%+v: no sent time", m)
			}
		}
		slices.Sort(got)
		if want := slices.Sorted(slices.Values(bodies)); !slices.Equal(got, want) || res.More {
			t.Fatalf("listed %v, want %v", got, want)
		}
	}
	if _, code, _ := e.direct(t, inboundapi.DirectRequest{Action: inboundapi.ActionDLQRedrive, Proof: e.proof(t, stranger, inboundapi.RedriveBinding())}); code != inboundapi.CodeRefused {
		t.Fatalf("a stranger's redrive: %s", code)
	}
	out, code, msg := e.direct(t, inboundapi.DirectRequest{Action: inboundapi.ActionDLQRedrive, Proof: e.proof(t, operator, inboundapi.RedriveBinding())})
	var res inboundapi.RedriveResult
	if code != "" || json.Unmarshal(out, &res) != nil || res.Moved != 2 {
		t.Fatalf("redrive: %s %s %s", out, code, msg)
	}
	if left := list(); len(left.Messages) != 0 {
		t.Fatalf("the dead-letter queue still holds %+v", left.Messages)
	}
	got, err := client.ReceiveMessage(t.Context(), &awssqs.ReceiveMessageInput{QueueUrl: aws.String(in.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	var moved []string
	for _, m := range got.Messages {
		moved = append(moved, aws.ToString(m.Body))
	}
	slices.Sort(moved)
	if want := slices.Sorted(slices.Values(bodies)); !slices.Equal(moved, want) {
		t.Fatalf("the inbound queue got %v, want %v", moved, want)
	}
}
