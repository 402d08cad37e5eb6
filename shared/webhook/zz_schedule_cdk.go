// Package webhook is what toolgate's outgoing webhooks are: event types,
// signing, the retry schedule and endpoint rules.
//
// For the CDK branch; the rules branch's package replaces this file at
// merge. It holds only the retry schedule, which the CDK app checks its
// configuration with and sizes the deliveries queue from.
package webhook

import (
	"fmt"
	"strings"
	"time"
)

// Schedule is the per-attempt visibility delays of one delivery: after
// the n-th failed attempt the message becomes visible again after s[n-1].
type Schedule []time.Duration

// DefaultSchedule is seconds, then minutes, then hours, about 27.5 h in
// all (the common schedule of webhook senders).
var DefaultSchedule = Schedule{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// Bounds of a schedule: at most MaxScheduleEntries delays, each
// MinDelay..MaxDelay (SQS ChangeMessageVisibility takes 0 to 43,200 s).
const (
	MaxScheduleEntries = 20
	MinDelay           = time.Second
	MaxDelay           = 12 * time.Hour
)

// ParseSchedule reads "5s,5m,30m,2h" (Go durations, comma-separated):
// 1..MaxScheduleEntries entries, each MinDelay..MaxDelay; the error names
// the bad entry.
func ParseSchedule(s string) (Schedule, error) {
	parts := strings.Split(s, ",")
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("webhook schedule: empty: want 1 to %d delays such as 5s,5m,30m,2h", MaxScheduleEntries)
	}
	if len(parts) > MaxScheduleEntries {
		return nil, fmt.Errorf("webhook schedule: %d delays, over %d", len(parts), MaxScheduleEntries)
	}
	out := make(Schedule, 0, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		d, err := time.ParseDuration(p)
		if err != nil {
			return nil, fmt.Errorf("webhook schedule: entry %d %q: not a duration such as 30s, 5m or 2h", i+1, p)
		}
		if d < MinDelay || d > MaxDelay {
			return nil, fmt.Errorf("webhook schedule: entry %d %q: want %s..%s (SQS ChangeMessageVisibility's maximum is 12 h)", i+1, p, MinDelay, MaxDelay)
		}
		out = append(out, d)
	}
	return out, nil
}

// Attempts is the number of attempts, len(s)+1: the deliveries queue's
// maxReceiveCount.
func (s Schedule) Attempts() int { return len(s) + 1 }

// Total is the sum of the delays.
func (s Schedule) Total() time.Duration {
	var t time.Duration
	for _, d := range s {
		t += d
	}
	return t
}
