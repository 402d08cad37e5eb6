package dispatch

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/tool"
)

// The tool's deadline is the earliest of its claim's end (less a tenth of
// the lease, at most the margin), the Lambda deadline less the margin,
// and the step's timeout_seconds from its start; only the step's names
// itself in the timeout message.
func TestToolDeadline(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const generic = "the tool did not finish within its deadline"
	for name, c := range map[string]struct {
		b       deadlineBounds
		want    time.Time
		message string
	}{
		"the lease alone, less the margin": {
			deadlineBounds{Now: now, LeaseUntil: now.Add(60 * time.Second), Margin: 2 * time.Second, Lease: 60 * time.Second},
			now.Add(58 * time.Second), generic,
		},
		"a short lease, less a tenth of it": {
			deadlineBounds{Now: now, LeaseUntil: now.Add(10 * time.Second), Margin: 2 * time.Second, Lease: 10 * time.Second},
			now.Add(9 * time.Second), generic,
		},
		"the Lambda deadline before the lease's end": {
			deadlineBounds{Now: now, LeaseUntil: now.Add(60 * time.Second), Lambda: now.Add(30 * time.Second), Margin: 2 * time.Second, Lease: 60 * time.Second},
			now.Add(28 * time.Second), generic,
		},
		"the Lambda deadline after the lease's end": {
			deadlineBounds{Now: now, LeaseUntil: now.Add(60 * time.Second), Lambda: now.Add(90 * time.Second), Margin: 2 * time.Second, Lease: 60 * time.Second},
			now.Add(58 * time.Second), generic,
		},
		"the step's timeout first": {
			deadlineBounds{Now: now, LeaseUntil: now.Add(60 * time.Second), Lambda: now.Add(30 * time.Second), Margin: 2 * time.Second, Lease: 60 * time.Second, StepSeconds: 5},
			now.Add(5 * time.Second), "the tool did not finish within the step's timeout_seconds, 5 s",
		},
		"the step's timeout after the Lambda deadline": {
			deadlineBounds{Now: now, LeaseUntil: now.Add(60 * time.Second), Lambda: now.Add(30 * time.Second), Margin: 2 * time.Second, Lease: 60 * time.Second, StepSeconds: 40},
			now.Add(28 * time.Second), generic,
		},
	} {
		got, message := toolDeadline(c.b)
		if !got.Equal(c.want) || message != c.message {
			t.Errorf("%s: %s %q, want %s %q", name, got.Sub(now), message, c.want.Sub(now), c.message)
		}
	}
}

