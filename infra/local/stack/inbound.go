package stack

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/infra/local/sqs"
)

// InboundQueues are the local stack's inbound queue and its dead-letter
// queue on the SQS stand-in, named as the platform names them
// (toolgate-<stage>-inbound and toolgate-<stage>-inbound-dlq;
// docs/webhooks.md, "Receiving events").
type InboundQueues struct {
	// Queue gets one message per event the webhook receiver accepts (and
	// per event its relay queues, and per schedule firing): the JSON of
	// an inboundapi message, never an event's body. Its messages move to
	// DLQ after inboundMaxReceives receives.
	Queue sqs.Queue
	// DLQ keeps the messages the inbound-start function failed
	// inboundMaxReceives times.
	DLQ sqs.Queue
}

// Inbound queue settings of the local stack.
const (
	// inboundMaxReceives is how often the start of one event is tried
	// before its message goes to the dead-letter queue: the platform's
	// number (maxReceiveCount 5).
	inboundMaxReceives = 5
	// inboundVisibility is both queues' visibility timeout, as the webhook
	// queues' (webhookVisibility): one poller runs one batch at a time,
	// so no second receive races an invocation in progress.
	inboundVisibility = 30 * time.Second
)

// inboundQueueName is the platform's name of an inbound queue on stage
// Stage: toolgate-local-inbound, toolgate-local-inbound-dlq.
func inboundQueueName(suffix string) string {
	if suffix == "" {
		return "toolgate-" + Stage + "-inbound"
	}
	return "toolgate-" + Stage + "-inbound-" + suffix
}

// startInboundQueues creates the inbound queue and its dead-letter queue
// on the SQS stand-in, which startWebhookQueues started: the dead-letter
// queue first, since the inbound queue's redrive policy names its ARN.
func (s *Stack) startInboundQueues(ctx context.Context, logf func(string, ...any)) error {
	var err error
	q := &s.InboundQueues
	if q.DLQ, err = s.SQS.CreateQueue(ctx, inboundQueueName("dlq"), sqs.QueueOptions{VisibilityTimeout: inboundVisibility}); err != nil {
		return err
	}
	if q.Queue, err = s.SQS.CreateQueue(ctx, inboundQueueName(""), sqs.QueueOptions{VisibilityTimeout: inboundVisibility,
		DeadLetter: &q.DLQ, MaxReceiveCount: inboundMaxReceives}); err != nil {
		return err
	}
	logf("inbound queues %s, %s (maxReceiveCount %d)", q.Queue.Name, q.DLQ.Name, inboundMaxReceives)
	return nil
}
