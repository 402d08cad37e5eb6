package decision

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/httprule"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/tracing"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhook/store"
)

// DefaultDeliveryLease is how long one request owns the delivery of a
// decision before a repeated decision may take it over: longer than the
// decision function's timeout.
const DefaultDeliveryLease = 60 * time.Second

// Request is one call of the decision function, whatever its transport.
type Request struct {
	Action   review.Action
	ReviewID string
	// Status filters a listing: pending (default), approved or rejected.
	Status   string
	Decision review.Verdict
	Reason   string
	// Answer and Edits are a review decision's (review.DecisionBody's):
	// the answer to the review's question and the input members an
	// approval replaces; absent when none. Neither is logged.
	Answer, Edits json.RawMessage
	// ParkID names the park of a park action (review.ActionParkShow,
	// ActionDecide, ActionCancel); Decision is then approve, reject or
	// resume, and Status filters review.ActionParkList (parked by default).
	ParkID string
	// RunID is run.fork's parent run and ForkRunID the fork's execution
	// ARN (review.ActionRunFork; docs/fork.md); RerunReads the fork's
	// --rerun-reads.
	RunID, ForkRunID string
	RerunReads       bool
	// Key, Outcome and Result are a reconcile's (review.ActionLedgerReconcile;
	// docs/fork.md, "Reconciling"): the call's idempotency key, applied or
	// not_applied, and the call's result (applied only, optional), which
	// is never logged; Reason says why.
	Key, Outcome string
	Result       json.RawMessage
	// Proof is the caller proof (shared/caller), bound to this request:
	// caller.ActionList with the status filter, caller.ActionShow with the
	// review id, caller.ActionDecide with the review id, the decision and
	// the review's input digest; a park action's as review.ParkListBinding,
	// ParkShowBinding, ParkDecideBinding and ParkCancelBinding say.
	Proof string
}

// Service is the review-decision function's logic, whatever the
// transport: list, show and decide, for callers the reviews' reviewer
// patterns admit. NewService builds it.
type Service struct {
	store         *dynamo.Store
	tasks         review.TaskDelivery
	callers       review.Callers
	account       string
	deliveryLease time.Duration
	log           *slog.Logger
	tracer        *tracing.Tracer
	webhooks      Emitter
	parks         ParkStore
	parkTasks     ParkTasks
	parkPolicy    ParkPolicy
	forks         ForkDeps
	reconciles    ReconcileStore
	reconcilers   []string
	toolsets      ledger.ToolsetReader
	toolsetCache  ledger.ToolsetCache
	runs          RunRowsReader
	email         EmailConfig
}

// Deps are a Service's collaborators and settings.
type Deps struct {
	// Store is the review table (dynamo.Store).
	Store *dynamo.Store
	// Tasks delivers decisions to review Tasks (stepfunctions.Sender).
	Tasks review.TaskDelivery
	// Callers verifies each request's caller proof; nil: every request is
	// refused REVIEW_UNAUTHENTICATED.
	Callers review.Callers
	// Account is the deployment's own AWS account id (caller.EnvAccount):
	// a review that names no reviewers admits its principals only
	// (review.Authorize). Empty, such a review admits nobody.
	Account string
	// DeliveryLease defaults to DefaultDeliveryLease.
	DeliveryLease time.Duration
	// Log defaults to slog.Default.
	Log *slog.Logger
	// Tracer exports the span of each decision, under its review's span
	// (docs/tracing.md); nil exports none.
	Tracer *tracing.Tracer
	// Webhooks records each decision's review.decided event once it has
	// reached the review's Task, and sends it to the events queue when
	// one is named (store.Emitter; docs/webhooks.md); nil records none.
	Webhooks Emitter
	// Parks are the parked-call items (shared/park/dynamo Decisions) and
	// ParkTasks the park Tasks and runs (shared/review/stepfunctions
	// Parks); either nil refuses every park action. ParkPolicy names the
	// park deciders and operators (docs/parking.md, "Deciding").
	Parks      ParkStore
	ParkTasks  ParkTasks
	ParkPolicy ParkPolicy
	// Forks are run.fork's collaborators (docs/fork.md); without them
	// every fork is refused.
	Forks ForkDeps
	// Reconciles is the ledger a reconcile reads and writes
	// (ledger.Store), and Reconcilers who may reconcile (EnvReconcilers's
	// patterns; docs/fork.md, "Reconciling"); a nil Reconciles, or nil
	// Parks (whose Starter names a run's starter), refuses every
	// reconcile.
	Reconciles  ReconcileStore
	Reconcilers []string
	// Toolsets reads the registered toolsets (ledger.Store.Toolset): an
	// approval's edits must leave an input the reviewed tool's pinned
	// input schema accepts (docs/reviews.md, "Approve with edits"); nil
	// refuses every approval with edits. A show answer carries the
	// reviewed tool's pinned input schema read through it too.
	Toolsets ledger.ToolsetReader
	// Runs reads the rows of a review's own run, whose metadata a show
	// answer carries (View.RunCalls; ledger.Store.RunRows); nil: none.
	Runs RunRowsReader
	// Email is send-email's sender and allow-list, which a show answer of
	// a send-email review carries verdicts of (View.Email; ConfigFromEnv
	// reads them); the zero value gives VerdictUnknown.
	Email EmailConfig
}

