package decision

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/park"
	parkdynamo "github.com/toolgate/toolgate/shared/park/dynamo"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/reviewer"
)

// ParkStore is the parked-call items as review-decision reads and decides
// them (shared/park/dynamo Store): Get and RowReview answer an error
// wrapping parkdynamo.ErrNotFound for nothing there, Decide and TimeOut
// one wrapping parkdynamo.ErrNotParked, with the park as it is, for a
// park decided (or timed out) already; TimeOut is for a park read PARKED
// past its deadline only.
type ParkStore interface {
	Get(ctx context.Context, id string) (*park.Park, error)
	ListByStatus(ctx context.Context, st park.Status, keep func(*park.Park) bool) ([]*park.Park, error)
	Decide(ctx context.Context, id string, to park.Status, by, reason string) (*park.Park, error)
	TimeOut(ctx context.Context, p *park.Park) (*park.Park, error)
	RowReview(ctx context.Context, r *park.Park) (string, error)
	Starter(ctx context.Context, runID string) (string, error)
	Now() time.Time
}

// ParkTasks reaches the park Tasks (shared/review/stepfunctions Parks):
// SendResult ends one with a decision, Stop stops a run.
type ParkTasks interface {
	SendResult(ctx context.Context, taskToken string, res park.Result) error
	Stop(ctx context.Context, executionARN, cause string) error
}

// ParkPolicy is the platform's configuration of who decides parks besides
// a gated step's reviewers (park.EnvDeciders, park.EnvOperators): IAM
// principal ARN patterns of the deployment's own account. Empty lists
// admit nobody but the run's starter.
type ParkPolicy struct {
	Deciders  []string
	Operators []string
	// CredentialAdmins are the credential admins' patterns, the publish
	// function's (publishapi.EnvCredentialAdmins): who may set a toolset's
	// or any end user's credential, and so resume a credentials.expired
	// park of those scopes (mayResumeScope; docs/parking.md, "Who may").
	CredentialAdmins []string
}

// MaxTimeOutsPerList bounds the parks one park.list records TIMED_OUT
// (docs/parking.md, "Timed out"): each is one UpdateItem, and a backlog
// of timed-out parks must not make one listing slow; the next listing
// records the rest.
const MaxTimeOutsPerList = 100

// parkStatuses are the statuses park.list takes, by their lower-case name.
var parkStatuses = map[string]park.Status{
	"parked": park.StatusParked, "approved": park.StatusApproved, "rejected": park.StatusRejected,
	"resumed": park.StatusResumed, "cancelled": park.StatusCancelled, "timed_out": park.StatusTimedOut,
}

// parkActor is what review-decision knows of a park's people: the run's
// starter ("" when the run has no start record) and, on a gated park, the
// reviewers of the review its call carried (nil, with why, when they are
// not known).
type parkActor struct {
	starter        string
	reviewers      []string
	reviewersKnown bool
	// holders are the origin holders of the review a gated park's call
	// carried (review.Review.OriginHolders): who may not approve it.
	holders []string
	why     string
}

// doPark runs a park action (review.ActionParkList, ActionShow, ActionDecide,
// ActionCancel) for the caller its proof proves.
func (s *Service) doPark(ctx context.Context, req Request) (review.Caller, any, error) {
	if s.parks == nil || s.parkTasks == nil {
		return review.Caller{}, nil, review.Errorf(review.CodeInvalid, "this function decides no parks")
	}
	if len(req.Answer) > 0 || len(req.Edits) > 0 {
		return review.Caller{}, nil, review.Errorf(review.CodeInvalid, "a park's decision carries no answer and no edits")
	}
	switch req.Action {
	case review.ActionParkList:
		who, err := s.verifyCaller(ctx, req.Proof, review.ParkListBinding(req.Status))
		if err != nil {
			return who, nil, err
		}
		res, err := s.listParks(ctx, who, req.Status)
		return who, res, err
	case review.ActionParkShow:
		who, err := s.verifyCaller(ctx, req.Proof, review.ParkShowBinding(req.ParkID))
		if err != nil {
			return who, nil, err
		}
		r, err := s.getPark(ctx, req.ParkID)
		if err != nil {
			return who, nil, err
		}
		r = s.timedOut(ctx, r, s.parks.Now())
		a := s.actors(ctx, r)
		if !s.mayShow(who, r, a) {
			return who, nil, review.Errorf(review.CodeForbidden, "you may neither decide nor cancel park %s", r.ID)
		}
		v := park.NewView(r, s.parks.Now())
		v.Starter, v.Deciders = a.starter, s.decidersText(r, a)
		return who, v, nil
	case review.ActionParkDecide:
		return s.decidePark(ctx, req)
	case review.ActionParkCancel:
		return s.cancelPark(ctx, req)
	}
	return review.Caller{}, nil, review.Errorf(review.CodeInvalid, "unknown action %q", excerpt.Bytes(string(req.Action), 40, "..."))
}

