package decision_test

import (
	"context"
	"testing"

	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/webhook"
)

// A panic while recording the review.decided event, which comes after the
// decision reached its Task, never turns the delivered decision into an
// error for the reviewer (the dispatcher's events hold the same rule).
func TestAPanickingEmitterLeavesTheDecisionDone(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	withEvents(t, s, panickingEmitter{})
	r := solutionReview(t, s, "run-11")
	var res *review.DecideResult
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("the decision panicked after its delivery: %v", p)
			}
		}()
		res, err = s.decide(t, "alice", r.ID, review.Approve, "")
	}()
	if err != nil || res.Delivery != review.Delivered {
		t.Fatalf("%+v %v", res, err)
	}
}

// The event is recorded and sent under a deadline of its own: a table or
// events queue that hangs cannot hold a delivered decision's answer until
// the function's own deadline (which would answer the reviewer with an
// error although Step Functions has the decision). The request here has
// no deadline at all.
func TestReviewDecidedIsEmittedUnderADeadlineOfItsOwn(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	seen := make(chan bool, 1)
	withEvents(t, s, deadlineEmitter{seen: seen})
	r := solutionReview(t, s, "run-12")
	if _, err := s.decide(t, "alice", r.ID, review.Approve, ""); err != nil {
		t.Fatal(err)
	}
	select {
	case has := <-seen:
		if !has {
			t.Fatal("Emit got a context without a deadline")
		}
	default:
		t.Fatal("no event was emitted")
	}
}

// panickingEmitter panics in Emit; a stand-in for a defect in the
// recording path only.
type panickingEmitter struct{}

func (panickingEmitter) Emit(context.Context, webhook.Event) error { panic("emitter defect") }

// deadlineEmitter reports whether Emit's context has a deadline; a
// stand-in that records nothing.
type deadlineEmitter struct{ seen chan bool }

func (e deadlineEmitter) Emit(ctx context.Context, _ webhook.Event) error {
	_, ok := ctx.Deadline()
	select {
	case e.seen <- ok:
	default:
	}
	return nil
}
