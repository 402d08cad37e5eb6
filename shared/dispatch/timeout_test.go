package dispatch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// withTimeout adds the envelope member timeout_seconds (a tool step's
// timeout_seconds) to an envelope.
func withTimeout(t *testing.T, payload json.RawMessage, seconds int) json.RawMessage {
	return withMembers(t, payload, map[string]any{"timeout_seconds": seconds})
}

// A step's timeout_seconds ends the tool's work well before the function's
// deadline, with TOOL_TIMEOUT naming the step's timeout; an at_most_once
// tool that gave up at that deadline may have acted, so its record is
// UNKNOWN and its row says so, and the same key is never run again.
func TestStepTimeoutEndsTheToolBeforeTheFunctionsDeadline(t *testing.T) {
	e := newEnv(t)
	var sends int
	d := e.dispatcher(t, "test-send", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		sends++
		<-ctx.Done() // works until the deadline it is given
		return nil, ctx.Err()
	})
	// The function's deadline is the real clock's: 60 s away.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	payload := withTimeout(t, envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`), 1)
	start := time.Now()
	_, err := d.Handle(ctx, payload)
	took := time.Since(start)
	if codeOf(t, err) != string(tool.Timeout) || !strings.Contains(err.Error(), "timeout_seconds, 1 s") {
		t.Fatalf("Handle: %v, want TOOL_TIMEOUT naming the step's timeout_seconds", err)
	}
	if took > 10*time.Second {
		t.Errorf("Handle returned after %s: the step's 1 s did not bound the tool", took.Round(time.Millisecond))
	}
	rec, rerr := e.store.Record(context.Background(), keyOf(t, payload))
	if rerr != nil || rec.State != ledger.StateUnknown {
		t.Fatalf("record %+v %v, want UNKNOWN: the e-mail may have gone", rec, rerr)
	}
	if _, err := d.Handle(context.Background(), payload); codeOf(t, err) != string(tool.RetryRequiresIdempotency) || sends != 1 {
		t.Errorf("the same key again: %v after %d sends, want TOOL_RETRY_REQUIRES_IDEMPOTENCY and one send", err, sends)
	}
}

// A tool that ignores its context is not waited for past the step's
// timeout and the grace either.
func TestStepTimeoutBoundsAToolThatIgnoresItsContext(t *testing.T) {
	e := newEnv(t)
	d := e.dispatcher(t, "test-echo", ignoresContext(t))
	_, err := d.Handle(context.Background(), withTimeout(t, envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`), 1))
	if codeOf(t, err) != string(tool.Timeout) || !strings.Contains(err.Error(), "timeout_seconds, 1 s") {
		t.Fatalf("Handle: %v, want TOOL_TIMEOUT naming the step's timeout_seconds", err)
	}
}

// The envelope's timeout_seconds is 1..900 when present.
func TestEnvelopeTimeoutOutOfRangeIsRefused(t *testing.T) {
	e := newEnv(t)
	var calls int
	d := e.dispatcher(t, "test-echo", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		calls++
		return json.RawMessage(`{"text":"x"}`), nil
	})
	for _, n := range []int{-1, 901} {
		if _, err := d.Handle(context.Background(), withTimeout(t, envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`), n)); codeOf(t, err) != string(tool.InputInvalid) || !strings.Contains(err.Error(), "timeout_seconds") {
			t.Errorf("timeout_seconds %d: %v, want TOOL_INPUT_INVALID naming it", n, err)
		}
	}
	if calls != 0 {
		t.Errorf("the tool ran %d times", calls)
	}
}