// getPark reads a park by id.
func (s *Service) getPark(ctx context.Context, id string) (*park.Park, error) {
	if !park.IDPattern.MatchString(id) {
		return nil, review.Errorf(review.CodeInvalid, "%q is not a park id (pk_ and 26 base32 characters)", excerpt.Bytes(id, 40, "..."))
	}
	r, err := s.parks.Get(ctx, id)
	if errors.Is(err, parkdynamo.ErrNotFound) {
		return nil, review.Errorf(review.CodeNotFound, "park %s does not exist (or its time ended long ago)", id)
	}
	if err != nil {
		return nil, review.Wrap(review.CodeUnavailable, err, "the table is unavailable")
	}
	return r, nil
}

// timedOut records r TIMED_OUT when it is PARKED past its deadline at
// now: its park Task has timed out, and nothing recorded it then
// (docs/parking.md, "Timed out"). It returns the park as it now is; a
// record that fails is logged and r returned as read, since every answer
// goes by the deadline either way. Called only for a caller whose proof
// was verified.
func (s *Service) timedOut(ctx context.Context, r *park.Park, now time.Time) *park.Park {
	if r.Status != park.StatusParked || !r.Expired(now) {
		return r
	}
	cur, err := s.parks.TimeOut(ctx, r)
	switch {
	case err == nil:
		s.log.InfoContext(ctx, "park timed out", "park_id", r.ID, "run_id", r.RunID, "deadline", r.Deadline.UTC().Format(park.TimeFormat))
		return cur
	case errors.Is(err, parkdynamo.ErrNotParked) && cur != nil:
		return cur // decided, or recorded, by another request first
	}
	s.log.ErrorContext(ctx, "record a park timed out", "park_id", r.ID, "error", err)
	return r
}

// actors reads who r's starter is (the run's start record) and, for a
// gated park, the reviewers of the review its call carried: the review
// the PARKED row names (its review_id), which must be of r's run, tool
// step and tool (docs/parking.md, "Who may"). A read that fails, or a
// review of another run, step or tool, leaves them unknown, which admits
// nobody by them.
func (s *Service) actors(ctx context.Context, r *park.Park) parkActor {
	var a parkActor
	if st, err := s.parks.Starter(ctx, r.RunID); err == nil {
		a.starter = st
	} else {
		s.log.ErrorContext(ctx, "read the run's start record", "park_id", r.ID, "error", err)
	}
	if !r.Gated {
		return a
	}
	if r.RowSK == "" {
		a.why = "it names no parked row"
		return a
	}
	id, err := s.parks.RowReview(ctx, r)
	switch {
	case err != nil:
		s.log.ErrorContext(ctx, "read the parked row", "park_id", r.ID, "error", err)
		a.why = "its parked row could not be read"
		return a
	case id == "":
		a.why = "its parked row names no review"
		return a
	}
	rv, err := s.store.Get(ctx, id)
	switch {
	case err != nil:
		a.why = "its review " + id + " could not be read"
		return a
	case rv.RunID != r.RunID:
		s.log.ErrorContext(ctx, "the parked row names a review of another run", "park_id", r.ID, "review_id", id)
		a.why = "its review " + id + " is of another run"
		return a
	case rv.Of != r.Step || rv.Tool != r.Tool:
		// Any tool role writes the run's row items: a row naming a review
		// of another step or tool names reviewers who never reviewed
		// this call.
		s.log.ErrorContext(ctx, "the parked row names a review of another step or tool", "park_id", r.ID, "review_id", id)
		a.why = "its review " + id + " is of another step or tool"
		return a
	}
	a.reviewers, a.reviewersKnown, a.holders = rv.Reviewers, true, rv.OriginHolders
	return a
}

