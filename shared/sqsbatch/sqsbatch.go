package sqsbatch

import (
	"context"
	"sync"

	"github.com/aws/aws-lambda-go/events"
)

// Run calls handle for every record of ev, at most limit (at least 1) at
// once, and answers the records whose handle returned an error, in the
// batch's order, each also passed to failed (for its log line; nil: none).
// BatchItemFailures is empty, never nil, when none failed: an empty list
// tells Lambda the whole batch succeeded.
func Run(ctx context.Context, ev events.SQSEvent, limit int, handle func(context.Context, events.SQSMessage) error,
	failed func(events.SQSMessage, error)) events.SQSEventResponse {
	bad := make([]bool, len(ev.Records))
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i, r := range ev.Records {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := handle(ctx, r); err != nil {
				bad[i] = true
				if failed != nil {
					failed(r, err)
				}
			}
		}()
	}
	wg.Wait()
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for i, b := range bad {
		if b {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
		}
	}
	return resp
}