// Each way a tool's run ends gets one contract code, and is maybe applied
// when its effect may have happened: always after a panic, an abandoned
// run or the tool's own deadline; for a tool that must not run twice,
// after any failure the tool did not classify.
func TestClassifyEnd(t *testing.T) {
	const timedOut = "the tool did not finish within the step's timeout_seconds, 5 s"
	var typedNil *tool.Error
	type want struct {
		code         tool.Code // "": a success
		message      string    // "": any
		maybeApplied bool
	}
	for name, c := range map[string]struct {
		end          toolEnd
		idempotent   bool
		want         want
		credentialed bool // the call carried a credential
	}{
		"a result":                                   {toolEnd{out: []byte(`{}`)}, false, want{}, false},
		"a panic":                                    {toolEnd{panicked: true}, true, want{tool.Internal, "internal error", true}, false},
		"abandoned at the deadline":                  {toolEnd{abandoned: true, pastDeadline: true}, true, want{tool.Timeout, timedOut, true}, false},
		"a typed code, idempotent":                   {toolEnd{err: tool.Errorf(tool.UpstreamUnavailable, "down")}, true, want{tool.UpstreamUnavailable, "down", false}, false},
		"a typed code, not idempotent":               {toolEnd{err: tool.Errorf(tool.UpstreamUnavailable, "down")}, false, want{tool.UpstreamUnavailable, "down", false}, false},
		"a typed code marked applied":                {toolEnd{err: tool.Errorf(tool.UpstreamUnavailable, "down").Applied()}, true, want{tool.UpstreamUnavailable, "down", true}, false},
		"a wrapped typed code":                       {toolEnd{err: fmt.Errorf("send: %w", tool.Errorf(tool.InputInvalid, "bad"))}, false, want{tool.InputInvalid, "bad", false}, false},
		"an untyped error, idempotent":               {toolEnd{err: errors.New("boom")}, true, want{tool.Internal, "", false}, false},
		"an untyped error, not idempotent":           {toolEnd{err: errors.New("boom")}, false, want{tool.Internal, "", true}, false},
		"a typed nil, idempotent":                    {toolEnd{err: typedNil}, true, want{tool.Internal, "internal error", false}, false},
		"a typed nil, not idempotent":                {toolEnd{err: typedNil}, false, want{tool.Internal, "internal error", true}, false},
		"its own deadline":                           {toolEnd{err: fmt.Errorf("call: %w", context.DeadlineExceeded), pastDeadline: true}, true, want{tool.Timeout, timedOut, true}, false},
		"another deadline, before its own":           {toolEnd{err: context.DeadlineExceeded}, true, want{tool.Timeout, "the tool did not finish within its deadline", true}, false},
		"a typed timeout at its own deadline":        {toolEnd{err: tool.Errorf(tool.Timeout, "slow upstream"), pastDeadline: true}, true, want{tool.Timeout, "slow upstream", false}, false},
		"CALL_PARKED from a tool, idempotent":        {toolEnd{err: tool.Errorf(tool.CallParked, "changed")}, true, want{tool.Internal, "internal error", false}, false},
		"CALL_PARKED from a tool, at most once":      {toolEnd{err: tool.Errorf(tool.CallParked, "changed")}, false, want{tool.Internal, "internal error", true}, false},
		"APPROVAL_EXPIRED from a tool, idempotent":   {toolEnd{err: tool.Errorf(tool.ApprovalExpired, "expired")}, true, want{tool.Internal, "internal error", false}, false},
		"APPROVAL_EXPIRED from a tool, at most once": {toolEnd{err: tool.Errorf(tool.ApprovalExpired, "expired")}, false, want{tool.Internal, "internal error", true}, true},
		"an expired credential refused, at most once": {toolEnd{err: expired("crm refused the toolset scope's credential")}, false,
			want{tool.CallParked, "credentials.expired: crm refused the toolset scope's credential", false}, true},
		"an expired credential refused, marked applied": {toolEnd{err: expired("refused").Applied()}, false,
			want{tool.CallParked, "credentials.expired: refused", false}, true},
		"credentials.expired from a call that carried none": {toolEnd{err: expired("refused")}, false,
			want{tool.Internal, "internal error", true}, false},
		"another parked cause from a call that carried one": {toolEnd{err: tool.Errorf(tool.CallParked, "tool.schema_changed: x")}, true,
			want{tool.Internal, "internal error", false}, true},
	} {
		te := classifyEnd(c.end, c.idempotent, c.credentialed, timedOut)
		switch {
		case c.want.code == "" && te != nil:
			t.Errorf("%s: %v, want a success", name, te)
		case c.want.code == "":
		case te == nil:
			t.Errorf("%s: a success, want %s", name, c.want.code)
		case te.Code != c.want.code || (c.want.message != "" && te.Message != c.want.message) || te.MaybeApplied != c.want.maybeApplied:
			t.Errorf("%s: %s %q maybe applied %v, want %s %q %v", name, te.Code, te.Message, te.MaybeApplied, c.want.code, c.want.message, c.want.maybeApplied)
		}
	}
}

// A result that fails its checks keeps its code, and is maybe applied for
// a tool that must not run twice: it returned success, so its effect
// happened.
func TestClassifyOutput(t *testing.T) {
	for name, c := range map[string]struct {
		err          error
		idempotent   bool
		code         tool.Code
		maybeApplied bool
	}{
		"over the limit, idempotent":      {tool.Errorf(tool.OutputInvalid, "big"), true, tool.OutputInvalid, false},
		"over the limit, at most once":    {tool.Errorf(tool.OutputInvalid, "big"), false, tool.OutputInvalid, true},
		"a schema that does not compile":  {tool.Errorf(tool.Internal, "schema"), true, tool.Internal, false},
		"an untyped error, at most once":  {errors.New("boom"), false, tool.Internal, true},
		"already maybe applied, idempot.": {tool.Errorf(tool.OutputInvalid, "big").Applied(), true, tool.OutputInvalid, true},
	} {
		te := classifyOutput(c.err, c.idempotent)
		if te.Code != c.code || te.MaybeApplied != c.maybeApplied {
			t.Errorf("%s: %s maybe applied %v, want %s %v", name, te.Code, te.MaybeApplied, c.code, c.maybeApplied)
		}
	}
}
