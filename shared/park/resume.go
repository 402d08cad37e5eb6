package park

import "fmt"

// State is a park as a tool function's dispatcher reads it to send its
// call again (docs/parking.md, "The dispatcher"): the park item's status,
// the call it parked and, for an approved definition change, the digest
// of the definition approved. Never its task token.
type State struct {
	ID     string
	Status Status
	// RunID, IdempotencyKey and Tool name the call that parked.
	RunID, IdempotencyKey, Tool string
	// CurrentDigest is, for cause tool.schema_changed, the digest of the
	// server's definition when the call parked: what an approval approves;
	// PinnedDigest the pinned definition's.
	CurrentDigest, PinnedDigest string
	// DecidedBy is who decided; "" while PARKED.
	DecidedBy string
}

// Use is a call sent again under a park: its envelope's park_id, run id,
// idempotency key and tool.
type Use struct {
	ParkID, RunID, IdempotencyKey, Tool string
}

// Resumption is CheckResume's decision: whether the call may go on and,
// for an approved definition change, the digest of the definition it may
// be sent under; Reason says why not.
type Resumption struct {
	Allowed bool
	// ApprovedDigest is the approved definition's digest (State's
	// CurrentDigest) when the park was APPROVED; "" for RESUMED.
	ApprovedDigest string
	Reason         string
}

// CheckResume decides whether call u may be sent under park s: only when
// s is u's own park (the same id, run, idempotency key and tool) and a
// person approved it (APPROVED: sent against the definition they
// approved) or resumed it (RESUMED: sent again after its credential was
// set). Any other status, or another call's park, is refused with the
// reason; nothing is allowed by default.
func CheckResume(s State, u Use) Resumption {
	switch {
	case s.ID != u.ParkID:
		return Resumption{Reason: fmt.Sprintf("park %s is not the park the call names", s.ID)}
	case s.RunID != u.RunID || s.IdempotencyKey != u.IdempotencyKey || s.Tool != u.Tool:
		return Resumption{Reason: fmt.Sprintf("park %s parked another call (run, idempotency key or tool differ)", s.ID)}
	case s.Status == StatusApproved:
		return Resumption{Allowed: true, ApprovedDigest: s.CurrentDigest}
	case s.Status == StatusResumed:
		return Resumption{Allowed: true}
	case s.Status == StatusParked:
		return Resumption{Reason: fmt.Sprintf("park %s is not decided yet", s.ID)}
	}
	return Resumption{Reason: fmt.Sprintf("park %s is %s: only an approved or resumed park sends its call again", s.ID, s.Status)}
}
