package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// The run the dispatcher of the previous call layout wrote
// call.dispatched-before-compact.json for (testdata/ledger-items/README.md,
// gen/dispatched_before_compact_test.go), and when it started.
const (
	beforeCompactRun      = "arn:aws:states:us-east-1:000000000000:execution:toolgate-test:before-compact"
	beforeCompactRunStart = "2026-12-02T06:59:00Z"
)

// putBeforeCompact puts the call items the dispatcher of the previous
// layout wrote, as they are, in e's table.
func putBeforeCompact(t *testing.T, e *env) {
	t.Helper()
	for name, it := range ledgertest.Items(t, "../../testdata/ledger-items/call.dispatched-before-compact.json") {
		if _, err := e.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(e.store.Table()), Item: it}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// beforeCompactEnvelope is the envelope of call seq of that run, as its
// generator sent it.
func beforeCompactEnvelope(e *env, toolName string, seq int, input string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"tool":%q,"toolset_id":%q,"run_id":%q,"run_started_at":%q,"seq":"%d","step":"s%d","idempotency_key":"%s/%d","attempt":1,"tolerate_duplicates":false,"input":%s}`,
		toolName, e.ts.ID, beforeCompactRun, beforeCompactRunStart, seq, seq, beforeCompactRun, seq, input))
}

// Records the dispatcher wrote before the compact call layout, for a run
// in flight across the upgrade, go on through today's dispatcher: each
// completed call replays its recorded result and its tool never runs; the
// FAILED at_most_once call is claimed again and runs once, its record kept
// in its layout and sealed; the calls in doubt (UNKNOWN, and IN_PROGRESS
// with its lease run out) of the at_most_once tool stay refused, never
// run. Their rows still read.
func TestRecordsOfTheLayoutBeforeReplayForARunStartedBeforeTheUpgrade(t *testing.T) {
	e := newEnv(t)
	putBeforeCompact(t, e)
	ctx := context.Background()
	var echoes, sends atomic.Int64
	send := func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		sends.Add(1)
		return json.RawMessage(`{"message_id":"m-again"}`), nil
	}
	echoD := e.dispatcher(t, "test-echo", echo(&echoes))
	sendD := e.dispatcher(t, "test-send", send)
	for _, c := range []struct {
		d        *Dispatcher
		tool, in string
		seq      int
		want     string
	}{
		{echoD, "test-echo", `{"text":"one"}`, 1, `{"text":"one"}`},
		{echoD, "test-echo", `{"text":"two"}`, 2, `{"text":"two"}`},
		{echoD, "test-echo", `{"text":"five","fail":"TOOL_RATE_LIMITED"}`, 5, `{"text":"five"}`},
	} {
		for range 2 {
			out, err := c.d.Handle(ctx, beforeCompactEnvelope(e, c.tool, c.seq, c.in))
			if err != nil || string(out) != c.want {
				t.Fatalf("seq %d: %s %v, want the recorded %s", c.seq, out, err, c.want)
			}
		}
	}
	if n := echoes.Load(); n != 0 {
		t.Fatalf("the completed calls' tool ran %d times on replay", n)
	}
	// FAILED: claimed again, run once, then replayed.
	for i := range 2 {
		out, err := sendD.Handle(ctx, beforeCompactEnvelope(e, "test-send", 3, `{"text":"three","fail":"TOOL_UPSTREAM_UNAVAILABLE"}`))
		if err != nil || string(out) != `{"message_id":"m-again"}` {
			t.Fatalf("seq 3, call %d: %s %v", i+1, out, err)
		}
	}
	if n := sends.Load(); n != 1 {
		t.Fatalf("the failed call ran %d times, want 1", n)
	}
	sealed := e.store.WithMAC(mustSealKey(t, testMAC))
	if r := mustRecord(t, sealed, beforeCompactRun+"/3"); r.Layout != ledger.LayoutNamed || r.State != ledger.StateCompleted || r.Attempts != 2 || r.Seal != seal.Valid {
		t.Fatalf("seq 3 after its retry: %+v, want COMPLETED at attempt 2, sealed, in its layout", r)
	}
	// In doubt: never run again.
	for _, c := range []struct {
		seq int
		in  string
	}{{6, `{"text":"six","fail":"plain"}`}, {4, `{"text":"four"}`}} {
		_, err := sendD.Handle(ctx, beforeCompactEnvelope(e, "test-send", c.seq, c.in))
		if got := codeOf(t, err); got != string(tool.RetryRequiresIdempotency) {
			t.Fatalf("seq %d: %s, want %s", c.seq, got, tool.RetryRequiresIdempotency)
		}
	}
	if n := sends.Load(); n != 1 {
		t.Fatalf("a call in doubt ran: %d runs", n)
	}
	rows := ledgertest.RunRows(t, sealed, beforeCompactRun)
	var dedup int
	for _, r := range rows {
		if r.Status == ledger.StatusDeduplicated {
			dedup += r.Count
		}
	}
	// seq 1: 2 replays; seq 2: 2 before and 2 now; seq 5: 2; seq 3: 1.
	if dedup != 9 {
		t.Errorf("the run's rows count %d replays, want 9: %+v", dedup, rows)
	}
}

// The same records, for a run that started after the upgrade (the
// function's cold start, Config.CompactSince, more than
// LayoutSwitchMargin before its run_started_at), are neither replayed nor
// run: a record of the previous layout could not have been written for it.
func TestRecordsOfTheLayoutBeforeAreRefusedForARunStartedAfterTheUpgrade(t *testing.T) {
	e := newEnv(t)
	putBeforeCompact(t, e)
	ctx := context.Background()
	var echoes atomic.Int64
	start, _ := time.Parse(time.RFC3339, beforeCompactRunStart)
	d := e.dispatcher(t, "test-echo", echo(&echoes), func(c *Config) { c.CompactSince = start.Add(-LayoutSwitchMargin - time.Minute) })
	_, err := d.Handle(ctx, beforeCompactEnvelope(e, "test-echo", 1, `{"text":"one"}`))
	if got := codeOf(t, err); got != string(tool.Internal) || echoes.Load() != 0 {
		t.Fatalf("%s (%v), tool runs %d: want %s and nothing run", got, err, echoes.Load(), tool.Internal)
	}
	rows := ledgertest.RunRows(t, e.store, beforeCompactRun)
	refused := false
	for _, r := range rows {
		refused = refused || (r.Seq == "1" && r.Status == ledger.StatusRefused && r.Reason == seal.ReasonRecordForged)
	}
	if !refused {
		t.Errorf("no REFUSED record-forged row for seq 1: %+v", rows)
	}
}

// A sealed record of the previous layout is replayed, never run again,
// for a call the code before the upgrade replayed it for without a
// run_started_at (the direct lane; a definition published before the
// envelope had it), and for a run that started in the minutes a
// function's aliases take to move to the new version
// (LayoutSwitchMargin after the cold start).
func TestRecordsOfTheLayoutBeforeReplayWithoutRunStartAndWithinTheSwitchMargin(t *testing.T) {
	e := newEnv(t)
	putBeforeCompact(t, e)
	ctx := context.Background()
	start, _ := time.Parse(time.RFC3339, beforeCompactRunStart)
	for _, c := range []struct {
		name  string
		since time.Time
		env   func() json.RawMessage
	}{
		{"no run_started_at", start.Add(time.Hour), func() json.RawMessage {
			return json.RawMessage(fmt.Sprintf(`{"tool":"test-echo","toolset_id":%q,"run_id":%q,"seq":"1","step":"s1","idempotency_key":"%s/1","attempt":1,"tolerate_duplicates":false,"input":{"text":"one"}}`,
				e.ts.ID, beforeCompactRun, beforeCompactRun))
		}},
		{"started within the margin after the cold start", start.Add(-LayoutSwitchMargin + time.Minute), func() json.RawMessage {
			return beforeCompactEnvelope(e, "test-echo", 1, `{"text":"one"}`)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var echoes atomic.Int64
			d := e.dispatcher(t, "test-echo", echo(&echoes), func(cfg *Config) { cfg.CompactSince = c.since })
			out, err := d.Handle(ctx, c.env())
			if err != nil || string(out) != `{"text":"one"}` || echoes.Load() != 0 {
				t.Fatalf("%s %v, tool runs %d: want the recorded result replayed and nothing run", out, err, echoes.Load())
			}
		})
	}
}