// mayDecide decides whether who may record d on r (docs/parking.md,
// "Deciding"): approve only a schema change, resume only an expired
// credential, reject either. A gated park's approve and reject are its
// review's reviewers' (review.Authorize), never the run's starter's (four
// eyes); an ungated park's, and any resume, are the starter's or a park
// decider's, and a resume also whoever may set the credential's scope
// (mayResumeScope). Default deny.
func (s *Service) mayDecide(who review.Caller, r *park.Park, d park.Decision, a parkActor) review.Authorization {
	switch {
	case d == park.Approve && r.Cause != park.SchemaChanged:
		return review.Authorization{Reason: fmt.Sprintf("park %s is %s: approve is for tool.schema_changed; resume it once its credential is set", r.ID, r.Cause)}
	case d == park.Resume && r.Cause != park.CredentialsExpired:
		return review.Authorization{Reason: fmt.Sprintf("park %s is %s: resume is for credentials.expired; approve or reject it", r.ID, r.Cause)}
	case who.Principal == "":
		return review.Authorization{Reason: "the caller has no principal"}
	}
	if r.Gated && d != park.Resume {
		if who.Principal == a.starter {
			return review.Authorization{Reason: "you started the run, and its step is gated: one of its reviewers must decide (four eyes)"}
		}
		if d == park.Approve && slices.Contains(a.holders, who.Principal) {
			return review.Authorization{Reason: "you held a secret of the source, or added the schedule, that started the run, and its step is gated: another of its reviewers must approve (four eyes)"}
		}
		if !a.reviewersKnown {
			return review.Authorization{Reason: "its step is gated, and its reviewers are not known (" + a.why + "): cancel it instead"}
		}
		return review.Authorize(a.reviewers, who, s.account)
	}
	if a.starter != "" && who.Principal == a.starter {
		return review.Authorization{Allowed: true, Reason: "you started the run"}
	}
	if reviewer.IsAdmin(s.parkPolicy.Deciders, who.Principal) {
		return review.Authorization{Allowed: true, Reason: "you match a park decider"}
	}
	if d == park.Resume {
		if z := s.mayResumeScope(who, r); z.Allowed {
			return z
		}
		return review.Authorization{Reason: fmt.Sprintf("%s neither started the run, nor matches a park decider, nor may set the credential's scope %s", who.Principal, r.Scope)}
	}
	return review.Authorization{Reason: fmt.Sprintf("%s neither started the run nor matches a park decider", who.Principal)}
}

// mayResumeScope decides whether who may resume credentials park r
// because who may set the credential's scope (docs/credentials.md, "Who
// may write each scope"; docs/parking.md, "Who may"): a toolset's scope
// and an end user's are a credential admin's. An end user's is also
// written by whom the end-user mapping lets act for that end user, but a
// park names the end user's scope only by its HMAC, not the end user, so
// the mapping is not consulted here; a run's scope is its starter's,
// which mayDecide admits already. Default deny.
func (s *Service) mayResumeScope(who review.Caller, r *park.Park) review.Authorization {
	switch kind := credential.Scope(r.Scope).Kind(); kind {
	case credential.KindToolset, credential.KindEndUser:
		if reviewer.IsAdmin(s.parkPolicy.CredentialAdmins, who.Principal) {
			return review.Authorization{Allowed: true, Reason: "you are a credential admin, who may set a " + kind + "-scope credential"}
		}
	}
	return review.Authorization{Reason: who.Principal + " may not set the credential's scope " + r.Scope}
}

// mayShow decides whether who may see r (park.show, park.list): whoever
// may reject or cancel it, or resume it when its credential expired.
func (s *Service) mayShow(who review.Caller, r *park.Park, a parkActor) bool {
	if s.mayDecide(who, r, park.Reject, a).Allowed || s.mayCancel(who, a).Allowed {
		return true
	}
	return r.Cause == park.CredentialsExpired && s.mayDecide(who, r, park.Resume, a).Allowed
}

// mayCancel decides whether who may cancel a park: the run's starter or
// an operator pattern's principal.
func (s *Service) mayCancel(who review.Caller, a parkActor) review.Authorization {
	switch {
	case who.Principal == "":
		return review.Authorization{Reason: "the caller has no principal"}
	case a.starter != "" && who.Principal == a.starter:
		return review.Authorization{Allowed: true, Reason: "you started the run"}
	case reviewer.IsAdmin(s.parkPolicy.Operators, who.Principal):
		return review.Authorization{Allowed: true, Reason: "you match a park operator"}
	}
	return review.Authorization{Reason: fmt.Sprintf("%s neither started the run nor matches a park operator", who.Principal)}
}

// decidersText says who may decide r, for park.show.
func (s *Service) decidersText(r *park.Park, a parkActor) string {
	if r.Gated {
		if !a.reviewersKnown {
			return "the step's reviewers, not known (" + a.why + "); the starter or a park operator may cancel"
		}
		if len(a.reviewers) == 0 {
			return "any principal of the deployment's account but the starter"
		}
		return strings.Join(a.reviewers, ", ") + " (never the starter)"
	}
	if r.Cause == park.CredentialsExpired {
		return "the run's starter, a park decider, or who may set the credential's scope (a credential admin for a toolset's or an end user's)"
	}
	return "the run's starter or a park decider"
}

