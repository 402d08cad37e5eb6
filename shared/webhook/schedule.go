package webhook

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Schedule is the retry schedule of one delivery: Schedule[i] is the
// visibility delay after the (i+1)-th failed attempt, applied with SQS
// ChangeMessageVisibility, so a message is received again after it.
// Attempts is len+1; after the last attempt SQS moves the message to the
// dead-letter queue (docs/webhooks.md, "Retries").
type Schedule []time.Duration

// DefaultSchedule is seconds, then minutes, then hours, as most webhook
// senders retry: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, eight attempts
// over 27 h 35 min 5 s.
var DefaultSchedule = Schedule{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// Bounds of a Schedule. MaxDelay is SQS's maximum visibility timeout
// (12 hours, ChangeMessageVisibility); delays are whole seconds, as that
// call takes them.
const (
	MinDelay       = time.Second
	MaxDelay       = 12 * time.Hour
	MaxRetryDelays = 20
)

// ReceiveHeadroom is what a delay set on a received message leaves of
// SQS's 12 hours: SQS refuses a visibility change that would end more
// than 12 hours after the ReceiveMessage that returned the message (SQS
// API Reference, "ChangeMessageVisibility"), and by the time an attempt
// sets its delay the message was received up to a function's timeout
// (at most 15 minutes, AWS Lambda quotas) and the event source mapping's
// hand-over ago. 16 minutes covers both; Visibility applies it.
const ReceiveHeadroom = 16 * time.Minute

// Visibility is the visibility timeout that sets delay d on a message
// received within ReceiveHeadroom: d, at most MaxDelay less
// ReceiveHeadroom (11 h 44 min), so that SQS accepts it.
func Visibility(d time.Duration) time.Duration {
	return min(d, MaxDelay-ReceiveHeadroom)
}

// ParseSchedule parses a schedule written as Go durations separated by
// commas, such as "5s,5m,30m,2h" (blanks around entries are trimmed): 1 to
// MaxRetryDelays entries, each whole seconds from MinDelay to MaxDelay. The
// error names the entry by position and text.
func ParseSchedule(s string) (Schedule, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New(`schedule: empty; write delays such as "5s,5m,30m,2h"`)
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxRetryDelays {
		return nil, fmt.Errorf("schedule: %d entries, at most %d", len(parts), MaxRetryDelays)
	}
	out := make(Schedule, 0, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		d, err := time.ParseDuration(p)
		switch {
		case err != nil:
			return nil, fmt.Errorf("schedule: entry %d %s: not a duration such as 30s, 5m or 2h", i+1, quote(p))
		case d < MinDelay || d > MaxDelay:
			return nil, fmt.Errorf("schedule: entry %d %s: out of range %s to %s (SQS visibility timeout)", i+1, quote(p), MinDelay, MaxDelay)
		case d%time.Second != 0:
			return nil, fmt.Errorf("schedule: entry %d %s: not whole seconds (SQS visibility timeout)", i+1, quote(p))
		}
		out = append(out, d)
	}
	return out, nil
}

// String writes s as ParseSchedule reads it.
func (s Schedule) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = d.String()
	}
	return strings.Join(parts, ",")
}

// Attempts is how many attempts a delivery gets: len(s)+1, the deliveries
// queue's maxReceiveCount.
func (s Schedule) Attempts() int { return len(s) + 1 }

// Delay returns the visibility delay after the receiveCount-th failed
// attempt (SQS ApproximateReceiveCount, from 1), and false after the last
// attempt: leave the message alone, SQS moves it to the dead-letter queue.
// A receiveCount below 1 counts as 1.
func (s Schedule) Delay(receiveCount int) (time.Duration, bool) {
	n := max(receiveCount, 1)
	if n > len(s) {
		return 0, false
	}
	return s[n-1], true
}

// Total is the sum of the delays: the least time from the first attempt to
// the dead-letter queue. The deliveries queue keeps messages longer.
func (s Schedule) Total() time.Duration {
	var t time.Duration
	for _, d := range s {
		t += d
	}
	return t
}

// Outcome is what one attempt comes to.
type Outcome string

// The outcomes.
const (
	// Delivered: the receiver answered 2xx.
	Delivered Outcome = "delivered"
	// Retry: anything else; the attempt is repeated after Schedule.Delay.
	Retry Outcome = "retry"
	// Gone: the receiver answered 410 Gone; the subscription is disabled.
	Gone Outcome = "gone"
)

// Classify maps one attempt's HTTP status (0 when there is no response)
// and error to its Outcome: an error is Retry; 2xx Delivered; 410 Gone;
// any other status (1xx, 3xx since no redirect is followed, 4xx, 5xx)
// Retry.
func Classify(status int, err error) Outcome {
	switch {
	case err != nil:
		return Retry
	case status >= 200 && status <= 299:
		return Delivered
	case status == 410:
		return Gone
	}
	return Retry
}
