package review

import (
	"context"
	"errors"
	"time"

	"github.com/toolgate/toolgate/shared/caller"
)

// Caller is who calls a review function, as its caller proof proves it.
type Caller struct {
	// Principal is the caller's principal as the caller proof established
	// it (caller.Identity.Principal).
	Principal string
	// Account is the caller's AWS account as STS answered it
	// (caller.Identity.Account).
	Account string
	// Authenticated: Principal was proven (always, since every request
	// carries a verified caller proof; false only on decisions recorded
	// before proofs existed).
	Authenticated bool
}

// Callers verifies caller proofs (shared/caller's Verifier): Verify
// measures the proof's window from now, VerifyAt from a given time (an
// execution's start).
type Callers interface {
	Verify(ctx context.Context, proof string, b caller.Binding) (caller.Identity, error)
	VerifyAt(ctx context.Context, proof string, b caller.Binding, ref time.Time) (caller.Identity, error)
}

// CallerError maps a refused or unverifiable proof (a *caller.Error) to
// the review functions' codes: CodeUnavailable when STS or the table could
// not be reached (the same request may be repeated with a new proof), else
// CodeUnauthenticated; anything else is CodeInternal.
func CallerError(err error) *Error {
	var ce *caller.Error
	if errors.As(err, &ce) {
		if ce.Reason == caller.Unavailable {
			return Wrap(CodeUnavailable, err, "%s; try again with a new proof", ce.Message)
		}
		return Errorf(CodeUnauthenticated, "%s [%s]", ce.Message, ce.Reason)
	}
	return Wrap(CodeInternal, err, "internal error")
}
