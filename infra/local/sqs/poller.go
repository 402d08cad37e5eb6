package sqs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Invoke runs one batch through a function, as Lambda invokes a function
// for an SQS event source: the event in, the partial batch response out
// (ReportBatchItemFailures). An error is a failed invocation: the whole
// batch stays on the queue. InvokeURL makes one for a function under the
// Lambda Runtime Interface Emulator.
type Invoke func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)

// PollAPI is the SQS methods a Poller calls.
type PollAPI interface {
	ReceiveMessage(ctx context.Context, in *awssqs.ReceiveMessageInput, opts ...func(*awssqs.Options)) (*awssqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *awssqs.DeleteMessageBatchInput, opts ...func(*awssqs.Options)) (*awssqs.DeleteMessageBatchOutput, error)
}

// Limits of SQS's ReceiveMessage (its MaxNumberOfMessages and
// WaitTimeSeconds quotas), which also bound a Poller's fields.
const (
	MaxBatchSize = 10
	MaxWaitTime  = 20 * time.Second
)

// Poller is what a Lambda event-source mapping for a standard SQS queue
// with ReportBatchItemFailures does, for one queue and one function, on
// the local stack (there is no event-source mapping there): it receives a
// batch, invokes the function with it as an events.SQSEvent, and deletes
// the messages the invocation did not report failed (Lambda Developer
// Guide, "Using Lambda with Amazon SQS" and "Handling errors for an SQS
// event source"):
//   - Invoke returned an error: nothing is deleted; every message comes back
//     when its visibility timeout ends.
//   - Invoke returned no batchItemFailures: every message is deleted.
//   - batchItemFailures lists message ids of the batch: all others are
//     deleted.
//   - a batchItemFailure whose itemIdentifier is empty or names no message of
//     the batch: Lambda treats the batch as a complete failure; nothing is
//     deleted.
//
// Batches run one at a time, in the order received (Lambda runs several
// pollers and invocations at once: no test may depend on the order).
// Run polls until its context ends.
type Poller struct {
	// Client reaches the queue (Client(endpoint) for the stand-in).
	Client PollAPI
	// Queue is the queue polled: its URL is received from and deleted on,
	// its ARN is each record's eventSourceARN and its region the awsRegion.
	Queue Queue
	// Invoke runs each batch; required.
	Invoke Invoke
	// BatchSize is the most messages in one batch, 1..MaxBatchSize; 0:
	// MaxBatchSize (Lambda's default batch size for SQS).
	BatchSize int32
	// WaitTime is the long poll of each ReceiveMessage that waits for a
	// message, whole seconds 1s..MaxWaitTime; 0: MaxWaitTime. It bounds
	// nothing else: Run's context ends a poll at once.
	WaitTime time.Duration
	// OnBatch, if set, is called after each batch has been handled (its
	// deletions made), on Run's goroutine: tests wait on it.
	OnBatch func(Batch)
	// Log receives one line per batch (queue name, message ids, how many
	// deleted, the invocation's error); nil: none. Never a message body.
	Log *slog.Logger
}

// Batch is what a Poller did with one batch.
type Batch struct {
	// Event is the event the function was invoked with.
	Event events.SQSEvent
	// Response is the function's partial batch response (zero when Err).
	Response events.SQSEventResponse
	// Err is Invoke's error, nil when the invocation returned.
	Err error
	// Deleted are the ids of the messages deleted after the invocation.
	Deleted []string
}

