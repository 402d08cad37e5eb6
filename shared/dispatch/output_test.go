package dispatch

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// withMembers adds envelope members to an envelope.
func withMembers(t *testing.T, payload json.RawMessage, members map[string]any) json.RawMessage {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range members {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// bigResult is a tool whose result is large, all but two small fields of
// it in "body".
func bigResult(calls *atomic.Int64, body int) toolcall.Func {
	return func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		calls.Add(1)
		return json.Marshal(map[string]any{"text": "t", "meta": map[string]any{"title": "T", "count": 3}, "body": strings.Repeat("x", body)})
	}
}

// keep returns only the named fields, after the whole result passed its
// schema: the output limit applies to what is kept, which is also what the
// ledger records and a replay returns.
func TestKeepReturnsAndRecordsOnlyTheKeptFields(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", bigResult(&calls, 100_000), func(c *Config) { c.InlineLimit = 1000 })
	payload := withMembers(t, envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`), map[string]any{"keep": []string{"text", "meta.title"}})
	out, err := d.Handle(context.Background(), payload)
	const want = `{"meta":{"title":"T"},"text":"t"}`
	if err != nil || string(out) != want {
		t.Fatalf("kept result %s, %v; want %s", out, err, want)
	}
	rec, err := e.store.Record(context.Background(), keyOf(t, payload))
	if err != nil || rec.State != ledger.StateCompleted || string(rec.Result) != want {
		t.Fatalf("record %s %s %v, want COMPLETED with the kept result", rec.State, rec.Result, err)
	}
	if out, err := d.Handle(context.Background(), payload); err != nil || string(out) != want || calls.Load() != 1 {
		t.Errorf("replay: %s %v after %d runs, want the kept result and one run", out, err, calls.Load())
	}
}

// A step's output_limit_bytes is enforced per call; the deployment's
// inline limit caps it, and the message names whichever was the bound.
func TestOutputLimitIsTheStepsCappedByTheInlineLimit(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", bigResult(&calls, 500), func(c *Config) { c.InlineLimit = 2000 })
	cases := []struct {
		limit int
		code  string
		names string
	}{
		{0, "", ""},
		{400, string(tool.OutputInvalid), "output_limit_bytes, 400 bytes"},
		{1000, "", ""},
		{200 << 10, "", ""},
	}
	for _, c := range cases {
		members := map[string]any{}
		if c.limit > 0 {
			members["output_limit_bytes"] = c.limit
		}
		_, err := d.Handle(context.Background(), withMembers(t, envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`), members))
		if codeOf(t, err) != c.code || (c.names != "" && !strings.Contains(err.Error(), c.names)) {
			t.Errorf("output_limit_bytes %d on a 550-byte result: %v, want %q naming %q", c.limit, err, c.code, c.names)
		}
	}
	d = e.dispatcher(t, "test-echo", bigResult(&calls, 5000), func(c *Config) { c.InlineLimit = 2000 })
	_, err := d.Handle(context.Background(), withMembers(t, envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`), map[string]any{"output_limit_bytes": 100_000}))
	if codeOf(t, err) != string(tool.OutputInvalid) || !strings.Contains(err.Error(), "inline limit, 2000 bytes") {
		t.Errorf("output_limit_bytes over the inline limit: %v, want the inline limit to cap it", err)
	}
}

// Bad keep lists and output limits are refused before anything runs.
func TestBadKeepAndOutputLimitAreRefused(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", bigResult(&calls, 10))
	many := make([]string, tool.MaxKeep+1)
	for i := range many {
		many[i] = "a"
	}
	for name, m := range map[string]map[string]any{
		"keep path with an index": {"keep": []string{"data[0]"}},
		"empty keep path":         {"keep": []string{""}},
		"too many keep paths":     {"keep": many},
		"keep not a list":         {"keep": "data"},
		"negative limit":          {"output_limit_bytes": -1},
		"limit over 200 KiB":      {"output_limit_bytes": tool.MaxInlineLimit + 1},
	} {
		_, err := d.Handle(context.Background(), withMembers(t, envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`), m))
		if codeOf(t, err) != string(tool.InputInvalid) {
			t.Errorf("%s: %v, want TOOL_INPUT_INVALID", name, err)
		}
	}
	if calls.Load() != 0 {
		t.Errorf("the tool ran %d times", calls.Load())
	}
}
