package inboundapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/toolgate/toolgate/shared/inbound"
)

// Origins of an inbound event: a source's delivery or a schedule's
// firing (the first part of its item's key, table.InboundEventPK).
const (
	OriginSource   = "source"
	OriginSchedule = "schedule"
)

// Message is a message of the inbound queue: exactly one of a source's
// event ({"source", "event_id"}: webhook-receiver and its relay) and a
// schedule's firing ({"schedule", "scheduled_time"}: EventBridge
// Scheduler's target input, or the local stack's ticker). It carries no
// body: inbound-start reads the event item.
type Message struct {
	Source  string `json:"source,omitempty"`
	EventID string `json:"event_id,omitempty"`
	// Schedule and ScheduledTime name a firing: the schedule, and the time
	// it was due, RFC 3339 UTC in whole seconds
	// ("2026-12-03T18:00:00Z"), as EventBridge Scheduler's
	// <aws.scheduler.scheduled-time> writes it.
	Schedule      string `json:"schedule,omitempty"`
	ScheduledTime string `json:"scheduled_time,omitempty"`
}

// ScheduledTimeLayout is a firing's scheduled time: RFC 3339, UTC, whole
// seconds.
const ScheduledTimeLayout = "2006-01-02T15:04:05Z"

// MaxMessageBytes bounds a message DecodeMessage reads: names of 48
// characters and an event id of inbound.MaxEventIDBytes, escaped, fit in
// it many times over.
const MaxMessageBytes = 4096

// SourceMessage is the message of source's event id.
func SourceMessage(source, eventID string) Message { return Message{Source: source, EventID: eventID} }

// FiringMessage is the message of schedule's firing due at t (whole
// seconds, UTC).
func FiringMessage(schedule string, t time.Time) Message {
	return Message{Schedule: schedule, ScheduledTime: t.UTC().Format(ScheduledTimeLayout)}
}

// Origin is the message's origin (OriginSource or OriginSchedule), its
// source's or schedule's name, and its event id (the event id, or the
// scheduled time): the key of its inbound event item.
func (m Message) Origin() (origin, name, id string) {
	if m.Schedule != "" {
		return OriginSchedule, m.Schedule, m.ScheduledTime
	}
	return OriginSource, m.Source, m.EventID
}

// Encode is the message's JSON, as DecodeMessage reads it.
func (m Message) Encode() []byte {
	b, _ := json.Marshal(m) // four strings: Marshal cannot fail
	return b
}

// ErrMessage is the error of every message DecodeMessage refuses.
var ErrMessage = errors.New("inbound message")

// DecodeMessage reads a message of the inbound queue strictly: one JSON
// object of at most MaxMessageBytes, whose members are string members of
// exactly one shape, each once; no other member, nothing after it. The
// source or schedule name must keep inbound.CheckName; an event id 1 to
// inbound.MaxEventIDBytes printable ASCII characters (as inbound.Verify
// gives it); a scheduled time ScheduledTimeLayout, canonical (so that one
// firing has one key). The error wraps ErrMessage and names the member
// and the rule, never a value.
func DecodeMessage(b []byte) (Message, error) {
	fail := func(format string, args ...any) (Message, error) {
		return Message{}, fmt.Errorf("%w: "+format, append([]any{ErrMessage}, args...)...)
	}
	if len(b) > MaxMessageBytes {
		return fail("more than %d bytes", MaxMessageBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fail("not a JSON object")
	}
	var m Message
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fail("not a JSON object")
		}
		key, _ := t.(string)
		var field *string
		switch key {
		case "source":
			field = &m.Source
		case "event_id":
			field = &m.EventID
		case "schedule":
			field = &m.Schedule
		case "scheduled_time":
			field = &m.ScheduledTime
		default:
			return fail("unknown member (want source and event_id, or schedule and scheduled_time)")
		}
		if seen[key] {
			return fail("%s given twice", key)
		}
		seen[key] = true
		t, err = dec.Token()
		v, ok := t.(string)
		if err != nil || !ok {
			return fail("%s is not a string", key)
		}
		*field = v
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return fail("not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail("data after the object")
	}
	return m, m.Check()
}

// Check reports whether m is one of the two shapes with valid members
// (DecodeMessage's rules); the error wraps ErrMessage.
func (m Message) Check() error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrMessage}, args...)...)
	}
	sourceShape := m.Source != "" || m.EventID != ""
	scheduleShape := m.Schedule != "" || m.ScheduledTime != ""
	switch {
	case sourceShape && scheduleShape:
		return fail("source and schedule members in one message")
	case sourceShape:
		if m.Source == "" || m.EventID == "" {
			return fail("a source's message needs both source and event_id")
		}
		if err := inbound.CheckName(m.Source); err != nil {
			return fail("source: %v", err)
		}
		if !printable(m.EventID, inbound.MaxEventIDBytes) {
			return fail("event_id must be 1 to %d printable ASCII characters", inbound.MaxEventIDBytes)
		}
	case scheduleShape:
		if m.Schedule == "" || m.ScheduledTime == "" {
			return fail("a firing's message needs both schedule and scheduled_time")
		}
		if err := inbound.CheckName(m.Schedule); err != nil {
			return fail("schedule: %v", err)
		}
		t, err := time.Parse(ScheduledTimeLayout, m.ScheduledTime)
		if err != nil || t.Format(ScheduledTimeLayout) != m.ScheduledTime {
			return fail("scheduled_time must be RFC 3339 UTC in whole seconds (2026-12-03T18:00:00Z)")
		}
	default:
		return fail("empty (want source and event_id, or schedule and scheduled_time)")
	}
	return nil
}

// printable reports whether s is 1 to max characters of 0x21-0x7E.
func printable(s string, max int) bool {
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
