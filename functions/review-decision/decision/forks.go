package decision

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/reviewer"
)

// EnvForkOperators is review.EnvForkOperators.
const EnvForkOperators = review.EnvForkOperators

// MaxForkAge is how old a parent may be when it is forked: the ledger's
// retention (tabledef.DefaultRetention, 90 days) less a day, so that its
// call items outlive the fork's first calls, which match against them
// (docs/fork.md, "Retention").
const MaxForkAge = tabledef.DefaultRetention - 24*time.Hour

// ForkStopGrace is how long after run.fork stopped a running parent it
// answers FORK_WAITING: StopExecution does not end a Lambda invocation a
// tool Task of the parent had already made, and that invocation's
// dispatcher claims its call (its first ledger write) after its Init
// phase, which AWS Lambda bounds at 10 seconds for on-demand functions
// ("Lambda execution environment lifecycle"), and its first requests. A
// call claimed after run.fork read the parent's calls, and after the
// fork's matching call found none, would be made by both runs; waiting
// a minute lets that claim land where the fork's call meets it (its live
// lease, then its outcome: docs/fork.md, "Matching").
const ForkStopGrace = time.Minute

// EnvForkStopGrace sets the grace in whole seconds, 0 to 600
// (MaxForkStopGrace); unset: ForkStopGrace. The CDK app never sets it; the
// local stack shortens it, since its functions' Init phase is local.
const EnvForkStopGrace = "TOOLGATE_FORK_STOP_GRACE_SECONDS"

// MaxForkStopGrace bounds EnvForkStopGrace: ten minutes.
const MaxForkStopGrace = 10 * time.Minute

// ForkPolicy is who may fork and what: Operators (EnvForkOperators) may
// fork any run of Scope, a run's starter their own.
type ForkPolicy struct {
	// StopGrace is how long after stopping a running parent run.fork
	// answers FORK_WAITING (ForkStopGrace on AWS; 0: not at all).
	StopGrace time.Duration
	Operators []string
	// Scope is the executions run.fork admits as a parent or a fork:
	// those the start lane admits (review.StartScope: the deployment's
	// account and region, the stage's state machines, no child's name).
	Scope review.StartScope
}

// ForkExecutions reads and stops executions (shared/review/stepfunctions
// Forks).
type ForkExecutions interface {
	Describe(ctx context.Context, executionARN string) (status string, started time.Time, err error)
	Stop(ctx context.Context, executionARN, cause string) error
}

// ForkStore holds fork items (shared/review/dynamo Store RecordFork,
// Fork).
type ForkStore interface {
	RecordFork(ctx context.Context, f review.Fork) (*review.Fork, error)
	Fork(ctx context.Context, parent string) (*review.Fork, error)
}

// RunCalls reads a run's call items without their results
// (ledger.Store.RunCalls).
type RunCalls interface {
	RunCalls(ctx context.Context, runID string) ([]ledger.CallState, error)
}

// Reconciliations tells whether a person reconciled the call of an
// idempotency key whose outcome was unknown (the reconciliation item,
// RECON#<key>: docs/fork.md, "Reconciling"). nil: no call is reconciled,
// and every unknown call refuses the fork.
type Reconciliations interface {
	Reconciled(ctx context.Context, key string) (bool, error)
}

// Starters reads a run's recorded starter (parkdynamo.Store.Starter: ""
// when it has no start record).
type Starters interface {
	Starter(ctx context.Context, runID string) (string, error)
}

// ForkOrigins reads the parent a run was forked from: its start record's
// forked_from, "" for a run that is no fork (parkdynamo.Store.ForkedFrom).
type ForkOrigins interface {
	ForkedFrom(ctx context.Context, runID string) (string, error)
}

// ForkDeps are run.fork's collaborators; any of Store, Calls, Starters or
// Executions nil refuses every fork.
type ForkDeps struct {
	// Origins tells a fork's parent, for the reusable calls a review of a
	// fork's call shows (review.View Reuses); nil shows none.
	Origins         ForkOrigins
	Store           ForkStore
	Calls           RunCalls
	Starters        Starters
	Executions      ForkExecutions
	Reconciliations Reconciliations
	Policy          ForkPolicy
}