// Emitter records a webhook event once and hands it to the events queue
// (shared/webhook/store Emitter.Emit): an error wrapping
// store.ErrLeftToRelay says it was recorded and the relay will send it;
// an event already recorded is not an error, and is not sent again.
type Emitter interface {
	Emit(ctx context.Context, ev webhook.Event) error
}

// NewService returns the Service of d.
func NewService(d Deps) *Service {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	return &Service{store: d.Store, tasks: d.Tasks, callers: d.Callers, account: d.Account, deliveryLease: d.DeliveryLease, log: d.Log, tracer: d.Tracer,
		webhooks: d.Webhooks, parks: d.Parks, parkTasks: d.ParkTasks, parkPolicy: d.ParkPolicy, forks: d.Forks, reconciles: d.Reconciles, reconcilers: d.Reconcilers,
		toolsets: d.Toolsets, runs: d.Runs, email: d.Email}
}

// verifyCaller checks a request's proof for binding b.
func (s *Service) verifyCaller(ctx context.Context, proof string, b caller.Binding) (review.Caller, error) {
	if s.callers == nil {
		return review.Caller{}, review.Errorf(review.CodeUnauthenticated, "this function has no caller verifier")
	}
	id, err := s.callers.Verify(ctx, proof, b)
	if err != nil {
		return review.Caller{}, review.CallerError(err)
	}
	return review.Caller{Principal: id.Principal, Account: id.Account, Authenticated: true}, nil
}

// Do verifies the request's caller proof, runs the request for the
// caller it proves, and returns the caller and the JSON-encodable answer
// or an *Error. Nothing is read for a caller without a valid proof but the
// review a decision names (its input digest is part of the binding).
func (s *Service) Do(ctx context.Context, req Request) (review.Caller, any, error) {
	switch req.Action {
	case review.ActionList:
		who, err := s.verifyCaller(ctx, req.Proof, caller.Binding{Action: caller.ActionList, Target: req.Status})
		if err != nil {
			return who, nil, err
		}
		res, err := s.list(ctx, who, req.Status)
		return who, res, err
	case review.ActionShow:
		who, err := s.verifyCaller(ctx, req.Proof, caller.Binding{Action: caller.ActionShow, Target: req.ReviewID})
		if err != nil {
			return who, nil, err
		}
		r, err := s.authorized(ctx, who, req.ReviewID)
		if err != nil {
			return who, nil, err
		}
		if r.BoundKey, err = s.store.BoundKey(ctx, r.ID); err != nil {
			return who, nil, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
		}
		v := review.NewView(r, s.store.Now(), true)
		if v.Reuses, err = s.reusable(ctx, who, r); err != nil {
			return who, nil, review.Wrap(review.CodeUnavailable, err, "the ledger is unavailable")
		}
		if err := s.showMembers(ctx, r, &v); err != nil {
			return who, nil, err
		}
		return who, v, nil
	case review.ActionDecide:
		return s.decide(ctx, req)
	case review.ActionParkList, review.ActionParkShow, review.ActionParkDecide, review.ActionParkCancel:
		return s.doPark(ctx, req)
	case review.ActionRunFork:
		return s.runFork(ctx, req)
	case review.ActionLedgerReconcile:
		return s.reconcile(ctx, req)
	}
	return review.Caller{}, nil, review.Errorf(review.CodeInvalid, "unknown action %q: list, show, decide, park.list, park.show, park.decide, park.cancel, run.fork or ledger.reconcile", excerpt.Bytes(string(req.Action), 40, "..."))
}

