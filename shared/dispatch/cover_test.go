package dispatch

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/review/reviewtest"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// otherDef is the digest of a definition changed once more.
const otherDef = "sha256:cc00000000000000000000000000000000000000000000000000000000000000"

// definitionCheck is an MCP check against a server whose definition of
// every tool digests to current (pinnedDef: as pinned). As shared/mcptool's
// Check does, it parks a call whose tool changed, with a *park.Detail of
// both digests, unless the call's approved digest is exactly current.
type definitionCheck struct {
	current  atomic.Value // string
	calls    atomic.Int64
	approved atomic.Int64 // calls it passed under an approved digest
	// refuse, when set, is what it answers a call under the approved
	// digest instead of passing it: an input the approved definition's
	// input schema refuses.
	refuse error
}

func newDefinitionCheck(current string) *definitionCheck {
	c := &definitionCheck{}
	c.current.Store(current)
	return c
}

func (c *definitionCheck) check(ctx context.Context, call *toolcall.Call) error {
	c.calls.Add(1)
	cur := c.current.Load().(string)
	switch {
	case cur == pinnedDef:
		return nil
	case call.ApprovedDigest == cur && c.refuse != nil:
		return c.refuse
	case call.ApprovedDigest == cur:
		c.approved.Add(1)
		return nil
	}
	return tool.Wrap(tool.CallParked, &park.Detail{Cause: park.SchemaChanged, PinnedDigest: pinnedDef, CurrentDigest: cur, ChangedPointers: []string{"/description"}},
		"tool.schema_changed: MCP tool %s was not called: pinned %s, server %s", call.Envelope.Tool, pinnedDef, cur)
}

// approvedRun parks run's call 1 of crm.lookup_customer with d (checked
// by chk against currentDef), approves its park as review-decision
// would, and sends it again under the park: the call runs and records
// the cover of currentDef. It returns the run and the park's id.
func approvedRun(t *testing.T, e *env, d *Dispatcher, ts string) (string, string) {
	t.Helper()
	payload := envelopeFor("crm.lookup_customer", ts, "", 1, `{"text":"x"}`)
	runID := runIDOf(t, payload)
	if _, err := d.Handle(context.Background(), withParkID(payload, "null")); codeOf(t, err) != string(tool.CallParked) {
		t.Fatalf("the first call answered %v, want %s", err, tool.CallParked)
	}
	id := park.ID(table.Row.Key(runID), table.CallSK("1"))
	putPark(t, e, id, park.StatusApproved, runID, runID+"/1", "crm.lookup_customer")
	if _, err := d.Handle(context.Background(), withParkID(payload, `"`+id+`"`)); err != nil {
		t.Fatalf("the call sent again under its approved park: %v", err)
	}
	return runID, id
}

// sealedStore is e's ledger store sealed with key, as a function whose
// key it is writes.
func sealedStore(t *testing.T, e *env, key []byte) *ledger.Store {
	return e.store.WithMAC(mustSealKey(t, key))
}

