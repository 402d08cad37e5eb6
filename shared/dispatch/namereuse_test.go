package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// Step Functions accepts an execution name again 90 days after the
// execution that had it closed: the later execution has the earlier one's
// ARN, so its run id and keys, and meets the earlier one's call items
// while they last (docs/ledger.md, "Execution names must not be reused").

// oldRun is an execution started 91 days ago: a dispatcher whose clock
// reads then, so that its attempts' entries start then.
func (e *env) oldRun(t *testing.T, name string, run toolcall.Func, ago time.Duration, mod ...func(*Config)) *Dispatcher {
	t.Helper()
	then := time.Now().Add(-ago)
	cfg := Config{Mode: OneTool(name), MemoryMB: 128, Lane: lane.SFN, LedgerSince: testSince, ExternalKeySecret: testSecret}
	for _, m := range mod {
		m(&cfg)
	}
	deps := e.deps(t, run, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	deps.Ledger = e.store.WithClock(func() time.Time { return then }).WithMAC(mustSealKey(t, testMAC))
	d, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// withRunStart is payload with run_started_at, as a compiled tool Task
// sends it ($$.Execution.StartTime: RFC 3339, UTC, milliseconds).
func withRunStart(payload json.RawMessage, at time.Time) json.RawMessage {
	return json.RawMessage(strings.Replace(string(payload), `"attempt":1`, `"attempt":1,"run_started_at":"`+at.UTC().Format("2006-01-02T15:04:05.000Z")+`"`, 1))
}

const ninetyOneDays = 91 * 24 * time.Hour

func TestRecordOfAnEarlierExecutionOfTheSameNameIsRefused(t *testing.T) {
	e := newEnv(t)
	failing := func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		return nil, tool.Errorf(tool.UpstreamUnavailable, "down")
	}
	crash := func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		// The old attempt's effect may have happened: its record is
		// UNKNOWN, which a person reconciles.
		panic("crash")
	}
	send := func(calls *atomic.Int64) toolcall.Func {
		return func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
			calls.Add(1)
			return json.RawMessage(`{"message_id":"m-1"}`), nil
		}
	}
	cases := []struct {
		name, tool string
		old        func(*atomic.Int64) toolcall.Func
		oldInput   string // "" : the new call's
	}{
		{"a completed call is not replayed", "test-echo", echo, ""},
		{"a completed at_most_once call is not replayed", "test-send", send, ""},
		{"a failed call is not run again", "test-echo", func(*atomic.Int64) toolcall.Func { return failing }, ""},
		{"an at_most_once call in doubt is not judged again", "test-send", func(*atomic.Int64) toolcall.Func { return crash }, ""},
		{"another call on the key is not called key reuse", "test-echo", echo, `{"text":"old"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var oldCalls, calls atomic.Int64
			payload := envelopeFor(c.tool, e.ts.ID, "", 3, `{"text":"new"}`)
			run := runIDOf(t, payload)
			oldPayload := payload
			if c.oldInput != "" {
				oldPayload = json.RawMessage(strings.Replace(string(payload), `{"text":"new"}`, c.oldInput, 1))
			}
			// The old execution ran the call 91 days ago (from a definition
			// with or without run_started_at: both leave the same record).
			old := e.oldRun(t, c.tool, c.old(&oldCalls), ninetyOneDays)
			old.Handle(context.Background(), withRunStart(oldPayload, time.Now().Add(-ninetyOneDays-time.Minute)))
			before, err := e.store.Record(context.Background(), run+"/3")
			if err != nil {
				t.Fatal(err)
			}

			var tools = map[string]toolcall.Func{"test-echo": echo(&calls), "test-send": send(&calls)}
			d := e.dispatcher(t, c.tool, tools[c.tool])
			out, err := d.Handle(context.Background(), withRunStart(payload, time.Now().Add(-time.Second)))
			if codeOf(t, err) != string(tool.PermissionDenied) || !strings.Contains(err.Error(), "execution names must not be reused") {
				t.Fatalf("the new execution's call: %s, %v; want TOOL_PERMISSION_DENIED naming the reused execution name", out, err)
			}
			if calls.Load() != 0 {
				t.Fatalf("the tool ran %d times for the new execution", calls.Load())
			}
			after, err := e.store.Record(context.Background(), run+"/3")
			if err != nil {
				t.Fatal(err)
			}
			if after.State != before.State || after.Attempts != before.Attempts || after.Token != before.Token || string(after.Result) != string(before.Result) {
				t.Fatalf("the old record changed: %+v, was %+v", after, before)
			}
			rows, err := e.store.KeyRows(context.Background(), run, "3")
			if err != nil {
				t.Fatal(err)
			}
			last := rows[len(rows)-1]
			var refusals int
			for _, r := range rows {
				if r.Status == ledger.StatusRefused && r.ErrorCode == string(tool.PermissionDenied) {
					refusals++
					if r.Attempt != 0 {
						t.Errorf("the refusal is attempt %d of the old run's call; want 0, no attempt of this run's", r.Attempt)
					}
				}
				if r.Status == ledger.StatusDeduplicated {
					t.Fatalf("the refusal counts as a replay: %+v", rows)
				}
				if r.Status == ledger.StatusUnknown && r.StartedAt.After(time.Now().Add(-time.Hour)) {
					t.Fatalf("the new execution's call left an UNKNOWN row: %+v", rows)
				}
			}
			if refusals != 1 || last.Retryable {
				t.Fatalf("rows %+v: want one REFUSED TOOL_PERMISSION_DENIED row, not retryable", rows)
			}
		})
	}
}

// A record of this very execution is never taken for an earlier one's:
// a Task retry or a redrive keeps $$.Execution.StartTime, and its
// attempts start after it (up to RunStartSkew earlier by a clock that
// runs behind Step Functions'), so they replay or refuse as before.
func TestRecordOfTheSameExecutionIsReplayed(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name string
		// record: how long ago the first attempt started; start: how long
		// ago the execution did (by Step Functions' clock).
		record, start time.Duration
	}{
		{"a retry", time.Minute, 2 * time.Minute},
		{"a redrive days later", 13 * 24 * time.Hour, 14 * 24 * time.Hour},
		{"a dispatcher clock behind Step Functions'", 3 * time.Hour, 3*time.Hour - RunStartSkew + time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int64
			payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hi"}`)
			start := time.Now().Add(-c.start)
			first, err := e.oldRun(t, "test-echo", echo(&calls), c.record).Handle(context.Background(), withRunStart(payload, start))
			if err != nil {
				t.Fatal(err)
			}
			again, err := e.dispatcher(t, "test-echo", echo(&calls)).Handle(context.Background(), withRunStart(payload, start))
			if err != nil || string(again) != string(first) || calls.Load() != 1 {
				t.Fatalf("replay: %s, %v, the tool ran %d times", again, err, calls.Load())
			}
			// Another call on the key is still key reuse.
			other := strings.Replace(string(payload), `{"text":"hi"}`, `{"text":"ho"}`, 1)
			_, err = e.dispatcher(t, "test-echo", echo(&calls)).Handle(context.Background(), withRunStart(json.RawMessage(other), start))
			if codeOf(t, err) != string(tool.InputInvalid) || !strings.Contains(err.Error(), "idempotency key reused") {
				t.Fatalf("key reuse: %v", err)
			}
		})
	}
}