// listParks lists the parks of a status (default parked) that the caller
// may decide or cancel. A listing of parked ones leaves out those past
// their deadline, and records at most MaxTimeOutsPerList of them
// TIMED_OUT.
func (s *Service) listParks(ctx context.Context, who review.Caller, status string) (*park.ListResult, error) {
	st := park.StatusParked
	if status != "" {
		var ok bool
		if st, ok = parkStatuses[strings.ToLower(status)]; !ok {
			return nil, review.Errorf(review.CodeInvalid, "status %q is not parked, approved, rejected, resumed, cancelled or timed_out", excerpt.Bytes(status, 40, "..."))
		}
	}
	now := s.parks.Now()
	actors := map[string]parkActor{} // by park: its reads once
	timedOut := 0
	list, err := s.parks.ListByStatus(ctx, st, func(r *park.Park) bool {
		if st == park.StatusParked && r.Expired(now) {
			// Its Task has timed out: recorded so, a bounded number
			// per listing.
			if timedOut < MaxTimeOutsPerList {
				s.timedOut(ctx, r, now)
				timedOut++
			}
			return false
		}
		a, ok := actors[r.ID]
		if !ok {
			full := r
			if r.Gated {
				// The index projects no row key: the reviewers are found
				// through the whole item's.
				if g, err := s.parks.Get(ctx, r.ID); err == nil {
					full = g
				}
			}
			a = s.actors(ctx, full)
			actors[r.ID] = a
		}
		return s.mayShow(who, r, a)
	})
	if err != nil {
		return nil, review.Wrap(review.CodeUnavailable, err, "the table is unavailable")
	}
	res := &park.ListResult{Parks: []park.View{}}
	for _, r := range list {
		res.Parks = append(res.Parks, park.NewView(r, now))
	}
	return res, nil
}

// decidePark records a decision on a park and sends it to its Task.
func (s *Service) decidePark(ctx context.Context, req Request) (review.Caller, any, error) {
	d := park.Decision(req.Decision)
	if d != park.Approve && d != park.Reject && d != park.Resume {
		return review.Caller{}, nil, review.Errorf(review.CodeInvalid, "decision %q is not approve, reject or resume", excerpt.Bytes(string(req.Decision), 40, "..."))
	}
	if err := checkReason(review.Verdict(d), req.Reason); err != nil {
		return review.Caller{}, nil, err
	}
	if req.Proof == "" {
		_, err := s.verifyCaller(ctx, "", review.ParkDecideBinding("", "", ""))
		return review.Caller{}, nil, err
	}
	r, err := s.getPark(ctx, req.ParkID)
	if err != nil {
		return review.Caller{}, nil, err
	}
	who, err := s.verifyCaller(ctx, req.Proof, review.ParkDecideBinding(r.ID, string(d), r.CurrentDigest))
	if err != nil {
		return who, nil, err
	}
	a := s.actors(ctx, r)
	if z := s.mayDecide(who, r, d, a); !z.Allowed {
		code := review.CodeForbidden
		if r.Gated && d != park.Resume && (who.Principal == a.starter || d == park.Approve && slices.Contains(a.holders, who.Principal)) {
			code = review.CodeSelfApproval
		}
		return who, nil, review.Errorf(code, "you may not %s park %s: %s", d, r.ID, z.Reason)
	}
	res, err := s.settle(ctx, who, r, park.StatusOf(d), req.Reason, func(cur *park.Park) error {
		var reason *string
		if d == park.Reject {
			reason = &cur.Reason
		}
		return s.parkTasks.SendResult(ctx, cur.TaskToken, park.Result{ParkID: cur.ID, Decision: d, Reason: reason})
	})
	return who, res, err
}

// cancelPark records a park cancelled and stops its run.
func (s *Service) cancelPark(ctx context.Context, req Request) (review.Caller, any, error) {
	if err := checkReason(review.Approve, req.Reason); err != nil {
		return review.Caller{}, nil, err
	}
	if req.Proof == "" {
		_, err := s.verifyCaller(ctx, "", review.ParkCancelBinding(""))
		return review.Caller{}, nil, err
	}
	r, err := s.getPark(ctx, req.ParkID)
	if err != nil {
		return review.Caller{}, nil, err
	}
	who, err := s.verifyCaller(ctx, req.Proof, review.ParkCancelBinding(r.ID))
	if err != nil {
		return who, nil, err
	}
	if z := s.mayCancel(who, s.actors(ctx, r)); !z.Allowed {
		return who, nil, review.Errorf(review.CodeForbidden, "you may not cancel park %s: %s", r.ID, z.Reason)
	}
	res, err := s.settle(ctx, who, r, park.StatusCancelled, req.Reason, func(cur *park.Park) error {
		err := s.parkTasks.Stop(ctx, cur.RunID, fmt.Sprintf("park %s cancelled by %s", cur.ID, cur.DecidedBy))
		if errors.Is(err, review.ErrNotFound) {
			return nil // no such execution: nothing runs
		}
		return err
	})
	return who, res, err
}