// runFork forks req.RunID as req.ForkRunID (docs/fork.md, "Forking a
// run"): it checks both executions against the policy's scope, verifies
// the caller proof (review.ForkBinding), admits the parent's starter or a
// fork operator, refuses a parent older than MaxForkAge, stops the parent
// if it runs, records the fork item once, and answers the parent's calls
// (review.ForkResult), or FORK_WAITING while calls are in progress under
// a live lease, or FORK_UNRECONCILED while calls whose outcome is
// unknown are not reconciled. Asking again for the same fork stops and
// records nothing new.
func (s *Service) runFork(ctx context.Context, req Request) (review.Caller, any, error) {
	f := s.forks
	if f.Store == nil || f.Calls == nil || f.Starters == nil || f.Executions == nil {
		return review.Caller{}, nil, review.Errorf(review.CodeForbidden, "this function cannot fork runs")
	}
	parent, fork := req.RunID, req.ForkRunID
	for _, c := range []struct{ what, arn string }{{"run_id", parent}, {"fork_run_id", fork}} {
		if c.arn == "" {
			return review.Caller{}, nil, review.Errorf(review.CodeInvalid, "run.fork: %s is missing", c.what)
		}
		if reason, msg := f.Policy.Scope.Admit(c.arn); reason != "" {
			return review.Caller{}, nil, review.Errorf(review.CodeForbidden, "run.fork: %s: %s [%s]", c.what, msg, reason)
		}
	}
	if parent == fork {
		return review.Caller{}, nil, review.Errorf(review.CodeInvalid, "run.fork: fork_run_id is the parent itself: name another execution")
	}
	who, err := s.verifyCaller(ctx, req.Proof, review.ForkBinding(parent, fork, req.RerunReads))
	if err != nil {
		return who, nil, err
	}
	starter, err := f.Starters.Starter(ctx, parent)
	if err != nil {
		return who, nil, review.Wrap(review.CodeUnavailable, err, "the table is unavailable; nothing was forked")
	}
	if z := s.mayFork(who, starter); !z.Allowed {
		return who, nil, review.Errorf(review.CodeForbidden, "you may not fork %s: %s", excerpt.Bytes(parent, 200, "..."), z.Reason)
	}
	status, started, err := f.Executions.Describe(ctx, parent)
	switch {
	case errors.Is(err, review.ErrNotFound):
		return who, nil, review.Errorf(review.CodeNotFound, "execution %s does not exist", excerpt.Bytes(parent, 200, "..."))
	case err != nil:
		return who, nil, review.Wrap(review.CodeUnavailable, err, "Step Functions could not describe %s; nothing was forked", excerpt.Bytes(parent, 200, "..."))
	}
	now := s.store.Now()
	if age := now.Sub(started); age > MaxForkAge {
		return who, nil, review.Errorf(review.CodeExpired, "execution %s started %s ago, more than %s: the ledger's records of its calls end with its retention, so it can no longer be forked",
			excerpt.Bytes(parent, 200, "..."), age.Round(time.Hour), MaxForkAge)
	}
	rec, err := s.recordFork(ctx, who, review.Fork{ParentRunID: parent, ForkRunID: fork, ForkedBy: who.Principal, ForkedAt: now,
		RerunReads: req.RerunReads, ParentStatus: status})
	if err != nil {
		return who, nil, err
	}
	calls, err := f.Calls.RunCalls(ctx, parent)
	if err != nil {
		return who, nil, review.Wrap(review.CodeUnavailable, err, "the ledger is unavailable; %s is forked: ask again", excerpt.Bytes(parent, 200, "..."))
	}
	res := &review.ForkResult{ParentRunID: parent, ForkRunID: fork, ParentStatus: rec.ParentStatus, Calls: []review.ForkCall{}}
	var waiting, unknown []string
	var lease time.Time
	for _, c := range calls {
		res.Calls = append(res.Calls, review.ForkCall{Key: c.Key, Seq: string(c.Seq), Step: c.Step, Tool: c.Tool, State: string(c.State)})
		switch {
		case c.State == ledger.StateInProgress && c.LeaseUntil.After(now):
			waiting = append(waiting, c.Key)
			if c.LeaseUntil.After(lease) {
				lease = c.LeaseUntil
			}
		case c.State == ledger.StateInProgress || c.State == ledger.StateUnknown:
			ok, err := s.reconciled(ctx, c.Key)
			if err != nil {
				return who, nil, review.Wrap(review.CodeUnavailable, err, "the table is unavailable; %s is forked: ask again", excerpt.Bytes(parent, 200, "..."))
			}
			if !ok {
				unknown = append(unknown, c.Key)
			}
		}
	}
	if until := rec.ForkedAt.Add(f.Policy.StopGrace); f.Policy.StopGrace > 0 && mayRunOn(rec.ParentStatus) && until.After(now) {
		// The parent was running when it was stopped: a call a Task of it
		// had already invoked may claim yet (ForkStopGrace).
		waiting = append(waiting, stoppedParentKey)
		if until.After(lease) {
			lease = until
		}
	}
	if len(waiting) > 0 {
		return who, nil, review.Errorf(review.CodeForkWaiting, "%s", review.ForkWaitingMessage(review.ForkWaiting{Keys: waiting, LeaseUntil: lease.UTC().Format(review.TimeFormat)}))
	}
	if len(unknown) > 0 {
		return who, nil, review.Errorf(review.CodeForkUnreconciled, "calls of %s have an unknown outcome, which no one reconciled: %s; reconcile each with toolgate ledger reconcile KEY --applied or --not-applied, then fork again",
			excerpt.Bytes(parent, 200, "..."), strings.Join(unknown, ", "))
	}
	s.log.InfoContext(ctx, "run forked", "parent_run_id", parent, "fork_run_id", fork, "by", who.Principal, "parent_status", rec.ParentStatus, "calls", len(calls))
	return who, res, nil
}

