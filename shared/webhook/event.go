package webhook

import (
	"bytes"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/toolgate/toolgate/shared/excerpt"
)

// Type is an event type, "<group>.<name>" (docs/webhooks.md, "Events").
type Type string

// The event types. Subscribers name them, or "<group>.*" (ParsePatterns).
const (
	// RunStarted: a Step Functions execution started (status RUNNING).
	RunStarted Type = "run.started"
	// RunSucceeded: an execution closed with status SUCCEEDED.
	RunSucceeded Type = "run.succeeded"
	// RunFailed: an execution closed with status FAILED.
	RunFailed Type = "run.failed"
	// RunTimedOut: an execution closed with status TIMED_OUT.
	RunTimedOut Type = "run.timed_out"
	// RunAborted: an execution closed with status ABORTED.
	RunAborted Type = "run.aborted"
	// ReviewRequested: a gated call waits for a person's decision.
	ReviewRequested Type = "review.requested"
	// ReviewDecided: a review was approved or rejected.
	ReviewDecided Type = "review.decided"
	// ToolSchemaChanged: a call parked because its tool's schema changed.
	ToolSchemaChanged Type = "tool.schema_changed"
	// CredentialsExpired: a call parked because its credential expired.
	CredentialsExpired Type = "credentials.expired"
	// CallUnknown: an at_most_once call whose outcome is unknown and
	// needs a person.
	CallUnknown Type = "call.unknown"
)

// Types lists every event type, in the order docs/webhooks.md documents them.
var Types = []Type{RunStarted, RunSucceeded, RunFailed, RunTimedOut, RunAborted,
	ReviewRequested, ReviewDecided, ToolSchemaChanged, CredentialsExpired, CallUnknown}

// Known reports whether t is one of Types.
func Known(t Type) bool {
	for _, k := range Types {
		if k == t {
			return true
		}
	}
	return false
}

// runTypes maps a Step Functions execution status (the Status of
// DescribeExecution and of the "Step Functions Execution Status Change"
// event) to its event type.
var runTypes = map[string]Type{
	"RUNNING": RunStarted, "SUCCEEDED": RunSucceeded, "FAILED": RunFailed,
	"TIMED_OUT": RunTimedOut, "ABORTED": RunAborted,
}

// RunType returns the run.* type of an execution status ("RUNNING",
// "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"), and false for any other
// status (PENDING_REDRIVE is not an event).
func RunType(status string) (Type, bool) {
	t, ok := runTypes[status]
	return t, ok
}

// MaxPatterns bounds the patterns of one subscription.
const MaxPatterns = 32

// ParsePatterns parses a subscription's event list, comma-separated, such
// as "run.*,review.requested": each entry, blanks around it trimmed, is a
// Type or "<group>.*" naming at least one Type. Duplicates are dropped;
// order is kept. An empty list, an empty entry, more than MaxPatterns
// entries or an entry naming no type is an error that names the entry.
func ParsePatterns(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New(`events: the list is empty: name types such as "run.*,review.requested"`)
	}
	var out []string
	for i, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if err := checkPattern(p); err != nil {
			return nil, fmt.Errorf("events: entry %d %s: %w", i+1, quote(p), err)
		}
		if !contains(out, p) {
			out = append(out, p)
		}
		if len(out) > MaxPatterns {
			return nil, fmt.Errorf("events: more than %d entries", MaxPatterns)
		}
	}
	return out, nil
}

func checkPattern(p string) error {
	if p == "" {
		return errors.New("empty entry")
	}
	group, wild := strings.CutSuffix(p, ".*")
	if !wild {
		if Known(Type(p)) {
			return nil
		}
		return fmt.Errorf("not an event type; the types are %s", typeList())
	}
	for _, t := range Types {
		if strings.HasPrefix(string(t), group+".") {
			return nil
		}
	}
	return fmt.Errorf(`"<group>.*" names no event type; the groups are run, review, tool, credentials, call`)
}