func (s *Service) list(ctx context.Context, caller review.Caller, status string) (*review.ListResult, error) {
	st := review.Pending
	switch strings.ToLower(status) {
	case "", "pending":
	case "approved":
		st = review.Approved
	case "rejected":
		st = review.Rejected
	default:
		return nil, review.Errorf(review.CodeInvalid, "status %q is not pending, approved or rejected", excerpt.Bytes(status, 40, "..."))
	}
	now := s.store.Now()
	reviews, err := s.store.List(ctx, st, func(r *review.Review) bool {
		if st == review.Pending && r.Expired(now) {
			return false // its Task has timed out; the TTL will end it
		}
		return review.Authorize(r.Reviewers, caller, s.account).Allowed
	})
	if err != nil {
		return nil, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
	}
	res := &review.ListResult{Reviews: []review.View{}}
	for _, r := range reviews {
		res.Reviews = append(res.Reviews, review.NewView(r, now, false))
	}
	return res, nil
}

// authorized reads a review the caller may see.
func (s *Service) authorized(ctx context.Context, who review.Caller, id string) (*review.Review, error) {
	r, err := s.get(ctx, id)
	if err != nil {
		return nil, err
	}
	if a := review.Authorize(r.Reviewers, who, s.account); !a.Allowed {
		return nil, review.Errorf(review.CodeForbidden, "you are not a reviewer of review %s: %s", id, a.Reason)
	}
	return r, nil
}

// get reads a review.
func (s *Service) get(ctx context.Context, id string) (*review.Review, error) {
	if !review.ValidID(id) {
		return nil, review.Errorf(review.CodeInvalid, "%q is not a review id (rv_ and 32 hex digits)", excerpt.Bytes(id, 40, "..."))
	}
	r, err := s.store.Get(ctx, id)
	if errors.Is(err, review.ErrNotFound) {
		return nil, review.Errorf(review.CodeNotFound, "review %s does not exist (or its time ended long ago)", id)
	}
	if err != nil {
		return nil, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
	}
	// What a reviewer is shown is what the digest a decision binds says:
	// a review whose stored inputs do not digest to its input digest
	// (written by anything but review-request's own computation) is
	// refused, never shown or decided.
	if _, digest, err := tool.InputDigest(r.Input); err != nil || digest != r.InputDigest {
		s.log.ErrorContext(ctx, "review inputs do not match their digest", "review_id", r.ID)
		return nil, review.Errorf(review.CodeConflict, "review %s is refused: its inputs do not match its input digest", r.ID)
	}
	return r, nil
}

func checkReason(v review.Verdict, reason string) error {
	switch {
	case !utf8.ValidString(reason):
		return review.Errorf(review.CodeInvalid, "the reason is not valid UTF-8")
	case utf8.RuneCountInString(reason) > review.MaxReasonLength:
		return review.Errorf(review.CodeInvalid, "the reason is over %d characters", review.MaxReasonLength)
	case strings.ContainsFunc(reason, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f }):
		return review.Errorf(review.CodeInvalid, "the reason holds control characters")
	case v == review.Reject && strings.TrimSpace(reason) == "":
		return review.Errorf(review.CodeInvalid, "a rejection needs a reason")
	}
	return nil
}

func (s *Service) decide(ctx context.Context, req Request) (review.Caller, *review.DecideResult, error) {
	if req.Decision != review.Approve && req.Decision != review.Reject {
		return review.Caller{}, nil, review.Errorf(review.CodeInvalid, "decision %q is not approve or reject", excerpt.Bytes(string(req.Decision), 40, "..."))
	}
	if err := checkReason(req.Decision, req.Reason); err != nil {
		return review.Caller{}, nil, err
	}
	if req.Proof == "" {
		_, err := s.verifyCaller(ctx, "", caller.Binding{})
		return review.Caller{}, nil, err
	}
	r, err := s.get(ctx, req.ReviewID)
	if err != nil {
		return review.Caller{}, nil, err
	}
	// The proof binds the answer and the edits too (review.DecideDetail):
	// one signed for another answer, or without the edits, decides nothing.
	b, err := review.DecideBinding(r.ID, req.Decision, r.InputDigest, req.Answer, req.Edits)
	if err != nil {
		return review.Caller{}, nil, review.Errorf(review.CodeInvalid, "%v", err)
	}
	who, err := s.verifyCaller(ctx, req.Proof, b)
	if err != nil {
		return who, nil, err
	}
	res, err := s.decideAs(ctx, who, r, req)
	return who, res, err
}