// recordFork stops the parent if it runs and records the fork item f,
// unless the parent's fork item names f's fork, forker and rerun_reads
// already (the same request again: nothing is stopped or written anew). A
// parent forked as another execution, or as the same one by another
// forker or with other reads (whose start the start lane would refuse),
// is refused REVIEW_CONFLICT, before anything is stopped; so is the loser
// of two requests racing past the read (dynamo.Store.RecordFork's
// condition).
func (s *Service) recordFork(ctx context.Context, who review.Caller, f review.Fork) (*review.Fork, error) {
	fs := s.forks
	cur, err := fs.Store.Fork(ctx, f.ParentRunID)
	switch {
	case err == nil && cur.ForkRunID == f.ForkRunID && cur.ForkedBy == f.ForkedBy && cur.RerunReads == f.RerunReads:
		return cur, nil
	case err == nil:
		return nil, forkedElsewhere(cur)
	case !errors.Is(err, review.ErrNotFound):
		return nil, review.Wrap(review.CodeUnavailable, err, "the table is unavailable; nothing was forked")
	}
	if mayRunOn(f.ParentStatus) {
		if err := fs.Executions.Stop(ctx, f.ParentRunID, fmt.Sprintf("forked as %s by %s", f.ForkRunID, who.Principal)); err != nil {
			return nil, review.Wrap(review.CodeUnavailable, err, "Step Functions could not stop %s; nothing was forked", excerpt.Bytes(f.ParentRunID, 200, "..."))
		}
		s.log.InfoContext(ctx, "forked run stopped", "parent_run_id", f.ParentRunID, "fork_run_id", f.ForkRunID)
	}
	rec, err := fs.Store.RecordFork(ctx, f)
	switch {
	case errors.Is(err, dynamo.ErrForkedElsewhere):
		return nil, forkedElsewhere(rec)
	case err != nil:
		return nil, review.Wrap(review.CodeUnavailable, err, "the table is unavailable; the fork was not recorded: ask again")
	}
	return rec, nil
}

// stoppedParentKey stands, in a FORK_WAITING answer's keys, for a call
// the stopped parent may claim yet, whose key no one knows.
const stoppedParentKey = "(a call the stopped parent may still claim)"

// mayRunOn reports whether a parent of Step Functions' execution status
// may still make calls, so that run.fork stops it: RUNNING, and
// PENDING_REDRIVE, which a RedriveExecution asked for and which runs
// again from its failed state (AWS Step Functions API reference,
// "RedriveExecution"; "DescribeExecution", status).
func mayRunOn(status string) bool {
	return status == "RUNNING" || status == "PENDING_REDRIVE"
}

