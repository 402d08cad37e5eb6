package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/tool"
)

// TaskSender is the part of the Step Functions client the decision uses.
type TaskSender interface {
	SendTaskSuccess(ctx context.Context, in *sfn.SendTaskSuccessInput, opts ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error)
	SendTaskFailure(ctx context.Context, in *sfn.SendTaskFailureInput, opts ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error)
}

// DefaultDeliveryLease is how long one request owns the delivery of a
// decision before a repeated decision may take it over: longer than the
// decision function's timeout.
const DefaultDeliveryLease = 60 * time.Second

// Caller is who calls the decision function.
type Caller struct {
	// Principal is the caller's principal as the caller proof established
	// it (caller.Identity.Principal).
	Principal string
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

// verifyCaller checks a request's proof for binding b.
func (s *Service) verifyCaller(ctx context.Context, proof string, b caller.Binding) (Caller, error) {
	if s.Callers == nil {
		return Caller{}, errorf(CodeUnauthenticated, "this function has no caller verifier")
	}
	id, err := s.Callers.Verify(ctx, proof, b)
	if err != nil {
		return Caller{}, fromCallerError(err)
	}
	return Caller{Principal: id.Principal, Authenticated: true}, nil
}

// fromCallerError maps a refused or unverifiable proof to the function's
// codes: REVIEW_UNAVAILABLE when STS or the table could not be reached (the
// same request may be repeated with a new proof), else
// REVIEW_UNAUTHENTICATED.
func fromCallerError(err error) *Error {
	var ce *caller.Error
	if errors.As(err, &ce) {
		if ce.Reason == caller.Unavailable {
			return wrap(CodeUnavailable, err, "%s; try again with a new proof", ce.Message)
		}
		return errorf(CodeUnauthenticated, "%s [%s]", ce.Message, ce.Reason)
	}
	return wrap(CodeInternal, err, "internal error")
}

// Action names what a request asks for.
type Action string

const (
	ActionList   Action = "list"
	ActionShow   Action = "show"
	ActionDecide Action = "decide"
)

// Request is one call of the decision function, whatever its transport.
type Request struct {
	Action   Action
	ReviewID string
	// Status filters a listing: pending (default), approved or rejected.
	Status   string
	Decision Verdict
	Reason   string
	// Proof is the caller proof (shared/caller), bound to this request:
	// caller.ActionList with the status filter, caller.ActionShow with the
	// review id, caller.ActionDecide with the review id, the decision and
	// the review's input digest.
	Proof string
}

// View is a review as the decision function shows it: never its task
// token. Listings leave out Input and Reason.
type View struct {
	ReviewID      string          `json:"review_id"`
	Status        Status          `json:"status"`
	Expired       bool            `json:"expired"`
	RunID         string          `json:"run_id"`
	Step          string          `json:"step"`
	Of            string          `json:"of"`
	Tool          string          `json:"tool"`
	ToolsetID     string          `json:"toolset_id"`
	Reviewers     []string        `json:"reviewers"`
	InputDigest   string          `json:"input_digest"`
	Input         json.RawMessage `json:"input,omitempty"`
	CreatedAt     string          `json:"created_at,omitempty"`
	ExpiresAt     string          `json:"expires_at"`
	Approver      string          `json:"approver,omitempty"`
	Authenticated *bool           `json:"authenticated,omitempty"`
	DecidedAt     string          `json:"decided_at,omitempty"`
	Reason        string          `json:"reason,omitempty"`
	// Lane is "step-functions" (a review Task waits for the decision) or
	// "direct" (toolgate invoke polls the record).
	Lane     string   `json:"lane,omitempty"`
	Delivery Delivery `json:"delivery,omitempty"`
	// UsedBy is the idempotency key of the call the approval authorised.
	UsedBy string `json:"used_by,omitempty"`
	// Requester asked for the review and may not decide it.
	Requester string `json:"requester,omitempty"`
	// SelfApprovalRefusals counts the requester's refused attempts to
	// decide it.
	SelfApprovalRefusals int `json:"self_approval_refusals,omitempty"`
}

func view(r *Review, now time.Time, full bool) View {
	v := View{
		ReviewID: r.ID, Status: r.Status, Expired: r.Status == Pending && r.Expired(now), RunID: r.RunID, Step: r.Step,
		Of: r.Of, Tool: r.Tool, ToolsetID: r.ToolsetID, Reviewers: r.Reviewers, InputDigest: r.InputDigest,
		ExpiresAt: formatTime(r.ExpiresAt), Approver: r.Approver, UsedBy: r.BoundKey,
		Requester: r.Requester, SelfApprovalRefusals: r.SelfApprovalRefusals,
	}
	if v.Reviewers == nil {
		v.Reviewers = []string{}
	}
	if !r.CreatedAt.IsZero() {
		v.CreatedAt = formatTime(r.CreatedAt)
	}
	if r.Status != Pending {
		auth := r.Authenticated
		v.Authenticated, v.DecidedAt = &auth, formatTime(r.DecidedAt)
	}
	if full {
		v.Input, v.Reason, v.Delivery = r.Input, r.Reason, r.Delivery
		v.Lane = "direct"
		if r.TaskToken != "" {
			v.Lane = "step-functions"
		}
	}
	return v
}

// ListResult is the answer to a listing.
type ListResult struct {
	Reviews []View `json:"reviews"`
}

// DecideResult is the answer to a decision.
type DecideResult struct {
	ReviewID string `json:"review_id"`
	Status   Status `json:"status"`
	// Changed is false for a repeated identical decision (a no-op).
	Changed  bool     `json:"changed"`
	Delivery Delivery `json:"delivery"`
	// Decision is the decision JSON as recorded.
	Decision Decision `json:"decision"`
	Message  string   `json:"message"`
}

// Service is the review-decision function: list, show and decide, for
// callers the reviews' reviewer patterns admit.
type Service struct {
	Store *Store
	SFN   TaskSender
	// Callers verifies each request's caller proof.
	Callers Callers
	// DeliveryLease defaults to DefaultDeliveryLease.
	DeliveryLease time.Duration
	Log           *slog.Logger
}

// Do verifies the request's caller proof, runs the request for the
// caller it proves, and returns the caller and the JSON-encodable answer
// or an *Error. Nothing is read for a caller without a valid proof but the
// review a decision names (its input digest is part of the binding).
func (s *Service) Do(ctx context.Context, req Request) (Caller, any, error) {
	if s.Log == nil {
		s.Log = slog.Default()
	}
	switch req.Action {
	case ActionList:
		who, err := s.verifyCaller(ctx, req.Proof, caller.Binding{Action: caller.ActionList, Target: req.Status})
		if err != nil {
			return who, nil, err
		}
		res, err := s.list(ctx, who, req.Status)
		return who, res, err
	case ActionShow:
		who, err := s.verifyCaller(ctx, req.Proof, caller.Binding{Action: caller.ActionShow, Target: req.ReviewID})
		if err != nil {
			return who, nil, err
		}
		r, err := s.authorized(ctx, who, req.ReviewID)
		if err != nil {
			return who, nil, err
		}
		if r.BoundKey, err = s.Store.BoundKey(ctx, r.ID); err != nil {
			return who, nil, wrap(CodeUnavailable, err, "the review table is unavailable")
		}
		return who, view(r, s.Store.Now(), true), nil
	case ActionDecide:
		return s.decide(ctx, req)
	}
	return Caller{}, nil, errorf(CodeInvalid, "unknown action %q: list, show or decide", truncate(string(req.Action), 40))
}

func (s *Service) list(ctx context.Context, caller Caller, status string) (*ListResult, error) {
	st := Pending
	switch strings.ToLower(status) {
	case "", "pending":
	case "approved":
		st = Approved
	case "rejected":
		st = Rejected
	default:
		return nil, errorf(CodeInvalid, "status %q is not pending, approved or rejected", truncate(status, 40))
	}
	now := s.Store.Now()
	reviews, err := s.Store.List(ctx, st, func(r *Review) bool {
		if st == Pending && r.Expired(now) {
			return false // its Task has timed out; the TTL will end it
		}
		return Authorize(r.Reviewers, caller).Allowed
	})
	if err != nil {
		return nil, wrap(CodeUnavailable, err, "the review table is unavailable")
	}
	res := &ListResult{Reviews: []View{}}
	for _, r := range reviews {
		res.Reviews = append(res.Reviews, view(r, now, false))
	}
	return res, nil
}

// authorized reads a review the caller may see.
func (s *Service) authorized(ctx context.Context, who Caller, id string) (*Review, error) {
	r, err := s.get(ctx, id)
	if err != nil {
		return nil, err
	}
	if a := Authorize(r.Reviewers, who); !a.Allowed {
		return nil, errorf(CodeForbidden, "you are not a reviewer of review %s: %s", id, a.Reason)
	}
	return r, nil
}

// get reads a review.
func (s *Service) get(ctx context.Context, id string) (*Review, error) {
	if !ValidID(id) {
		return nil, errorf(CodeInvalid, "%q is not a review id (rv_ and 32 hex digits)", truncate(id, 40))
	}
	r, err := s.Store.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, errorf(CodeNotFound, "review %s does not exist (or its time ended long ago)", id)
	}
	if err != nil {
		return nil, wrap(CodeUnavailable, err, "the review table is unavailable")
	}
	// What a reviewer is shown is what the digest a decision binds says:
	// a review whose stored inputs do not digest to its input digest
	// (written by anything but review-request's own computation) is
	// refused, never shown or decided.
	if _, digest, err := tool.InputDigest(r.Input); err != nil || digest != r.InputDigest {
		s.Log.ErrorContext(ctx, "review inputs do not match their digest", "review_id", r.ID)
		return nil, errorf(CodeConflict, "review %s is refused: its inputs do not match its input digest", r.ID)
	}
	return r, nil
}

