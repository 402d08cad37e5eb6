package sqs_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/sqs"
)

func TestCreateQueueSetsTheRedrivePolicyAndVisibilityTimeout(t *testing.T) {
	s := sqs.StartForTest(t)
	dlq := createQueue(t, s, "created-dlq", sqs.QueueOptions{})
	q := createQueue(t, s, "created", sqs.QueueOptions{DeadLetter: &dlq, MaxReceiveCount: 8, VisibilityTimeout: 90 * time.Second})
	if want := s.Endpoint() + "/" + local.LocalAccountID + "/created"; q.URL != want {
		t.Errorf("URL %q, want %q", q.URL, want)
	}
	if want := "arn:aws:sqs:" + local.Region + ":" + local.LocalAccountID + ":created"; q.ARN != want || q.Name != "created" {
		t.Errorf("queue %+v, want ARN %q", q, want)
	}
	out, err := s.Client().GetQueueAttributes(t.Context(), &awssqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(q.URL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		t.Fatal(err)
	}
	if v := out.Attributes["VisibilityTimeout"]; v != "90" {
		t.Errorf("VisibilityTimeout %q, want 90", v)
	}
	var policy struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     any    `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(out.Attributes["RedrivePolicy"]), &policy); err != nil {
		t.Fatalf("RedrivePolicy %q: %v", out.Attributes["RedrivePolicy"], err)
	}
	if policy.DeadLetterTargetArn != dlq.ARN || policy.MaxReceiveCount == nil {
		t.Errorf("RedrivePolicy %q, want target %s and maxReceiveCount 8", out.Attributes["RedrivePolicy"], dlq.ARN)
	}
}

func TestCreateQueueRefusesOptionsSQSWouldRefuse(t *testing.T) {
	s := sqs.StartForTest(t)
	dlq := createQueue(t, s, "refused-dlq", sqs.QueueOptions{})
	for _, tc := range []struct {
		name  string
		o     sqs.QueueOptions
		field string
	}{
		{"max receive count without a queue", sqs.QueueOptions{MaxReceiveCount: 3}, "MaxReceiveCount"},
		{"queue without max receive count", sqs.QueueOptions{DeadLetter: &dlq}, "MaxReceiveCount"},
		{"max receive count over 1000", sqs.QueueOptions{DeadLetter: &dlq, MaxReceiveCount: 1001}, "MaxReceiveCount"},
		{"dead-letter queue without an ARN", sqs.QueueOptions{DeadLetter: &sqs.Queue{URL: dlq.URL}, MaxReceiveCount: 3}, "ARN"},
		{"visibility over 12 h", sqs.QueueOptions{VisibilityTimeout: 13 * time.Hour}, "VisibilityTimeout"},
		{"visibility of a fraction of a second", sqs.QueueOptions{VisibilityTimeout: 1500 * time.Millisecond}, "VisibilityTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.CreateQueue(t.Context(), "refused", tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), `"refused"`) {
				t.Errorf("CreateQueue: %v, want an error naming the queue and %s", err, tc.field)
			}
		})
	}
}

// TestApproximateNumberOfMessagesCountsOnlyVisibleMessages measures the
// launcher's second correction against the library as published, which
// counts a message in flight in both attributes.
func TestApproximateNumberOfMessagesCountsOnlyVisibleMessages(t *testing.T) {
	for _, tc := range []struct {
		name          string
		start         func(testing.TB) *sqs.Server
		wantAvailable string
	}{
		{"corrected", sqs.StartForTest, "0"},
		{"as published", sqs.StartAsPublishedForTest, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.start(t)
			c := s.Client()
			q := createQueue(t, s, "counted", sqs.QueueOptions{VisibilityTimeout: time.Hour})
			send(t, c, q, "in flight", nil)
			got, err := c.ReceiveMessage(t.Context(), &awssqs.ReceiveMessageInput{QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 1})
			if err != nil || len(got.Messages) != 1 {
				t.Fatalf("receive: %v, %d messages", err, len(got.Messages))
			}
			out, err := c.GetQueueAttributes(t.Context(), &awssqs.GetQueueAttributesInput{
				QueueUrl:       aws.String(q.URL),
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
			})
			if err != nil {
				t.Fatal(err)
			}
			if a, nv := out.Attributes["ApproximateNumberOfMessages"], out.Attributes["ApproximateNumberOfMessagesNotVisible"]; a != tc.wantAvailable || nv != "1" {
				t.Errorf("ApproximateNumberOfMessages %q, NotVisible %q; want %q and 1", a, nv, tc.wantAvailable)
			}
		})
	}
}

// TestReceiveCountComesOnlyThroughAttributeNames measures why Poller asks
// through the deprecated AttributeNames field as well.
func TestReceiveCountComesOnlyThroughAttributeNames(t *testing.T) {
	s := sqs.StartForTest(t)
	c := s.Client()
	q := createQueue(t, s, "attributes", sqs.QueueOptions{VisibilityTimeout: time.Second})
	send(t, c, q, "counted", nil)
	for _, tc := range []struct {
		name string
		in   awssqs.ReceiveMessageInput
		want string
	}{
		{"MessageSystemAttributeNames", awssqs.ReceiveMessageInput{MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}}, ""},
		{"AttributeNames", awssqs.ReceiveMessageInput{AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}}, "2"}, //nolint:staticcheck // what is measured
	} {
		in := tc.in
		in.QueueUrl, in.MaxNumberOfMessages, in.WaitTimeSeconds = aws.String(q.URL), 1, 5
		out, err := c.ReceiveMessage(t.Context(), &in)
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("%s: %v, %v", tc.name, err, out)
		}
		if got := out.Messages[0].Attributes["ApproximateReceiveCount"]; got != tc.want {
			t.Errorf("asked through %s: ApproximateReceiveCount %q, want %q", tc.name, got, tc.want)
		}
	}
}
