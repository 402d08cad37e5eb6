package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/tools.md: "An invalid Solution is a successful call with valid:
// false; only a missing or oversized (over 1 MiB) input is
// TOOL_INPUT_INVALID." A 20 KB Solution with a few hundred mistakes is
// neither missing nor oversized, yet its diagnostics exceed the
// dispatcher's 64 KiB inline limit and the call fails.
func TestValidatorManyDiagnosticsIsStillAResult(t *testing.T) {
	t.Parallel()
	v := startDirectValidator(t, nil)
	store, dynamoEndpoint, cliEnv, fn := v.store, v.dynamo, v.cli, v.fn
	var b strings.Builder
	b.WriteString("solution: many\nversion: 1\nsteps:\n")
	for i := range 300 {
		fmt.Fprintf(&b, "  - id: s%d\n    tool: no-such-tool\n", i)
	}
	in, _ := json.Marshal(map[string]string{"solution": b.String()})
	p := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(p, in, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("solution is %d bytes", b.Len())
	if code, _, errs := cliEnv.run("toolset", "register", "--tool", "workflow-validator", "--endpoint", dynamoEndpoint, "--table", store.Table()); code != ExitOK {
		t.Fatal(errs)
	}
	code, out, errs := cliEnv.run("invoke", "workflow-validator", "--endpoint", fn.Endpoint(), "--as", "operator", "--dynamodb-endpoint", dynamoEndpoint,
		"--table", store.Table(), "--input", p)
	if code != ExitOK {
		t.Fatalf("invalid Solution of %d bytes: exit %d, want 0 with valid:false\n%.300s", b.Len(), code, errs)
	}
	var res struct{ Valid bool }
	if json.Unmarshal([]byte(out), &res) != nil || res.Valid {
		t.Fatalf("output %.300s", out)
	}
}

// `--toolset` and `--fetch-host` exclude each other ("the toolset pins its
// hosts"), but a toolset_id inside an envelope file silently wins over
// --fetch-host: the hosts the user asked for are dropped and the call goes
// out anyway. It should be the same misuse (exit 2) before any call.
func TestInvokeEnvelopeToolsetWithFetchHostIsMisuse(t *testing.T) {
	t.Parallel()
	cliEnv := environ{"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y", "AWS_REGION": "us-east-1"}
	p := filepath.Join(t.TempDir(), "env.json")
	env := `{"toolset_id": "ts_00000000000000000000000000000000", "input": {"url": "https://api.example.com/x"}}`
	if err := os.WriteFile(p, []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	// 127.0.0.1:1 refuses connections: nothing is reached either way.
	code, _, errs := cliEnv.run("invoke", "structured-data-fetch", "--input", p, "--fetch-host", "api.example.com", "--endpoint", "http://127.0.0.1:1")
	if code != ExitMisuse {
		t.Fatalf("envelope toolset_id with --fetch-host: exit %d, want %d (misuse)\n%s", code, ExitMisuse, errs)
	}
}