// settle records who's decision to (a status) on r, PARKED before, and
// then acts on it with send: the Task's result or the run's stop. The
// conditional write lets one decision win; the same decision by the same
// caller again sends again (a send whose answer was lost), any other is
// refused REVIEW_CONFLICT. A park past its deadline is recorded TIMED_OUT
// (timedOut) and refused REVIEW_EXPIRED, as a TIMED_OUT one is.
func (s *Service) settle(ctx context.Context, who review.Caller, r *park.Park, to park.Status, reason string, send func(*park.Park) error) (*park.DecideResult, error) {
	verb := strings.ToLower(string(to))
	now := s.parks.Now()
	changed := false
	expired := func(r *park.Park) error {
		return review.Errorf(review.CodeExpired, "park %s timed out at %s: its Task no longer waits and nothing is decided", r.ID, r.Deadline.UTC().Format(park.TimeFormat))
	}
	if r = s.timedOut(ctx, r, now); r.Status == park.StatusTimedOut || r.Status == park.StatusParked && r.Expired(now) {
		return nil, expired(r)
	}
	if r.Status == park.StatusParked {
		cur, err := s.parks.Decide(ctx, r.ID, to, who.Principal, reason)
		switch {
		case errors.Is(err, parkdynamo.ErrNotFound):
			return nil, review.Errorf(review.CodeNotFound, "park %s does not exist (or its time ended long ago)", r.ID)
		case errors.Is(err, parkdynamo.ErrNotParked) && cur != nil:
			r = cur // another decision won
		case err != nil:
			return nil, review.Wrap(review.CodeUnavailable, err, "the table is unavailable; nothing was decided")
		default:
			r, changed = cur, true
		}
	}
	if r.Status == park.StatusTimedOut {
		return nil, expired(r) // recorded by another request meanwhile
	}
	if !changed && (r.Status != to || r.DecidedBy != who.Principal) {
		return nil, review.Errorf(review.CodeConflict, "park %s was already %s by %s at %s; a decision cannot be changed",
			r.ID, strings.ToLower(string(r.Status)), r.DecidedBy, r.DecidedAt.UTC().Format(park.TimeFormat))
	}
	if changed {
		s.log.InfoContext(ctx, "park decided", "park_id", r.ID, "run_id", r.RunID, "status", string(to), "by", who.Principal)
	}
	err := send(r)
	var ended *review.TaskEndedError
	switch {
	case errors.As(err, &ended) && !changed:
		// A repeat whose earlier send may have reached the Task and spent
		// the token.
		return &park.DecideResult{ParkID: r.ID, Status: r.Status, Message: fmt.Sprintf("park %s was already %s by %s; Step Functions no longer accepts its token (an earlier send reached it, or its Task has ended)", r.ID, verb, r.DecidedBy)}, nil
	case errors.As(err, &ended):
		s.log.WarnContext(ctx, "park task ended before its decision", "park_id", r.ID, "sfn_error", ended.Name)
		return nil, review.Errorf(review.CodeTaskEnded, "park %s is %s, but Step Functions answered %s: its Task timed out or its run ended, so nothing was delivered", r.ID, verb, ended.Name)
	case err != nil:
		s.log.ErrorContext(ctx, "send park decision", "park_id", r.ID, "error", err)
		return nil, review.Wrap(review.CodeUnavailable, err, "park %s is %s, but Step Functions could not be reached; repeat the same request to send it", r.ID, verb)
	}
	msg := fmt.Sprintf("park %s %s by %s; Step Functions has the decision", r.ID, verb, r.DecidedBy)
	if to == park.StatusCancelled {
		msg = fmt.Sprintf("park %s cancelled by %s; its run is stopped", r.ID, r.DecidedBy)
	}
	if !changed {
		msg = fmt.Sprintf("park %s was already %s by %s; sent again", r.ID, verb, r.DecidedBy)
	}
	return &park.DecideResult{ParkID: r.ID, Status: r.Status, Changed: changed, Message: msg}, nil
}