func typeList() string {
	s := make([]string, len(Types))
	for i, t := range Types {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

// quote quotes an entry for an error message, cut to 40 characters.
func quote(s string) string { return fmt.Sprintf("%q", excerpt.Runes(s, 40, "…")) }

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// Matches reports whether any of patterns (as ParsePatterns returns them)
// names t: the type itself, or "<group>.*" with t in that group.
func Matches(patterns []string, t Type) bool {
	for _, p := range patterns {
		if group, ok := strings.CutSuffix(p, ".*"); ok {
			if strings.HasPrefix(string(t), group+".") {
				return true
			}
		} else if p == string(t) {
			return true
		}
	}
	return false
}

// Event is what is recorded once and delivered to every matching
// subscription.
type Event struct {
	// ID is EventID(Type, source): "evt_" and 26 lower-case base32
	// characters. It is the webhook-id header on every attempt.
	ID string
	// Type is the event type.
	Type Type
	// Timestamp is when the event was produced: UTC, whole seconds.
	Timestamp time.Time
	// Solution is the Solution's name, "" when there is none; a
	// subscription made with --solution gets only its Solution's events.
	Solution string
	// Data is the type's payload (RunData, ReviewRequestedData,
	// ReviewDecidedData or CallData as JSON): ids, digests and statuses.
	Data json.RawMessage
	// Source is what ID derives from (EventID), as NewEvent sets it;
	// never delivered. A call's event (CallType) is recorded with it, so
	// that its reader can check the id (docs/webhooks.md, "Who may record
	// an event"); "" for an event read back of another type.
	Source string
}

// CallTypes are the types of the events of a call, which a tool
// function's dispatcher records (docs/webhooks.md, "Who may record an
// event"): no tool function records any other type.
var CallTypes = []Type{ToolSchemaChanged, CredentialsExpired, CallUnknown}

// CallType reports whether t is one of CallTypes.
func CallType(t Type) bool {
	for _, c := range CallTypes {
		if c == t {
			return true
		}
	}
	return false
}

// CheckCallEvent checks that e is a call's event whose id derives from
// its source: its type is a CallType and its ID is EventID(Type, Source).
// A tool function's role may put any item under the call events' prefix,
// so that an item failing this is not delivered: it could not carry an id
// another producer's event will have (a digest of another type), and
// receivers dedupe on the id. The error names the id and the type, never
// the source or the data.
func CheckCallEvent(e Event) error {
	switch {
	case !CallType(e.Type):
		return fmt.Errorf("event %s: type %.40q is not a call's event type (%s, %s, %s)", e.ID, e.Type, ToolSchemaChanged, CredentialsExpired, CallUnknown)
	case e.Source == "" || EventID(e.Type, e.Source) != e.ID:
		return fmt.Errorf("event %s (%s): its id does not derive from its source", e.ID, e.Type)
	}
	return nil
}

// idEncoding is RFC 4648 base32, lower case, without padding.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// IDPattern is the shape of an event id.
var IDPattern = regexp.MustCompile(`^evt_[a-z2-7]{26}$`)

// EventID derives an event's id from its type and its source, so that the
// same occurrence recorded twice has one id (the outbox's dedupe key):
// "evt_" and the lower-case, unpadded base32 (RFC 4648) of the first 16
// bytes of SHA-256(type + "\n" + source). The source names the occurrence:
// an execution ARN + "\n" + its status, a review id, a PARKED row's key,
// a call's ledger key.
func EventID(t Type, source string) string {
	sum := sha256.Sum256([]byte(string(t) + "\n" + source))
	return "evt_" + idEncoding.EncodeToString(sum[:16])
}

// NewEvent builds an event of type t from source (EventID) and its payload,
// stamped at now (UTC, whole seconds), and validates it (Validate).
func NewEvent(t Type, source, solution string, data any, now time.Time) (Event, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return Event{}, fmt.Errorf("event %s: encode data: %w", t, err)
	}
	e := Event{ID: EventID(t, source), Type: t, Timestamp: now.UTC().Truncate(time.Second), Solution: solution, Data: b, Source: source}
	return e, Validate(e)
}

// envelope is the POSTed body.
type envelope struct {
	Type      Type            `json:"type"`
	Timestamp string          `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// Body returns the JSON POSTed for e: {"type": ..., "timestamp": RFC 3339
// UTC, "data": {...}}, the envelope the Standard Webhooks specification
// recommends ("Payload structure"); the id travels in the webhook-id
// header. Data is compacted. It fails when Data is not one JSON object.
func Body(e Event) ([]byte, error) {
	d := bytes.TrimSpace(e.Data)
	if len(d) == 0 || d[0] != '{' || !json.Valid(d) {
		return nil, fmt.Errorf("event %s: data is not a JSON object", e.ID)
	}
	return json.Marshal(envelope{Type: e.Type, Timestamp: e.Timestamp.UTC().Format(time.RFC3339), Data: d})
}