func checkReason(v Verdict, reason string) error {
	switch {
	case !utf8.ValidString(reason):
		return errorf(CodeInvalid, "the reason is not valid UTF-8")
	case utf8.RuneCountInString(reason) > MaxReasonLength:
		return errorf(CodeInvalid, "the reason is over %d characters", MaxReasonLength)
	case strings.ContainsFunc(reason, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f }):
		return errorf(CodeInvalid, "the reason holds control characters")
	case v == Reject && strings.TrimSpace(reason) == "":
		return errorf(CodeInvalid, "a rejection needs a reason")
	}
	return nil
}

func (s *Service) decide(ctx context.Context, req Request) (Caller, *DecideResult, error) {
	if req.Decision != Approve && req.Decision != Reject {
		return Caller{}, nil, errorf(CodeInvalid, "decision %q is not approve or reject", truncate(string(req.Decision), 40))
	}
	if err := checkReason(req.Decision, req.Reason); err != nil {
		return Caller{}, nil, err
	}
	if req.Proof == "" {
		_, err := s.verifyCaller(ctx, "", caller.Binding{})
		return Caller{}, nil, err
	}
	r, err := s.get(ctx, req.ReviewID)
	if err != nil {
		return Caller{}, nil, err
	}
	who, err := s.verifyCaller(ctx, req.Proof, caller.Binding{Action: caller.ActionDecide, Target: r.ID, Decision: string(req.Decision), InputDigest: r.InputDigest})
	if err != nil {
		return who, nil, err
	}
	res, err := s.decideAs(ctx, who, r, req)
	return who, res, err
}

