package dispatch

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// Digests of a pinned and of a changed definition, as a park records them.
const (
	pinnedDef  = "sha256:aa00000000000000000000000000000000000000000000000000000000000000"
	currentDef = "sha256:bb00000000000000000000000000000000000000000000000000000000000000"
)

// putPark writes park id's item as review-request records it and
// review-decision decides it (the attributes the dispatcher reads).
func putPark(t *testing.T, e *env, id string, status park.Status, runID, key, toolName string) {
	t.Helper()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	_, err := e.db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(e.store.Table()), Item: map[string]types.AttributeValue{
		table.PK: s(table.Park.Key(id)), table.SK: s(table.Park.SKValue), "status": s(string(status)), "run_id": s(runID),
		"idempotency_key": s(key), "tool": s(toolName), "cause": s(string(park.SchemaChanged)),
		"pinned_digest": s(pinnedDef), "current_digest": s(currentDef), "task_token": s("token-never-read"),
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// withParks gives the dispatcher its ledger store, sealed with the
// function's key, as its Parks, as a tool function's main does.
func withParks(e *env) func(*Deps) {
	return func(d *Deps) { d.Parks = d.Ledger.(*ledger.Store) }
}

// approvedCheck is a check that passes and keeps the ApprovedDigest it
// was given.
type approvedCheck struct{ digest atomic.Value }

func (c *approvedCheck) check(ctx context.Context, call *toolcall.Call) error {
	c.digest.Store(call.ApprovedDigest)
	return nil
}

// A call sent again under its own approved park reads the park once,
// gives the check the definition approved, runs, and its attempt records
// the park and both digests.
func TestACallSentUnderItsApprovedParkRuns(t *testing.T) {
	e := newEnv(t)
	ts := mcpToolset(t, e)
	c := &approvedCheck{}
	var calls atomic.Int64
	d := e.dispatcher(t, "", echoSend(&calls), func(cfg *Config) { cfg.Mode, cfg.Check = MCPTools, c.check }, withParks(e))
	payload := envelopeFor("crm.create_ticket", ts.ID, "", 2, `{"text":"x"}`)
	runID := runIDOf(t, payload)
	id := park.ID(table.Row.Key(runID), "CALL#x")
	putPark(t, e, id, park.StatusApproved, runID, runID+"/2", "crm.create_ticket")
	// The toolset is loaded, and cached, by a call before.
	if _, err := d.Handle(context.Background(), envelopeFor("crm.create_ticket", ts.ID, "", 1, `{"text":"x"}`)); err != nil {
		t.Fatal(err)
	}
	calls.Store(0)
	e.db.reset()
	if _, err := d.Handle(context.Background(), withParkID(payload, `"`+id+`"`)); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 || c.digest.Load() != currentDef {
		t.Fatalf("tool ran %d times; the check was given %q", calls.Load(), c.digest.Load())
	}
	if e.db.gets.Load() != 1 {
		t.Fatalf("%d GetItems, want the park's one", e.db.gets.Load())
	}
	rows := ledgertest.RunRows(t, e.store, runID)
	if len(rows) != 1 || rows[0].Status != ledger.StatusSucceeded || rows[0].ParkID != id || rows[0].PinnedDigest != pinnedDef || rows[0].CurrentDigest != currentDef {
		t.Fatalf("rows %+v", rows)
	}
}

// A resumed park (credentials) sends the call again with no definition
// approved.
func TestACallSentUnderItsResumedParkRuns(t *testing.T) {
	e := newEnv(t)
	ts := mcpToolset(t, e)
	c := &approvedCheck{}
	d := e.dispatcher(t, "", echoSend(new(atomic.Int64)), func(cfg *Config) { cfg.Mode, cfg.Check = MCPTools, c.check }, withParks(e))
	payload := envelopeFor("crm.create_ticket", ts.ID, "", 1, `{"text":"x"}`)
	runID := runIDOf(t, payload)
	id := park.ID(table.Row.Key(runID), "CALL#y")
	putPark(t, e, id, park.StatusResumed, runID, runID+"/1", "crm.create_ticket")
	if _, err := d.Handle(context.Background(), withParkID(payload, `"`+id+`"`)); err != nil {
		t.Fatal(err)
	}
	if c.digest.Load() != "" {
		t.Fatalf("a resumed park approved %q", c.digest.Load())
	}
	if rows := ledgertest.RunRows(t, e.store, runID); len(rows) != 1 || rows[0].ParkID != id || rows[0].CurrentDigest != "" {
		t.Fatalf("rows %+v", rows)
	}
}

// A call that names a park it may not use is refused before its check
// and claim: TOOL_PERMISSION_DENIED saying why, a REFUSED row with
// refusal_reason park-refused, the tool not run.
func TestACallUnderAParkItMayNotUseIsRefused(t *testing.T) {
	e := newEnv(t)
	ts := mcpToolset(t, e)
	for _, c := range []struct {
		name   string
		status park.Status
		put    bool
		other  string // the park's run id instead of the call's
		says   string
	}{
		{"no such park", "", false, "", "does not exist"},
		{"still parked", park.StatusParked, true, "", "not decided yet"},
		{"rejected", park.StatusRejected, true, "", "is REJECTED"},
		{"timed out", park.StatusTimedOut, true, "", "is TIMED_OUT"},
		{"another run's", park.StatusApproved, true, "arn:aws:states:us-east-1:000000000000:execution:toolgate-test:other", "another call"},
	} {
		t.Run(c.name, func(t *testing.T) {
			check := &approvedCheck{}
			var calls atomic.Int64
			d := e.dispatcher(t, "", echoSend(&calls), func(cfg *Config) { cfg.Mode, cfg.Check = MCPTools, check.check }, withParks(e))
			payload := envelopeFor("crm.create_ticket", ts.ID, "", 1, `{"text":"x"}`)
			runID := runIDOf(t, payload)
			id := park.ID(table.Row.Key(runID), "CALL#z")
			if c.put {
				parkRun := runID
				if c.other != "" {
					parkRun = c.other
				}
				putPark(t, e, id, c.status, parkRun, parkRun+"/1", "crm.create_ticket")
			}
			_, err := d.Handle(context.Background(), withParkID(payload, `"`+id+`"`))
			if codeOf(t, err) != string(tool.PermissionDenied) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("answer %v, want TOOL_PERMISSION_DENIED saying %q", err, c.says)
			}
			if calls.Load() != 0 || check.digest.Load() != nil {
				t.Fatalf("the tool ran %d times, the check %v", calls.Load(), check.digest.Load())
			}
			rows := ledgertest.RunRows(t, e.store, runID)
			if len(rows) != 1 || rows[0].Status != ledger.StatusRefused || rows[0].Reason != ReasonParkRefused {
				t.Fatalf("rows %+v", rows)
			}
		})
	}
}

// park_id null, the steady state of a parkable step, reads no park: the
// same requests as a call without the member.
func TestANullParkIDReadsNoPark(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls), withParks(e))
	count := func(payload []byte) int64 {
		e.db.reset()
		if _, err := d.Handle(context.Background(), payload); err != nil {
			t.Fatal(err)
		}
		return e.db.puts.Load() + e.db.gets.Load() + e.db.updates.Load() + e.db.queries.Load()
	}
	count(envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hi"}`)) // loads the toolset
	without := count(envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hi"}`))
	null := count(withParkID(envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hi"}`), "null"))
	if without != null || e.db.gets.Load() != 0 {
		t.Fatalf("%d requests with park_id null, %d without (%d GetItems)", null, without, e.db.gets.Load())
	}
}

// A call sent again under a decided park asks the credential resolver
// for a fresh read (credential.Request.Fresh): a resumed credentials park
// waited for a new credential, which a cached read could hide; a call
// without a park, or with park_id null, asks for the cached one.
func TestACallSentUnderAParkReadsItsCredentialAfresh(t *testing.T) {
	e := newEnv(t)
	ts := credToolset(t, e)
	r := &resolver{cred: &credential.Credential{Scope: credential.ScopeToolset, Version: 2}}
	d := credDispatcher(t, e, r, nil, echoSend(new(atomic.Int64)))
	d.parks = e.store
	first := envelopeFor("crm.create_ticket", ts.ID, "", 1, `{"text":"x"}`)
	if _, err := d.Handle(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	payload := envelopeFor("crm.create_ticket", ts.ID, "", 2, `{"text":"x"}`)
	runID := runIDOf(t, payload)
	id := park.ID(table.Row.Key(runID), "CALL#z")
	putPark(t, e, id, park.StatusResumed, runID, runID+"/2", "crm.create_ticket")
	if _, err := d.Handle(context.Background(), withParkID(payload, `"`+id+`"`)); err != nil {
		t.Fatal(err)
	}
	asked := r.asked()
	if len(asked) != 2 || asked[0].Fresh || !asked[1].Fresh {
		t.Fatalf("the resolver was asked %+v, want a cached read, then a fresh one for the call under park %s", asked, id)
	}
}

// outputCheck is a check that passes and, like the MCP check under an
// approved definition, hands back that definition's output schema.
type outputCheck struct{ schema json.RawMessage }

func (c outputCheck) check(ctx context.Context, call *toolcall.Call) error {
	if call.ApprovedDigest != "" {
		call.ApprovedOutputSchema = c.schema
	}
	return nil
}

// A call sent under an approved definition reads its result against that
// definition's output schema, which the check hands back, not the pinned
// one: an approved schema nothing matches ({"not": {}}) fails the result
// TOOL_OUTPUT_INVALID, while the same tool's calls outside the park pass.
func TestACallUnderAnApprovedDefinitionIsValidatedAgainstItsOutputSchema(t *testing.T) {
	e := newEnv(t)
	ts := mcpToolset(t, e)
	var calls atomic.Int64
	d := e.dispatcher(t, "", echoSend(&calls), func(cfg *Config) {
		cfg.Mode, cfg.Check = MCPTools, outputCheck{schema: json.RawMessage(`{"not": {}}`)}.check
	}, withParks(e))
	if out, err := d.Handle(context.Background(), envelopeFor("crm.create_ticket", ts.ID, "", 1, `{"text":"x"}`)); err != nil || strings.Contains(string(out), "errorType") {
		t.Fatalf("a call outside the park: %s, %v", out, err)
	}
	payload := envelopeFor("crm.create_ticket", ts.ID, "", 2, `{"text":"x"}`)
	runID := runIDOf(t, payload)
	id := park.ID(table.Row.Key(runID), "CALL#x")
	putPark(t, e, id, park.StatusApproved, runID, runID+"/2", "crm.create_ticket")
	_, err := d.Handle(context.Background(), withParkID(payload, `"`+id+`"`))
	if err == nil || !strings.Contains(err.Error(), string(tool.OutputInvalid)) || !strings.Contains(err.Error(), "the output schema of the definition approved for this call") {
		t.Fatalf("the call under the approved definition: %v, want %s against the approved output schema", err, tool.OutputInvalid)
	}
}
