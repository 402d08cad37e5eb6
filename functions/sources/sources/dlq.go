package sources

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolgate/toolgate/shared/inboundapi"
)

// Queue is the SQS client: the inbound dead-letter queue is read,
// released and emptied into the inbound queue.
type Queue interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// MaxDLQ bounds the messages one dlq list or dlq redrive handles
// (inboundapi.MaxDLQ), so that it ends well within the function's
// timeout.
const MaxDLQ = inboundapi.MaxDLQ

// dlqVisibility is how long dlq list and redrive hold the messages they
// received, in seconds: dlq list releases them at once after.
const dlqVisibility = 30

// dlqWait is each receive's WaitTimeSeconds: a long poll asks every SQS
// server, so that an empty answer means an empty queue (SQS Developer
// Guide, "Amazon SQS short and long polling").
const dlqWait = 1

// checkQueues refuses dlq list and redrive when the function has no
// queues configured.
func (s *Service) checkQueues() error {
	if s.Queue == nil || s.DLQ == "" || s.InboundQueue == "" {
		return &Error{Code: inboundapi.CodeRefused, Message: "this function has no inbound queues configured (" + inboundapi.EnvQueue + ", " + inboundapi.EnvDLQ + ")"}
	}
	return nil
}

// receiveDLQ receives up to limit messages of the dead-letter queue, ten
// at a time, until it answers none; more reports that the bound was
// reached.
func (s *Service) receiveDLQ(ctx context.Context, limit int) (msgs []types.Message, more bool, err error) {
	for len(msgs) < limit {
		out, err := s.Queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(s.DLQ), MaxNumberOfMessages: int32(min(10, limit-len(msgs))), VisibilityTimeout: dlqVisibility,
			WaitTimeSeconds: dlqWait,
			// The SQS stand-in answers ApproximateReceiveCount only through
			// the older AttributeNames; AWS through either.
			AttributeNames:              []types.QueueAttributeName{"ApproximateReceiveCount", "SentTimestamp"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount, types.MessageSystemAttributeNameSentTimestamp}})
		if err != nil {
			return msgs, false, err
		}
		if len(out.Messages) == 0 {
			return msgs, false, nil
		}
		msgs = append(msgs, out.Messages...)
	}
	return msgs, true, nil
}

// release makes msgs visible again at once (visibility 0), so that a
// redrive right after a listing finds them.
func (s *Service) release(ctx context.Context, msgs []types.Message) {
	for _, m := range msgs {
		if _, err := s.Queue.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(s.DLQ), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0}); err != nil {
			s.log().WarnContext(ctx, "dead-letter message not released", "message_id", aws.ToString(m.MessageId), "error", err.Error())
		}
	}
}

// dlqMessage is m as a listing shows it: an event's source and id, or a
// firing's schedule and scheduled time; a body that is neither shows
// them empty. A message carries no body of an event, only its key.
func dlqMessage(m types.Message) inboundapi.DLQMessage {
	var d inboundapi.Message
	_ = json.Unmarshal([]byte(aws.ToString(m.Body)), &d)
	out := inboundapi.DLQMessage{Message: d}
	out.ReceiveCount, _ = strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	if ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		out.SentAt = time.UnixMilli(ms).UTC().Format(time.RFC3339)
	}
	return out
}

// DLQList lists the messages in the inbound dead-letter queue (at most
// MaxDLQ), then makes them visible again at once.
func (s *Service) DLQList(ctx context.Context, proof string) (*inboundapi.DLQResult, error) {
	if _, err := s.authorize(ctx, proof, inboundapi.DLQListBinding()); err != nil {
		return nil, err
	}
	if err := s.checkQueues(); err != nil {
		return nil, err
	}
	msgs, more, err := s.receiveDLQ(ctx, MaxDLQ)
	s.release(ctx, msgs)
	if err != nil {
		return nil, unavailable("the inbound dead-letter queue could not be read", err)
	}
	out := &inboundapi.DLQResult{Messages: []inboundapi.DLQMessage{}, More: more}
	for _, m := range msgs {
		out.Messages = append(out.Messages, dlqMessage(m))
	}
	return out, nil
}

// DLQRedrive moves the inbound dead-letter queue's messages back to the
// inbound queue (at most MaxDLQ), where the consumer tries each again:
// each is sent back, then deleted from the dead-letter queue (a failure
// between the two leaves it in both; the consumer starts one run per
// event or firing whatever it receives, by the run's name).
func (s *Service) DLQRedrive(ctx context.Context, proof string) (*inboundapi.RedriveResult, error) {
	who, err := s.authorize(ctx, proof, inboundapi.RedriveBinding())
	if err != nil {
		return nil, err
	}
	if err := s.checkQueues(); err != nil {
		return nil, err
	}
	msgs, more, err := s.receiveDLQ(ctx, MaxDLQ)
	if err != nil {
		s.release(ctx, msgs)
		return nil, unavailable("the inbound dead-letter queue could not be read: repeat the redrive", err)
	}
	res := &inboundapi.RedriveResult{More: more}
	for i, m := range msgs {
		if _, err := s.Queue.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(s.InboundQueue), MessageBody: m.Body}); err != nil {
			s.release(ctx, msgs[i:])
			return nil, unavailable(fmt.Sprintf("%d moved, then the inbound queue failed: repeat the redrive", res.Moved), err)
		}
		if _, err := s.Queue.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(s.DLQ), ReceiptHandle: m.ReceiptHandle}); err != nil {
			s.release(ctx, msgs[i+1:])
			return nil, unavailable(fmt.Sprintf("%d moved, then the dead-letter queue failed (the last one may be tried twice): repeat the redrive", res.Moved+1), err)
		}
		res.Moved++
	}
	s.log().InfoContext(ctx, "inbound dead-letter queue redriven", "moved", res.Moved, "more", res.More, "by", who)
	return res, nil
}