// Run polls p.Queue and hands each batch to p.Invoke until ctx ends; it
// then returns nil. It returns an error at once for a bad field of p, and
// when ReceiveMessage or DeleteMessageBatch fails (the stand-in is gone).
//
// Each round first receives without waiting, up to BatchSize messages;
// when none was there, it waits up to WaitTime for one message, then
// takes, without waiting, whatever else is there for the same batch.
// local-aws-sqs answers a waiting ReceiveMessage only once it has
// MaxNumberOfMessages messages or its wait is over, where SQS answers as
// soon as it has any (its ReceiveMessage reference, "WaitTimeSeconds"), so
// a waiting receive for a whole batch would hold a lone message back for
// the whole wait.
func (p *Poller) Run(ctx context.Context) error {
	if err := p.check(); err != nil {
		return err
	}
	log := p.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for ctx.Err() == nil {
		msgs, err := p.receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if len(msgs) == 0 {
			continue
		}
		b := Batch{Event: events.SQSEvent{Records: make([]events.SQSMessage, len(msgs))}}
		for i, m := range msgs {
			b.Event.Records[i] = Record(m, p.Queue)
		}
		b.Response, b.Err = p.Invoke(ctx, b.Event)
		done := Done(b.Event, b.Response, b.Err)
		// The invocation has happened: its deletions are made even when
		// ctx ended meanwhile, as Lambda makes them.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err = p.delete(dctx, done)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for _, m := range done {
			b.Deleted = append(b.Deleted, m.MessageId)
		}
		ids := make([]string, len(b.Event.Records))
		for i, r := range b.Event.Records {
			ids[i] = r.MessageId
		}
		log.InfoContext(ctx, "sqs batch", "queue", p.Queue.Name, "messages", ids, "deleted", len(done), "failed", len(b.Response.BatchItemFailures), "error", errString(b.Err))
		if p.OnBatch != nil {
			p.OnBatch(b)
		}
	}
	return nil
}

// check refuses a Poller that cannot run, naming the field.
func (p *Poller) check() error {
	switch {
	case p.Client == nil:
		return errors.New("sqs: poller: no Client")
	case p.Invoke == nil:
		return errors.New("sqs: poller: no Invoke")
	case p.Queue.URL == "":
		return errors.New("sqs: poller: Queue has no URL")
	case p.Queue.Region() == "":
		return fmt.Errorf("sqs: poller: Queue.ARN %q is not an SQS queue ARN", p.Queue.ARN)
	case p.BatchSize < 0 || p.BatchSize > MaxBatchSize:
		return fmt.Errorf("sqs: poller: BatchSize %d: ReceiveMessage takes 1..%d", p.BatchSize, MaxBatchSize)
	case p.WaitTime != 0 && (p.WaitTime < time.Second || p.WaitTime > MaxWaitTime || p.WaitTime%time.Second != 0):
		return fmt.Errorf("sqs: poller: WaitTime %v: ReceiveMessage waits whole seconds 1s..%v", p.WaitTime, MaxWaitTime)
	}
	return nil
}

// receive returns the next batch, or none when the wait ended empty.
func (p *Poller) receive(ctx context.Context) ([]types.Message, error) {
	size := p.BatchSize
	if size == 0 {
		size = MaxBatchSize
	}
	wait := p.WaitTime
	if wait == 0 {
		wait = MaxWaitTime
	}
	msgs, err := p.receiveOnce(ctx, size, 0)
	if err != nil || len(msgs) > 0 {
		return msgs, err
	}
	if msgs, err = p.receiveOnce(ctx, 1, wait); err != nil || len(msgs) == 0 || size == 1 {
		return msgs, err
	}
	more, err := p.receiveOnce(ctx, size-1, 0)
	if err != nil {
		// The one received comes back after its visibility timeout.
		return nil, err
	}
	return append(msgs, more...), nil
}

func (p *Poller) receiveOnce(ctx context.Context, n int32, wait time.Duration) ([]types.Message, error) {
	out, err := p.Client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
		QueueUrl:            aws.String(p.Queue.URL),
		MaxNumberOfMessages: n,
		WaitTimeSeconds:     int32(wait / time.Second),
		// local-aws-sqs returns system attributes (ApproximateReceiveCount
		// among them) only when asked through this older field; SQS
		// answers both.
		AttributeNames:              []types.QueueAttributeName{types.QueueAttributeNameAll}, //nolint:staticcheck // see above
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		return nil, fmt.Errorf("sqs: receive from %s: %w", p.Queue.Name, err)
	}
	return out.Messages, nil
}

