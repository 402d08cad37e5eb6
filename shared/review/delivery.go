package review

import (
	"context"
	"fmt"
)

// TaskDelivery sends a decision to the review Task waiting for it: an
// approval as the Task's output, a rejection as its failure with
// ErrorRejected. The Step Functions adapter (shared/review/stepfunctions)
// is the one implementation; tests use it against a stand-in endpoint.
type TaskDelivery interface {
	// Deliver sends d to the Task of taskToken, once (no retries: a
	// retried send whose answer was lost would find the token spent). It
	// returns a *TaskEndedError when the token can no longer be used.
	Deliver(ctx context.Context, taskToken string, d Decision) error
}

// TaskEndedError says a review Task no longer waits: Name is Step
// Functions' error name (TaskTimedOut, TaskDoesNotExist or InvalidToken).
type TaskEndedError struct {
	Name string
}

func (e *TaskEndedError) Error() string { return fmt.Sprintf("the review Task has ended (%s)", e.Name) }
