package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
)

// mcpToolset is the test toolset with MCP tools of server crm, pinned as
// registration pins them (toolset.MCPServer.Pin): crm.lookup_customer
// (test-echo's schemas, idempotent, at_least_once), crm.create_ticket
// (test-send's, at_most_once), crm.gated (test-gated's, reviewed) and
// crm.slow (test-echo's, a 1 s timeout); and the platform tool p-echo.
// It is registered on e's ledger.
func mcpToolset(t *testing.T, e *env) *toolset.Toolset {
	t.Helper()
	ts := testToolset(t, 100)
	pin := func(from, name string, timeout int) {
		p := ts.Tools[from]
		p.TimeoutSeconds = timeout
		p.MCP = &toolset.MCP{Server: "crm", URL: "https://mcp.crm.example.com/mcp", Name: name, Protocol: "2026-07-28",
			Annotations: json.RawMessage(`{"readOnlyHint":true}`)}
		ts.Tools["crm."+name] = p
	}
	pin("test-echo", "lookup_customer", toolset.MCPToolTimeout)
	pin("test-send", "create_ticket", toolset.MCPToolTimeout)
	pin("test-gated", "gated", toolset.MCPToolTimeout)
	pin("test-echo", "slow", 1)
	addPlatformEcho(ts)
	return registerAs(t, e, ts)
}

// parking is a Check that parks every call while changed is set, and
// counts its calls.
type parking struct {
	changed atomic.Bool
	calls   atomic.Int64
	err     error // returned instead of parking, when set
	seen    *toolcall.Call
}

func (p *parking) check(ctx context.Context, c *toolcall.Call) error {
	p.calls.Add(1)
	p.seen = c
	switch {
	case p.err != nil:
		return p.err
	case p.changed.Load():
		return &tool.Error{Code: tool.CallParked, Message: "tool.schema_changed: crm.create_ticket: input schema sha256:aa → sha256:bb: /properties/text/type string → integer",
			MaybeApplied: true, Err: errors.New("the server's listing")}
	}
	return nil
}

// A call whose MCP tool changed on its server is parked: one PARKED row
// (attempt 0, CALL_PARKED, not retryable), no claim, the tool not run,
// the answer CALL_PARKED with the check's message. A later call under the
// same key, once the check passes, is the key's first attempt.
func TestMCPParkedCall(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ts := mcpToolset(t, e)
	var calls atomic.Int64
	p := &parking{}
	p.changed.Store(true)
	d := e.dispatcher(t, "", echoSend(&calls), func(c *Config) { c.Mode, c.Check = MCPTools, p.check })
	payload := envelopeFor("crm.create_ticket", ts.ID, "", 1, `{"text":"hi"}`)
	runID := runIDOf(t, payload)
	e.db.reset()
	_, err := d.Handle(ctx, payload)
	ive, ok := err.(messages.InvokeResponse_Error)
	if !ok || ive.Type != "CALL_PARKED" || !strings.HasPrefix(ive.Message, "tool.schema_changed: crm.create_ticket") {
		t.Fatalf("answer %#v", err)
	}
	if calls.Load() != 0 || p.calls.Load() != 1 {
		t.Fatalf("the tool ran %d times, the check %d", calls.Load(), p.calls.Load())
	}
	// The conditional read of the record (there is none) and the row.
	if e.db.updates.Load() != 1 || e.db.failedConds.Load() != 1 || e.db.puts.Load() != 1 {
		t.Fatalf("requests: %d updates (%d failed conditions), %d puts", e.db.updates.Load(), e.db.failedConds.Load(), e.db.puts.Load())
	}
	if rec, err := e.store.Record(ctx, runID+"/1"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a parked call claimed its key: %+v %v", rec, err)
	}
	rows := ledgertest.RunRows(t, e.store, runID)
	if len(rows) != 1 || rows[0].Status != ledger.StatusParked || rows[0].Attempt != 0 || rows[0].ErrorCode != "CALL_PARKED" || rows[0].Retryable ||
		rows[0].Tool != "crm.create_ticket" || rows[0].InputDigest == "" {
		t.Fatalf("rows %+v", rows)
	}
	// The same key again once the tool is as pinned: attempt 1.
	p.changed.Store(false)
	out, err := d.Handle(ctx, payload)
	if err != nil || !strings.Contains(string(out), "message_id") || calls.Load() != 1 {
		t.Fatalf("the call after the park: %s %v (tool ran %d times)", out, err, calls.Load())
	}
	rows, _ = e.store.RunRows(ctx, runID)
	if len(rows) != 2 || rows[0].Status != ledger.StatusParked || rows[1].Status != ledger.StatusSucceeded || rows[1].Attempt != 1 {
		t.Fatalf("rows %+v", rows)
	}
	// The check saw the call as the tool would, before any attempt.
	if c := p.seen; c.Attempt != 0 || c.Pinned.MCP == nil || c.Pinned.MCP.Name != "create_ticket" || string(c.Input) != `{"text":"hi"}` || c.Toolset.ID != ts.ID || c.Envelope.Tool != "crm.create_ticket" {
		t.Fatalf("the check got %+v", c)
	}
	// Its key completed, the call is a replay whatever the check says now:
	// it was sent before the tool changed.
	p.changed.Store(true)
	out2, err := d.Handle(ctx, payload)
	if err != nil || string(out2) != string(out) || calls.Load() != 1 {
		t.Fatalf("replay after a change: %s %v", out2, err)
	}
	rows, _ = e.store.RunRows(ctx, runID)
	if len(rows) != 3 || rows[2].Status != ledger.StatusDeduplicated {
		t.Fatalf("rows %+v", rows)
	}
}

