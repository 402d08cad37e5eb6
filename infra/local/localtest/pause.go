package localtest

import (
	"context"
	"sync"

	"github.com/aws/smithy-go/middleware"
)

// Pause holds the first call of one SDK operation once it has returned,
// until the test resumes it: what another caller does in between then
// happens after that call and before its caller sees the answer. It works
// on any aws-sdk-go-v2 client, as an entry of the client's APIOptions
// (Option); a client of a stand-in made for the paused caller, e.g.
//
//	p := localtest.PauseAfter("UpdateStateMachine")
//	paused := sfn.New(client.Options(), func(o *sfn.Options) { o.APIOptions = append(o.APIOptions, p.Option()) })
//
// Later calls of the operation, and the paused one once its context ends,
// pass through.
type Pause struct {
	operation string
	first     sync.Once
	reached   chan struct{}
	resume    chan struct{}
	resumed   sync.Once
}

// PauseAfter pauses the first call of operation (the SDK's operation name,
// e.g. "UpdateStateMachine", "PutItem") after it returned.
func PauseAfter(operation string) *Pause {
	return &Pause{operation: operation, reached: make(chan struct{}), resume: make(chan struct{})}
}

// Reached is closed once the paused call has returned and is held.
func (p *Pause) Reached() <-chan struct{} { return p.reached }

// Resume lets the paused call return to its caller; calling it again, or
// before the call was reached, is harmless (the call then passes through).
func (p *Pause) Resume() { p.resumed.Do(func() { close(p.resume) }) }

// Option is p's entry for a client's APIOptions: a middleware at the
// start of the Initialize step, so that it holds the call once the whole
// call, retries included, has returned.
func (p *Pause) Option() func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("localtest.Pause", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			// The client names the operation before its stack runs
			// (smithy's, which every aws-sdk-go-v2 service client sets).
			if middleware.GetOperationName(ctx) != p.operation {
				return out, md, err
			}
			held := false
			p.first.Do(func() { held = true })
			if held {
				close(p.reached)
				select {
				case <-p.resume:
				case <-ctx.Done():
				}
			}
			return out, md, err
		}), middleware.Before)
	}
}