// decideAs records who's decision on r, read before the proof was checked.
func (s *Service) decideAs(ctx context.Context, caller review.Caller, r *review.Review, req Request) (*review.DecideResult, error) {
	if len(caller.Principal) > review.MaxApproverLength || !utf8.ValidString(caller.Principal) ||
		strings.ContainsFunc(caller.Principal, func(r rune) bool { return r <= 0x20 || r == 0x7f }) {
		return nil, review.Errorf(review.CodeInvalid, "the approver must be 1 to %d characters without whitespace", review.MaxApproverLength)
	}
	if a := review.Authorize(r.Reviewers, caller, s.account); !a.Allowed {
		return nil, review.Errorf(review.CodeForbidden, "you are not a reviewer of review %s: %s", r.ID, a.Reason)
	}
	if req.Decision == review.Approve {
		if err := s.checkRequester(ctx, r); err != nil {
			return nil, err
		}
	}
	if r.Requester != "" && caller.Principal == r.Requester {
		s.log.WarnContext(ctx, "review self-approval refused", "review_id", r.ID, "run_id", r.RunID, "principal", caller.Principal,
			"decision", string(req.Decision))
		if err := s.store.NoteSelfApproval(ctx, r.ID); err != nil {
			s.log.ErrorContext(ctx, "record self-approval attempt", "review_id", r.ID, "error", err)
		}
		return nil, review.Errorf(review.CodeSelfApproval, "you requested review %s, so you cannot decide it: another reviewer must (four eyes)", r.ID)
	}
	if req.Decision == review.Approve && r.HeldByOrigin(caller.Principal) {
		// An origin holder could have signed the event (or chose the
		// schedule's input) that started the run: its approval, with its
		// answer and edits, is refused as the requester's; it may reject.
		s.log.WarnContext(ctx, "review self-approval refused", "review_id", r.ID, "run_id", r.RunID, "principal", caller.Principal,
			"decision", string(req.Decision), "as", "origin holder")
		if err := s.store.NoteSelfApproval(ctx, r.ID); err != nil {
			s.log.ErrorContext(ctx, "record self-approval attempt", "review_id", r.ID, "error", err)
		}
		return nil, review.Errorf(review.CodeSelfApproval, "you held a secret of the source, or added the schedule, that started the run of review %s, so you cannot approve it: another reviewer must (four eyes)", r.ID)
	}
	approval, err := s.checkApproval(ctx, r, req)
	if err != nil {
		return nil, err
	}
	now := s.store.Now()
	if r.Status == review.Pending {
		if r.Expired(now) {
			return nil, review.Errorf(review.CodeExpired, "review %s expired at %s (its timeout was %d s): its Task no longer waits and no decision is taken", r.ID, review.FormatTime(r.ExpiresAt), r.TimeoutSeconds)
		}
		applied, cur, err := s.store.DecideWith(ctx, r, req.Decision, caller.Principal, caller.Authenticated, req.Reason, approval, s.lease())
		if err != nil {
			return nil, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable; nothing was decided")
		}
		if applied {
			s.log.InfoContext(ctx, "review decided", "review_id", r.ID, "run_id", r.RunID, "of", r.Of,
				"decision", string(req.Decision), "approver", caller.Principal, "authenticated", caller.Authenticated)
			res, err := s.deliver(ctx, cur, true)
			s.traceDecision(ctx, cur, req.Decision, now, err)
			return res, err
		}
		r = cur
		if r.Status == review.Pending { // the condition failed on expiry
			return nil, review.Errorf(review.CodeExpired, "review %s expired at %s: no decision is taken", r.ID, review.FormatTime(r.ExpiresAt))
		}
	}
	if r.Status != review.StatusOf(req.Decision) || !bytes.Equal(r.Answer, approval.Answer) || !bytes.Equal(r.Edits, approval.Edits) {
		return nil, review.Errorf(review.CodeConflict, "review %s was already %s by %s at %s; a decision cannot be changed",
			r.ID, strings.ToLower(string(r.Status)), r.Approver, review.FormatTime(r.DecidedAt))
	}
	// The same decision again: nothing to record; finish a delivery that
	// did not complete.
	return s.deliver(ctx, r, false)
}

