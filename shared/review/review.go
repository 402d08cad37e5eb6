package review

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/reviewer"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
)

// Limits of a review, with their sources.
const (
	// MaxTimeout is the contract's longest review (tool.MaxReviewTimeout,
	// a task token's year); the resolver enforces the same bound on
	// review.timeout_seconds.
	MaxTimeout = tool.MaxReviewTimeout
	// MaxTaskTokenLength is Step Functions' limit on a task token.
	MaxTaskTokenLength = 1024
	// MaxInputBytes bounds the inputs under review: Step Functions passes at
	// most 256 KiB of state to a Task, and a DynamoDB item holds 400 KB.
	MaxInputBytes = 256 << 10
	// MaxReasonLength bounds a decision's reason, in characters.
	MaxReasonLength = 1000
	// MaxApproverLength bounds an approver: an IAM ARN is at most 2048.
	MaxApproverLength = 2048
)

// Status of a review.
type Status string

const (
	Pending  Status = "PENDING"  // waiting for a decision until ExpiresAt
	Approved Status = "APPROVED" // approved: authorises one call of the reviewed step
	Rejected Status = "REJECTED" // rejected: the Task failed with REVIEW_REJECTED
)

// Verdict is the contract's (tool.Verdict): what a reviewer decides.
type Verdict = tool.Verdict

// The two verdicts (tool.Approve, tool.Reject).
const (
	Approve = tool.Approve
	Reject  = tool.Reject
)

// StatusOf returns the review status a verdict leads to.
func StatusOf(v Verdict) Status {
	if v == Approve {
		return Approved
	}
	return Rejected
}

// ErrorRejected is the error SendTaskFailure reports for a rejection: the
// compiled review Task catches it and goes to its on_reject target.
const ErrorRejected = tool.ReviewRejected

// Delivery is how far a decision has reached the review's Task.
type Delivery string

const (
	// NoTask: the review has no task token (the direct lane of toolgate
	// invoke polls the record instead).
	NoTask Delivery = "NO_TASK"
	// Delivering: decided; SendTaskSuccess or SendTaskFailure is being
	// called, or failed transiently (repeat the decision to deliver it).
	Delivering Delivery = "DELIVERING"
	// Delivered: Step Functions accepted the decision; the token is spent.
	Delivered Delivery = "DELIVERED"
	// TaskEnded: Step Functions answered TaskTimedOut, TaskDoesNotExist or
	// InvalidToken: the Task no longer waits, nothing was delivered, and the
	// approval authorises nothing.
	TaskEnded Delivery = "TASK_ENDED"
)