// An approved definition change covers the later calls of its tool in
// its run: the call sent under its approved park records a cover, and
// each later call whose check would park it for the same definition
// reads that cover with one GetItem, passes its check with that
// definition approved, runs, and its row records the covering park and
// both digests. A loop of calls parks once. A call whose check passes
// reads nothing.
func TestAnApprovedDefinitionCoversTheLaterCallsOfItsToolInTheRun(t *testing.T) {
	e := newEnv(t)
	ts := mcpToolset(t, e)
	chk := newDefinitionCheck(currentDef)
	var calls atomic.Int64
	d := e.dispatcher(t, "", echo(&calls), func(cfg *Config) { cfg.Mode, cfg.Check = MCPTools, chk.check }, withParks(e))
	runID, id := approvedRun(t, e, d, ts.ID)
	c, err := sealedStore(t, e, testMAC).Cover(t.Context(), runID, "crm.lookup_customer", currentDef)
	if err != nil || c.Seal != seal.Valid || c.ParkID != id || c.PinnedDigest != pinnedDef {
		t.Fatalf("the cover %+v (%v), want one sealed by the function for park %s", c, err, id)
	}
	for seq := int64(2); seq <= 4; seq++ {
		e.db.reset()
		before := chk.approved.Load()
		if _, err := d.Handle(context.Background(), withParkID(envelopeFor("crm.lookup_customer", ts.ID, runID, seq, `{"text":"x"}`), "null")); err != nil {
			t.Fatalf("call %d: %v", seq, err)
		}
		if got := e.db.gets.Load(); got != 1 {
			t.Fatalf("call %d made %d GetItems, want the cover's one", seq, got)
		}
		if chk.approved.Load() != before+1 {
			t.Fatalf("call %d's check was not run again with the covered definition approved", seq)
		}
	}
	if calls.Load() != 4 {
		t.Fatalf("the tool ran %d times, want 4", calls.Load())
	}
	parked := 0
	for _, r := range ledgertest.RunRows(t, e.store, runID) {
		switch {
		case r.Status == ledger.StatusParked:
			parked++
		case r.Status != ledger.StatusSucceeded || r.ParkID != id || r.PinnedDigest != pinnedDef || r.CurrentDigest != currentDef:
			t.Errorf("row %+v, want SUCCEEDED under park %s between %s and %s", r, id, pinnedDef, currentDef)
		}
	}
	if parked != 1 {
		t.Fatalf("%d PARKED rows, want the first call's one", parked)
	}
	// The server's definition back as pinned: the check passes, and no
	// cover is read.
	chk.current.Store(pinnedDef)
	e.db.reset()
	if _, err := d.Handle(context.Background(), withParkID(envelopeFor("crm.lookup_customer", ts.ID, runID, 5, `{"text":"x"}`), "null")); err != nil || e.db.gets.Load() != 0 {
		t.Fatalf("a call whose check passes: %v, %d GetItems", err, e.db.gets.Load())
	}
}

// A cover covers its run's calls of its tool under the definition it
// approved, and nothing else: another definition of the tool, another
// tool, or the same tool in another run parks as before.
func TestACoverCoversOnlyItsRunToolAndDefinition(t *testing.T) {
	e := newEnv(t)
	ts := mcpToolset(t, e)
	chk := newDefinitionCheck(currentDef)
	var calls atomic.Int64
	d := e.dispatcher(t, "", echo(&calls), func(cfg *Config) { cfg.Mode, cfg.Check = MCPTools, chk.check }, withParks(e))
	runID, _ := approvedRun(t, e, d, ts.ID)
	ran := calls.Load()
	for _, c := range []struct {
		name, tool, run, def string
		seq                  int64
	}{
		{"another tool", "crm.create_ticket", runID, currentDef, 7},
		{"another definition", "crm.lookup_customer", runID, otherDef, 8},
		{"another run", "crm.lookup_customer", "", currentDef, 9},
	} {
		t.Run(c.name, func(t *testing.T) {
			chk.current.Store(c.def)
			payload := envelopeFor(c.tool, ts.ID, c.run, c.seq, `{"text":"x"}`)
			if _, err := d.Handle(context.Background(), withParkID(payload, "null")); codeOf(t, err) != string(tool.CallParked) {
				t.Fatalf("answer %v, want %s", err, tool.CallParked)
			}
			if calls.Load() != ran {
				t.Fatalf("the tool ran")
			}
			rows, err := e.store.KeyRows(t.Context(), runIDOf(t, payload), tool.Seq(fmt.Sprint(c.seq)))
			if err != nil || len(rows) != 1 || rows[0].Status != ledger.StatusParked || rows[0].ParkID != "" || rows[0].CurrentDigest != c.def {
				t.Fatalf("rows %+v (%v), want one PARKED under no park, current %s", rows, err, c.def)
			}
		})
	}
}