// checkApproval checks a decision's answer and edits against review r
// (review.CheckAnswer, review.CheckEdits) and, for edits, the input with
// them merged against the reviewed tool's pinned input schema, read from
// the run's registered toolset (docs/reviews.md, "Approve with edits").
// Edits of a tool the toolset does not gate (review_required false), and
// of an http read (GET or HEAD, which runs without an approval whatever
// its step was compiled for: httprule.Decide), are refused: the
// dispatcher would never merge them into the call.
// A refusal is REVIEW_INVALID_REQUEST naming the rule, the member or the
// schema keyword and the JSON Pointer, never a value; nothing is recorded
// then, and the review stays as it was. It returns what Decide records.
func (s *Service) checkApproval(ctx context.Context, r *review.Review, req Request) (dynamo.Approval, error) {
	answer, err := review.CheckAnswer(r, req.Decision, req.Answer)
	if err != nil {
		return dynamo.Approval{}, review.Errorf(review.CodeInvalid, "%v", err)
	}
	edits, merged, digest, err := review.CheckEdits(r, req.Decision, req.Edits)
	if err != nil {
		return dynamo.Approval{}, review.Errorf(review.CodeInvalid, "%v", err)
	}
	a := dynamo.Approval{Answer: answer}
	if edits == nil {
		return a, nil
	}
	if s.toolsets == nil {
		return a, review.Errorf(review.CodeInvalid, "this function cannot check edits: approve without them")
	}
	ts, err := s.toolsetCache.Load(ctx, s.toolsets, r.ToolsetID, s.log)
	if err != nil {
		var te *tool.Error
		if errors.As(err, &te) && te.Code == tool.UpstreamUnavailable {
			return a, review.Wrap(review.CodeUnavailable, err, "the ledger is unavailable; nothing was decided")
		}
		return a, review.Errorf(review.CodeForbidden, "review %s's toolset %s cannot be read for the edits' check", r.ID, r.ToolsetID)
	}
	pinned, ok := ts.Tools[r.Tool]
	if !ok {
		return a, review.Errorf(review.CodeForbidden, "tool %s is not in toolset %s", r.Tool, r.ToolsetID)
	}
	if !pinned.ReviewRequired {
		// Its call carries no approval, so no dispatcher would merge the
		// edits: the call would run with the input as it was shown.
		return a, review.Errorf(review.CodeInvalid, "tool %s runs without an approval in toolset %s, so edits would never reach its call: approve without them, or reject", r.Tool, r.ToolsetID)
	}
	if m := httpMethod(r); r.Tool == httpTool && httprule.IsRead(m) {
		// The http tool's contract needs no review for a read, whatever
		// the step was compiled for (httprule.Decide): the dispatcher
		// would run it with the input as shown.
		return a, review.Errorf(review.CodeInvalid, "an http %s is a read, which runs without an approval, so edits would never reach it: approve without them, or reject", m)
	}
	sch, err := schema.Compile(pinned.InputSchema)
	if err != nil {
		return a, review.Wrap(review.CodeInternal, err, "the pinned input schema does not compile")
	}
	var v any
	if err := json.Unmarshal(merged, &v); err != nil {
		return a, review.Errorf(review.CodeInvalid, "the edited input is not JSON")
	}
	if err := sch.Validate(v); err != nil {
		return a, review.Errorf(review.CodeInvalid, "the input with the edits does not match the pinned input schema of %s: %s", r.Tool,
			strings.Join(schema.RedactedLines(schema.Problems(err, nil), "input", 5), "; "))
	}
	a.Edits, a.ApprovedDigest = edits, digest
	return a, nil
}

// httpTool is the catalog's http tool, whose contract decides per call
// whether it needs an approval (shared/httptool Contract).
const httpTool = "http"

// httpMethod is the method of review r's input, read as the http tool's
// contract reads it; "" when it has none.
func httpMethod(r *review.Review) string {
	var in struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(r.Input, &in)
	return in.Method
}

