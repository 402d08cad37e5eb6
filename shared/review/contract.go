package review

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/tool"
)

// ProofHeader carries the caller proof on the decision function's Function
// URL (caller.ProofHeader; docs/identity.md).
const ProofHeader = caller.ProofHeader

// RequestResult is what review-request returns. The review Task ignores
// it (it waits for the task token); it is for logs and direct calls.
type RequestResult struct {
	ReviewID  string `json:"review_id"`
	Status    Status `json:"status"`
	ExpiresAt string `json:"expires_at"`
}

// LaneRequest is a request of the direct lane (toolgate invoke of a gated
// tool), which has no review Task and no task token: "request" stores a
// pending review of the call and returns its id; "status" reports a
// direct-lane review's decision (never its inputs) to its requester, which
// is the approval the call then carries. The invoker never writes or reads
// review items itself. Each request carries a caller proof bound to it:
// caller.ActionRequest with the run id, the tool and the input's digest;
// caller.ActionStatus with the review id.
type LaneRequest struct {
	Action   string `json:"action"`
	ReviewID string `json:"review_id,omitempty"`
	// ReviewedCall is the call of a "request", and empty in a "status"
	// (whose members are then zero). Reviewers must be empty: the platform
	// names the direct lane's reviewers (DirectPolicy).
	tool.ReviewedCall
	Proof string `json:"proof,omitempty"`
}

// StartRequest is the one request of review-request's start alias
// (lane.Start): toolgate run asks for the start record of the execution
// it is about to start (docs/identity.md, "Four eyes"). Its caller proof
// is bound to caller.ActionStart, the execution ARN and the input digest
// (StartBinding); review-request records the verified caller as the
// execution's starter, with the digest and a deadline, once.
type StartRequest struct {
	// Action is StartAction.
	Action string `json:"action"`
	// ExecutionARN is the ARN of the execution toolgate run names
	// (arn:<partition>:states:<region>:<account>:execution:<state machine>:<name>).
	ExecutionARN string `json:"execution_arn"`
	// InputDigest is "sha256:" and the hex SHA-256 of the RFC 8785 form of
	// the whole execution input, {input, meta} (tool.InputDigest).
	InputDigest string `json:"input_digest"`
	// EndUser is the end-user id the run is to act for (toolgate run
	// --end-user; shared/enduser CheckID), absent for none. It is recorded
	// only when the end-user mapping lets the verified starter act for it
	// (docs/identity.md, "End users").
	EndUser string `json:"end_user,omitempty"`
	// ForkedFrom is the parent run of a fork (toolgate fork; docs/fork.md):
	// its execution ARN, absent for a run that is no fork. It is recorded
	// only when the parent's fork item names this execution as its fork
	// and the verified starter is the forker the item names; a fork acts
	// for its parent's end user, so EndUser is then absent.
	ForkedFrom string `json:"forked_from,omitempty"`
	// RerunReads is the fork's --rerun-reads; true only with ForkedFrom.
	RerunReads bool `json:"rerun_reads,omitempty"`
	// Origin is what started an inbound or scheduled run (inbound-start:
	// a source's event or a schedule's firing), absent for any other
	// start. It is admitted only from a session of the inbound-start role
	// whose session name is the origin's (StartOrigin.SessionName), and
	// never with ForkedFrom; a session of that role must give one
	// (docs/identity.md, "Four eyes"). It is recorded on the start record.
	Origin *StartOrigin `json:"origin,omitempty"`
	// Proof is the caller's proof (docs/identity.md, "The caller proof"):
	// an sts:GetCallerIdentity URL the caller presigned with its own
	// credentials, at most caller.MaxProofBytes (8 KiB), that signs
	// StartBindingFor(ExecutionARN, InputDigest, EndUser). Its verified principal is
	// the starter recorded; the proof itself is a secret, kept in no
	// record, log or execution input.
	Proof string `json:"proof"`
}

// StartAction is a StartRequest's action.
const StartAction = caller.ActionStart

// StartBinding is what the caller proof of a StartRequest without an end
// user is bound to: StartBindingFor with no end user.
func StartBinding(executionARN, inputDigest string) caller.Binding {
	return StartBindingFor(executionARN, inputDigest, "")
}