// decideAs records who's decision on r, read before the proof was checked.
func (s *Service) decideAs(ctx context.Context, caller Caller, r *Review, req Request) (*DecideResult, error) {
	if len(caller.Principal) > MaxApproverLength || !utf8.ValidString(caller.Principal) ||
		strings.ContainsFunc(caller.Principal, func(r rune) bool { return r <= 0x20 || r == 0x7f }) {
		return nil, errorf(CodeInvalid, "the approver must be 1 to %d characters without whitespace", MaxApproverLength)
	}
	if a := Authorize(r.Reviewers, caller); !a.Allowed {
		return nil, errorf(CodeForbidden, "you are not a reviewer of review %s: %s", r.ID, a.Reason)
	}
	if r.Requester != "" && caller.Principal == r.Requester {
		s.Log.WarnContext(ctx, "review self-approval refused", "review_id", r.ID, "run_id", r.RunID, "principal", caller.Principal,
			"decision", string(req.Decision))
		if err := s.Store.NoteSelfApproval(ctx, r.ID); err != nil {
			s.Log.ErrorContext(ctx, "record self-approval attempt", "review_id", r.ID, "error", err)
		}
		return nil, errorf(CodeSelfApproval, "you requested review %s, so you cannot decide it: another reviewer must (four eyes)", r.ID)
	}
	now := s.Store.Now()
	if r.Status == Pending {
		if r.Expired(now) {
			return nil, errorf(CodeExpired, "review %s expired at %s (its timeout was %d s): its Task no longer waits and no decision is taken", r.ID, formatTime(r.ExpiresAt), r.TimeoutSeconds)
		}
		applied, cur, err := s.Store.Decide(ctx, r, req.Decision, caller.Principal, caller.Authenticated, req.Reason, s.lease())
		if err != nil {
			return nil, wrap(CodeUnavailable, err, "the review table is unavailable; nothing was decided")
		}
		if applied {
			s.Log.InfoContext(ctx, "review decided", "review_id", r.ID, "run_id", r.RunID, "of", r.Of,
				"decision", string(req.Decision), "approver", caller.Principal, "authenticated", caller.Authenticated)
			return s.deliver(ctx, cur, true)
		}
		r = cur
		if r.Status == Pending { // the condition failed on expiry
			return nil, errorf(CodeExpired, "review %s expired at %s: no decision is taken", r.ID, formatTime(r.ExpiresAt))
		}
	}
	if r.Status != StatusOf(req.Decision) {
		return nil, errorf(CodeConflict, "review %s was already %s by %s at %s; a decision cannot be changed",
			r.ID, strings.ToLower(string(r.Status)), r.Approver, formatTime(r.DecidedAt))
	}
	// The same decision again: nothing to record; finish a delivery that
	// did not complete.
	return s.deliver(ctx, r, false)
}

