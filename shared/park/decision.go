package park

import (
	"time"
)

// Expired reports whether p's park Task has timed out at now: no
// decision reaches it any more.
func (p *Park) Expired(now time.Time) bool { return !p.Deadline.IsZero() && !now.Before(p.Deadline) }

// StatusOf is the status a decision leaves a park in.
func StatusOf(d Decision) Status {
	switch d {
	case Approve:
		return StatusApproved
	case Reject:
		return StatusRejected
	case Resume:
		return StatusResumed
	}
	return ""
}

// View is a park as review-decision shows it (park.show, park.list):
// never its task token. Times are RFC 3339 UTC with milliseconds.
type View struct {
	ParkID          string   `json:"park_id"`
	Status          Status   `json:"status"`
	Expired         bool     `json:"expired"`
	Cause           Cause    `json:"cause"`
	RunID           string   `json:"run_id"`
	Step            string   `json:"step"`
	Seq             string   `json:"seq"`
	IdempotencyKey  string   `json:"idempotency_key"`
	Tool            string   `json:"tool"`
	ToolsetID       string   `json:"toolset_id"`
	Gated           bool     `json:"gated"`
	PinnedDigest    string   `json:"pinned_digest,omitempty"`
	CurrentDigest   string   `json:"current_digest,omitempty"`
	ChangedPointers []string `json:"changed_pointers,omitempty"`
	// AdditivePointers are those of ChangedPointers whose change is
	// additive; every other changed pointer is breaking (docs/parking.md,
	// "Classifying a change").
	AdditivePointers []string `json:"additive_pointers,omitempty"`
	Target           string   `json:"target,omitempty"`
	Scope            string   `json:"scope,omitempty"`
	CreatedAt        string   `json:"created_at"`
	Deadline         string   `json:"deadline"`
	// Starter started the run: on a gated park, never a decider.
	Starter   string `json:"starter,omitempty"`
	DecidedBy string `json:"decided_by,omitempty"`
	DecidedAt string `json:"decided_at,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Deciders says who may decide it, in words (show only).
	Deciders string `json:"deciders,omitempty"`
}

// NewView is r as shown at now.
func NewView(r *Park, now time.Time) View {
	v := View{ParkID: r.ID, Status: r.Status, Expired: r.Status == StatusParked && r.Expired(now), Cause: r.Cause, RunID: r.RunID,
		Step: r.Step, Seq: r.Seq, IdempotencyKey: r.IdempotencyKey, Tool: r.Tool, ToolsetID: r.ToolsetID, Gated: r.Gated,
		PinnedDigest: r.PinnedDigest, CurrentDigest: r.CurrentDigest, ChangedPointers: r.ChangedPointers, AdditivePointers: r.AdditivePointers, Target: r.Target,
		Scope: r.Scope, DecidedBy: r.DecidedBy, Reason: r.Reason}
	if !r.CreatedAt.IsZero() {
		v.CreatedAt = r.CreatedAt.UTC().Format(TimeFormat)
	}
	if !r.Deadline.IsZero() {
		v.Deadline = r.Deadline.UTC().Format(TimeFormat)
	}
	if !r.DecidedAt.IsZero() {
		v.DecidedAt = r.DecidedAt.UTC().Format(TimeFormat)
	}
	return v
}

// ListResult is the answer to park.list: the parks of one status the
// caller may decide or cancel, oldest first.
type ListResult struct {
	Parks []View `json:"parks"`
}

// DecideResult is the answer to park.decide and park.cancel.
type DecideResult struct {
	ParkID string `json:"park_id"`
	Status Status `json:"status"`
	// Changed is false when the same decision by the same caller was
	// already recorded (a repeat: its result is sent again).
	Changed bool   `json:"changed"`
	Message string `json:"message"`
}

// The platform's configuration of who decides parks, on review-decision
// (docs/parking.md, "Deciding"): each a JSON list of IAM principal ARN
// patterns of the deployment's own account (shared/reviewer ParseAdmins).
const (
	// EnvDeciders are the park deciders: besides a run's starter, who may
	// approve or reject an ungated step's park and resume any park. Unset:
	// nobody besides the starter.
	EnvDeciders = "TOOLGATE_PARK_DECIDERS"
	// EnvOperators are who may cancel any park, stopping its run, besides
	// the run's starter. Unset: nobody besides the starter.
	EnvOperators = "TOOLGATE_PARK_OPERATORS"
)

// CancelError is the error StopExecution records on a run whose park was
// cancelled (the execution's error; its cause names the park and who
// cancelled it).
const CancelError = "PARK_CANCELLED"