// delete deletes msgs (at most MaxBatchSize) in one DeleteMessageBatch.
func (p *Poller) delete(ctx context.Context, msgs []events.SQSMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	entries := make([]types.DeleteMessageBatchRequestEntry, len(msgs))
	for i, m := range msgs {
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(m.ReceiptHandle)}
	}
	out, err := p.Client.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(p.Queue.URL), Entries: entries})
	if err != nil {
		return fmt.Errorf("sqs: delete from %s: %w", p.Queue.Name, err)
	}
	if len(out.Failed) > 0 {
		var failed []string
		for _, f := range out.Failed {
			i, _ := strconv.Atoi(aws.ToString(f.Id))
			if i >= 0 && i < len(msgs) {
				failed = append(failed, msgs[i].MessageId+": "+aws.ToString(f.Code))
			}
		}
		return fmt.Errorf("sqs: delete from %s: %d of %d failed (%s)", p.Queue.Name, len(out.Failed), len(msgs), strings.Join(failed, ", "))
	}
	return nil
}

// Record is m as Lambda passes it to a function in an events.SQSEvent
// from queue q: messageId, receiptHandle, body, md5OfBody, attributes
// (the system attributes received: ApproximateReceiveCount,
// SentTimestamp, ...), messageAttributes, eventSource "aws:sqs",
// eventSourceARN q.ARN and awsRegion q.Region().
func Record(m types.Message, q Queue) events.SQSMessage {
	r := events.SQSMessage{
		MessageId:              aws.ToString(m.MessageId),
		ReceiptHandle:          aws.ToString(m.ReceiptHandle),
		Body:                   aws.ToString(m.Body),
		Md5OfBody:              aws.ToString(m.MD5OfBody),
		Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
		Attributes:             map[string]string{},
		MessageAttributes:      map[string]events.SQSMessageAttribute{},
		EventSource:            "aws:sqs",
		EventSourceARN:         q.ARN,
		AWSRegion:              q.Region(),
	}
	for k, v := range m.Attributes {
		r.Attributes[k] = v
	}
	for k, v := range m.MessageAttributes {
		r.MessageAttributes[k] = events.SQSMessageAttribute{
			StringValue:      v.StringValue,
			BinaryValue:      v.BinaryValue,
			StringListValues: v.StringListValues,
			BinaryListValues: v.BinaryListValues,
			DataType:         aws.ToString(v.DataType),
		}
	}
	return r
}

// Done returns the records of ev that an event-source mapping with
// ReportBatchItemFailures deletes after an invocation that returned resp
// and err (Poller states the rules).
func Done(ev events.SQSEvent, resp events.SQSEventResponse, err error) []events.SQSMessage {
	if err != nil {
		return nil
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	var done []events.SQSMessage
	for _, r := range ev.Records {
		if failed[r.MessageId] {
			delete(failed, r.MessageId)
			continue
		}
		done = append(done, r)
	}
	if len(failed) > 0 {
		// An empty itemIdentifier, or one naming no message of the batch.
		return nil
	}
	return done
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// InvokeURL returns an Invoke that POSTs the event as JSON to url, a
// function's invoke URL under the Lambda Runtime Interface Emulator
// (local.Process.InvokeURL), and decodes its answer: a partial batch
// response, or, when the function failed ({"errorType", "errorMessage"},
// the RIE answers 200 either way) or timed out (the RIE's plain-text
// "Task timed out after ..."), an error naming the errorType only, never
// the function's message.
func InvokeURL(url string) Invoke {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		b, err := json.Marshal(ev)
		if err != nil {
			return events.SQSEventResponse{}, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
		if err != nil {
			return events.SQSEventResponse{}, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return events.SQSEventResponse{}, fmt.Errorf("sqs: invoke: %w", err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 6<<20)) // Lambda's 6 MB response quota
		if err != nil {
			return events.SQSEventResponse{}, fmt.Errorf("sqs: invoke: read the answer: %w", err)
		}
		if resp.StatusCode != http.StatusOK {
			return events.SQSEventResponse{}, fmt.Errorf("sqs: invoke: %s", resp.Status)
		}
		var fe struct {
			ErrorType *string `json:"errorType"`
		}
		if json.Unmarshal(body, &fe) == nil && fe.ErrorType != nil {
			return events.SQSEventResponse{}, fmt.Errorf("sqs: invoke: the function failed: %s", *fe.ErrorType)
		}
		var out events.SQSEventResponse
		if err := json.Unmarshal(body, &out); err != nil {
			return events.SQSEventResponse{}, fmt.Errorf("sqs: invoke: the answer is no partial batch response (%d bytes)", len(body))
		}
		return out, nil
	}
}