// traceDecision exports the span "toolgate.review.decide" of a decision
// recorded at start, under the review's own span (review.Review.Span; a
// review stored before reviews had one gets none): the review's step and
// the decision, never the reason or who decided. The span ends when the
// decision is delivered; err is the delivery's.
func (s *Service) traceDecision(ctx context.Context, r *review.Review, d review.Verdict, start time.Time, err error) {
	parent, ok := r.Span()
	if !ok {
		return
	}
	var code string
	if err != nil {
		code = string(review.AsError(err).Code)
	}
	o := tracing.SpanOptions{Parent: parent, Start: start, Kind: trace.SpanKindServer,
		Attributes: []attribute.KeyValue{attribute.String("toolgate.step", r.Step), attribute.String("toolgate.outcome", string(d))}}
	if err := s.tracer.Emit(ctx, "toolgate.review.decide", o, code); err != nil {
		s.log.WarnContext(ctx, "spans not exported", "error", err)
	}
}

func (s *Service) lease() time.Duration {
	if s.deliveryLease > 0 {
		return s.deliveryLease
	}
	return DefaultDeliveryLease
}

// deliver sends the decision to the review's Task, once: the request that
// recorded the decision holds the delivery lease; a repeated decision
// takes it over only when it has expired or was released after a
// transient failure.
func (s *Service) deliver(ctx context.Context, r *review.Review, changed bool) (*review.DecideResult, error) {
	res := &review.DecideResult{ReviewID: r.ID, Status: r.Status, Changed: changed, Delivery: r.Delivery, Decision: r.Decision()}
	verb := strings.ToLower(string(r.Status))
	already := fmt.Sprintf("review %s was already %s by %s at %s; nothing changed", r.ID, verb, r.Approver, review.FormatTime(r.DecidedAt))
	switch {
	case r.TaskToken == "" || r.Delivery == review.NoTask:
		res.Message = fmt.Sprintf("review %s %s by %s", r.ID, verb, r.Approver)
		if !changed {
			res.Message = already
		}
		return res, nil
	case r.Delivery == review.Delivered:
		// A repeat: the event of a delivery whose record failed is
		// recorded now; one recorded before is not recorded again.
		s.emitDecided(ctx, r)
		res.Message = already + " (Step Functions has the decision)"
		return res, nil
	case r.Delivery == review.TaskEnded:
		return nil, review.Errorf(review.CodeTaskEnded, "review %s is %s, but its Task had already ended (%s): the execution no longer waits for it; nothing is retried", r.ID, verb, r.DeliveryError)
	}
	// Delivering.
	if !changed {
		if r.DeliveryLeaseUntil.After(s.store.Now()) {
			res.Message = already + " (the decision is being delivered to Step Functions)"
			return res, nil
		}
		ok, err := s.store.ClaimDelivery(ctx, r, s.lease())
		if err != nil {
			return nil, review.Wrap(review.CodeUnavailable, err, "the review table is unavailable")
		}
		if !ok {
			res.Message = already + " (another request is delivering the decision)"
			return res, nil
		}
	}
	err := s.tasks.Deliver(ctx, r.TaskToken, r.Decision())
	var endedErr *review.TaskEndedError
	ended := ""
	if errors.As(err, &endedErr) {
		ended = endedErr.Name
	}
	if ended != "" && !changed {
		// A repeat after an attempt whose outcome was lost: that attempt may
		// have delivered the decision and spent the token. Count it as
		// delivered; if the Task had really timed out, the run has left
		// the review by its reject edge and no approval will be used.
		s.log.WarnContext(ctx, "token no longer accepted on a repeated delivery; an earlier attempt may have delivered", "review_id", r.ID, "sfn_error", ended)
		if ferr := s.store.FinishDelivery(ctx, r, review.Delivered, "ambiguous: "+ended+" on a repeated delivery"); ferr != nil {
			s.log.ErrorContext(ctx, "record delivery", "review_id", r.ID, "error", ferr)
		}
		res.Delivery = review.Delivered
		s.emitDecided(ctx, r)
		res.Message = already + " (Step Functions no longer accepts the token: an earlier delivery reached it, or its Task has ended)"
		return res, nil
	}
	if ended != "" {
		s.log.WarnContext(ctx, "review task ended before its decision", "review_id", r.ID, "sfn_error", ended)
		if ferr := s.store.FinishDelivery(ctx, r, review.TaskEnded, ended); ferr != nil {
			s.log.ErrorContext(ctx, "record delivery", "review_id", r.ID, "error", ferr)
		}
		return nil, review.Errorf(review.CodeTaskEnded, "review %s is %s, but Step Functions answered %s: the review's Task timed out or its execution ended, so nothing was delivered; this is not retried", r.ID, verb, ended)
	}
	if err != nil {
		s.log.ErrorContext(ctx, "deliver review decision", "review_id", r.ID, "error", err)
		if ferr := s.store.FinishDelivery(ctx, r, review.Delivering, ""); ferr != nil {
			s.log.ErrorContext(ctx, "release delivery", "review_id", r.ID, "error", ferr)
		}
		return nil, review.Wrap(review.CodeUnavailable, err, "review %s is %s, but Step Functions could not be reached; repeat the same decision to deliver it", r.ID, verb)
	}
	if ferr := s.store.FinishDelivery(ctx, r, review.Delivered, ""); ferr != nil {
		s.log.ErrorContext(ctx, "record delivery", "review_id", r.ID, "error", ferr)
	}
	res.Delivery = review.Delivered
	s.emitDecided(ctx, r)
	if changed {
		res.Message = fmt.Sprintf("review %s %s by %s; Step Functions has the decision", r.ID, verb, r.Approver)
	} else {
		res.Message = already + " (the decision was delivered to Step Functions now)"
	}
	return res, nil
}

