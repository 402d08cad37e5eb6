package sqs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Queue names one queue both ways SQS does: URL for the data-plane calls
// (SendMessage, ReceiveMessage, ...), ARN for redrive policies and for an
// event source's eventSourceARN.
type Queue struct {
	Name string // "toolgate-local-webhook-deliveries"
	URL  string // "http://127.0.0.1:PORT/000000000000/<Name>" on the stand-in
	ARN  string // "arn:aws:sqs:<region>:<account>:<Name>"
}

// Region is the region in q's ARN ("" when ARN is not an SQS ARN): what
// Lambda puts in an SQS record's awsRegion.
func (q Queue) Region() string {
	parts := strings.SplitN(q.ARN, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "sqs" {
		return ""
	}
	return parts[3]
}

// QueueOptions are the attributes CreateQueue sets; the zero value is a
// standard queue with SQS's defaults and no dead-letter queue.
type QueueOptions struct {
	// DeadLetter is the queue that messages move to after MaxReceiveCount
	// receives (the RedrivePolicy attribute); nil: none.
	DeadLetter *Queue
	// MaxReceiveCount is how many times a message is received before it
	// moves to DeadLetter: 1..1000 (SQS's bounds for RedrivePolicy), and
	// only with DeadLetter.
	MaxReceiveCount int
	// VisibilityTimeout is the queue's default visibility timeout, whole
	// seconds 0..12 h (SQS's bounds); 0 keeps SQS's default of 30 s.
	VisibilityTimeout time.Duration
}

// QueueAPI is the SQS methods CreateQueue calls.
type QueueAPI interface {
	CreateQueue(ctx context.Context, in *awssqs.CreateQueueInput, opts ...func(*awssqs.Options)) (*awssqs.CreateQueueOutput, error)
	GetQueueAttributes(ctx context.Context, in *awssqs.GetQueueAttributesInput, opts ...func(*awssqs.Options)) (*awssqs.GetQueueAttributesOutput, error)
}

// maxVisibility is SQS's longest visibility timeout (the
// ChangeMessageVisibility and VisibilityTimeout quota: 12 hours).
const maxVisibility = 12 * time.Hour

// CreateQueue creates the standard queue name with o's attributes (or
// finds it, when it exists with the same attributes: SQS's CreateQueue is
// idempotent) and returns its URL and ARN (GetQueueAttributes QueueArn).
// Errors name the queue and the field at fault.
func CreateQueue(ctx context.Context, c QueueAPI, name string, o QueueOptions) (Queue, error) {
	attrs, err := o.attributes()
	if err != nil {
		return Queue{}, fmt.Errorf("sqs: create queue %q: %w", name, err)
	}
	out, err := c.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return Queue{}, fmt.Errorf("sqs: create queue %q: %w", name, err)
	}
	q := Queue{Name: name, URL: aws.ToString(out.QueueUrl)}
	got, err := c.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
		QueueUrl:       out.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return Queue{}, fmt.Errorf("sqs: queue %q: get its ARN: %w", name, err)
	}
	if q.ARN = got.Attributes[string(types.QueueAttributeNameQueueArn)]; q.ARN == "" {
		return Queue{}, fmt.Errorf("sqs: queue %q: GetQueueAttributes returned no QueueArn", name)
	}
	return q, nil
}

// attributes are o as CreateQueue's Attributes.
func (o QueueOptions) attributes() (map[string]string, error) {
	attrs := map[string]string{}
	switch {
	case o.DeadLetter == nil && o.MaxReceiveCount != 0:
		return nil, errors.New("MaxReceiveCount without a DeadLetter queue")
	case o.DeadLetter != nil && o.DeadLetter.ARN == "":
		return nil, errors.New("DeadLetter queue without an ARN")
	case o.DeadLetter != nil && (o.MaxReceiveCount < 1 || o.MaxReceiveCount > 1000):
		return nil, fmt.Errorf("MaxReceiveCount %d: SQS allows 1..1000", o.MaxReceiveCount)
	case o.DeadLetter != nil:
		policy, err := json.Marshal(map[string]string{
			"deadLetterTargetArn": o.DeadLetter.ARN,
			"maxReceiveCount":     strconv.Itoa(o.MaxReceiveCount),
		})
		if err != nil {
			return nil, err
		}
		attrs[string(types.QueueAttributeNameRedrivePolicy)] = string(policy)
	}
	if o.VisibilityTimeout != 0 {
		if o.VisibilityTimeout < 0 || o.VisibilityTimeout > maxVisibility || o.VisibilityTimeout%time.Second != 0 {
			return nil, fmt.Errorf("VisibilityTimeout %v: SQS allows whole seconds 0..12h", o.VisibilityTimeout)
		}
		attrs[string(types.QueueAttributeNameVisibilityTimeout)] = strconv.Itoa(int(o.VisibilityTimeout / time.Second))
	}
	return attrs, nil
}