// StartBindingFor is what a StartRequest's caller proof is bound to:
// caller.ActionStart, the execution ARN, the whole execution input's
// digest and, as Detail, the end-user id ("" for none, which binds as a
// request of toolgate run before end users did), so that a proof signed
// for one end user cannot start the run for another.
func StartBindingFor(executionARN, inputDigest, endUser string) caller.Binding {
	return caller.Binding{Action: caller.ActionStart, Target: executionARN, InputDigest: inputDigest, Detail: endUser}
}

// StartBindingOf is what a StartRequest's caller proof is bound to:
// StartBindingFor for a run that is neither a fork nor has an origin
// (ForkedFrom empty, Origin nil), exactly as before either existed; for a
// fork, Detail is the JSON array [end user, forked_from, rerun_reads],
// so that a proof signed for one parent, or without --rerun-reads,
// records no other; with an origin, the JSON array [end user,
// forked_from, rerun_reads, kind, name, added_by, event], so that a proof
// signed for one source's event records no other source, event or
// adder. No two of the three encodings coincide (a string, arrays of 3
// and of 7 members).
func StartBindingOf(r *StartRequest) caller.Binding {
	var detail []byte
	switch {
	case r.Origin != nil:
		o := r.Origin
		detail, _ = json.Marshal([]any{r.EndUser, r.ForkedFrom, r.RerunReads, o.Kind, o.Name, o.AddedBy, o.Event, holdersOrEmpty(o.Holders)})
	case r.ForkedFrom != "":
		detail, _ = json.Marshal([]any{r.EndUser, r.ForkedFrom, r.RerunReads})
	default:
		return StartBindingFor(r.ExecutionARN, r.InputDigest, r.EndUser)
	}
	return caller.Binding{Action: caller.ActionStart, Target: r.ExecutionARN, InputDigest: r.InputDigest, Detail: string(detail)}
}

// Kinds of a StartOrigin.
const (
	OriginSource   = "source"   // a source's verified webhook event
	OriginSchedule = "schedule" // a schedule's firing
)

// MaxOriginAddedByBytes bounds StartOrigin.AddedBy: an IAM ARN is at most
// 2048 characters (IAM quotas).
const MaxOriginAddedByBytes = 2048

// MaxOriginHolders bounds StartOrigin.Holders and a source's
// secret_holders: the newest 16 principals who held one of its secrets
// (docs/identity.md, "Four eyes").
const MaxOriginHolders = 16

// holdersOrEmpty is h, or an empty list for nil, so that the binding
// encodes no holders as [] (never null).
func holdersOrEmpty(h []string) []string {
	if h == nil {
		return []string{}
	}
	return h
}

// StartOrigin is what started an inbound or scheduled run, as
// inbound-start asks the start lane to record it (StartRequest.Origin;
// the start record's origin, M).
type StartOrigin struct {
	// Kind is OriginSource or OriginSchedule.
	Kind string `json:"kind"`
	// Name is the source's or the schedule's name (inbound.CheckName).
	Name string `json:"name"`
	// AddedBy is the principal ARN who added the source or the schedule
	// (its item's added_by): whom a reviewer asks about the run.
	AddedBy string `json:"added_by"`
	// Event is the source's event id (1 to inbound.MaxEventIDBytes
	// printable ASCII characters) or the schedule's scheduled time (RFC
	// 3339, UTC, whole seconds).
	Event string `json:"event"`
	// Holders are the principal ARNs who could have chosen the run's
	// input, 1 to MaxOriginHolders: for a source, each who held one of
	// its secrets (its adder, who was answered the first, and each
	// rotator; the source's secret_holders, newest last); for a
	// schedule, its adder, who chose its input. Four eyes refuse each of
	// them as an approver of the run's reviews and gated parks, as they
	// refuse the requester (docs/identity.md, "Four eyes").
	Holders []string `json:"holders"`
}

