package park

import "time"

// TimeFormat is how a park's times are written: RFC 3339, UTC, with
// milliseconds (as reviews' are), so that they sort as strings.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Park is one parked call as its item holds it (docs/parking.md,
// "Recording a park"): what parked it, read from its PARKED ledger row;
// the park Task that waits for a decision; and the decision.
type Park struct {
	// ID is ID(RowPK, RowSK) of its PARKED row.
	ID string
	// RunID is the run's execution ARN; Step, Seq, IdempotencyKey, Tool
	// and ToolsetID name the call as the park Task's Request does.
	RunID, Step, Seq, IdempotencyKey, Tool, ToolsetID string
	// Cause is why the call parked.
	Cause Cause
	// Gated is whether the step has a review (Request.Gated).
	Gated bool
	// PinnedDigest and CurrentDigest are sha256:<hex> of the pinned and
	// the server's current tool definition, and ChangedPointers the JSON
	// Pointers (RFC 6901) into it that differ, AdditivePointers those of
	// them whose change is additive (the others are breaking;
	// docs/parking.md, "Classifying a change"): SchemaChanged only.
	PinnedDigest, CurrentDigest string
	ChangedPointers             []string
	AdditivePointers            []string
	// Target and Scope name the credential that expired, as the vault
	// names them, never a secret: CredentialsExpired only.
	Target, Scope string
	// RowSK is the PARKED row's sort key; its partition key is the run's
	// (RUN#<run_id>).
	RowSK string
	// TaskToken is the token of the park Task that waits: the latest one
	// recorded, a retried Task's replacing its predecessor's while the
	// park is PARKED.
	TaskToken string
	Status    Status
	// CreatedAt is when the park was first recorded (UTC, whole ms), and
	// Deadline when its park Task times out: CreatedAt and the Task's
	// TimeoutSeconds, in whole seconds.
	CreatedAt, Deadline time.Time
	// DecidedBy, DecidedAt and Reason are the decision's: who approved,
	// rejected, resumed or cancelled, when, and a rejection's reason.
	DecidedBy string
	DecidedAt time.Time
	Reason    string
}

// ScopeKey is the key (table.ParkScopeKey) p carries while it waits for a
// credential: "<target>#<scope>"; "" for a park of another
// cause or one without a target.
func (p *Park) ScopeKey() string {
	if p.Cause != CredentialsExpired || p.Target == "" {
		return ""
	}
	return p.Target + "#" + p.Scope
}

// Decided reports whether a status ends a park: every status but PARKED.
func (s Status) Decided() bool { return s != StatusParked }
