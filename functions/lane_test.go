package functions_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Before lanes, an operator could call an ungated tool on the direct lane
// with an execution's run id and take that execution's idempotency key.
// Now a direct-lane call proves its caller (a proof bound to its key and
// input), and its run id must be in the caller's namespace
// "direct/<caller ARN>/", which no execution's run id (an ARN) can be; the
// sfn lane refuses proofs and direct run ids. Refused calls claim nothing.
func TestDirectLaneCannotTakeAnExecutionsKey(t *testing.T) {
	p, db, table := localtest.SharedTable(t, "toolgate-lanes")
	store := ledger.New(db, table)
	ts, err := toolset.FromCatalog(catalog.Default(), []string{"workflow-validator"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.RegisterToolset(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	callers := localtest.StartCallers(t)
	env := func(l string) map[string]string {
		return callers.Env(map[string]string{dispatch.EnvTable: store.Table(), "AWS_ENDPOINT_URL_DYNAMODB": p.Endpoint(), "TOOLGATE_LANE": l})
	}
	bootstrap := localtest.Bootstrap(t, "./workflow-validator")
	direct := localtest.RIE(t, "workflow-validator", bootstrap, 30*time.Second, env("direct"))
	viaSFN := localtest.RIE(t, "workflow-validator", bootstrap, 30*time.Second, env("sfn"))
	noLane := localtest.RIE(t, "workflow-validator", bootstrap, 30*time.Second, env(""))

	input := map[string]any{"solution": "solution: s\nversion: 1\nsteps:\n  - id: a\n    pass: {x: 1}\n"}
	raw, _ := json.Marshal(input)
	_, digest, err := tool.InputDigest(raw)
	if err != nil {
		t.Fatal(err)
	}
	envelope := func(runID string, proofAs string, bindKey string) map[string]any {
		key := runID + "/1"
		m := map[string]any{"tool": "workflow-validator", "toolset_id": ts.ID, "run_id": runID, "seq": 1, "step": "validate",
			"idempotency_key": key, "attempt": 1, "tolerate_duplicates": false, "input": input}
		if proofAs != "" {
			if bindKey == "" {
				bindKey = key
			}
			m["caller_proof"] = callers.Proof(t, proofAs, caller.Binding{Action: caller.ActionInvoke, Target: bindKey, InputDigest: digest})
		}
		return m
	}
	execution := fmt.Sprintf("arn:aws:states:us-east-1:000000000000:execution:toolgate-x:run-%d", time.Now().UnixNano())
	mine := lane.DirectRunPrefix(local.LocalPrincipal("operator")) + "invoke-1"
	// A direct call is never a child run: naming a parent would make an
	// execution look like it started the operator's call.
	withParent := envelope(mine, "operator", "")
	withParent["parent_run_id"] = execution
	for name, c := range map[string]struct {
		fn  *local.Process
		env map[string]any
	}{
		"an execution's run id, with a valid proof": {direct, envelope(execution, "operator", "")},
		"another caller's namespace":                {direct, envelope(lane.DirectRunPrefix(local.LocalPrincipal("someone"))+"x", "operator", "")},
		"no proof":                                  {direct, envelope(mine, "", "")},
		"a proof bound to another key":              {direct, envelope(mine, "operator", mine+"0")},
		"a parent run id on the direct lane":        {direct, withParent},
		"a proof on the sfn lane":                   {viaSFN, envelope(execution, "operator", "")},
		"a direct run id on the sfn lane":           {viaSFN, envelope(mine, "", "")},
		"an invocation through no alias":            {noLane, envelope(execution, "", "")},
	} {
		if _, code, msg := call(t, c.fn, c.env); code != string(tool.PermissionDenied) {
			t.Errorf("%s: %s %s, want %s", name, code, msg, tool.PermissionDenied)
		} else if strings.Contains(msg, "X-Amz-Signature") {
			t.Errorf("%s: the message shows the proof: %s", name, msg)
		}
	}
	if _, err := store.Record(context.Background(), execution+"/1"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("the execution's key was claimed by a refused call: %v", err)
	}
	// A caller not proven for a run writes nothing under it, not even a
	// REFUSED row.
	for _, run := range []string{execution, lane.DirectRunPrefix(local.LocalPrincipal("someone")) + "x", mine} {
		if rows, err := store.RunRows(context.Background(), run); err != nil || len(rows) != 0 {
			t.Fatalf("refused calls wrote %d rows under %s (%v)", len(rows), run, err)
		}
	}
	if out, code, msg := call(t, direct, envelope(mine, "operator", "")); code != "" {
		t.Fatalf("a call in the operator's own namespace: %s %s", code, msg)
	} else if !strings.Contains(string(out), "valid") {
		t.Fatalf("answer %s", out)
	}
	if out, code, msg := call(t, viaSFN, envelope(execution, "", "")); code != "" {
		t.Fatalf("the execution's own call on the sfn lane: %s %s %s", out, code, msg)
	}
}