// Any other error of the check ends the call unclaimed too, with a
// REFUSED row of its code; an error that is no *tool.Error is
// TOOL_INTERNAL. A later call under the same key is a first attempt.
func TestMCPCheckRefuses(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ts := mcpToolset(t, e)
	for _, tc := range []struct {
		name      string
		err       error
		code      tool.Code
		retryable bool
	}{
		{"server unreachable", tool.Errorf(tool.UpstreamUnavailable, "the MCP server crm could not be listed"), tool.UpstreamUnavailable, true},
		{"address refused", tool.Errorf(tool.PermissionDenied, "mcp.crm.example.com resolves to a private address"), tool.PermissionDenied, false},
		{"no code", errors.New("listing: unexpected EOF"), tool.Internal, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			p := &parking{err: tc.err}
			d := e.dispatcher(t, "", echo(&calls), func(c *Config) { c.Mode, c.Check = MCPTools, p.check })
			payload := envelopeFor("crm.lookup_customer", ts.ID, "", 1, `{"text":"hi"}`)
			runID := runIDOf(t, payload)
			if _, err := d.Handle(ctx, payload); codeOf(t, err) != string(tc.code) {
				t.Fatalf("answer %v", err)
			}
			rows := ledgertest.RunRows(t, e.store, runID)
			if len(rows) != 1 || rows[0].Status != ledger.StatusRefused || rows[0].Attempt != 0 || rows[0].ErrorCode != string(tc.code) || rows[0].Retryable != tc.retryable {
				t.Fatalf("rows %+v", rows)
			}
			if _, err := e.store.Record(ctx, runID+"/1"); !errors.Is(err, ledger.ErrNotFound) {
				t.Fatalf("the key was claimed: %v", err)
			}
			p.err = nil
			if _, err := d.Handle(ctx, payload); err != nil || calls.Load() != 1 {
				t.Fatalf("the call after the refusal: %v, %d runs", err, calls.Load())
			}
			if rows := ledgertest.RunRows(t, e.store, runID); len(rows) != 2 || rows[1].Status != ledger.StatusSucceeded || rows[1].Attempt != 1 {
				t.Fatalf("rows %+v", rows)
			}
		})
	}
}

// A gated MCP tool's approval is checked before the tool's own check: a
// call without one is refused, and the server is not asked.
func TestMCPApprovalBeforeCheck(t *testing.T) {
	e := newEnv(t)
	ts := mcpToolset(t, e)
	p := &parking{}
	var calls atomic.Int64
	d := e.dispatcher(t, "", echoSend(&calls), func(c *Config) { c.Mode, c.Check = MCPTools, p.check })
	if _, err := d.Handle(context.Background(), envelopeFor("crm.gated", ts.ID, "", 1, `{"text":"hi"}`)); codeOf(t, err) != string(tool.PermissionDenied) {
		t.Fatalf("answer %v", err)
	}
	if p.calls.Load() != 0 || calls.Load() != 0 {
		t.Fatalf("check %d, tool %d", p.calls.Load(), calls.Load())
	}
}