// Review is one review: what a reviewer is asked to approve, and the
// decision.
type Review struct {
	ID string
	// RunID is the execution ARN (or the direct lane's run id).
	RunID string
	// Step is the review step's id; Of the id of the tool step it reviews.
	Step, Of  string
	Tool      string
	ToolsetID string
	// Reviewers are IAM principal ARN patterns; empty: anyone who may call
	// the decision function.
	Reviewers []string
	// Input is the RFC 8785 form of the inputs under review, and
	// InputDigest its digest (Digest).
	Input       json.RawMessage
	InputDigest string
	// Requester is the verified principal who asked for the review: the
	// execution's starter (sfn lane) or the caller of review-request
	// (direct lane). The requester may never decide it (four eyes).
	Requester string
	// OriginHolders are, for a review of an inbound or scheduled run, the
	// principal ARNs who could have chosen its input (its start record's
	// origin holders, review.StartOrigin.Holders: who held a secret of the
	// source, or added the schedule); empty for any other run. None of
	// them may approve it, as the requester may not (four eyes;
	// docs/identity.md, "Four eyes"); they may reject it.
	OriginHolders []string
	// SelfApprovalRefusals counts the requester's and the origin
	// holders' refused attempts to decide the review.
	SelfApprovalRefusals int
	// TaskToken is the review Task's token; empty on the direct lane. It is
	// never shown to anyone.
	TaskToken      string
	TimeoutSeconds int
	Status         Status
	CreatedAt      time.Time
	// ExpiresAt is CreatedAt + TimeoutSeconds, to the second: no decision
	// and no use of an approval after it, and the item's TTL (expires_at).
	ExpiresAt time.Time
	// The decision (Status Approved or Rejected).
	Approver      string
	Authenticated bool
	DecidedAt     time.Time
	Reason        string
	Delivery      Delivery
	DeliveryError string // the Step Functions error name when TaskEnded
	// DeliveryLeaseUntil keeps other requests from delivering the same
	// decision while one does.
	DeliveryLeaseUntil time.Time
	// BoundKey is the idempotency key of the one call this approval
	// authorised (the first claim of that key binds it); BoundAt when.
	BoundKey string
	BoundAt  time.Time
	// BindingSeal is what Bind found of the binding item's seal
	// (shared/seal; docs/ledger.md, "Records are sealed by the function
	// that writes them"): seal.Valid for a binding Bind wrote itself with
	// a key or one sealed with the same function's key, seal.Absent for
	// one without a seal (the previous layout, or written by a store
	// without a key), seal.Forged otherwise. Set by Bind only; the
	// dispatcher uses a binding only once seal.Accept takes it.
	BindingSeal seal.Status

	// Traceparent is the review's place in its run's trace, a W3C
	// traceparent (TraceparentFor): stored with what was asked, so that
	// the decision's span joins the run's trace. Not secret, but never
	// logged nor put in an error: it is the caller's word. "" in items
	// written before it, and from New until the caller places it.
	Traceparent string

	// DecisionToken is the random token of the request that recorded the
	// decision, so that a store can tell its own conditional write that
	// succeeded from another's; never shown.
	DecisionToken string

	// Kind is what the review asks (docs/reviews.md, "Kinds of review"):
	// tool.ReviewOfCall, or tool.ReviewShow, whose Of and Tool are "" and
	// whose approval authorises no call. Items written before kinds
	// existed have none, and read as tool.ReviewOfCall.
	Kind tool.ReviewKind
	// Ask is the compact JSON Schema (2020-12) of the answer the reviewer
	// gives with an approval (docs/reviews.md, "The question"), at most
	// tool.MaxAskSchemaBytes; nil: the review asks nothing.
	Ask json.RawMessage
	// Editable names the top-level members of Input the reviewer may
	// replace before approving (call reviews only; at most
	// tool.MaxEditable); nil: none (docs/reviews.md, "Approve with
	// edits").
	Editable []string
	// Notify are the addresses (RFC 5322 addr-specs, at most
	// tool.MaxNotify) the review Task asked to be told that the review
	// waits. Not stored on the review item: review-request sends the
	// notice when it stores the review.
	Notify []string
	// Answer is the reviewer's answer (compact JSON) recorded with an
	// approval of a review with Ask; nil otherwise.
	Answer json.RawMessage
	// Edits is the RFC 8785 JSON object of the members an approval
	// replaced, nil without edits; ApprovedDigest is then the digest
	// (tool.InputDigest) of Input with Edits merged (MergeEdits), which
	// the approval authorises instead of InputDigest.
	Edits          json.RawMessage
	ApprovedDigest string
}

// Shows reports whether r is a review that shows values
// (tool.ReviewShow): its approval authorises no tool call.
func (r *Review) Shows() bool { return r.Kind == tool.ReviewShow }

// Expired reports whether the review's time is over at now.
func (r *Review) Expired(now time.Time) bool { return !now.Before(r.ExpiresAt) }

// Params are what a review is requested with: the review Task's payload
// (docs/solutions.md §7.4) less its timeout, or the direct lane's call.
type Params struct {
	// ID is the review id; IDForToken or NewID.
	ID             string
	TaskToken      string
	RunID          string
	Step, Of       string
	Tool           string
	ToolsetID      string
	Input          json.RawMessage
	Reviewers      []string
	TimeoutSeconds int
	Requester      string
	// Traceparent is the run's traceparent the review Task carried
	// (tool.Traceparent: "" when it carried none); Review.Traceparent
	// starts as it.
	Traceparent tool.Traceparent
	// Kind, Ask, Editable and Notify are the review Task's
	// (tool.ReviewTask); "" Kind is tool.ReviewOfCall. New checks them
	// (checkQuestion).
	Kind     tool.ReviewKind
	Ask      json.RawMessage
	Editable []string
	Notify   []string
}

var idPattern = regexp.MustCompile(`^rv_[0-9a-f]{32}$`)

// ValidID reports whether id has the shape of a review id.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// IDForToken is the review id of a review Task: "rv_" and the first 32 hex
// digits of the SHA-256 of its task token, so that the same Task asking
// twice (a retried Lambda invocation) gets the same review, and the id
// reveals nothing of the token.
func IDForToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "rv_" + hex.EncodeToString(sum[:16])
}

// NewID returns a random review id (the direct lane, which has no token).
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	return "rv_" + hex.EncodeToString(b[:])
}