// SessionName is the STS role session name inbound-start assumes the
// inbound-start role with for o: "src-<name>" for a source,
// "sched-<name>" for a schedule (inbound.SessionPrefixSource,
// SessionPrefixSchedule).
func (o StartOrigin) SessionName() string {
	if o.Kind == OriginSchedule {
		return inbound.SessionPrefixSchedule + o.Name
	}
	return inbound.SessionPrefixSource + o.Name
}

// Check validates o's members: Kind one of the two, Name
// inbound.CheckName's, AddedBy an ARN ("arn:" and at most
// MaxOriginAddedByBytes printable ASCII characters), Holders 1 to
// MaxOriginHolders distinct ARNs of that form, Event as Event says. The
// start lane also checks each ARN's account (the deployment's). The
// error names the member and the rule, never the value.
func (o StartOrigin) Check() error {
	switch {
	case o.Kind != OriginSource && o.Kind != OriginSchedule:
		return fmt.Errorf("origin: kind must be %q or %q", OriginSource, OriginSchedule)
	case !isARN(o.AddedBy):
		return fmt.Errorf("origin: added_by must be an ARN of at most %d printable ASCII characters", MaxOriginAddedByBytes)
	case len(o.Holders) == 0 || len(o.Holders) > MaxOriginHolders:
		return fmt.Errorf("origin: holders must list 1 to %d principal ARNs", MaxOriginHolders)
	}
	seen := make(map[string]bool, len(o.Holders))
	for i, h := range o.Holders {
		switch {
		case !isARN(h):
			return fmt.Errorf("origin: holders[%d] must be an ARN of at most %d printable ASCII characters", i, MaxOriginAddedByBytes)
		case seen[h]:
			return fmt.Errorf("origin: holders[%d] repeats an earlier member", i)
		}
		seen[h] = true
	}
	if err := inbound.CheckName(o.Name); err != nil {
		return fmt.Errorf("origin: name: %v", err)
	}
	if o.Kind == OriginSchedule {
		t, err := time.Parse(time.RFC3339, o.Event)
		if err != nil || t.Location() != time.UTC || t.Nanosecond() != 0 || t.Format(time.RFC3339) != o.Event {
			return fmt.Errorf("origin: a schedule's event must be its scheduled time, RFC 3339 UTC in whole seconds (2026-12-03T18:00:00Z)")
		}
		return nil
	}
	if !printableASCII(o.Event, inbound.MaxEventIDBytes) {
		return fmt.Errorf("origin: a source's event must be its event id, 1 to %d printable ASCII characters", inbound.MaxEventIDBytes)
	}
	return nil
}

// isARN reports whether s is "arn:" and at most MaxOriginAddedByBytes
// printable ASCII characters.
func isARN(s string) bool {
	return strings.HasPrefix(s, "arn:") && printableASCII(s, MaxOriginAddedByBytes)
}

