package main

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/mcpmeta"
	"github.com/toolgate/toolgate/shared/park"
)

// TestCheckParkedCallRefusesEveryOtherOutcome checks the parked-call
// demo's verdict: only a SUCCEEDED run with one PARKED and one SUCCEEDED
// row under the park's key, the latter naming the park, and one call the
// server received under that row's external key passes.
func TestCheckParkedCallRefusesEveryOtherOutcome(t *testing.T) {
	const key, ext = "arn:aws:states:us-east-1:000000000000:execution:toolgate-local_x:r/1", "abc/1"
	p := park.View{ParkID: "pk_aaaaaaaaaaaaaaaaaaaaaaaaaa", IdempotencyKey: key}
	parked := ledger.Row{Status: ledger.StatusParked, IdempotencyKey: key}
	sent := ledger.Row{Status: ledger.StatusSucceeded, IdempotencyKey: key, ExternalKey: ext, ParkID: p.ParkID}
	call := mcpserver.Call{Tool: "lookup_customer", Meta: map[string]any{mcpmeta.IdempotencyKey: ext}}
	ok := &runner.Outcome{Status: "SUCCEEDED"}
	if err := checkParkedCall(ok, []ledger.Row{parked, sent}, []mcpserver.Call{call}, p); err != nil {
		t.Fatalf("the demo's own outcome: %v", err)
	}
	other := sent
	other.ParkID = ""
	twice := sent
	twice.IdempotencyKey = key + "0"
	wrongKey := call
	wrongKey.Meta = map[string]any{mcpmeta.IdempotencyKey: "other/1"}
	for _, c := range []struct {
		name    string
		outcome *runner.Outcome
		rows    []ledger.Row
		calls   []mcpserver.Call
		want    string
	}{
		{"run failed", &runner.Outcome{Status: "FAILED", Error: "TOOL_PERMISSION_DENIED"}, []ledger.Row{parked, sent}, []mcpserver.Call{call}, "ended FAILED"},
		{"never parked", ok, []ledger.Row{sent}, []mcpserver.Call{call}, "0 PARKED"},
		{"another key", ok, []ledger.Row{parked, sent, twice}, []mcpserver.Call{call, call}, "3 rows"},
		{"row names no park", ok, []ledger.Row{parked, other}, []mcpserver.Call{call}, "names park"},
		{"sent twice", ok, []ledger.Row{parked, sent}, []mcpserver.Call{call, call}, "received 2"},
		{"another key sent", ok, []ledger.Row{parked, sent}, []mcpserver.Call{wrongKey}, `"other/1"`},
	} {
		err := checkParkedCall(c.outcome, c.rows, c.calls, p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
}