// An envelope without run_started_at (a definition published before it)
// is served as before: the old record is replayed.
func TestEnvelopeWithoutRunStartReplaysAsBefore(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hi"}`)
	first, err := e.oldRun(t, "test-echo", echo(&calls), ninetyOneDays).Handle(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.dispatcher(t, "test-echo", echo(&calls)).Handle(context.Background(), payload)
	if err != nil || string(again) != string(first) || calls.Load() != 1 {
		t.Fatalf("replay: %s, %v, the tool ran %d times", again, err, calls.Load())
	}
}

// A refusal before the claim (here the tool's check; an approval's is
// read alike) replays a completed record of this call, but never an
// earlier execution's.
func TestRefusalBeforeTheClaimNeverReplaysAnEarlierExecutionsRecord(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hi"}`)
	if _, err := e.oldRun(t, "test-echo", echo(&calls), ninetyOneDays).Handle(context.Background(), payload); err != nil {
		t.Fatal(err)
	}
	checked := func(c *Config) {
		c.Check = func(ctx context.Context, call *toolcall.Call) error { return errors.New("the tool changed") }
	}
	d := e.dispatcher(t, "test-echo", echo(&calls), checked)
	if _, err := d.Handle(context.Background(), payload); err != nil {
		t.Fatalf("without run_started_at the record is replayed as before: %v", err)
	}
	_, err := d.Handle(context.Background(), withRunStart(payload, time.Now()))
	if codeOf(t, err) != string(tool.PermissionDenied) || !strings.Contains(err.Error(), "execution names must not be reused") {
		t.Fatalf("the new execution's call: %v", err)
	}
	if calls.Load() != 1 {
		t.Fatalf("the tool ran %d times", calls.Load())
	}
}

// The direct lane's run ids are no execution's: an envelope that names an
// execution start there is refused before anything is read or written.
func TestDirectLaneRefusesRunStart(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls), func(c *Config) { c.Lane = lane.Direct })
	payload := withRunStart(envelopeFor("test-echo", e.ts.ID, "direct/arn:aws:iam::000000000000:user/ann/r1", 1, `{"text":"hi"}`), time.Now())
	e.db.reset()
	_, err := d.Handle(context.Background(), payload)
	if codeOf(t, err) != string(tool.PermissionDenied) || !strings.Contains(err.Error(), "run_started_at") {
		t.Fatalf("direct call with run_started_at: %v", err)
	}
	if e.db.writes() != 0 || calls.Load() != 0 {
		t.Fatalf("%d writes, %d calls", e.db.writes(), calls.Load())
	}
}
