package main

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/ledger"
)

// TestCheckForkRefusesEveryOtherOutcome checks the fork demo's verdict:
// only a SUCCEEDED fork whose one row is REUSED from the parent's
// SUCCEEDED call, under the fork's own key, with nothing sent to the
// server, passes.
func TestCheckForkRefusesEveryOtherOutcome(t *testing.T) {
	const parentKey, forkKey = "arn:aws:states:us-east-1:000000000000:execution:toolgate-local_x:parked-1/1", "arn:aws:states:us-east-1:000000000000:execution:toolgate-local_x:fork-parked-1/1"
	parked := ledger.Row{Status: ledger.StatusParked, IdempotencyKey: parentKey}
	done := ledger.Row{Status: ledger.StatusSucceeded, IdempotencyKey: parentKey}
	reused := ledger.Row{Status: ledger.StatusReused, IdempotencyKey: forkKey, ReusedFrom: parentKey}
	ok := &runner.Outcome{Status: "SUCCEEDED"}
	parent := []ledger.Row{parked, done}
	if err := checkFork(ok, parent, []ledger.Row{reused}, nil); err != nil {
		t.Fatalf("the demo's own outcome: %v", err)
	}
	ran := ledger.Row{Status: ledger.StatusSucceeded, IdempotencyKey: forkKey}
	elsewhere := reused
	elsewhere.ReusedFrom = forkKey
	underParent := reused
	underParent.IdempotencyKey = parentKey
	for _, c := range []struct {
		name    string
		outcome *runner.Outcome
		fork    []ledger.Row
		sent    []mcpserver.Call
		want    string
	}{
		{"fork failed", &runner.Outcome{Status: "FAILED", Error: "TOOL_PERMISSION_DENIED"}, []ledger.Row{reused}, nil, "ended FAILED"},
		{"the call ran", ok, []ledger.Row{ran}, []mcpserver.Call{{Tool: "lookup_customer"}}, "not REUSED"},
		{"reused from elsewhere", ok, []ledger.Row{elsewhere}, nil, "not REUSED"},
		{"under the parent's key", ok, []ledger.Row{underParent}, nil, "under the parent's key"},
		{"no rows", ok, nil, nil, "0 rows"},
		{"sent anyway", ok, []ledger.Row{reused}, []mcpserver.Call{{Tool: "lookup_customer"}}, "received 1"},
	} {
		err := checkFork(c.outcome, parent, c.fork, c.sent)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
}