// printableASCII reports whether s is 1 to max characters of 0x21-0x7E.
func printableASCII(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// StartAnswer is the start lane's answer to a StartRequest once the start
// record is written: the recorded starter, the run's end-user scope (null
// for none) and, when an end user was asked for but not recorded, why
// (toolgate run says so; the run starts all the same, without one).
type StartAnswer struct {
	Starter        string  `json:"starter"`
	EndUser        *string `json:"end_user"`
	EndUserSkipped string  `json:"end_user_skipped,omitempty"`
	// ForkedFrom is the parent the record names, for a fork.
	ForkedFrom string `json:"forked_from,omitempty"`
}

// EndUserRecord is what a start record holds of its run's end user: the
// id and its scope (shared/enduser Scope) when the starter may act for it,
// or, when not, why it was skipped; all empty when none was asked for.
type EndUserRecord struct {
	ID, Scope, Skipped string
}

// StartDeadline is how long after its start record an execution may start
// (the record's deadline): toolgate run starts it at once, and the window
// is a caller proof's (caller.Window).
const StartDeadline = caller.Window

// Lane actions: the "action" of a LaneRequest.
const (
	LaneRequestAction = "request"
	LaneStatusAction  = "status"
)

// LaneStatus is the answer to a "status" request.
type LaneStatus struct {
	ReviewID  string `json:"review_id"`
	Status    Status `json:"status"`
	ExpiresAt string `json:"expires_at"`
	Expired   bool   `json:"expired"`
	// Decision is the decision JSON once decided: the call's approval.
	Decision *Decision `json:"decision,omitempty"`
}

// RequestBinding is what a direct-lane review request's caller proof is
// bound to: caller.ActionRequest, the run id, the tool, the input's digest
// and, as Detail, the JSON array [step, of, toolset_id, timeout_seconds]:
// every member the requester chooses.
func RequestBinding(req LaneRequest, inputDigest string) caller.Binding {
	detail, _ := json.Marshal([]any{req.Step, req.Of, req.ToolsetID, req.TimeoutSeconds})
	return caller.Binding{Action: caller.ActionRequest, Target: req.RunID, Decision: req.Tool, InputDigest: inputDigest, Detail: string(detail)}
}

// DirectRequest is a direct invocation of the decision function (the local
// stack's CLI; on AWS the Function URL is the reviewers' way in): the
// action and the caller proof bound to it.
//
// The park actions (docs/parking.md, "Deciding") are "park.list",
// "park.show", "park.decide" and "park.cancel", with ParkID naming the
// park and Decision approve, reject or resume. "run.fork" forks RunID as
// ForkRunID (docs/fork.md).
// park and Decision approve, reject or resume.
//
// The reconcile action (docs/fork.md, "Reconciling") is
// "ledger.reconcile", with Key naming the call's idempotency key, Outcome
// "applied" or "not_applied", Result the call's result's JSON (applied
// only, optional) and Reason why.
type DirectRequest struct {
	Action   Action  `json:"action"`
	ReviewID string  `json:"review_id,omitempty"`
	ParkID   string  `json:"park_id,omitempty"`
	Status   string  `json:"status,omitempty"`
	Decision Verdict `json:"decision,omitempty"`
	Reason   string  `json:"reason,omitempty"`
	// Answer and Edits are a review decision's (DecisionBody's); absent
	// when none. Neither is logged.
	Answer json.RawMessage `json:"answer,omitempty"`
	Edits  json.RawMessage `json:"edits,omitempty"`
	// RunID, ForkRunID and RerunReads are a run.fork's (ActionRunFork):
	// the parent's and the fork's execution ARNs, and --rerun-reads.
	RunID      string `json:"run_id,omitempty"`
	ForkRunID  string `json:"fork_run_id,omitempty"`
	RerunReads bool   `json:"rerun_reads,omitempty"`
	Proof      string `json:"proof,omitempty"`
	Key        string `json:"key,omitempty"`
	Outcome    string `json:"outcome,omitempty"`
	// Result is never logged.
	Result json.RawMessage `json:"result,omitempty"`
}

// DecisionBody is the body of POST /reviews/{id} on the Function URL.
type DecisionBody struct {
	Decision Verdict `json:"decision"`
	Reason   string  `json:"reason,omitempty"`
	// Answer is the reviewer's answer to the review's question (its ask
	// schema checks it), JSON; absent when none.
	Answer json.RawMessage `json:"answer,omitempty"`
	// Edits is a JSON object of the top-level input members the reviewer
	// replaces (each one the review's editable list names), approvals
	// only; absent when none.
	Edits json.RawMessage `json:"edits,omitempty"`
}

// ErrorBody is a Function URL error response's body.
type ErrorBody struct {
	Error struct {
		Code    Code   `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Action names what a request of the decision function asks for.
type Action string

const (
	ActionList   Action = "list"
	ActionShow   Action = "show"
	ActionDecide Action = "decide"
)

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
	// Reuses is, for a review of a fork's call (its run's start record
	// names forked_from), the idempotency keys of the parent run's
	// COMPLETED calls of the reviewed step with the reviewed input digest,
	// in the parent's seq order (show only): once approved, the call
	// takes one of their recorded results instead of running, if its
	// tool, destination, pinned schemas, options, loop index path and
	// occurrence match too, which the dispatcher decides at the call
	// (docs/fork.md, "Reviews in a fork"). A key names the parent's
	// execution ARN: only a reviewer who may fork the parent (its starter
	// or a fork operator) is shown keys; any other is shown "seq <seq>"
	// for each, the parent withheld. Empty: no completed parent call has
	// that step and input, and the call runs once approved.
	Reuses []string `json:"reuses,omitempty"`
	// Requester asked for the review and may not decide it.
	Requester string `json:"requester,omitempty"`
	// SelfApprovalRefusals counts the requester's refused attempts to
	// decide it, and its origin holders' refused approvals
	// (Review.OriginHolders; docs/identity.md, "Four eyes").
	SelfApprovalRefusals int `json:"self_approval_refusals,omitempty"`
	// Kind is tool.ReviewOfCall or tool.ReviewShow (a review that shows
	// values: Of and Tool are "", and its approval authorises no call).
	Kind tool.ReviewKind `json:"kind"`
	// Ask is the question's JSON Schema and Editable the members the
	// reviewer may replace (show only; absent when none).
	Ask      json.RawMessage `json:"ask,omitempty"`
	Editable []string        `json:"editable,omitempty"`
	// Answer, Edits and ApprovedDigest are what an approval recorded
	// (show only, once decided; absent when none): the answer, the edits
	// (RFC 8785 object) and the digest of the input with the edits
	// merged, which the approval authorises.
	Answer         json.RawMessage `json:"answer,omitempty"`
	Edits          json.RawMessage `json:"edits,omitempty"`
	ApprovedDigest string          `json:"approved_digest,omitempty"`
	// What the review console shows of the call (show only;
	// docs/reviews.md, "The review console"). Solution and
	// SolutionVersion name the run's Solution when its records say
	// (absent when they do not).
	Solution        string `json:"solution,omitempty"`
	SolutionVersion string `json:"solution_version,omitempty"`
	// InputSchema is the reviewed tool's input schema as its registered
	// toolset pins it (absent for a review that shows values, or when the
	// toolset is not registered).
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// Email is, for a review of a send-email call, its sender and
	// recipients with the verdict of the allow-list the send-email tool
	// is configured with (absent for any other tool).
	Email *EmailView `json:"email,omitempty"`
	// RunCalls are the review's run's ledger rows as metadata only
	// (never an input or a result), in call order.
	RunCalls []RunCall `json:"run_calls,omitempty"`
}

// EmailView is the envelope of a send-email call under review: the
// sender the tool sends as (its configuration, never the input) and the
// input's recipients, each with the allow-list verdict the send-email
// tool would give (shared/recipient List.Decide).
type EmailView struct {
	From AddressVerdict   `json:"from"`
	To   []AddressVerdict `json:"to"`
	Cc   []AddressVerdict `json:"cc,omitempty"`
	Bcc  []AddressVerdict `json:"bcc,omitempty"`
}

// AddressVerdict is one address and its verdict: "allow", "refuse" or
// "invalid" (recipient.Verdict), or VerdictUnknown, and the rule behind
// it (recipient.Decision.Rule; never an allow-list entry). Address is as
// the input wrote it (a recipient) or as configured (the sender).
type AddressVerdict struct {
	Address string `json:"address"`
	Verdict string `json:"verdict"`
	Rule    string `json:"rule,omitempty"`
}

// VerdictUnknown is an AddressVerdict's verdict when review-decision is
// not configured with what would decide it: send-email's recipient
// allow-list for a valid recipient, its sender for From
// (docs/reviews.md, "What a review's show answer carries").
const VerdictUnknown = "unknown"

// RunCall is one ledger row of a review's run as the review console
// shows it: metadata only.
type RunCall struct {
	Seq    string `json:"seq"`
	Step   string `json:"step"`
	Tool   string `json:"tool"`
	Status string `json:"status"`
	// At is the row's start, RFC 3339 UTC.
	At string `json:"at"`
}

// NewView is r as a reviewer is shown it at now: full adds the inputs, the
// reason, the delivery and the lane (show); a listing leaves them out.
func NewView(r *Review, now time.Time, full bool) View {
	v := View{
		ReviewID: r.ID, Status: r.Status, Expired: r.Status == Pending && r.Expired(now), RunID: r.RunID, Step: r.Step,
		Of: r.Of, Tool: r.Tool, ToolsetID: r.ToolsetID, Reviewers: r.Reviewers, InputDigest: r.InputDigest,
		ExpiresAt: FormatTime(r.ExpiresAt), Approver: r.Approver, UsedBy: r.BoundKey,
		Requester: r.Requester, SelfApprovalRefusals: r.SelfApprovalRefusals, Kind: r.kind(),
	}
	if v.Reviewers == nil {
		v.Reviewers = []string{}
	}
	if !r.CreatedAt.IsZero() {
		v.CreatedAt = FormatTime(r.CreatedAt)
	}
	if r.Status != Pending {
		auth := r.Authenticated
		v.Authenticated, v.DecidedAt = &auth, FormatTime(r.DecidedAt)
	}
	if full {
		v.Input, v.Reason, v.Delivery = r.Input, r.Reason, r.Delivery
		v.Ask, v.Editable, v.Answer, v.Edits, v.ApprovedDigest = r.Ask, r.Editable, r.Answer, r.Edits, r.ApprovedDigest
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

// The park actions of the decision function (docs/parking.md, "Deciding"),
// each bound by its caller proof to the caller action of the same name.
const (
	ActionParkList   Action = caller.ActionParkList
	ActionParkShow   Action = caller.ActionParkShow
	ActionParkDecide Action = caller.ActionParkDecide
	ActionParkCancel Action = caller.ActionParkCancel
)

// ParkListBinding, ParkShowBinding, ParkDecideBinding and
// ParkCancelBinding are what the caller proof of each park request is
// bound to: the action, the status filter or the park id, and for a
// decision the decision ("approve", "reject" or "resume") and the park's
// current digest (empty for credentials.expired), so that an approval is
// of the tool definition the approver was shown.
func ParkListBinding(status string) caller.Binding {
	return caller.Binding{Action: caller.ActionParkList, Target: status}
}

// ParkShowBinding: see ParkListBinding.
func ParkShowBinding(id string) caller.Binding {
	return caller.Binding{Action: caller.ActionParkShow, Target: id}
}

// ParkDecideBinding: see ParkListBinding.
func ParkDecideBinding(id, decision, currentDigest string) caller.Binding {
	return caller.Binding{Action: caller.ActionParkDecide, Target: id, Decision: decision, InputDigest: currentDigest}
}

// ParkCancelBinding: see ParkListBinding.
func ParkCancelBinding(id string) caller.Binding {
	return caller.Binding{Action: caller.ActionParkCancel, Target: id}
}

// ActionLedgerReconcile is the decision function's record of a
// reconciliation (docs/fork.md, "Reconciling"), bound by its caller proof
// to the caller action of the same name (ReconcileBinding).
const ActionLedgerReconcile Action = caller.ActionLedgerReconcile

// ReconcileBinding is what a reconcile request's caller proof is bound
// to: the call's idempotency key, the outcome, the digest of the result
// (ReconcileResultDigest; "" without one) and the reason.
func ReconcileBinding(key, outcome, resultDigest, reason string) caller.Binding {
	return caller.Binding{Action: caller.ActionLedgerReconcile, Target: key, Decision: outcome, InputDigest: resultDigest, Detail: reason}
}

// ReconcileResultDigest is the digest a reconcile request's binding names
// of its result: "sha256:<hex>" of the result's RFC 8785 form
// (tool.InputDigest), "" without a result; an error for a result that is
// not JSON.
func ReconcileResultDigest(result json.RawMessage) (string, error) {
	if len(result) == 0 {
		return "", nil
	}
	_, d, err := tool.InputDigest(result)
	return d, err
}

// ReconcileBody is the body of POST /reconciliations on the Function URL.
type ReconcileBody struct {
	Key     string          `json:"key"`
	Outcome string          `json:"outcome"`
	Result  json.RawMessage `json:"result,omitempty"`
	Reason  string          `json:"reason,omitempty"`
}

// ReconcileResult is the answer to a reconcile request: what was
// recorded, never the result.
type ReconcileResult struct {
	Key          string `json:"key"`
	Outcome      string `json:"outcome"`
	ReconciledBy string `json:"reconciled_by"`
	ReconciledAt string `json:"reconciled_at"`
}
