package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/toolset"
)

// The CLI talks to dynalite through the standard AWS configuration; the
// environment carries the local stand-in's fake credentials.
func ledgerEnv(t *testing.T) (*ledger.Store, []string) {
	p := localtest.Dynalite(t)
	t.Setenv("AWS_ACCESS_KEY_ID", local.FakeAccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", local.FakeSecretAccessKey)
	t.Setenv("AWS_REGION", local.Region)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	db := local.DynamoDB(p.Endpoint())
	if err := ledger.CreateTable(context.Background(), db, "toolgate-cli"); err != nil {
		t.Fatal(err)
	}
	return ledger.New(db, "toolgate-cli"), []string{"--endpoint", p.Endpoint(), "--table", "toolgate-cli"}
}

func TestToolsetRegister(t *testing.T) {
	store, flags := ledgerEnv(t)
	dir := t.TempDir()
	for _, f := range []string{"newsletter.yaml", "loop-per-item.yaml"} {
		if code, _, errs := run("compile", filepath.Join(solutions, f), "-o", dir); code != ExitOK {
			t.Fatal(errs)
		}
	}
	code, out, errs := run(append([]string{"toolset", "register"}, append(flags, dir)...)...)
	if code != ExitOK || strings.Count(out, "registered ts_") != 2 || strings.Contains(out, "already") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = run(append([]string{"toolset", "register"}, append(flags, dir)...)...)
	if code != ExitOK || strings.Count(out, "already registered") != 2 {
		t.Fatalf("second registration: exit %d\n%s", code, out)
	}
	_, id, _ := run("toolset", filepath.Join(solutions, "newsletter.yaml"))
	ts, err := store.Toolset(context.Background(), strings.TrimSpace(id))
	if err != nil || len(ts.Tools) != 2 {
		t.Fatalf("stored toolset: %v %v", ts, err)
	}
	// A tampered file registers nothing.
	bad := filepath.Join(t.TempDir(), "x.toolset.json")
	data, _ := os.ReadFile(filepath.Join(dir, "weekly-digest.toolset.json"))
	os.WriteFile(bad, []byte(strings.Replace(string(data), `"review_required": true`, `"review_required": false`, 1)), 0o644)
	if code, _, errs := run(append([]string{"toolset", "register"}, append(flags, bad)...)...); code != ExitErrors || !strings.Contains(errs, "[toolset-digest]") {
		t.Fatalf("tampered: exit %d %s", code, errs)
	}
	// The same weakening with its digest recomputed: refused for the rule
	// it breaks, before anything is written.
	weak, err := toolset.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	tl := weak.Tools["send-email"]
	tl.ReviewRequired = false
	weak.Tools["send-email"] = tl
	weak.ID, _ = weak.ComputeID()
	doc, _ := weak.MarshalIndent()
	os.WriteFile(bad, doc, 0o644)
	if code, _, errs := run(append([]string{"toolset", "register"}, append(flags, bad)...)...); code != ExitErrors || !strings.Contains(errs, "[toolset-review-required]") {
		t.Fatalf("ungated send-email: exit %d %s", code, errs)
	}
	if _, err := store.Toolset(context.Background(), weak.ID); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("the refused toolset was stored: %v", err)
	}
	// A Solution registers the toolset it compiles to; --tool the one-tool
	// toolset toolgate invoke builds.
	code, out, errs = run(append([]string{"toolset", "register"}, append(flags, filepath.Join(solutions, "demo-digest.yaml"))...)...)
	_, demoID, _ := run("toolset", filepath.Join(solutions, "demo-digest.yaml"))
	if code != ExitOK || !strings.Contains(out, "registered "+strings.TrimSpace(demoID)) {
		t.Fatalf("a Solution: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run(append([]string{"toolset", "register", "--tool", "structured-data-fetch", "--fetch-host", "api.example.com"}, flags...)...); code != ExitOK || !strings.Contains(out, "registered ts_") {
		t.Fatalf("--tool: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := run(append([]string{"toolset", "register", "--fetch-host", "api.example.com"}, flags...)...); code != ExitMisuse {
		t.Fatalf("--fetch-host without --tool: exit %d %s", code, errs)
	}
	refused := filepath.Join(solutions, "refuse-no-review.yaml")
	if code, _, errs := run(append([]string{"toolset", "register"}, append(flags, refused)...)...); code != ExitErrors || !strings.Contains(errs, "nothing was registered") {
		t.Fatalf("a refused Solution: exit %d %s", code, errs)
	}
	if code, _, _ := run("toolset", "register", "--table", "toolgate-cli", filepath.Join(dir, "missing.toolset.json")); code != ExitMisuse {
		t.Fatalf("missing file: exit %d", code)
	}
}

func TestLedgerCommand(t *testing.T) {
	store, flags := ledgerEnv(t)
	ctx := context.Background()
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i, st := range []ledger.Status{ledger.FailedStatus, ledger.Succeeded} {
		r := &ledger.Row{RunID: "run-1", Seq: 1, Attempt: i + 1, Step: "fetch", Tool: "structured-data-fetch", ToolsetID: "ts_x",
			IdempotencyKey: "run-1/1", Status: st, StartedAt: start.Add(time.Duration(i) * time.Second), EndedAt: start.Add(time.Duration(i)*time.Second + 5*time.Millisecond)}
		if st == ledger.FailedStatus {
			r.ErrorCode, r.Retryable = "TOOL_UPSTREAM_UNAVAILABLE", true
		}
		if err := store.PutRow(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := run(append([]string{"ledger"}, append(flags, "run-1")...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != ExitOK || len(lines) != 3 || !strings.Contains(lines[1], "TOOL_UPSTREAM_UNAVAILABLE") || !strings.Contains(lines[2], "SUCCEEDED") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = run(append([]string{"ledger", "--json"}, append(flags, "run-1")...)...)
	var rows []ledger.Row
	if code != ExitOK || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 2 || rows[1].Attempt != 2 {
		t.Fatalf("json: exit %d %s", code, out)
	}
	if code, _, _ := run(append([]string{"ledger"}, append(flags, "no-such-run")...)...); code != ExitErrors {
		t.Fatalf("unknown run: exit %d", code)
	}
	t.Setenv(EnvTable, "")
	if code, _, errs := run("ledger", "run-1"); code != ExitMisuse || !strings.Contains(errs, EnvTable) {
		t.Fatalf("no table: exit %d %s", code, errs)
	}
}

// The register command's help says who registers: the deployment's
// operator with the deploy role, since no policy for people writes the
// ledger table.
func TestToolsetRegisterHelpNamesTheOperator(t *testing.T) {
	code, _, errs := run("toolset", "register", "-h")
	if code != ExitMisuse || !strings.Contains(errs, "the deployment's operator runs it with\nthe deploy role") || !strings.Contains(errs, "--tool TOOL") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
}
