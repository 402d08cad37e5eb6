package sqs

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// MoveAPI is the SQS methods Redrive calls.
type MoveAPI interface {
	ReceiveMessage(ctx context.Context, in *awssqs.ReceiveMessageInput, opts ...func(*awssqs.Options)) (*awssqs.ReceiveMessageOutput, error)
	SendMessage(ctx context.Context, in *awssqs.SendMessageInput, opts ...func(*awssqs.Options)) (*awssqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, in *awssqs.DeleteMessageInput, opts ...func(*awssqs.Options)) (*awssqs.DeleteMessageOutput, error)
}

// redriveVisibility hides a message Redrive has received for as long as
// moving it may take, so that one Redrive does not receive it twice.
const redriveVisibility = 60

// Redrive moves at most max messages (max >= 1) from the queue at dlqURL
// (a dead-letter queue) to the queue at targetURL: each is received, sent
// to targetURL with its body and message attributes (a new message: new
// id, receive count 0), then deleted from dlqURL. It stops at max, or when
// a receive without waiting finds nothing (SQS's short poll samples some
// of its servers only, so a few messages may stay for the next call), and
// returns how many it moved.
//
// It works where StartMessageMoveTask does not: on the stand-in (which has
// one, but moves asynchronously) and from a function that may only
// receive, send and delete. Delivery stays at least once: when the delete
// fails after the send, the message is in both queues; when the send
// fails, the message comes back to dlqURL after 60 s and the error is
// returned with the count moved before it.
func Redrive(ctx context.Context, c MoveAPI, dlqURL, targetURL string, max int) (int, error) {
	if max < 1 {
		return 0, fmt.Errorf("sqs: redrive: max %d: want at least 1", max)
	}
	moved := 0
	for moved < max {
		n := min(max-moved, MaxBatchSize)
		out, err := c.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
			QueueUrl:              aws.String(dlqURL),
			MaxNumberOfMessages:   int32(n),
			VisibilityTimeout:     redriveVisibility,
			MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			return moved, fmt.Errorf("sqs: redrive: receive: %w", err)
		}
		if len(out.Messages) == 0 {
			return moved, nil
		}
		for _, m := range out.Messages {
			if _, err := c.SendMessage(ctx, &awssqs.SendMessageInput{
				QueueUrl:          aws.String(targetURL),
				MessageBody:       m.Body,
				MessageAttributes: sendable(m.MessageAttributes),
			}); err != nil {
				return moved, fmt.Errorf("sqs: redrive: send message %s: %w", aws.ToString(m.MessageId), err)
			}
			if _, err := c.DeleteMessage(ctx, &awssqs.DeleteMessageInput{QueueUrl: aws.String(dlqURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				return moved, fmt.Errorf("sqs: redrive: delete message %s (sent already): %w", aws.ToString(m.MessageId), err)
			}
			moved++
		}
	}
	return moved, nil
}

// sendable is a received message's attributes as SendMessage takes them
// (nil for none).
func sendable(attrs map[string]types.MessageAttributeValue) map[string]types.MessageAttributeValue {
	if len(attrs) == 0 {
		return nil
	}
	return attrs
}
