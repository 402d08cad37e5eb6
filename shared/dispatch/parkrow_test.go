package dispatch

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// parkedRow is runID's one row, which must be PARKED.
func parkedRow(t *testing.T, e *env, runID string) ledger.Row {
	t.Helper()
	rows := ledgertest.RunRows(t, e.store, runID)
	if len(rows) != 1 || rows[0].Status != ledger.StatusParked {
		t.Fatalf("rows %+v, want one PARKED", rows)
	}
	return rows[0]
}

// A call parked because its MCP tool changed records, on its PARKED row,
// the cause, the pinned and the current definition's digests and the
// changed JSON Pointers its check found (shared/mcptool's Check gives
// them as a *park.Detail): what a person deciding the park reads
// (docs/parking.md, "The PARKED row").
func TestAParkedRowRecordsTheChangedDefinition(t *testing.T) {
	e := newEnv(t)
	ts := mcpToolset(t, e)
	const pinned, current = "sha256:" + "aa" + "00000000000000000000000000000000000000000000000000000000000000", "sha256:" + "bb" + "00000000000000000000000000000000000000000000000000000000000000"
	pointers := []string{"/inputSchema/properties/title/maxLength", "/description"}
	p := &parking{err: tool.Wrap(tool.CallParked, &park.Detail{Cause: park.SchemaChanged, PinnedDigest: pinned, CurrentDigest: current, ChangedPointers: pointers},
		"tool.schema_changed: MCP tool crm.create_ticket was not called")}
	d := e.dispatcher(t, "", echoSend(new(atomic.Int64)), func(c *Config) { c.Mode, c.Check = MCPTools, p.check })
	payload := envelopeFor("crm.create_ticket", ts.ID, "", 1, `{"text":"x"}`)
	if _, err := d.Handle(context.Background(), payload); codeOf(t, err) != string(tool.CallParked) {
		t.Fatalf("answer %v", err)
	}
	r := parkedRow(t, e, runIDOf(t, payload))
	if r.ParkCause != string(park.SchemaChanged) || r.PinnedDigest != pinned || r.CurrentDigest != current ||
		!slices.Equal(r.ChangedPointers, []string{"/description", "/inputSchema/properties/title/maxLength"}) || r.ParkTarget != "" || r.ParkScope != "" {
		t.Fatalf("row %+v", r)
	}
}

// A check that parks without a detail still records the cause.
func TestAParkedRowWithoutADetailRecordsItsCause(t *testing.T) {
	e := newEnv(t)
	ts := mcpToolset(t, e)
	p := &parking{}
	p.changed.Store(true)
	d := e.dispatcher(t, "", echoSend(new(atomic.Int64)), func(c *Config) { c.Mode, c.Check = MCPTools, p.check })
	payload := envelopeFor("crm.create_ticket", ts.ID, "", 1, `{"text":"x"}`)
	if _, err := d.Handle(context.Background(), payload); codeOf(t, err) != string(tool.CallParked) {
		t.Fatalf("answer %v", err)
	}
	if r := parkedRow(t, e, runIDOf(t, payload)); r.ParkCause != string(park.SchemaChanged) || r.PinnedDigest != "" || len(r.ChangedPointers) != 0 {
		t.Fatalf("row %+v", r)
	}
}

// A call parked because its credential expired records the credential's
// target and scope as the vault names them (never its value).
func TestAParkedRowRecordsTheExpiredCredentialsTargetAndScope(t *testing.T) {
	e := newEnv(t)
	ts := credToolset(t, e)
	scope := string(credential.RunScope("run-7"))
	r := &resolver{err: tool.Wrap(tool.CallParked, &park.Detail{Cause: park.CredentialsExpired, Target: "crm", Scope: scope},
		"credentials.expired: the run-scope credential of target crm expired")}
	d := credDispatcher(t, e, r, nil, echoSend(new(atomic.Int64)))
	payload := envelopeFor("crm.create_ticket", ts.ID, "", 1, `{"text":"x"}`)
	if _, err := d.Handle(context.Background(), payload); codeOf(t, err) != string(tool.CallParked) {
		t.Fatalf("answer %v", err)
	}
	if row := parkedRow(t, e, runIDOf(t, payload)); row.ParkCause != string(park.CredentialsExpired) || row.ParkTarget != "crm" || row.ParkScope != scope || row.PinnedDigest != "" {
		t.Fatalf("row %+v", row)
	}
}

// A PARKED row keeps, beside its changed pointers, those the check
// classed additive (docs/parking.md, "Classifying a change"), for a
// person deciding the park.
func TestAParkedRowRecordsWhichChangedPointersAreAdditive(t *testing.T) {
	e := newEnv(t)
	ts := mcpToolset(t, e)
	const pinned, current = "sha256:" + "aa" + "00000000000000000000000000000000000000000000000000000000000000", "sha256:" + "bb" + "00000000000000000000000000000000000000000000000000000000000000"
	p := &parking{err: tool.Wrap(tool.CallParked, &park.Detail{Cause: park.SchemaChanged, PinnedDigest: pinned, CurrentDigest: current,
		ChangedPointers: []string{"/inputSchema/required/1", "/inputSchema/properties/locale"}, AdditivePointers: []string{"/inputSchema/properties/locale"}},
		"tool.schema_changed: MCP tool crm.create_ticket was not called")}
	d := e.dispatcher(t, "", echoSend(new(atomic.Int64)), func(c *Config) { c.Mode, c.Check = MCPTools, p.check })
	payload := envelopeFor("crm.create_ticket", ts.ID, "", 1, `{"text":"x"}`)
	if _, err := d.Handle(context.Background(), payload); codeOf(t, err) != string(tool.CallParked) {
		t.Fatalf("answer %v", err)
	}
	r := parkedRow(t, e, runIDOf(t, payload))
	if !slices.Equal(r.ChangedPointers, []string{"/inputSchema/properties/locale", "/inputSchema/required/1"}) ||
		!slices.Equal(r.AdditivePointers, []string{"/inputSchema/properties/locale"}) {
		t.Fatalf("row %+v", r)
	}
}

// A call whose check let it go on under an additive change (its toolset's
// on_schema_change allow_additive_input) runs, and its attempt records
// schema_change additive with both definitions' digests, read back from
// the call's item.
func TestACallSentUnderAnAdditiveChangeRecordsIt(t *testing.T) {
	e := newEnv(t)
	ts := mcpToolset(t, e)
	check := func(_ context.Context, c *toolcall.Call) error {
		c.SchemaChange = &toolcall.SchemaChange{Class: "additive", PinnedDigest: pinnedDef, CurrentDigest: currentDef}
		return nil
	}
	var calls atomic.Int64
	d := e.dispatcher(t, "", echoSend(&calls), func(c *Config) { c.Mode, c.Check = MCPTools, check })
	payload := envelopeFor("crm.create_ticket", ts.ID, "", 1, `{"text":"x"}`)
	if _, err := d.Handle(context.Background(), payload); err != nil {
		t.Fatal(err)
	}
	rows := ledgertest.RunRows(t, e.store, runIDOf(t, payload))
	if calls.Load() != 1 || len(rows) != 1 || rows[0].Status != ledger.StatusSucceeded || rows[0].SchemaChange != "additive" ||
		rows[0].PinnedDigest != pinnedDef || rows[0].CurrentDigest != currentDef || rows[0].ParkID != "" {
		t.Fatalf("tool ran %d times; rows %+v", calls.Load(), rows)
	}
}
