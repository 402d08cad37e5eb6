package webhook

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/toolgate/toolgate/shared/schema"
)

// RunData is the payload of the run.* events, from Step Functions'
// "Execution Status Change" event as the EventBridge rule's input
// transformer passes it (never the execution's input, output or cause).
type RunData struct {
	// ExecutionARN is the execution's ARN.
	ExecutionARN string `json:"execution_arn"`
	// StateMachineARN is its state machine's ARN.
	StateMachineARN string `json:"state_machine_arn"`
	// Name is the execution's name (the run id).
	Name string `json:"name"`
	// Status is RUNNING, SUCCEEDED, FAILED, TIMED_OUT or ABORTED, as the type says.
	Status string `json:"status"`
	// StartDate is when the execution started, RFC 3339 UTC.
	StartDate string `json:"start_date"`
	// StopDate is when it closed, RFC 3339 UTC; absent for run.started.
	StopDate string `json:"stop_date,omitempty"`
}

// ReviewRequestedData is the payload of review.requested: what a person
// needs to find and decide the review, never the call's payload.
type ReviewRequestedData struct {
	// ReviewID is the review's id.
	ReviewID string `json:"review_id"`
	// Solution is the Solution's name.
	Solution string `json:"solution"`
	// Version is the Solution's published version.
	Version int `json:"version"`
	// Run is the run id (the execution's name).
	Run string `json:"run"`
	// Step is the step id whose call waits.
	Step string `json:"step"`
	// Tool is the tool the step calls; "" for a review that shows values
	// (docs/reviews.md, "Kinds of review").
	Tool string `json:"tool"`
	// ExpiresAt is when the review expires, RFC 3339 UTC.
	ExpiresAt string `json:"expires_at"`
	// DecideCommand is the CLI command that decides it.
	DecideCommand string `json:"decide_command"`
}

// ReviewDecidedData is the payload of review.decided.
type ReviewDecidedData struct {
	// ReviewID is the review's id.
	ReviewID string `json:"review_id"`
	// Solution is the Solution's name.
	Solution string `json:"solution"`
	// Run is the run id.
	Run string `json:"run"`
	// Step is the step id.
	Step string `json:"step"`
	// Tool is the tool the step calls; "" for a review that shows values
	// (docs/reviews.md, "Kinds of review").
	Tool string `json:"tool"`
	// Decision is "approved" or "rejected".
	Decision string `json:"decision"`
	// DecidedAt is when it was decided, RFC 3339 UTC.
	DecidedAt string `json:"decided_at"`
}

// CallData is the payload of tool.schema_changed, credentials.expired and
// call.unknown: which call needs a person, and why (the dispatcher builds
// it, shared/dispatch; docs/webhooks.md).
type CallData struct {
	// Run is the run id: the execution's name.
	Run string `json:"run"`
	// Key is the call's idempotency key, "<run_id>/<seq>" (its ledger
	// record).
	Key string `json:"key"`
	// Tool is the tool called.
	Tool string `json:"tool"`
	// Cause is the cause code: the event's type for a parked call
	// (tool.schema_changed, credentials.expired), the tool contract's
	// error code for call.unknown.
	Cause string `json:"cause"`
	// Detail names what the call waits on, never a value: "MCP tool
	// <server>.<tool>", "target <name> of toolset <toolset>" or "step
	// <id>"; optional.
	Detail string `json:"detail,omitempty"`
	// ParkID is the park a parked call waits in (shared/park ID), and
	// DecideCommand the commands that decide it; both set by
	// review-request's park route for a run whose state machine parks
	// calls (docs/parking.md), absent otherwise and on call.unknown.
	ParkID        string `json:"park_id,omitempty"`
	DecideCommand string `json:"decide_command,omitempty"`
}

// MaxString bounds every string of a payload, in bytes: 2 KiB.
const MaxString = 2048

// Schemas holds the JSON Schema of each type's payload, schemas/<type>.json,
// the documents docs/webhooks.md shows.
//
//go:embed schemas/*.json
var Schemas embed.FS

var compiled sync.Map // Type -> *schema.Schema

// SchemaOf returns the JSON Schema document of t's payload.
func SchemaOf(t Type) ([]byte, error) {
	if !Known(t) {
		return nil, fmt.Errorf("unknown event type %s", quote(string(t)))
	}
	return Schemas.ReadFile("schemas/" + string(t) + ".json")
}

func schemaOf(t Type) (*schema.Schema, error) {
	if s, ok := compiled.Load(t); ok {
		return s.(*schema.Schema), nil
	}
	doc, err := SchemaOf(t)
	if err != nil {
		return nil, err
	}
	s, err := schema.CompileUncached(doc)
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", t, err)
	}
	compiled.Store(t, s)
	return s, nil
}

// Validate checks an event: a known type, an id of IDPattern, a timestamp,
// Data a JSON object valid against the type's schema (Schemas), and no
// string in Data longer than MaxString bytes. Its error names the event's
// type and the JSON Pointer of each problem, never a value of the payload
// (schema.Problem.Redacted).
func Validate(e Event) error {
	if !Known(e.Type) {
		return fmt.Errorf("event: unknown type %s", quote(string(e.Type)))
	}
	if !IDPattern.MatchString(e.ID) {
		return fmt.Errorf("event %s: id is not \"evt_\" and 26 base32 characters", e.Type)
	}
	if e.Timestamp.IsZero() {
		return fmt.Errorf("event %s %s: no timestamp", e.Type, e.ID)
	}
	dec := json.NewDecoder(bytes.NewReader(e.Data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return fmt.Errorf("event %s %s: data is not one JSON value", e.Type, e.ID)
	}
	s, err := schemaOf(e.Type)
	if err != nil {
		return err
	}
	if err := s.Validate(v); err != nil {
		lines := schema.RedactedLines(schema.Problems(err, nil), "data", 5)
		return fmt.Errorf("event %s %s: %w", e.Type, e.ID, errors.New(strings.Join(lines, "; ")))
	}
	if ptr, long := longString(v, ""); long {
		return fmt.Errorf("event %s %s: data%s is longer than %d bytes", e.Type, e.ID, ptr, MaxString)
	}
	return nil
}

// longString reports the JSON Pointer of the first string (a value or a
// member name) longer than MaxString in v. Validate calls it after the
// schema, which closes every object, so the pointer's names are the
// schema's.
func longString(v any, at string) (string, bool) {
	switch x := v.(type) {
	case string:
		return at, len(x) > MaxString
	case map[string]any:
		for k, m := range x {
			if len(k) > MaxString {
				return at, true
			}
			p := at + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
			if r, long := longString(m, p); long {
				return r, true
			}
		}
	case []any:
		for i, m := range x {
			if r, long := longString(m, fmt.Sprintf("%s/%d", at, i)); long {
				return r, true
			}
		}
	}
	return "", false
}
