package stack

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/sqs"
	"github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/inboundapi"
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

// The local stack's inbound settings: the relay's ticker period and how
// long an event stays RECEIVED before the relay queues it
// (TOOLGATE_INBOUND_RELAY_AFTER), seconds rather than the platform's
// minutes, so that a test sees a RECEIVED event queued while it waits.
const (
	inboundRelayEvery = 2 * time.Second
	inboundRelayAfter = 5 * time.Second
)

// receiverFunction is the webhook receiver's function name. It has no
// lanes (laned): Step Functions never invokes it.
const receiverFunction = "webhook-receiver"

// inboundState is what the stack keeps of the webhook receiver: its
// Function URL front, and the relay ticker's stop and wait.
type inboundState struct {
	front *local.FunctionURLFront
	stop  context.CancelFunc
	done  sync.WaitGroup
}

// receiverEnv is webhook-receiver's own configuration on the local stack:
// the inbound queue on the SQS stand-in, local-kms (it opens the sources'
// secrets) and the local relay bound.
func (s *Stack) receiverEnv() map[string]string {
	return map[string]string{"AWS_ENDPOINT_URL_SQS": s.sqsEndpoint(), "AWS_ENDPOINT_URL_KMS": s.kmsEndpoint(),
		inboundapi.EnvQueue: s.InboundQueues.Queue.URL, inboundapi.EnvRelayAfter: inboundRelayAfter.String()}
}

// startReceiver starts the Function URL front (local.FunctionURLFront)
// before webhook-receiver at endpoint (its RIE behind the stack's
// one-at-a-time proxy), which InboundURL names, and the relay's ticker:
// every inboundRelayEvery it invokes the function with a scheduled event,
// as the platform's schedule does. A failed relay is logged and tried
// again on the next tick. Stop ends both (stopReceiver).
func (s *Stack) startReceiver(ctx context.Context, endpoint string, logf func(string, ...any)) error {
	front, err := local.StartFunctionURLFront(ctx, endpoint+local.InvokePath)
	if err != nil {
		return err
	}
	s.inbound.front = front
	logf("function URL %-29s %s/in/<source>", receiverFunction, front.URL())
	tctx, cancel := context.WithCancel(context.Background())
	s.inbound.stop = cancel
	s.inbound.done.Add(1)
	go func() {
		defer s.inbound.done.Done()
		tick := time.NewTicker(inboundRelayEvery)
		defer tick.Stop()
		for {
			select {
			case <-tctx.Done():
				return
			case <-tick.C:
				if err := s.RelayInbound(tctx); err != nil && tctx.Err() == nil {
					logf("inbound relay: %v", err)
				}
			}
		}
	}()
	logf("relay        every %v, events RECEIVED for %v -> webhook-receiver", inboundRelayEvery, inboundRelayAfter)
	return nil
}

// stopReceiver ends the relay's ticker and closes the front.
func (s *Stack) stopReceiver() error {
	if s.inbound.stop != nil {
		s.inbound.stop()
		s.inbound.done.Wait()
		s.inbound.stop = nil
	}
	if s.inbound.front == nil {
		return nil
	}
	err := s.inbound.front.Close()
	s.inbound.front = nil
	return err
}

// InboundURL is the webhook receiver's Function URL on the local stack,
// "http://127.0.0.1:PORT": senders POST to InboundURL()+"/in/<source>".
// "" when the stack runs no webhook-receiver.
func (s *Stack) InboundURL() string {
	if s.inbound.front == nil {
		return ""
	}
	return s.inbound.front.URL()
}

// RelayInbound invokes webhook-receiver once with a scheduled event, as
// the platform's relay schedule does on AWS: it queues each inbound event
// left RECEIVED for longer than inboundRelayAfter. The stack's ticker
// calls it every inboundRelayEvery; tests may call it too. The error is
// the invocation's, naming the function's errorType only, never its
// message.
func (s *Stack) RelayInbound(ctx context.Context) error {
	if err := s.invokeScheduled(ctx, receiverFunction); err != nil {
		return fmt.Errorf("relay inbound events: %w", err)
	}
	return nil
}

// TestSourceAddedBy is the added_by of the sources AddTestSource adds.
var TestSourceAddedBy = local.LocalPrincipal("stack-test")

// AddTestSource adds inbound source name to the stack's table as the
// sources function will: scheme (inbound.ParseScheme's names), the
// published Solution it starts, and one current secret sealed with the
// stack's local-kms key under the source's encryption context
// (store.SealSecret); max_body_bytes is left to the receiver's default.
// It is for tests, until the sources function adds sources. Errors name
// the source, never the secret.
func (s *Stack) AddTestSource(ctx context.Context, name, scheme, solution, secret string) error {
	if s.KMS == nil || s.Dynamo == nil {
		return errors.New("add test source: the stack has not started")
	}
	sealed, err := store.SealSecret(ctx, s.KMS.Client(), s.KMS.KeyARN, name, []byte(secret))
	if err != nil {
		return fmt.Errorf("add test source %s: %w", name, err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	src := store.Source{Name: name, Scheme: scheme, Solution: solution, AddedBy: TestSourceAddedBy,
		Secrets: []store.Secret{{Sealed: sealed, CreatedAt: now}}, AddedAt: now, UpdatedAt: now, Version: 1}
	if err := store.New(local.DynamoDB(s.Dynamo.Endpoint()), Table).PutSource(ctx, src); err != nil {
		return fmt.Errorf("add test source %s: %w", name, err)
	}
	return nil
}