// A cover the function did not write itself approves nothing: one
// without a seal, one sealed with another function's key, another run's
// copied into this run's partition, another definition's moved to this
// definition's sort key, or one of another pinned definition. The call
// parks, its row names no park, and the tool does not run.
func TestAForgedCoverApprovesNothing(t *testing.T) {
	e := newEnv(t)
	ts := mcpToolset(t, e)
	mine, other := sealedStore(t, e, testMAC), sealedStore(t, e, bytes.Repeat([]byte{8}, 32))
	const toolName = "crm.lookup_customer"
	cover := func(runID string) ledger.Cover {
		return ledger.Cover{RunID: runID, Tool: toolName, ParkID: park.ID(table.Row.Key(runID), table.CallSK("1")), PinnedDigest: pinnedDef,
			CurrentDigest: currentDef, DecidedBy: "arn:aws:iam::000000000000:user/starter"}
	}
	// copyCover copies the item of the cover of def in run from to
	// run to's cover of currentDef.
	copyCover := func(t *testing.T, from, def, to string) {
		t.Helper()
		out, err := e.db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(e.store.Table()), Key: map[string]types.AttributeValue{
			table.PK: &types.AttributeValueMemberS{Value: table.Cover.Key(from)}, table.SK: &types.AttributeValueMemberS{Value: table.CoverSK(toolName, def)}}})
		if err != nil || len(out.Item) == 0 {
			t.Fatalf("cover of %s in %s: %v", def, from, err)
		}
		out.Item[table.PK] = &types.AttributeValueMemberS{Value: table.Cover.Key(to)}
		out.Item[table.SK] = &types.AttributeValueMemberS{Value: table.CoverSK(toolName, currentDef)}
		if _, err := e.db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(e.store.Table()), Item: out.Item}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		forge func(t *testing.T, runID string)
	}{
		{"without a seal", func(t *testing.T, runID string) {
			s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
			cv := cover(runID)
			_, err := e.db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(e.store.Table()), Item: map[string]types.AttributeValue{
				table.PK: s(table.Cover.Key(runID)), table.SK: s(table.CoverSK(toolName, currentDef)), "tool": s(toolName),
				"park_id": s(cv.ParkID), "pinned_digest": s(pinnedDef), "current_digest": s(currentDef), "decided_by": s(cv.DecidedBy)}})
			if err != nil {
				t.Fatal(err)
			}
		}},
		{"sealed with another function's key", func(t *testing.T, runID string) {
			if err := other.PutCover(t.Context(), cover(runID)); err != nil {
				t.Fatal(err)
			}
		}},
		{"another run's, copied", func(t *testing.T, runID string) {
			if err := mine.PutCover(t.Context(), cover(runID+"-other")); err != nil {
				t.Fatal(err)
			}
			copyCover(t, runID+"-other", currentDef, runID)
		}},
		{"another definition's, moved", func(t *testing.T, runID string) {
			cv := cover(runID)
			cv.CurrentDigest = otherDef
			if err := mine.PutCover(t.Context(), cv); err != nil {
				t.Fatal(err)
			}
			copyCover(t, runID, otherDef, runID)
		}},
		{"of another pinned definition", func(t *testing.T, runID string) {
			cv := cover(runID)
			cv.PinnedDigest = otherDef
			if err := mine.PutCover(t.Context(), cv); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			chk := newDefinitionCheck(currentDef)
			var calls atomic.Int64
			d := e.dispatcher(t, "", echo(&calls), func(cfg *Config) { cfg.Mode, cfg.Check = MCPTools, chk.check }, withParks(e))
			payload := envelopeFor(toolName, ts.ID, "", 1, `{"text":"x"}`)
			runID := runIDOf(t, payload)
			c.forge(t, runID)
			if _, err := d.Handle(context.Background(), withParkID(payload, "null")); codeOf(t, err) != string(tool.CallParked) {
				t.Fatalf("answer %v, want %s", err, tool.CallParked)
			}
			if calls.Load() != 0 || chk.approved.Load() != 0 {
				t.Fatalf("the tool ran %d times; the check passed %d calls under an approved digest", calls.Load(), chk.approved.Load())
			}
			rows := ledgertest.RunRows(t, e.store, runID)
			if len(rows) != 1 || rows[0].Status != ledger.StatusParked || rows[0].ParkID != "" {
				t.Fatalf("rows %+v, want one PARKED under no park", rows)
			}
		})
	}
}

