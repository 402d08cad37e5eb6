package sqsbatch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/toolgate/toolgate/shared/sqsbatch"
)

func batch(n int) events.SQSEvent {
	var ev events.SQSEvent
	for i := range n {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprintf("m%d", i)})
	}
	return ev
}

// The answer names exactly the records that failed, in the batch's
// order, and each is passed to failed once.
func TestRunNamesTheFailedRecordsInBatchOrder(t *testing.T) {
	var mu sync.Mutex
	var logged []string
	resp := sqsbatch.Run(t.Context(), batch(7), 3, func(_ context.Context, r events.SQSMessage) error {
		if r.MessageId == "m1" || r.MessageId == "m4" || r.MessageId == "m6" {
			return errors.New("transient")
		}
		return nil
	}, func(r events.SQSMessage, err error) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, r.MessageId)
	})
	var got []string
	for _, f := range resp.BatchItemFailures {
		got = append(got, f.ItemIdentifier)
	}
	if !slices.Equal(got, []string{"m1", "m4", "m6"}) {
		t.Fatalf("failures %v, want m1 m4 m6", got)
	}
	slices.Sort(logged)
	if !slices.Equal(logged, got) {
		t.Fatalf("logged %v, want %v", logged, got)
	}
}

// A batch that all succeeded answers an empty list, not null.
func TestRunAnswersAnEmptyListWhenNoneFailed(t *testing.T) {
	resp := sqsbatch.Run(t.Context(), batch(2), 10, func(context.Context, events.SQSMessage) error { return nil }, nil)
	if resp.BatchItemFailures == nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%#v, want an empty list", resp.BatchItemFailures)
	}
}

// Records run concurrently up to the limit, never more: the first limit
// records all wait inside handle until each has arrived, which needs
// them to run at once; a record past the limit starts only when one of
// them has returned.
func TestRunKeepsToItsLimit(t *testing.T) {
	const limit = 3
	var mu sync.Mutex
	active, peak := 0, 0
	arrived := make(chan struct{}, limit)
	release := make(chan struct{})
	go func() {
		for range limit {
			<-arrived
		}
		close(release)
	}()
	sqsbatch.Run(t.Context(), batch(8), limit, func(context.Context, events.SQSMessage) error {
		mu.Lock()
		active++
		peak = max(peak, active)
		mu.Unlock()
		select {
		case arrived <- struct{}{}:
		default:
		}
		<-release
		mu.Lock()
		active--
		mu.Unlock()
		return nil
	}, nil)
	if peak != limit {
		t.Fatalf("peak concurrency %d, want %d", peak, limit)
	}
}
