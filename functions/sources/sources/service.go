package sources

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/enduser"
	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/reviewer"
)

// Callers verifies caller proofs (shared/caller's Verifier).
type Callers interface {
	Verify(ctx context.Context, proof string, b caller.Binding) (caller.Identity, error)
}

// Store is what the function reads and writes in the table
// (shared/inbound/store's Store).
type Store interface {
	PutSource(ctx context.Context, s store.Source) error
	Source(ctx context.Context, name string) (store.Source, error)
	Sources(ctx context.Context) ([]store.Source, error)
	UpdateSecrets(ctx context.Context, name string, secrets []store.Secret, version int, now time.Time) error
	UpdateSecretsHeldBy(ctx context.Context, name string, secrets []store.Secret, holders []string, version int, now time.Time) error
	DeleteSource(ctx context.Context, name string) error
	PutSchedule(ctx context.Context, s store.Schedule) error
	Schedule(ctx context.Context, name string) (store.Schedule, error)
	Schedules(ctx context.Context) ([]store.Schedule, error)
	SetScheduleState(ctx context.Context, name, state string, version int, now time.Time) error
	DeleteSchedule(ctx context.Context, name string) error
}

// Service is the sources function: the operations behind its routes.
type Service struct {
	Callers Callers
	// Operators are the inbound operators' patterns
	// (inboundapi.EnvOperators, reviewer.ParseAdmins); none: nobody may do
	// anything.
	Operators []string
	Store     Store
	// Seal seals a source's secret (store.SealSecret with the KMS client
	// and the credentials' key, purpose webhook-source).
	Seal func(ctx context.Context, source string, secret []byte) (vault.Sealed, error)
	// Published reads a Solution's published record
	// (ledger.Store.PublishedSolution; ledger.ErrNotFound when it has
	// none); nil refuses every Solution.
	Published func(ctx context.Context, solution string) (ledger.Published, error)
	// Scheduler makes the EventBridge Scheduler schedules that fire the
	// schedule items; nil (the local stack): schedules are items only, a
	// ticker fires them, and expressions may also be rate(N seconds)
	// (schedule.ParseLocal).
	Scheduler *Scheduler
	// Queue is the SQS client of dlq list and redrive; InboundQueue and
	// DLQ the inbound queue's URL and its dead-letter queue's ("": dlq
	// list and redrive are refused).
	Queue             Queue
	InboundQueue, DLQ string
	Now               func() time.Time // nil: time.Now
	Log               *slog.Logger     // nil: slog.Default()
}

// Error is a refused or failed request; Message is safe to show (it never
// holds a secret, a proof or a schedule's input).
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }
func (e *Error) Unwrap() error { return e.Err }

// errorOf is err as an *Error: one that is not is UNAVAILABLE, "internal
// error".
func errorOf(err error) *Error {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: inboundapi.CodeUnavailable, Message: "internal error", Err: err}
	}
	return e
}

func invalid(format string, a ...any) error {
	return &Error{Code: inboundapi.CodeInvalid, Message: fmt.Sprintf(format, a...)}
}

func unavailable(msg string, err error) error {
	return &Error{Code: inboundapi.CodeUnavailable, Message: msg, Err: err}
}

func (s *Service) now() time.Time {
	if s.Now == nil {
		return time.Now().UTC()
	}
	return s.Now().UTC()
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

// authorize verifies proof for b and that its principal is an inbound
// operator: the principal, or an *Error (UNAUTHENTICATED for a proof the
// verifier refuses, REFUSED for a principal no operator pattern matches,
// logged with the principal, never the proof).
func (s *Service) authorize(ctx context.Context, proof string, b caller.Binding) (string, error) {
	if s.Callers == nil {
		return "", &Error{Code: inboundapi.CodeUnauthenticated, Message: "this function has no caller verifier"}
	}
	who, err := s.Callers.Verify(ctx, proof, b)
	if err != nil {
		msg, unavailable := caller.Explain(err)
		if unavailable {
			return "", &Error{Code: inboundapi.CodeUnavailable, Message: msg, Err: err}
		}
		return "", &Error{Code: inboundapi.CodeUnauthenticated, Message: msg}
	}
	if !reviewer.IsAdmin(s.Operators, who.Principal) {
		return "", &Error{Code: inboundapi.CodeRefused, Message: who.Principal + " is not an inbound operator (platform configuration inboundOperators)"}
	}
	return who.Principal, nil
}

// checkName refuses a source or schedule name that breaks inbound.CheckName
// as INVALID, naming the field.
func checkName(field, name string) error {
	if err := inbound.CheckName(name); err != nil {
		return invalid("%s: %v", field, err)
	}
	return nil
}

// MaxSolutionNameBytes bounds a Solution name in a request; the published
// record decides whether it exists.
const MaxSolutionNameBytes = 128

// checkEndUser refuses an end-user id that breaks enduser.CheckID; "" is
// none.
func checkEndUser(id string) error {
	if id == "" {
		return nil
	}
	if err := enduser.CheckID(id); err != nil {
		return invalid("end_user: %v", err)
	}
	return nil
}

// published reads solution's published record: NOT_FOUND when it has
// none (docs/solutions.md: only a published Solution runs).
func (s *Service) published(ctx context.Context, solution string) (ledger.Published, error) {
	if solution == "" || len(solution) > MaxSolutionNameBytes {
		return ledger.Published{}, invalid("solution must be 1 to %d bytes", MaxSolutionNameBytes)
	}
	if s.Published == nil {
		return ledger.Published{}, &Error{Code: inboundapi.CodeRefused, Message: "this function reads no published Solutions"}
	}
	p, err := s.Published(ctx, solution)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return p, &Error{Code: inboundapi.CodeNotFound, Message: fmt.Sprintf("solution %.80q is not published in this stage (toolgate publish)", solution)}
	case err != nil:
		return p, unavailable("the published Solutions could not be read", err)
	}
	return p, nil
}

// rfc3339 is t as the answers write times: RFC 3339, UTC, whole seconds;
// "" for the zero time.
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
