package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolgate/toolgate/shared/webhook"
)

// Queue is the part of the SQS client an Emitter and Relay call.
type Queue interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// EventMessage is the body of a message on the events queue that names a
// recorded event: {"event_id": "evt_..."}. The delivery function loads
// the event by it.
type EventMessage struct {
	EventID string `json:"event_id"`
}

// ErrLeftToRelay wraps Emit's error when the event was recorded but not
// handed to the queue, or not marked sent: the relay sends it (again),
// so the producer may go on.
var ErrLeftToRelay = errors.New("recorded; left to the relay")

// RelayLimit is how many unsent events one Relay sends at most: a
// schedule of one run a minute drains 500 a minute, far more than
// producers leave unsent.
const RelayLimit = 500

// Emitter records events once and hands them to the events queue without
// a dual write (the package comment).
type Emitter struct {
	Store *Store
	Queue Queue
	// QueueURL is the events queue's URL; "" records only and leaves the
	// sending to the relay (a tool function, which holds no queue
	// permission).
	QueueURL string
}

// Emit records ev (Store.RecordEvent). If this call recorded it and
// QueueURL is set, it sends EventMessage{ev.ID} to the queue and marks the
// event sent. An event already recorded is sent by whoever recorded it,
// or by the relay: Emit sends nothing for it. A failed record is an
// error; a failed send or mark is an error wrapping ErrLeftToRelay.
func (e *Emitter) Emit(ctx context.Context, ev webhook.Event) error {
	recorded, err := e.Store.RecordEvent(ctx, ev)
	if err != nil {
		return fmt.Errorf("emit: %w", err)
	}
	if !recorded || e.QueueURL == "" {
		return nil
	}
	if err := send(ctx, e.Store, e.Queue, e.QueueURL, ref{id: ev.ID}); err != nil {
		return fmt.Errorf("emit %s (%s): %w: %w", ev.ID, ev.Type, err, ErrLeftToRelay)
	}
	return nil
}

// send hands the event r names to the queue at url and marks it sent.
func send(ctx context.Context, s *Store, q Queue, url string, r ref) error {
	id := r.id
	body, err := json.Marshal(EventMessage{EventID: id})
	if err != nil {
		return err
	}
	if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(string(body))}); err != nil {
		return fmt.Errorf("send event %s: %w", id, err)
	}
	return s.markSent(ctx, r)
}

// Relay sends every event recorded and still unsent whose produced_at is
// older than after at now (Store.Unsent, at most RelayLimit, oldest
// first) to the events queue at queueURL, marking each sent, and returns
// how many it sent and marked. It goes on past an event that fails and
// returns the failures joined; the next run tries them again. Run on a
// schedule (webhook-delivery's), with after well beyond a producer's
// record-to-send time, it sends what a producer that stopped between the
// two left behind, once. An index entry that no event id reaches (under
// the call events' prefix, which any tool function's role may write) is
// taken out of the index and not sent.
func Relay(ctx context.Context, s *Store, q Queue, queueURL string, now time.Time, after time.Duration) (int, error) {
	refs, err := s.unsent(ctx, now.Add(-after), RelayLimit)
	if err != nil {
		return 0, fmt.Errorf("relay: %w", err)
	}
	sent := 0
	var errs []error
	for _, r := range refs {
		if r.bad {
			// Nothing an event id reaches: taken out of the index, never
			// sent, so that no such entry holds the relay's oldest places.
			if err := s.clear(ctx, r); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := send(ctx, s, q, queueURL, r); err != nil {
			errs = append(errs, err)
			continue
		}
		sent++
	}
	if len(errs) > 0 {
		return sent, fmt.Errorf("relay: %w", errors.Join(errs...))
	}
	return sent, nil
}