func (s *Service) lease() time.Duration {
	if s.DeliveryLease > 0 {
		return s.DeliveryLease
	}
	return DefaultDeliveryLease
}

// deliver sends the decision to the review's Task, once: the request that
// recorded the decision holds the delivery lease; a repeated decision
// takes it over only when it has expired or was released after a
// transient failure.
func (s *Service) deliver(ctx context.Context, r *Review, changed bool) (*DecideResult, error) {
	res := &DecideResult{ReviewID: r.ID, Status: r.Status, Changed: changed, Delivery: r.Delivery, Decision: r.Decision()}
	verb := strings.ToLower(string(r.Status))
	already := fmt.Sprintf("review %s was already %s by %s at %s; nothing changed", r.ID, verb, r.Approver, formatTime(r.DecidedAt))
	switch {
	case r.TaskToken == "" || r.Delivery == NoTask:
		res.Message = fmt.Sprintf("review %s %s by %s", r.ID, verb, r.Approver)
		if !changed {
			res.Message = already
		}
		return res, nil
	case r.Delivery == Delivered:
		res.Message = already + " (Step Functions has the decision)"
		return res, nil
	case r.Delivery == TaskEnded:
		return nil, errorf(CodeTaskEnded, "review %s is %s, but its Task had already ended (%s): the execution no longer waits for it; nothing is retried", r.ID, verb, r.DeliveryError)
	}
	// Delivering.
	if !changed {
		if r.DeliveryLeaseUntil.After(s.Store.Now()) {
			res.Message = already + " (the decision is being delivered to Step Functions)"
			return res, nil
		}
		ok, err := s.Store.ClaimDelivery(ctx, r, s.lease())
		if err != nil {
			return nil, wrap(CodeUnavailable, err, "the review table is unavailable")
		}
		if !ok {
			res.Message = already + " (another request is delivering the decision)"
			return res, nil
		}
	}
	out, err := json.Marshal(r.Decision())
	if err != nil {
		return nil, wrap(CodeInternal, err, "internal error")
	}
	// One attempt per request: an SDK retry of a SendTask* whose answer was
	// lost would be told TaskTimedOut (the token is spent) although the
	// decision was delivered.
	once := func(o *sfn.Options) { o.RetryMaxAttempts = 1 }
	if r.Status == Approved {
		_, err = s.SFN.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(r.TaskToken), Output: aws.String(string(out))}, once)
	} else {
		_, err = s.SFN.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String(r.TaskToken),
			Error: aws.String(ErrorRejected), Cause: aws.String(string(out))}, once)
	}
	if ended := taskEnded(err); ended != "" && !changed {
		// A repeat after an attempt whose outcome was lost: that attempt may
		// have delivered the decision and spent the token. Count it as
		// delivered; if the Task had really timed out, the run has left
		// the review by its reject edge and no approval will be used.
		s.Log.WarnContext(ctx, "token no longer accepted on a repeated delivery; an earlier attempt may have delivered", "review_id", r.ID, "sfn_error", ended)
		if ferr := s.Store.FinishDelivery(ctx, r, Delivered, "ambiguous: "+ended+" on a repeated delivery"); ferr != nil {
			s.Log.ErrorContext(ctx, "record delivery", "review_id", r.ID, "error", ferr)
		}
		res.Delivery = Delivered
		res.Message = already + " (Step Functions no longer accepts the token: an earlier delivery reached it, or its Task has ended)"
		return res, nil
	}
	if ended := taskEnded(err); ended != "" {
		s.Log.WarnContext(ctx, "review task ended before its decision", "review_id", r.ID, "sfn_error", ended)
		if ferr := s.Store.FinishDelivery(ctx, r, TaskEnded, ended); ferr != nil {
			s.Log.ErrorContext(ctx, "record delivery", "review_id", r.ID, "error", ferr)
		}
		return nil, errorf(CodeTaskEnded, "review %s is %s, but Step Functions answered %s: the review's Task timed out or its execution ended, so nothing was delivered; this is not retried", r.ID, verb, ended)
	}
	if err != nil {
		s.Log.ErrorContext(ctx, "deliver review decision", "review_id", r.ID, "error", err)
		if ferr := s.Store.FinishDelivery(ctx, r, Delivering, ""); ferr != nil {
			s.Log.ErrorContext(ctx, "release delivery", "review_id", r.ID, "error", ferr)
		}
		return nil, wrap(CodeUnavailable, err, "review %s is %s, but Step Functions could not be reached; repeat the same decision to deliver it", r.ID, verb)
	}
	if ferr := s.Store.FinishDelivery(ctx, r, Delivered, ""); ferr != nil {
		s.Log.ErrorContext(ctx, "record delivery", "review_id", r.ID, "error", ferr)
	}
	res.Delivery = Delivered
	if changed {
		res.Message = fmt.Sprintf("review %s %s by %s; Step Functions has the decision", r.ID, verb, r.Approver)
	} else {
		res.Message = already + " (the decision was delivered to Step Functions now)"
	}
	return res, nil
}

// taskEnded returns the Step Functions error name when err says the task
// token can no longer be used: its Task timed out, its execution ended, or
// the token is not one.
func taskEnded(err error) string {
	var timedOut *sfntypes.TaskTimedOut
	var gone *sfntypes.TaskDoesNotExist
	var invalid *sfntypes.InvalidToken
	switch {
	case err == nil:
		return ""
	case errors.As(err, &timedOut):
		return "TaskTimedOut"
	case errors.As(err, &gone):
		return "TaskDoesNotExist"
	case errors.As(err, &invalid):
		return "InvalidToken"
	}
	return ""
}