// New validates p and returns the pending review it asks for, with its
// canonical input and digest. Times are set when the review is stored.
func New(p Params) (*Review, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("review request: "+format, args...)
	}
	switch {
	case !ValidID(p.ID):
		return nil, bad("review id %q is not rv_ and 32 hex digits", excerpt.Bytes(p.ID, 40, "..."))
	case len(p.TaskToken) > MaxTaskTokenLength:
		return nil, bad("task_token is %d characters, over %d", len(p.TaskToken), MaxTaskTokenLength)
	case p.RunID == "" || len(p.RunID) > 1024 || strings.ContainsFunc(p.RunID, unicode.IsControl):
		return nil, bad("run_id must be 1 to 1024 printable characters")
	case !tool.NamePattern.MatchString(p.Step):
		return nil, bad("step %q is not a step id", excerpt.Bytes(p.Step, 64, "..."))
	case p.Kind != "" && p.Kind != tool.ReviewOfCall && p.Kind != tool.ReviewShow:
		return nil, bad("kind %q is not %q or %q", excerpt.Bytes(string(p.Kind), 40, "..."), tool.ReviewOfCall, tool.ReviewShow)
	case p.Kind == tool.ReviewShow && (p.Of != "" || p.Tool != ""):
		return nil, bad("a review of kind %q shows values and reviews no tool call: of and tool must be \"\"", tool.ReviewShow)
	case p.Kind != tool.ReviewShow && !tool.NamePattern.MatchString(p.Of):
		return nil, bad("of %q is not a step id", excerpt.Bytes(p.Of, 64, "..."))
	case p.Kind != tool.ReviewShow && !tool.ValidToolName(p.Tool):
		return nil, bad("tool %q is not a tool name", excerpt.Bytes(p.Tool, 64, "..."))
	case !tool.ToolsetIDPattern.MatchString(p.ToolsetID):
		return nil, bad("toolset_id %q is not a toolset id (ts_ and 32 hex digits)", excerpt.Bytes(p.ToolsetID, 64, "..."))
	case p.TimeoutSeconds < 1 || p.TimeoutSeconds > MaxTimeout:
		return nil, bad("timeout_seconds %d is outside 1..%d: a task token lives at most a year", p.TimeoutSeconds, MaxTimeout)
	case p.Requester == "" || len(p.Requester) > MaxApproverLength || strings.ContainsFunc(p.Requester, func(r rune) bool { return r <= 0x20 || r == 0x7f }):
		return nil, bad("requester must be a verified principal of 1 to %d characters without whitespace", MaxApproverLength)
	case len(p.Reviewers) > reviewer.MaxReviewers:
		return nil, bad("%d reviewers, over %d", len(p.Reviewers), reviewer.MaxReviewers)
	case len(p.Input) > MaxInputBytes:
		return nil, bad("input is %d bytes, over %d", len(p.Input), MaxInputBytes)
	}
	if t := bytes.TrimSpace(p.Input); len(t) == 0 || t[0] != '{' {
		return nil, bad("input must be a JSON object")
	}
	// The recorded shape, not the authoring rule: an execution compiled
	// before reviewer patterns had to name their account still runs, and
	// its reviewers are verified principals of admitted accounts only.
	for _, pat := range p.Reviewers {
		if err := reviewer.CheckRecorded(pat); err != nil {
			return nil, bad("%v", err)
		}
	}
	canonical, digest, err := tool.InputDigest(p.Input)
	if err != nil {
		return nil, bad("%v", err)
	}
	kind := p.Kind
	if kind == "" {
		kind = tool.ReviewOfCall
	}
	ask, err := checkQuestion(kind, p.Tool, p.Ask, p.Editable, p.Notify)
	if err != nil {
		return nil, bad("%v", err)
	}
	reviewers := append([]string{}, p.Reviewers...)
	return &Review{
		ID: p.ID, RunID: p.RunID, Step: p.Step, Of: p.Of, Tool: p.Tool, ToolsetID: p.ToolsetID,
		Reviewers: reviewers, Input: canonical, InputDigest: digest, TaskToken: p.TaskToken,
		TimeoutSeconds: p.TimeoutSeconds, Status: Pending, Requester: p.Requester, Traceparent: string(p.Traceparent),
		Kind: kind, Ask: ask, Editable: cloneOrNil(p.Editable), Notify: cloneOrNil(p.Notify),
	}, nil
}

// SameRequest reports whether two reviews ask the same thing (a repeated
// request of one Task).
func (r *Review) SameRequest(o *Review) bool {
	return r.ID == o.ID && r.RunID == o.RunID && r.Step == o.Step && r.Of == o.Of && r.Tool == o.Tool &&
		r.ToolsetID == o.ToolsetID && r.InputDigest == o.InputDigest && r.TaskToken == o.TaskToken &&
		r.TimeoutSeconds == o.TimeoutSeconds && r.Requester == o.Requester && slices.Equal(r.Reviewers, o.Reviewers) &&
		r.kind() == o.kind() && bytes.Equal(r.Ask, o.Ask) && slices.Equal(r.Editable, o.Editable)
}

// HeldByOrigin reports whether principal is one of r's origin holders
// (OriginHolders), who may not approve r (four eyes; docs/identity.md,
// "Four eyes").
func (r *Review) HeldByOrigin(principal string) bool {
	return principal != "" && slices.Contains(r.OriginHolders, principal)
}

