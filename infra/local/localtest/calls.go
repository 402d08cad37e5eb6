package localtest

import (
	"context"
	"sync"

	"github.com/aws/smithy-go/middleware"
)

// Calls counts the SDK calls of the clients it is an option of, by
// operation name ("PutItem", "SendMessage"), once per call however often
// the SDK retried it: a figure a benchmark reports as requests per
// operation, counted rather than stated. Add it to a client as
//
//	var c localtest.Calls
//	counted := dynamodb.New(client.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, c.Option()) })
//
// Its zero value is ready; it is safe for concurrent use.
type Calls struct {
	mu sync.Mutex
	n  map[string]int
}

// Option is c's entry for a client's APIOptions: a middleware at the
// start of the Initialize step, before the SDK's retries.
func (c *Calls) Option() func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("localtest.Calls", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			c.mu.Lock()
			if c.n == nil {
				c.n = map[string]int{}
			}
			c.n[middleware.GetOperationName(ctx)]++
			c.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
	}
}

// Total is the number of calls counted so far, of every operation.
func (c *Calls) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for _, n := range c.n {
		total += n
	}
	return total
}

// Of returns the counts by operation name, a copy.
func (c *Calls) Of() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]int, len(c.n))
	for k, v := range c.n {
		m[k] = v
	}
	return m
}