// A covered call is checked as under the approval itself: an input the
// approved definition's input schema refuses ends it TOOL_INPUT_INVALID,
// unsent, its REFUSED row under no park.
func TestACoveredCallIsCheckedAgainstTheApprovedDefinition(t *testing.T) {
	e := newEnv(t)
	ts := mcpToolset(t, e)
	chk := newDefinitionCheck(currentDef)
	var calls atomic.Int64
	d := e.dispatcher(t, "", echo(&calls), func(cfg *Config) { cfg.Mode, cfg.Check = MCPTools, chk.check }, withParks(e))
	runID, _ := approvedRun(t, e, d, ts.ID)
	chk.refuse = tool.Errorf(tool.InputInvalid, "input does not match the approved input schema of MCP tool crm.lookup_customer: input/text: maxLength")
	if _, err := d.Handle(context.Background(), withParkID(envelopeFor("crm.lookup_customer", ts.ID, runID, 2, `{"text":"x"}`), "null")); codeOf(t, err) != string(tool.InputInvalid) {
		t.Fatalf("answer %v, want %s", err, tool.InputInvalid)
	}
	if calls.Load() != 1 {
		t.Fatalf("the tool ran %d times, want the approved call's once", calls.Load())
	}
	rows, err := e.store.KeyRows(t.Context(), runID, "2")
	if err != nil || len(rows) != 1 || rows[0].Status != ledger.StatusRefused || rows[0].ParkID != "" {
		t.Fatalf("rows %+v (%v), want one REFUSED under no park", rows, err)
	}
}

// A dispatcher whose park store does not seal is refused: its covers
// would cover no call, and it could not tell a forged one.
func TestNewRefusesAnUnsealedParkStore(t *testing.T) {
	e := newEnv(t)
	_, err := New(Config{Mode: OneTool("test-echo"), ExternalKeySecret: testSecret}, Deps{Ledger: sealedStore(t, e, testMAC), Parks: e.store,
		Run: echo(new(atomic.Int64))})
	if err == nil {
		t.Fatal("New accepted an unsealed park store")
	}
}

// A gated call's park is its own reviewers' to decide, never the run's
// starter's (docs/parking.md, "Who may"), so no cover lets a gated call
// go on: a cover recorded under another step's park (decided by that
// step's reviewers, or by the starter where that step had no review)
// would send the call under a definition its reviewers never approved.
// The call parks, for its own reviewers, and nothing runs.
func TestACoverDoesNotLetAGatedCallGoOn(t *testing.T) {
	e := newEnv(t)
	ts := mcpToolset(t, e)
	rs := e.reviews()
	chk := newDefinitionCheck(currentDef)
	var calls atomic.Int64
	d := e.dispatcher(t, "", gatedTool(&calls), func(cfg *Config) { cfg.Mode, cfg.Check = MCPTools, chk.check }, withParks(e))
	const toolName = "crm.gated"
	first := reviewtest.Approve(t, rs, envelopeFor(toolName, ts.ID, "", 1, `{"text":"x"}`))
	runID := runIDOf(t, first)
	if _, err := d.Handle(context.Background(), withParkID(first, "null")); codeOf(t, err) != string(tool.CallParked) {
		t.Fatalf("the first call answered %v, want %s", err, tool.CallParked)
	}
	id := park.ID(table.Row.Key(runID), table.CallSK("1"))
	putPark(t, e, id, park.StatusApproved, runID, runID+"/1", toolName)
	if _, err := d.Handle(context.Background(), withParkID(first, `"`+id+`"`)); err != nil {
		t.Fatalf("the first call sent again under its approved park: %v", err)
	}
	if c, err := sealedStore(t, e, testMAC).Cover(t.Context(), runID, toolName, currentDef); err != nil || c.Seal != seal.Valid {
		t.Fatalf("the cover %+v (%v), want one the approved call recorded", c, err)
	}
	// Another step's gated call of the same tool, approved by its own
	// review of its input.
	other := []byte(strings.Replace(string(envelopeFor(toolName, ts.ID, runID, 2, `{"text":"y"}`)), `"step":"s"`, `"step":"other"`, 1))
	other = reviewtest.Approve(t, rs, other)
	before := calls.Load()
	if _, err := d.Handle(context.Background(), withParkID(other, "null")); codeOf(t, err) != string(tool.CallParked) {
		t.Fatalf("the other step's gated call answered %v, want %s: a cover let it go on", err, tool.CallParked)
	}
	if calls.Load() != before {
		t.Fatal("the gated call ran under a definition its reviewers never approved")
	}
	rows, err := e.store.KeyRows(t.Context(), runID, "2")
	if err != nil || len(rows) != 1 || rows[0].Status != ledger.StatusParked || rows[0].ParkID != "" {
		t.Fatalf("rows %+v (%v), want one PARKED under no park", rows, err)
	}
}
