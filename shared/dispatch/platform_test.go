package dispatch

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
)

// platformToolset is the test toolset with one platform tool, p-echo
// (test-echo's schemas, a function ARN), registered on e's ledger.
func platformToolset(t *testing.T, e *env) *toolset.Toolset {
	t.Helper()
	ts := testToolset(t, 100)
	addPlatformEcho(ts)
	return registerAs(t, e, ts)
}

// addPlatformEcho pins p-echo in ts: test-echo's contract, run by the
// function p-echo (a function ARN, a 10 s timeout).
func addPlatformEcho(ts *toolset.Toolset) {
	pt := ts.Tools["test-echo"]
	pt.Function, pt.TimeoutSeconds = "arn:aws:lambda:us-east-1:000000000000:function:p-echo", 10
	ts.Tools["p-echo"] = pt
}

// registerAs gives ts its id, verifies it against the catalog and
// registers it on e's ledger.
func registerAs(t testing.TB, e *env, ts *toolset.Toolset) *toolset.Toolset {
	t.Helper()
	var err error
	if ts.ID, err = ts.ComputeID(); err != nil {
		t.Fatal(err)
	}
	if err := ts.Verify(catalog.Default()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.RegisterToolset(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	return ts
}

// A Platform dispatcher (the platform tools' proxy) runs any tool its
// run's toolset pins with a function, with the pinned entry, and refuses a
// tool without one before anything is claimed.
func TestPlatformDispatcher(t *testing.T) {
	e := newEnv(t)
	ts := platformToolset(t, e)
	var calls atomic.Int64
	var seen toolset.Tool
	run := func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		seen = c.Pinned
		return echo(&calls)(ctx, c)
	}
	d := e.dispatcher(t, "", run, func(c *Config) { c.Mode = PlatformTools })
	payload := envelopeFor("p-echo", ts.ID, "", 1, `{"text":"hi"}`)
	out, err := d.Handle(context.Background(), payload)
	if err != nil || string(out) != `{"text":"hi"}` || seen.Function != ts.Tools["p-echo"].Function {
		t.Fatalf("platform tool: %s %v, pinned %+v", out, err, seen)
	}
	rows := ledgertest.RunRows(t, e.store, runIDOf(t, payload))
	if len(rows) != 1 || rows[0].Status != ledger.StatusSucceeded || rows[0].Tool != "p-echo" {
		t.Fatalf("rows %+v", rows)
	}
	for name, payload := range map[string]json.RawMessage{
		"a catalog-style tool without a function": envelopeFor("test-echo", ts.ID, "", 1, `{"text":"hi"}`),
		"a tool the toolset does not pin":         envelopeFor("p-other", ts.ID, "", 1, `{"text":"hi"}`),
	} {
		if _, err := d.Handle(context.Background(), payload); codeOf(t, err) != string(tool.PermissionDenied) {
			t.Errorf("%s: %v", name, err)
		}
		if rec := ledgertest.RecordOrNil(t, e.store, runIDOf(t, payload)+"/1"); rec != nil {
			t.Errorf("%s: a record was claimed: %+v", name, rec)
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("the tool ran %d times", calls.Load())
	}
	// A single-tool dispatcher does not run a platform tool.
	single := e.dispatcher(t, "test-echo", run)
	if _, err := single.Handle(context.Background(), envelopeFor("p-echo", ts.ID, "", 1, `{"text":"hi"}`)); codeOf(t, err) != string(tool.PermissionDenied) {
		t.Errorf("single-tool dispatcher ran a platform tool: %v", err)
	}
}
