package stack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/shared/externalkey"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
)

const reusedName = `solution: e2e-reuse
version: 1
policy: {fetch_hosts: ["DATA"]}
steps:
  - id: fetch
    tool: structured-data-fetch
    with: {url: "http://DATA/reuse.json"}
`

// An execution whose name an earlier execution had (Step Functions
// accepts a name again 90 days after its execution closed) meets that
// execution's call item under its first key: its tool call is refused,
// the tool never runs, the old record is never replayed
// (docs/ledger.md, "Execution names must not be reused"). The local
// endpoint starts a name once, so the earlier execution's item is
// written into the ledger table first, 91 days old, as a dispatcher
// would have left it.
func TestReusedExecutionNameIsRefused(t *testing.T) {
	var hits atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/reuse.json", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, `{"title":"fetched","count":1}`)
	})
	e := sharedEnv(t)
	e.route(t, "/reuse.json", mux)
	e.publish(t, "e2e-reuse", reusedName)

	t.Run("a fresh name runs the call, run_started_at and all", func(t *testing.T) {
		run := e.start(t, "e2e-reuse", map[string]any{})
		if out := e.finish(t, run); out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
		}
		if hits.Load() != 1 {
			t.Fatalf("the tool fetched %d times", hits.Load())
		}
	})

	t.Run("a reused name is refused at its first call", func(t *testing.T) {
		name := fresh("reused-name")
		run := "arn:aws:states:us-east-1:000000000000:execution:toolgate-local_e2e-reuse:" + name
		then := time.Now().Add(-91 * 24 * time.Hour)
		// The earlier execution's record, sealed by structured-data-fetch
		// itself (its key from the stack's SSM stand-in): only the time
		// tells it from this execution's.
		sec, err := e.st.LedgerSecrets(context.Background(), "structured-data-fetch")
		if err != nil {
			t.Fatal(err)
		}
		key, err := seal.NewKey(sec.MAC)
		if err != nil {
			t.Fatal(err)
		}
		ext, err := externalkey.New(sec.ExternalKey, run, "1") // the same run id's, as its claim stored it
		if err != nil {
			t.Fatal(err)
		}
		old := ledger.New(local.DynamoDB(e.st.Dynamo.Endpoint()), stack.Table).WithClock(func() time.Time { return then }).WithMAC(key)
		rec := &ledger.Record{Key: run + "/1", ExternalKey: ext, Step: "fetch", Tool: "structured-data-fetch", ToolsetID: "ts_00000000000000000000000000000000",
			InputDigest: "sha256:" + strings.Repeat("0", 63) + "1", LeaseUntil: then.Add(time.Minute), StartedAt: then} // another input's
		ctx := context.Background()
		if claimed, _, err := old.Claim(ctx, rec); err != nil || !claimed {
			t.Fatalf("the earlier execution's claim: %v %v", claimed, err)
		}
		result := json.RawMessage(`{"data":{"title":"the earlier execution's","count":9}}`)
		if ok, err := old.Finish(ctx, rec.Key, rec.Token, ledger.StateCompleted, result,
			&ledger.Row{Attempt: 1, Status: ledger.StatusSucceeded, Step: rec.Step, Tool: rec.Tool, ToolsetID: rec.ToolsetID, InputDigest: rec.InputDigest,
				ExternalKey: rec.ExternalKey, StartedAt: then, EndedAt: then}); err != nil || !ok {
			t.Fatalf("the earlier execution's finish: %v %v", ok, err)
		}

		before := hits.Load()
		if out, code := e.toolgate(t, "run", "e2e-reuse", "--input", writeInput(t, e, `{}`), "--name", name,
			"--endpoint", e.st.SFN.Endpoint(), "--stage", stack.Stage, "--params", e.st.ParamsFile, "--as", starter); code != 0 {
			t.Fatalf("run --name %s: exit %d %s", name, code, out)
		}
		out := e.finish(t, run)
		if out.Status != "FAILED" || out.Error != string(tool.PermissionDenied) || !strings.Contains(out.Cause, "execution names must not be reused") {
			t.Fatalf("run %s: %s %s, want FAILED %s naming the reused execution name", out.Status, out.Error, out.Cause, tool.PermissionDenied)
		}
		if hits.Load() != before {
			t.Fatalf("the tool fetched %d times for the reused name", hits.Load()-before)
		}
		var refused int
		for _, r := range e.rows(t, run) {
			if r.Status == ledger.StatusRefused && r.ErrorCode == string(tool.PermissionDenied) && r.Attempt == 0 {
				refused++
			}
			if r.Status == ledger.StatusDeduplicated {
				t.Fatalf("the earlier execution's result was replayed: %+v", r)
			}
		}
		if refused != 1 {
			t.Fatalf("%d REFUSED rows, want 1: %+v", refused, e.rows(t, run))
		}
	})
}

// writeInput writes a run's input file and returns its path.
func writeInput(t *testing.T, e *env, input string) string {
	t.Helper()
	path := filepath.Join(e.dir, fmt.Sprintf("input-%d.json", time.Now().UnixNano()))
	if err := os.WriteFile(path, []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
