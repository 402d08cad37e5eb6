package cli

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
)

// `toolgate invoke` against the real workflow-validator bootstrap under the
// RIE, with the ledger on dynalite: a valid and an invalid Solution are both
// successful calls; an empty one is TOOL_INPUT_INVALID; each call is on the
// ledger.
func TestInvokeWorkflowValidator(t *testing.T) {
	t.Parallel()
	v := startDirectValidator(t, nil)
	store, dynamoEndpoint, cliEnv, fn := v.store, v.dynamo, v.cli, v.fn
	dir := t.TempDir()
	write := func(name string, v any) string {
		b, _ := json.Marshal(v)
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o644)
		return p
	}
	good, _ := os.ReadFile(filepath.Join(solutions, "newsletter.yaml"))
	bad, _ := os.ReadFile(filepath.Join(solutions, "refuse-no-review.yaml"))
	base := []string{"invoke", "workflow-validator", "--endpoint", fn.Endpoint(), "--as", "operator", "--dynamodb-endpoint", dynamoEndpoint, "--table", store.Table()}

	// The tool's catalog toolset is not registered: invoke stops before
	// any write and names the command the deployment's operator runs.
	unregistered := map[string]any{"run_id": "run-invoke-unregistered", "input": map[string]string{"solution": string(good)}}
	code, out, errs := cliEnv.run(append(base, "--input", write("unregistered.json", unregistered))...)
	wantCmd := "toolgate toolset register --endpoint " + dynamoEndpoint + " --table " + store.Table() + " --tool workflow-validator"
	if code != ExitErrors || !strings.Contains(errs, "is not registered") || !strings.Contains(errs, wantCmd) {
		t.Fatalf("unregistered toolset: exit %d, want 1 naming %q\n%s%s", code, wantCmd, out, errs)
	}
	if rows, err := store.RunRows(t.Context(), "run-invoke-unregistered"); err != nil || len(rows) != 0 {
		t.Fatalf("an unregistered toolset's call wrote rows %+v %v", rows, err)
	}
	if code, out, errs := cliEnv.run(strings.Fields(wantCmd)[1:]...); code != ExitOK || !strings.Contains(out, "registered ts_") {
		t.Fatalf("%s: exit %d\n%s%s", wantCmd, code, out, errs)
	}

	code, out, errs = cliEnv.run(append(base, "--input", write("good.json", map[string]string{"solution": string(good)}))...)
	var res struct {
		Valid       bool
		ToolsetID   string `json:"toolset_id"`
		Diagnostics []any
	}
	if code != ExitOK || json.Unmarshal([]byte(out), &res) != nil || !res.Valid || !strings.HasPrefix(res.ToolsetID, "ts_") {
		t.Fatalf("valid Solution: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = cliEnv.run(append(base, "--input", write("bad.json", map[string]string{"solution": string(bad)}))...)
	if code != ExitOK || json.Unmarshal([]byte(out), &res) != nil || res.Valid || len(res.Diagnostics) != 1 {
		t.Fatalf("invalid Solution: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = cliEnv.run(append(base, "--input", write("empty.json", map[string]string{"solution": ""}))...)
	if code != ExitErrors || !strings.HasPrefix(errs, "TOOL_INPUT_INVALID: ") {
		t.Fatalf("empty Solution: exit %d\n%s%s", code, out, errs)
	}
	// A whole envelope with a fixed run id in the caller's namespace: the
	// ledger shows the call. A run id outside it is refused.
	runID := lane.DirectRunPrefix(local.LocalPrincipal("operator")) + "run-invoke-test"
	env := map[string]any{"run_id": runID, "seq": 3, "input": map[string]string{"solution": string(good)}}
	if code, out, errs := cliEnv.run(append(base, "--input", write("env.json", env))...); code != ExitOK {
		t.Fatalf("envelope: exit %d\n%s%s", code, out, errs)
	}
	squat := map[string]any{"run_id": "arn:aws:states:us-east-1:000000000000:execution:sm:run-1", "input": map[string]string{"solution": string(good)}}
	if code, out, errs := cliEnv.run(append(base, "--input", write("squat.json", squat))...); code != ExitErrors || !strings.Contains(errs, "TOOL_PERMISSION_DENIED") {
		t.Fatalf("an execution's run id: exit %d\n%s%s", code, out, errs)
	}
	rows, err := store.RunRows(t.Context(), runID)
	if err != nil || len(rows) != 1 || rows[0].Seq != "3" || rows[0].Status != "SUCCEEDED" || rows[0].Tool != "workflow-validator" {
		t.Fatalf("ledger rows %+v %v", rows, err)
	}
	// Misuse.
	if code, _, _ := cliEnv.run("invoke", "send-slack-message", "--input", write("x.json", map[string]string{})); code != ExitMisuse {
		t.Fatalf("unknown tool: exit %d", code)
	}
	if code, _, _ := cliEnv.run("invoke", "workflow-validator", "--toolset", "ts_x", "--fetch-host", "a.example", "--input", write("y.json", map[string]string{})); code != ExitMisuse {
		t.Fatalf("--toolset with --fetch-host: exit %d", code)
	}
}

// directValidator is the real workflow-validator bootstrap under the RIE
// on the direct lane, with the ledger on the shared dynalite table and a
// caller verifier: what a `toolgate invoke` test calls.
type directValidator struct {
	fn     *local.Process
	store  *ledger.Store
	dynamo string  // the DynamoDB endpoint
	cli    environ // the CLI's environment: local AWS and the callers' keys
}

// startDirectValidator starts it for t, with more in the function's
// environment.
func startDirectValidator(t *testing.T, more map[string]string) directValidator {
	t.Helper()
	store, flags := ledgerEnv(t)
	callers := localtest.StartCallers(t)
	env := map[string]string{dispatch.EnvTable: store.Table(), "AWS_ENDPOINT_URL_DYNAMODB": flags[1], "TOOLGATE_LANE": "direct"}
	maps.Copy(env, more)
	fn := localtest.RIE(t, "workflow-validator", localtest.Bootstrap(t, "../../functions/workflow-validator"), 30*time.Second, callers.Env(env))
	return directValidator{fn: fn, store: store, dynamo: flags[1], cli: localAWS().with(callers.CLIEnv())}
}