// checkRequester refuses to approve a review whose requester is of an
// account other than the deployment's (REVIEW_FORBIDDEN, [caller-account]).
// A requester is a run's starter or a direct-lane caller, both verified
// against the deployment's account now; a review requested before accounts
// were compared may name another account's principal, and that person,
// signed in with the deployment's account, is not its requester to four
// eyes (docs/identity.md, "Accounts"). A rejection sends nothing, so it
// stays open to the review's reviewers.
func (s *Service) checkRequester(ctx context.Context, r *review.Review) error {
	if r.Requester == "" || caller.AccountOf(r.Requester) == s.account {
		return nil
	}
	s.log.WarnContext(ctx, "review refused: its requester belongs to an account this deployment does not admit", "review_id", r.ID, "run_id", r.RunID,
		"reason", string(caller.WrongAccount))
	return review.Errorf(review.CodeForbidden, "review %s was requested by %s, a principal of an account this deployment does not admit, so nobody may approve it: reject it and start the run again with credentials of the deployment's account [%s]",
		r.ID, excerpt.Bytes(r.Requester, 200, "..."), caller.WrongAccount)
}

// emitTimeout bounds the record and the send of one review.decided
// event (a conditional PutItem, a SendMessage and an UpdateItem): the
// ledger's own bound on a request (dispatch's ledgerTimeout); an event
// recorded but not sent by then is left to the relay.
const emitTimeout = 5 * time.Second

// emitDecided records r's review.decided event once its decision has
// reached the review's Task (webhook.EventID of the review id, so that a
// repeated decision records nothing more): the review id, the Solution
// and run its execution ARN names (webhook.RunOf), the step, the tool,
// approved or rejected, and when it was decided; never the call's
// payload, the reason or who decided. A review of a run that is no
// Solution's (the direct lane's among them) gets none, as for
// review.requested. Failing to build, record or send the event never
// fails the decision: it is logged with the review and event ids, and an
// event recorded but not sent is left to the relay. The record and the
// send run under emitTimeout, so that a hung table or queue cannot hold
// the answer to a decision Step Functions already has, and a panic in
// them is logged, never the decision's error.
func (s *Service) emitDecided(ctx context.Context, r *review.Review) {
	if s.webhooks == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			s.log.ErrorContext(ctx, "review.decided not recorded: the emitter panicked", "review_id", r.ID)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, emitTimeout)
	defer cancel()
	solution, run, ok := webhook.RunOf(r.RunID)
	if !ok || solution == "" {
		return
	}
	data := webhook.ReviewDecidedData{ReviewID: r.ID, Solution: solution, Run: run, Step: r.Step, Tool: r.Tool,
		Decision: strings.ToLower(string(r.Status)), DecidedAt: review.FormatTime(r.DecidedAt)}
	ev, err := webhook.NewEvent(webhook.ReviewDecided, r.ID, solution, data, s.store.Now())
	if err != nil {
		s.log.ErrorContext(ctx, "review.decided not recorded: it does not match its schema", "review_id", r.ID, "error", err)
		return
	}
	switch err := s.webhooks.Emit(ctx, ev); {
	case errors.Is(err, store.ErrLeftToRelay):
		s.log.WarnContext(ctx, "review.decided left to the relay", "review_id", r.ID, "event_id", ev.ID, "error", err)
	case err != nil:
		s.log.ErrorContext(ctx, "review.decided not recorded", "review_id", r.ID, "event_id", ev.ID, "error", err)
	}
}
