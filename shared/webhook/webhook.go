// Package webhook is what a webhook is, without an AWS client: its event
// types, the event recorded once and delivered to every matching
// subscription, and one delivery attempt (docs/webhooks.md).
package webhook

// Minimal types for the store; the rules package's full file replaces this one.

import (
	"encoding/json"
	"time"
)

// Type is an event type: "run.started", "review.requested", ...
type Type string

// Event is what is recorded once and delivered to every matching
// subscription.
type Event struct {
	// ID is "evt_" and 26 lower-case base32 characters: the dedupe key.
	ID   string
	Type Type
	// Timestamp is UTC, second precision when produced.
	Timestamp time.Time
	// Solution is the Solution's name, "" when none.
	Solution string
	// Data is the type's payload: ids, digests and statuses only.
	Data json.RawMessage
}

// Outcome is the outcome of one attempt: "delivered", "retry" or "gone".
type Outcome string

// Attempt is one delivery attempt: never a body or a URL.
type Attempt struct {
	Status     int
	Latency    time.Duration
	Outcome    Outcome
	ErrorClass string
}
