package tool

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Code is one of the contract's error codes. New codes are only appended.
type Code string

// The eight codes of docs/design.md, and the catch-all.
const (
	InputInvalid             Code = "TOOL_INPUT_INVALID"
	OutputInvalid            Code = "TOOL_OUTPUT_INVALID"
	Timeout                  Code = "TOOL_TIMEOUT"
	RateLimited              Code = "TOOL_RATE_LIMITED"
	UpstreamUnavailable      Code = "TOOL_UPSTREAM_UNAVAILABLE"
	PermanentFailure         Code = "TOOL_PERMANENT_FAILURE"
	PermissionDenied         Code = "TOOL_PERMISSION_DENIED"
	RetryRequiresIdempotency Code = "TOOL_RETRY_REQUIRES_IDEMPOTENCY"
	Internal                 Code = "TOOL_INTERNAL"
)

// CallParked is the Step Functions error of a call that was not sent: an
// MCP tool whose server's definition changed since the toolset pinned it
// (docs/tools.md, "MCP tools"). It is not one of the tool codes (the tool
// was not called): not in Codes, never retryable, never maybe applied;
// the call's ledger row is PARKED and its key stays unclaimed, so that the
// call can be sent later.
const CallParked Code = "CALL_PARKED"

// ApprovalExpired is the Step Functions error of a gated call sent again
// after a park was decided (its envelope's park_id names the park) whose
// approval's time ended while it was parked: its review expired, or its
// review item is gone (expired reviews leave the table by TTL). The
// compiled state machine catches it into a re-review of the same call
// (docs/parking.md, "A re-review"). Like CallParked it is not one of the
// tool codes (the tool was not called): not in Codes, never retryable,
// never maybe applied; the call's row is REFUSED and its key stays
// unclaimed, so that the call can be sent under the new approval. A call
// without a park id whose approval expired is refused PermissionDenied,
// as before.
const ApprovalExpired Code = "APPROVAL_EXPIRED"

// CallReconciledNoResult is the Step Functions error of a call whose
// earlier attempt's outcome was unknown and which a person reconciled as
// applied without giving its result (toolgate ledger reconcile KEY
// --applied; docs/fork.md, "Reconciling"): the effect happened, but there
// is no result to return, so the call is neither sent again nor answered
// with one. Like CallParked it is not one of the tool codes: not in
// Codes, never retryable, never maybe applied. Every tool step may raise
// it, and its on_error may catch it by name (docs/solutions.md, "on_error
// by code").
const CallReconciledNoResult Code = "CALL_RECONCILED_NO_RESULT"

// retryable is the one table that classifies every code (docs/design.md, "The tool contract"): only a
// timeout, a rate limit and an unavailable upstream may be retried; the
// catch-all is not.
var retryable = map[Code]bool{
	InputInvalid:             false,
	OutputInvalid:            false,
	Timeout:                  true,
	RateLimited:              true,
	UpstreamUnavailable:      true,
	PermanentFailure:         false,
	PermissionDenied:         false,
	RetryRequiresIdempotency: false,
	Internal:                 false,
}

// Codes returns every code, in the order of the contract.
func Codes() []Code {
	return []Code{InputInvalid, OutputInvalid, Timeout, RateLimited, UpstreamUnavailable, PermanentFailure, PermissionDenied, RetryRequiresIdempotency, Internal}
}

// Retryable reports whether a caller may retry a call that failed with c.
// Unknown codes are not retryable.
func (c Code) Retryable() bool { return retryable[c] }

// Known reports whether c is one of the contract's codes.
func (c Code) Known() bool {
	_, ok := retryable[c]
	return ok
}

// Error is a classified tool failure.
type Error struct {
	Code Code
	// Message is safe to show to the caller and to record: no secrets, no
	// message bodies, no internal error text.
	Message string
	// RetryAfter is the upstream's hint (for example HTTP Retry-After), or 0.
	RetryAfter time.Duration
	// MaybeApplied reports that the side effect may have happened: true when
	// the outcome of the side-effecting call is unknown (a timeout or a lost
	// connection mid-call), false for anything raised before it.
	MaybeApplied bool
	// Err is the cause, kept for logs; it never reaches a caller.
	Err error
}

// Errorf returns an Error with a formatted message and no cause.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error with a formatted safe message and cause err.
func Wrap(code Code, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether the code may be retried.
func (e *Error) Retryable() bool { return e.Code.Retryable() }

// Applied marks the error as raised after the side-effecting call began.
func (e *Error) Applied() *Error {
	e.MaybeApplied = true
	return e
}

// Classify turns any error into an Error. An Error anywhere in the chain is
// returned as it is (CallParked, ApprovalExpired and CallReconciledNoResult included, never maybe applied; another
// code that is not one of Codes becomes Internal); a context deadline becomes Timeout (maybe applied,
// since the call may have been under way); a cancellation becomes
// UpstreamUnavailable; anything else becomes Internal with a generic
// message and the original as its cause.
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	var te *Error
	if errors.As(err, &te) {
		if te == nil {
			// A typed nil *Error classifies nothing.
			return &Error{Code: Internal, Message: "internal error", Err: err}
		}
		if te.Code == CallParked || te.Code == ApprovalExpired || te.Code == CallReconciledNoResult {
			// Not a tool code, but the contract's own error: kept, and
			// never maybe applied (the call was not sent).
			parked := *te
			parked.MaybeApplied = false
			return &parked
		}
		if !te.Code.Known() {
			return &Error{Code: Internal, Message: "internal error", Err: err, MaybeApplied: te.MaybeApplied}
		}
		return te
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: Timeout, Message: "the tool did not finish within its deadline", MaybeApplied: true, Err: err}
	case errors.Is(err, context.Canceled):
		return &Error{Code: UpstreamUnavailable, Message: "the call was cancelled", MaybeApplied: true, Err: err}
	}
	return &Error{Code: Internal, Message: "internal error", Err: err}
}

// RetryableCodes returns the codes a caller may retry, in the order of the
// contract: what a compiled Task's Retry matches (resolver/asl.go).
func RetryableCodes() []string {
	var out []string
	for _, c := range Codes() {
		if c.Retryable() {
			out = append(out, string(c))
		}
	}
	return out
}