// kind is r's Kind, tool.ReviewOfCall for an item written before kinds.
func (r *Review) kind() tool.ReviewKind {
	if r.Kind == "" {
		return tool.ReviewOfCall
	}
	return r.Kind
}

// TimeFormat is how review times are written: RFC 3339 in UTC with
// milliseconds, fixed width so that they sort as strings.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// FormatTime writes t in TimeFormat.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// ErrNotFound is returned by a store for a review (or a start record) that
// does not exist.
var ErrNotFound = errors.New("review not found")

// ErrDenied is an AWS API's refusal of a read the function's role may not
// make (AccessDeniedException): no retry changes it.
var ErrDenied = errors.New("access denied")

// ErrStartConflict is returned by a store's RecordStart when the
// execution's start was recorded with another starter.
var ErrStartConflict = errors.New("the execution's start was recorded with another starter")

// Decision is the contract's decision JSON (tool.ReviewDecision).
type Decision = tool.ReviewDecision

// Decision returns the decision JSON of a decided review.
func (r *Review) Decision() Decision {
	v := Approve
	if r.Status == Rejected {
		v = Reject
	}
	d := Decision{
		ReviewID: r.ID, Decision: v, Approver: r.Approver, Authenticated: r.Authenticated,
		DecidedAt: FormatTime(r.DecidedAt), Reason: r.Reason, InputDigest: r.InputDigest, Answer: json.RawMessage("null"),
	}
	if len(r.Answer) > 0 {
		d.Answer = r.Answer
	}
	if r.ApprovedDigest != "" {
		d.Edited, d.ReviewedDigest, d.InputDigest = EditedMembers(r.Edits), r.InputDigest, r.ApprovedDigest
	}
	return d
}

// Use is one gated tool call about to run, as the dispatcher sees it.
type Use struct {
	RunID, Step, Tool, ToolsetID string
	// InputDigest is the digest of the canonical input the dispatcher is
	// about to send.
	InputDigest string
	// Key is the call's idempotency key.
	Key string
	Now time.Time
}

// ApprovalCheck is the outcome of CheckApproval.
type ApprovalCheck struct {
	Allowed bool
	// Bound: the approval is already bound to this call's key (a retry of
	// the same call); nothing needs writing.
	Bound bool
	// Expired: the approval matches the call in every way but time (its
	// review expired); the dispatcher then replays a completed call and
	// refuses anything else.
	Expired bool
	Reason  string
}

// CheckApproval decides whether review r authorises the call u: it must be
// approved, for this run, this tool step, tool and toolset, for exactly
// these inputs, unexpired, not ended at Step Functions, and unused or used
// by this very call (the same idempotency key). Anything else is refused,
// with the reason.
func CheckApproval(r *Review, u Use) ApprovalCheck {
	deny := func(format string, args ...any) ApprovalCheck {
		return ApprovalCheck{Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case r.Shows():
		return deny("review %s shows values and approves no tool call", r.ID)
	case r.Status != Approved:
		return deny("review %s is %s, not approved", r.ID, strings.ToLower(string(r.Status)))
	case r.Approver == "" || r.DecidedAt.IsZero():
		// Only review-decision writes a decision's approver and time; a
		// review created APPROVED by anyone else is none.
		return deny("review %s has no recorded decision", r.ID)
	case r.Delivery == TaskEnded:
		return deny("review %s was decided after its Task had ended (%s): its approval authorises nothing", r.ID, r.DeliveryError)
	case r.RunID != u.RunID:
		return deny("review %s approved a call of another run", r.ID)
	case r.Of != u.Step:
		return deny("review %s approved step %q, not step %q", r.ID, r.Of, u.Step)
	case r.Tool != u.Tool:
		return deny("review %s approved tool %s, not %s", r.ID, r.Tool, u.Tool)
	case r.ToolsetID != u.ToolsetID:
		return deny("review %s approved a call under toolset %s, not %s", r.ID, r.ToolsetID, u.ToolsetID)
	case r.InputDigest != u.InputDigest:
		return deny("the inputs are not those review %s approved (approved %s, about to send %s)", r.ID, r.InputDigest, u.InputDigest)
	case r.Expired(u.Now):
		c := deny("review %s expired at %s", r.ID, FormatTime(r.ExpiresAt))
		c.Expired = true
		return c
	case r.BoundKey == u.Key:
		return ApprovalCheck{Allowed: true, Bound: true, Reason: "already bound to this call"}
	case r.BoundKey != "":
		return deny("review %s already authorised another call (%s): an approval authorises one call", r.ID, excerpt.Bytes(r.BoundKey, 200, "..."))
	}
	return ApprovalCheck{Allowed: true, Reason: "approved by " + r.Approver}
}