// forkedElsewhere refuses a second fork of cur's parent (another fork, or
// the same by another forker or with other reads).
func forkedElsewhere(cur *review.Fork) error {
	return review.Errorf(review.CodeConflict, "%s was already forked as %s by %s at %s (rerun_reads %v): fork %s instead, as its forker and with its rerun_reads",
		excerpt.Bytes(cur.ParentRunID, 200, "..."), excerpt.Bytes(cur.ForkRunID, 200, "..."), cur.ForkedBy,
		cur.ForkedAt.UTC().Format(review.TimeFormat), cur.RerunReads, excerpt.Bytes(cur.ForkRunID, 200, "..."))
}

// reconciled reports whether the call of key was reconciled; false
// without a Reconciliations.
func (s *Service) reconciled(ctx context.Context, key string) (bool, error) {
	if s.forks.Reconciliations == nil {
		return false, nil
	}
	return s.forks.Reconciliations.Reconciled(ctx, key)
}

// mayFork decides whether who may fork a run whose recorded starter is
// starter ("" when it has none): its starter, or a fork operator. Default
// deny.
func (s *Service) mayFork(who review.Caller, starter string) review.Authorization {
	switch {
	case who.Principal == "":
		return review.Authorization{Reason: "the caller has no principal"}
	case starter != "" && who.Principal == starter:
		return review.Authorization{Allowed: true, Reason: "you started the run"}
	case reviewer.IsAdmin(s.forks.Policy.Operators, who.Principal):
		return review.Authorization{Allowed: true, Reason: "you match a fork operator"}
	}
	return review.Authorization{Reason: fmt.Sprintf("%s neither started the run nor matches a fork operator (%s)", who.Principal, EnvForkOperators)}
}

// LedgerReconciliations are the Reconciliations of the ledger's
// reconciliation items (ledger.Store.Reconciliation, one consistent
// GetItem of RECON#<key>; docs/fork.md, "Reconciling"): a call is
// reconciled once its item exists, whatever its outcome.
type LedgerReconciliations struct {
	Store *ledger.Store
}

// Reconciled reports whether key's call has a reconciliation item.
func (l LedgerReconciliations) Reconciled(ctx context.Context, key string) (bool, error) {
	_, err := l.Store.Reconciliation(ctx, key)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// reusable is what review show says to who of a review of a fork's call
// (review.View Reuses; docs/fork.md, "Reviews in a fork"): the keys of
// the parent run's COMPLETED calls of the reviewed step with the reviewed
// input digest, in the parent's seq order; none for a review of a run
// that is no fork, or a direct-lane review. A key names the parent's
// execution ARN, which a reviewer of the fork's call is not thereby
// entitled to learn (the parent may be another Solution's run, with other
// reviewers): only a reviewer who may fork the parent (mayFork: its
// starter or a fork operator) is shown the keys; any other is shown the
// parent calls' seqs ("seq 4"), which say as much of what the approval
// leads to. Three reads at most: the run's start record (forked_from),
// the parent's calls (RunCalls, never a result) and, when some are
// listed, the parent's starter. The review is requested again in every
// fork: reviews are never reused, only the calls they approve may be.
func (s *Service) reusable(ctx context.Context, who review.Caller, r *review.Review) ([]string, error) {
	f := s.forks
	if f.Origins == nil || f.Calls == nil || !strings.HasPrefix(r.RunID, "arn:") {
		return nil, nil
	}
	parent, err := f.Origins.ForkedFrom(ctx, r.RunID)
	if err != nil || parent == "" {
		return nil, err
	}
	calls, err := f.Calls.RunCalls(ctx, parent)
	if err != nil {
		return nil, err
	}
	var found []ledger.CallState
	for _, c := range calls {
		if c.State == ledger.StateCompleted && c.Step == r.Of && c.InputDigest == r.InputDigest {
			found = append(found, c)
		}
	}
	if len(found) == 0 {
		return nil, nil
	}
	starter := ""
	if f.Starters != nil {
		if starter, err = f.Starters.Starter(ctx, parent); err != nil {
			return nil, err
		}
	}
	keys := s.mayFork(who, starter).Allowed
	out := make([]string, len(found))
	for i, c := range found {
		if out[i] = c.Key; !keys {
			out[i] = "seq " + string(c.Seq)
		}
	}
	return out, nil
}