// An MCP dispatcher runs the MCP tools its run's toolset pins, and
// refuses every other tool before anything is claimed; the platform
// tools' proxy and a single-tool dispatcher refuse an MCP tool.
func TestMCPDispatcher(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ts := mcpToolset(t, e)
	var calls atomic.Int64
	var seen toolset.Tool
	run := func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		seen = c.Pinned
		return echo(&calls)(ctx, c)
	}
	d := e.dispatcher(t, "", run, func(c *Config) { c.Mode = MCPTools })
	out, err := d.Handle(ctx, envelopeFor("crm.lookup_customer", ts.ID, "", 1, `{"text":"hi"}`))
	if err != nil || string(out) != `{"text":"hi"}` || seen.MCP == nil || seen.MCP.Name != "lookup_customer" {
		t.Fatalf("MCP tool: %s %v, pinned %+v", out, err, seen)
	}
	platform := e.dispatcher(t, "", run, func(c *Config) { c.Mode = PlatformTools })
	single := e.dispatcher(t, "test-echo", run)
	for name, c := range map[string]struct {
		d       *Dispatcher
		payload json.RawMessage
	}{
		"MCP: a platform tool":                 {d, envelopeFor("p-echo", ts.ID, "", 1, `{"text":"hi"}`)},
		"MCP: a catalog-style tool":            {d, envelopeFor("test-echo", ts.ID, "", 1, `{"text":"hi"}`)},
		"MCP: a tool the toolset does not pin": {d, envelopeFor("crm.other", ts.ID, "", 1, `{"text":"hi"}`)},
		"proxy: an MCP tool":                   {platform, envelopeFor("crm.lookup_customer", ts.ID, "", 1, `{"text":"hi"}`)},
		"single tool: an MCP tool":             {single, envelopeFor("crm.lookup_customer", ts.ID, "", 1, `{"text":"hi"}`)},
	} {
		if _, err := c.d.Handle(ctx, c.payload); codeOf(t, err) != string(tool.PermissionDenied) {
			t.Errorf("%s: %v", name, err)
		}
		if rec := ledgertest.RecordOrNil(t, e.store, runIDOf(t, c.payload)+"/1"); rec != nil {
			t.Errorf("%s: a record was claimed: %+v", name, rec)
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("the tool ran %d times", calls.Load())
	}
}

// The pinned timeout_seconds bounds an MCP tool's call: a call that does
// not answer ends with TOOL_TIMEOUT within it, well before the function's
// deadline.
func TestMCPPinnedTimeout(t *testing.T) {
	e := newEnv(t)
	ts := mcpToolset(t, e)
	hang := func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	d := e.dispatcher(t, "", hang, func(c *Config) { c.Mode = MCPTools })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err := d.Handle(ctx, envelopeFor("crm.slow", ts.ID, "", 1, `{"text":"hi"}`))
	if codeOf(t, err) != string(tool.Timeout) || time.Since(start) > 5*time.Second {
		t.Fatalf("%v after %s", err, time.Since(start))
	}
}

// A tool that answers CALL_PARKED after its claim did run: it is
// TOOL_INTERNAL, and only the check parks a call.
func TestMCPToolCannotPark(t *testing.T) {
	e := newEnv(t)
	ts := mcpToolset(t, e)
	park := func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		return nil, tool.Errorf(tool.CallParked, "changed")
	}
	d := e.dispatcher(t, "", park, func(c *Config) { c.Mode = MCPTools })
	payload := envelopeFor("crm.create_ticket", ts.ID, "", 1, `{"text":"hi"}`)
	if _, err := d.Handle(context.Background(), payload); codeOf(t, err) != string(tool.Internal) {
		t.Fatalf("answer %v", err)
	}
	rows := ledgertest.RunRows(t, e.store, runIDOf(t, payload))
	if len(rows) != 1 || rows[0].Status != ledger.StatusUnknown || rows[0].Attempt != 1 {
		t.Fatalf("rows %+v", rows)
	}
}

// A dispatcher's mode is chosen once: the zero mode and a one-tool mode
// without a name are refused at cold start with a message that says what
// to choose; the three modes are accepted, and the environment's
// configuration keeps the mode it was read for.
func TestModeIsCheckedAtColdStart(t *testing.T) {
	for name, c := range map[string]struct {
		mode Mode
		want string // in the error; "" accepted
	}{
		"unset":              {Mode{}, "mode is unset"},
		"one tool, no name":  {OneTool(""), "its name is empty"},
		"one tool":           {OneTool("test-echo"), ""},
		"the platform tools": {PlatformTools, ""},
		"the MCP tools":      {MCPTools, ""},
	} {
		cfg := Config{Mode: c.mode}
		err := cfg.Validate()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: Validate = %v, want %q", name, err, c.want)
		}
	}
	for _, m := range []Mode{OneTool("test-echo"), PlatformTools, MCPTools} {
		cfg, table, err := ConfigFromEnv(m, func(k string) string {
			return map[string]string{EnvTable: "t"}[k]
		})
		if err != nil || cfg.Mode != m || table != "t" {
			t.Errorf("ConfigFromEnv(%s) = %+v, %q, %v", m, cfg, table, err)
		}
	}
}

// echoSend is test-send's tool: a message id per call.
func echoSend(calls *atomic.Int64) toolcall.Func {
	return func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		n := calls.Add(1)
		return json.Marshal(map[string]string{"message_id": "m-" + strconv.FormatInt(n, 10)})
	}
}
