package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/externalkey"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// Every code reaches the caller as exactly that code, whether the tool
// raised it, the dispatcher decided it, or something foreign happened.
func TestErrorTable(t *testing.T) {
	e := newEnv(t)
	raise := func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		var in struct{ Fail string }
		json.Unmarshal(c.Input, &in)
		switch in.Fail {
		case "panic":
			panic("kaboom")
		case "foreign":
			return nil, errBoom
		case "deadline":
			<-ctx.Done()
			return nil, ctx.Err()
		case "badoutput":
			return json.RawMessage(`{"nope":1}`), nil
		case "":
			return json.RawMessage(`{"text":"ok"}`), nil
		}
		return nil, tool.Errorf(tool.Code(in.Fail), "raised %s", in.Fail)
	}
	d := e.dispatcher(t, "test-echo", raise)
	call := func(input string, ctx context.Context) string {
		_, err := d.Handle(ctx, envelopeFor("test-echo", e.ts.ID, "", 1, input))
		return codeOf(t, err)
	}
	bg := context.Background()
	for _, c := range tool.Codes() {
		if got := call(fmt.Sprintf(`{"text":"x","fail":%q}`, c), bg); got != string(c) {
			t.Errorf("tool raised %s, caller saw %q", c, got)
		}
	}
	short, cancel := context.WithTimeout(bg, 2500*time.Millisecond)
	defer cancel()
	cases := map[string]string{
		"panic":        call(`{"text":"x","fail":"panic"}`, bg),
		"foreign":      call(`{"text":"x","fail":"foreign"}`, bg),
		"bad output":   call(`{"text":"x","fail":"badoutput"}`, bg),
		"bad input":    call(`{"text":42}`, bg),
		"deadline":     call(`{"text":"x","fail":"deadline"}`, short),
		"unknown code": call(`{"text":"x","fail":"TOOL_MADE_UP"}`, bg),
	}
	want := map[string]tool.Code{"panic": tool.Internal, "foreign": tool.Internal, "bad output": tool.OutputInvalid, "bad input": tool.InputInvalid, "deadline": tool.Timeout, "unknown code": tool.Internal}
	for name, got := range cases {
		if got != string(want[name]) {
			t.Errorf("%s: caller saw %q, want %s", name, got, want[name])
		}
	}
	// Dispatcher decisions.
	if _, err := d.Handle(bg, envelopeFor("test-echo", "ts_00000000000000000000000000000000", "", 1, `{"text":"x"}`)); codeOf(t, err) != string(tool.PermissionDenied) {
		t.Errorf("unknown toolset: %v", err)
	}
	if _, err := d.Handle(bg, envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`)); codeOf(t, err) != string(tool.PermissionDenied) {
		t.Errorf("another function's tool: %v", err)
	}
	if _, err := d.Handle(bg, json.RawMessage(`{"tool":"test-echo"}`)); codeOf(t, err) != string(tool.InputInvalid) {
		t.Errorf("bad envelope: %v", err)
	}
}

// 50 concurrent invocations with one key run the tool once: the one that
// claims the key gets the result, and every other one, arriving while the
// tool runs, the retryable in-flight error (TOOL_UPSTREAM_UNAVAILABLE).
// Every invocation is on the ledger.
func TestConcurrentCallsOnOneKeyRunTheToolOnce(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	order := newOthersFirst(49)
	d := e.dispatcher(t, "test-echo", order.hold(t, echo(&calls)))
	payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"once"}`)
	var wg sync.WaitGroup
	var results, inflight atomic.Int64
	errs := make(chan error, 50)
	for range 50 {
		wg.Go(func() {
			out, err := d.Handle(context.Background(), payload)
			order.done()
			switch {
			case err == nil && string(out) == `{"text":"once"}`:
				results.Add(1)
			case err != nil && codeOf(t, err) == string(tool.UpstreamUnavailable):
				inflight.Add(1)
			default:
				errs <- fmt.Errorf("out %s err %v", out, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if calls.Load() != 1 {
		t.Fatalf("the tool ran %d times", calls.Load())
	}
	if results.Load() != 1 || inflight.Load() != 49 {
		t.Fatalf("%d got the result and %d the in-flight error, want 1 and 49", results.Load(), inflight.Load())
	}
	// Every invocation is on the ledger; replays are one row with their count.
	rows := ledgertest.RunRows(t, e.store, runIDOf(t, payload))
	n := 0
	for _, r := range rows {
		n += r.Invocations()
	}
	if n != 50 {
		t.Fatalf("%d rows stand for %d invocations, want 50", len(rows), n)
	}
}

// A first-attempt success costs 2 writes (the claim, the finish with its
// row); a replay of a completed key returns the recorded result without
// running the tool in 1 request: the claim's answer holds the result, and
// the request counts the replay on the call's item.
func TestReplay(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	payload := envelopeFor("test-echo", e.ts.ID, "", 7, `{"text":"hi"}`)
	e.db.reset()
	first, err := d.Handle(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	if w, r := e.db.writes(), e.db.gets.Load(); w != 2 || r != 1 {
		t.Fatalf("first success took %d writes and %d reads, want 2 and 1 (the toolset, once per container)", w, r)
	}
	e.db.reset()
	again, err := d.Handle(context.Background(), payload)
	if err != nil || string(again) != string(first) {
		t.Fatalf("replay %s %v", again, err)
	}
	if calls.Load() != 1 {
		t.Fatalf("tool ran %d times", calls.Load())
	}
	if e.db.failedConds.Load() != 0 || e.db.gets.Load() != 0 || e.db.writes() != 1 {
		t.Fatalf("replay cost: %d failed conditional, %d reads, %d writes", e.db.failedConds.Load(), e.db.gets.Load(), e.db.writes())
	}
	rows := mustKeyRows(t, e.store, runIDOf(t, payload), "7")
	if len(rows) != 2 || rows[0].Status != ledger.StatusSucceeded || rows[1].Status != ledger.StatusDeduplicated || rows[1].Invocations() != 1 {
		t.Fatalf("rows %+v", rows)
	}
	r := rows[0]
	if r.Attempt != 1 || r.InputDigest == "" || r.OutputBytes != len(first) || r.MemoryMB != 128 || r.ExpiresAt == 0 || r.ToolsetID != e.ts.ID {
		t.Fatalf("row %+v", r)
	}
}

// A crash leaves the record IN_PROGRESS; once the lease has passed, an
// at_most_once tool is never run again: TOOL_RETRY_REQUIRES_IDEMPOTENCY and
// an UNKNOWN row. An at_least_once tool runs again, once.
func TestExpiredLease(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	crash := func(toolName, runID string) {
		// Exactly what a process killed mid-tool leaves: a claimed record,
		// sealed by the function with the call's external key, whose
		// lease has passed, and no row.
		ext, err := externalkey.New(testSecret, runID, "1")
		if err != nil {
			t.Fatal(err)
		}
		rec := &ledger.Record{Key: runID + "/1", ExternalKey: ext, RunID: runID, Seq: "1", Step: "s", Tool: toolName, ToolsetID: e.ts.ID, InputDigest: digestOf(t, `{"text":"x"}`), LeaseUntil: time.Now().Add(-time.Second)}
		if ok, _, err := e.store.WithMAC(mustSealKey(t, testMAC)).Claim(ctx, rec); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	var sends atomic.Int64
	send := e.dispatcher(t, "test-send", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		sends.Add(1)
		return json.RawMessage(`{"message_id":"m"}`), nil
	})
	payload := envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`)
	crash("test-send", runIDOf(t, payload))
	for range 2 {
		if _, err := send.Handle(ctx, payload); codeOf(t, err) != string(tool.RetryRequiresIdempotency) {
			t.Fatalf("at_most_once after crash: %v", err)
		}
	}
	if sends.Load() != 0 {
		t.Fatal("at_most_once tool ran again")
	}
	rec := mustRecord(t, e.store, runIDOf(t, payload)+"/1")
	rows := ledgertest.RunRows(t, e.store, runIDOf(t, payload))
	// The crashed attempt (no outcome: UNKNOWN), and each refused redrive.
	if rec.State != ledger.StateUnknown || len(rows) != 3 || rows[0].Status != ledger.StatusUnknown || rows[0].Attempt != 1 ||
		rows[1].Status != ledger.StatusUnknown || rows[1].ErrorCode != string(tool.RetryRequiresIdempotency) {
		t.Fatalf("record %+v rows %+v", rec, rows)
	}
	// tolerate_duplicates is the author's consent to run again.
	tolerant := strings.Replace(string(payload), `"tolerate_duplicates":false`, `"tolerate_duplicates":true`, 1)
	if _, err := send.Handle(ctx, json.RawMessage(tolerant)); err != nil || sends.Load() != 1 {
		t.Fatalf("tolerate_duplicates: %v, %d sends", err, sends.Load())
	}

	var echoes atomic.Int64
	echoD := e.dispatcher(t, "test-echo", echo(&echoes))
	payload = envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`)
	crash("test-echo", runIDOf(t, payload))
	for range 2 {
		if _, err := echoD.Handle(ctx, payload); err != nil {
			t.Fatal(err)
		}
	}
	if echoes.Load() != 1 {
		t.Fatalf("at_least_once re-ran %d times", echoes.Load())
	}
	rows, _ = e.store.RunRows(ctx, runIDOf(t, payload))
	if len(rows) != 3 || rows[0].Status != ledger.StatusUnknown || rows[1].Attempt != 2 || rows[1].Status != ledger.StatusSucceeded || rows[2].Status != ledger.StatusDeduplicated {
		t.Fatalf("rows %+v", rows)
	}
}

// A definite failure lets a retry with the same key run the tool again;
// the 11th attempt is refused.
func TestDefiniteFailureAndAttemptCap(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var calls atomic.Int64
	flaky := e.dispatcher(t, "test-echo", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		if calls.Add(1) == 1 {
			return nil, tool.Errorf(tool.UpstreamUnavailable, "503")
		}
		return json.RawMessage(`{"text":"ok"}`), nil
	})
	payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`)
	if _, err := flaky.Handle(ctx, payload); codeOf(t, err) != string(tool.UpstreamUnavailable) {
		t.Fatal(err)
	}
	if out, err := flaky.Handle(ctx, payload); err != nil || string(out) != `{"text":"ok"}` {
		t.Fatal(out, err)
	}
	rows := mustKeyRows(t, e.store, runIDOf(t, payload), "1")
	if len(rows) != 2 || rows[0].Attempt != 1 || rows[1].Attempt != 2 || rows[0].Status != ledger.StatusFailed || !rows[0].Retryable {
		t.Fatalf("rows %+v", rows)
	}

	calls.Store(0)
	always := e.dispatcher(t, "test-echo", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		calls.Add(1)
		return nil, tool.Errorf(tool.RateLimited, "429")
	})
	payload = envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`)
	for i := 1; i <= 11; i++ {
		_, err := always.Handle(ctx, payload)
		want := tool.RateLimited
		if i == 11 {
			want = tool.PermanentFailure
		}
		if codeOf(t, err) != string(want) {
			t.Fatalf("attempt %d: %v", i, err)
		}
	}
	if calls.Load() != 10 {
		t.Fatalf("tool ran %d times", calls.Load())
	}
}

func TestKeyReuse(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"a"}`)
	if _, err := d.Handle(context.Background(), payload); err != nil {
		t.Fatal(err)
	}
	other := strings.Replace(string(payload), `{"text":"a"}`, `{"text":"b"}`, 1)
	_, err := d.Handle(context.Background(), json.RawMessage(other))
	if codeOf(t, err) != string(tool.InputInvalid) || !strings.Contains(err.Error(), "idempotency key reused with a different call") {
		t.Fatalf("reuse: %v", err)
	}
	// Key order and whitespace are not a different call (RFC 8785 digest).
	same := strings.Replace(string(payload), `{"text":"a"}`, `{ "text" : "a" }`, 1)
	if _, err := d.Handle(context.Background(), json.RawMessage(same)); err != nil || calls.Load() != 1 {
		t.Fatalf("same call re-spaced: %v, %d calls", err, calls.Load())
	}
}

func TestInlineLimit(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	const limit = 1000
	d := e.dispatcher(t, "test-echo", echo(&calls), func(c *Config) { c.InlineLimit = limit })
	// {"text":"x…"} is 11 bytes plus the text.
	under := envelopeFor("test-echo", e.ts.ID, "", 1, fmt.Sprintf(`{"text":"","pad":%d}`, limit-11))
	if out, err := d.Handle(context.Background(), under); err != nil || len(out) != limit {
		t.Fatalf("exactly at the limit: %d bytes, %v", len(out), err)
	}
	over := envelopeFor("test-echo", e.ts.ID, "", 1, fmt.Sprintf(`{"text":"","pad":%d}`, limit-10))
	_, err := d.Handle(context.Background(), over)
	if codeOf(t, err) != string(tool.OutputInvalid) || !strings.Contains(err.Error(), "256 KiB") {
		t.Fatalf("one byte over: %v", err)
	}
	if _, err := New(Config{Mode: OneTool("x"), InlineLimit: tool.MaxInlineLimit + 1}, e.deps(t, nil, nil)); err == nil || !strings.Contains(err.Error(), "inline limit") {
		t.Fatalf("inline limit over 200 KiB: %v, want it refused", err)
	}
}

// An invocation is validated against its own toolset's pinned schema, not
// the newest one.
func TestToolsetPinning(t *testing.T) {
	e := newEnv(t)
	older, newer := testToolset(t, 3), testToolset(t, 100)
	if older.ID == newer.ID {
		t.Fatal("fixtures have one id")
	}
	if _, err := e.store.RegisterToolset(context.Background(), older); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	long := `{"text":"longer than three"}`
	if _, err := d.Handle(context.Background(), envelopeFor("test-echo", older.ID, "", 1, long)); codeOf(t, err) != string(tool.InputInvalid) || !strings.Contains(err.Error(), "input/text") {
		t.Fatalf("older toolset: %v", err)
	}
	if _, err := d.Handle(context.Background(), envelopeFor("test-echo", newer.ID, "", 1, long)); err != nil {
		t.Fatalf("newer toolset: %v", err)
	}
	// Registration is idempotent; other content under an id is refused.
	if created, err := e.store.RegisterToolset(context.Background(), older); created || err != nil {
		t.Fatalf("re-register: %v %v", created, err)
	}
	forged := *newer
	forged.ID = older.ID
	if _, err := e.store.RegisterToolset(context.Background(), &forged); err == nil {
		t.Fatal("different content under an existing id accepted")
	}
}
