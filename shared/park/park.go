package park

import (
	"crypto/sha256"
	"encoding/base32"
	"regexp"
)

// Cause is why a call parked: the webhook event type a subscriber gets
// for it (docs/webhooks.md).
type Cause string

// The causes a call parks for.
const (
	// SchemaChanged: an MCP tool's definition changed on its server since
	// the toolset pinned it (shared/mcptool, Check).
	SchemaChanged Cause = "tool.schema_changed"
	// CredentialsExpired: the call's credential expired, or its server
	// refused it as an invalid token (RFC 6750 §3.1).
	CredentialsExpired Cause = "credentials.expired"
)

// Status is a park's state (docs/parking.md, "States").
type Status string

// The statuses of a park: PARKED until a person decides, the run's park
// Task times out, or the run is cancelled.
const (
	StatusParked    Status = "PARKED"
	StatusApproved  Status = "APPROVED"
	StatusRejected  Status = "REJECTED"
	StatusResumed   Status = "RESUMED"
	StatusCancelled Status = "CANCELLED"
	StatusTimedOut  Status = "TIMED_OUT"
)

// Decision is what a person decided, as the park Task's result carries it.
type Decision string

// The decisions the park Task's result carries: approve continues the call
// against the server's current definition, resume sends it again after
// its credential was set, reject ends the step with TOOL_PERMISSION_DENIED.
// Cancelling stops the run and sends no result.
const (
	Approve Decision = "approve"
	Resume  Decision = "resume"
	Reject  Decision = "reject"
)

// MaxParks is how many times one call (one idempotency key) may park: the
// park route refuses the next park with ErrorLimit, and the compiled state
// machine ends the step as rejected (docs/parking.md, "The bound").
const MaxParks = 5

// ErrorLimit is the Lambda error type of a park refused by MaxParks, which
// the park Task's Catch names.
const ErrorLimit = "PARK_LIMIT"

// DefaultTimeoutSeconds is policy.park_timeout_seconds when a Solution
// sets none: 7 days. MaxTimeoutSeconds is its bound, 365 days, Step
// Functions' longest Task timeout and Standard execution (AWS Step
// Functions quotas, "Maximum execution time").
const (
	DefaultTimeoutSeconds = 7 * 24 * 60 * 60
	MaxTimeoutSeconds     = 365 * 24 * 60 * 60
)

// idEncoding is RFC 4648 base32, lower case, without padding.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// IDPattern is the shape of a park id.
var IDPattern = regexp.MustCompile(`^pk_[a-z2-7]{26}$`)

// ID is the id of the park the PARKED row of partition key rowPK and sort
// key rowSK recorded: "pk_" and the lower-case, unpadded base32 (RFC 4648)
// of the first 16 bytes of SHA-256("park\n" + rowPK + "\n" + rowSK). One
// row is one park, so a park Task retried for it records it once.
func ID(rowPK, rowSK string) string {
	sum := sha256.Sum256([]byte("park\n" + rowPK + "\n" + rowSK))
	return "pk_" + idEncoding.EncodeToString(sum[:16])
}

// Request is the park Task's payload's "park" member, which the compiled
// state machine builds and review-request's park route reads
// (docs/parking.md, "The park Task"); the payload's other member is
// "task_token", the Task's token.
type Request struct {
	// RunID is the run's id ($.meta.run_id): its execution ARN.
	RunID string `json:"run_id"`
	// Step is the parked tool step's id; Seq the call's seq (tool.Seq's
	// form), IdempotencyKey its key "<run_id>/<seq>", Tool the tool and
	// ToolsetID the run's pinned toolset.
	Step           string `json:"step"`
	Seq            string `json:"seq"`
	IdempotencyKey string `json:"idempotency_key"`
	Tool           string `json:"tool"`
	ToolsetID      string `json:"toolset_id"`
	// RunStartedAt is $$.Execution.StartTime.
	RunStartedAt string `json:"run_started_at"`
	// TimeoutSeconds is the park Task's timeout (policy.park_timeout_seconds).
	TimeoutSeconds int `json:"timeout_seconds"`
	// Gated is whether the step has a review: its park is decided by its
	// reviewers, never by the run's starter.
	Gated bool `json:"gated"`
}

// Result is what review-decision sends to a park Task's token
// (SendTaskSuccess's output), which the compiled Choice routes on.
type Result struct {
	ParkID   string   `json:"park_id"`
	Decision Decision `json:"decision"`
	// Reason is a rejection's reason; nil for approve and resume.
	Reason *string `json:"reason"`
}
