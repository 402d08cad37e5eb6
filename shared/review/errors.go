package review

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/toolgate/toolgate/shared/tool"
)

// Code is the error code of both review functions (review-request and
// review-decision): the Lambda errorType of an invocation, and the "code"
// of a Function URL error body (docs/reviews.md, "Errors"). New codes are
// only appended.
type Code string

const (
	CodeInvalid         Code = "REVIEW_INVALID_REQUEST" // a malformed request: unknown action, bad id, reject without reason
	CodeUnauthenticated Code = "REVIEW_UNAUTHENTICATED" // no valid caller proof (shared/caller)
	CodeForbidden       Code = "REVIEW_FORBIDDEN"       // the caller matches none of the review's reviewers
	CodeNotFound        Code = "REVIEW_NOT_FOUND"       // no such review (or its TTL has ended it)
	CodeConflict        Code = "REVIEW_CONFLICT"        // the review was already decided the other way
	CodeExpired         Code = "REVIEW_EXPIRED"         // the review's timeout has passed: no decision is taken
	CodeTaskEnded       Code = "REVIEW_TASK_ENDED"      // Step Functions no longer waits for this review; not retried
	CodeUnavailable     Code = tool.ReviewUnavailable   // DynamoDB or Step Functions failed; the same request may be repeated
	CodeInternal        Code = "REVIEW_INTERNAL"        // anything else
	CodeSelfApproval    Code = "REVIEW_SELF_APPROVAL"   // the review's requester may not decide it (four eyes)
	// CodeParkLimit: the call parked more than park.MaxParks times; the
	// park Task's Catch ends the step as rejected (docs/parking.md).
	CodeParkLimit Code = "PARK_LIMIT"
	// CodeForkWaiting: run.fork found calls of the parent IN_PROGRESS
	// under a live lease; the message names their keys and the latest
	// lease's end (ForkWaitingMessage), and the same fork may be asked
	// for again after it (docs/fork.md).
	CodeForkWaiting Code = "FORK_WAITING"
	// CodeForkUnreconciled: run.fork found calls of the parent whose
	// outcome is unknown and which no one reconciled (docs/fork.md).
	CodeForkUnreconciled Code = "FORK_UNRECONCILED"
)

// HTTPStatus is the Function URL status of a code.
func (c Code) HTTPStatus() int {
	switch c {
	case CodeInvalid:
		return http.StatusBadRequest
	case CodeUnauthenticated:
		return http.StatusUnauthorized
	case CodeForbidden, CodeSelfApproval:
		return http.StatusForbidden
	case CodeNotFound:
		return http.StatusNotFound
	case CodeConflict, CodeForkWaiting, CodeForkUnreconciled:
		return http.StatusConflict
	case CodeExpired, CodeTaskEnded:
		return http.StatusGone
	case CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// Error is a review-decision failure. Message is safe to show the caller;
// Err is the cause, kept for logs.
type Error struct {
	Code    Code
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with a message safe to show the caller.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error whose cause err is kept for logs, never shown.
func Wrap(code Code, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// AsError turns any error into an *Error; anything foreign is
// CodeInternal, with a generic message.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Message: "internal error", Err: err}
}

// Edge is a review function's error as Lambda returns it: errorType the
// code, errorMessage the safe message (never the cause). nil stays nil.
func Edge(err error) error {
	if err == nil {
		return nil
	}
	e := AsError(err)
	return messages.InvokeResponse_Error{Type: string(e.Code), Message: tool.CapMessage(e.Message)}
}
