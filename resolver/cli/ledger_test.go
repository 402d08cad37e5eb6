package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/resolver/cli/cost"
	"github.com/toolgate/toolgate/shared/externalkey"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/toolset"
)

// The CLI talks to dynalite through the standard AWS configuration; its
// environment (localAWS, run's) carries the local stand-in's fake
// credentials.
// The dynalite is the package's one (localtest.SharedTable), the table
// the test's own.
func ledgerEnv(t *testing.T) (*ledger.Store, []string) {
	p, db, table := localtest.SharedTable(t, "toolgate-cli")
	return ledger.New(db, table), []string{"--endpoint", p.Endpoint(), "--table", table}
}

func TestToolsetRegister(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	store, flags := ledgerEnv(t)
	ctx := context.Background()
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i, st := range []ledger.Status{ledger.StatusFailed, ledger.StatusSucceeded} {
		r := &ledger.Row{RunID: "run-1", Seq: "1", Attempt: i + 1, Step: "fetch", Tool: "structured-data-fetch", ToolsetID: "ts_0123456789abcdef0123456789abcdef",
			IdempotencyKey: "run-1/1", Status: st, StartedAt: start.Add(time.Duration(i) * time.Second), EndedAt: start.Add(time.Duration(i)*time.Second + 5*time.Millisecond)}
		if st == ledger.StatusFailed {
			r.ErrorCode, r.Retryable = "TOOL_UPSTREAM_UNAVAILABLE", true
		}
		if err := store.PutRow(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := run(append([]string{"ledger"}, append(flags, "run-1")...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// The rows, then each call's keys (row items of their own: no
	// external key).
	if code != ExitOK || len(lines) != 6 || !strings.Contains(lines[1], "TOOL_UPSTREAM_UNAVAILABLE") || !strings.Contains(lines[2], "SUCCEEDED") ||
		lines[3] != "" || strings.Fields(lines[5])[1] != "run-1/1" || strings.Fields(lines[5])[2] != "-" {
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
	if code, _, errs := run("ledger", "run-1"); code != ExitMisuse || !strings.Contains(errs, EnvTable) {
		t.Fatalf("no table: exit %d %s", code, errs)
	}
}

// passExecution runs a state machine of two Pass states and a Succeed
// state (three state transitions) on a local Step Functions endpoint and
// returns the endpoint and the execution's ARN once it has ended.
func passExecution(t *testing.T) (endpoint, executionARN string) {
	t.Helper()
	p, err := local.StartSFN(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx := t.Context()
	sf := sfn.New(sfn.Options{Region: local.Region, BaseEndpoint: aws.String(p.Endpoint()),
		Credentials: credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")})
	sm, err := sf.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("toolgate-cost"),
		RoleArn:    aws.String("arn:aws:iam::000000000000:role/toolgate-solution"),
		Definition: aws.String(`{"StartAt": "a", "States": {"a": {"Type": "Pass", "Next": "b"}, "b": {"Type": "Pass", "Next": "done"}, "done": {"Type": "Succeed"}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := sf.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: sm.StateMachineArn, Name: aws.String("run-1"), Input: aws.String("{}")})
	if err != nil {
		t.Fatal(err)
	}
	// A poll with a deadline: the execution runs in Step Functions Local.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		d, err := sf.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: ex.ExecutionArn})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != sfntypes.ExecutionStatusRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the execution is still running after 20 s")
		}
	}
	return p.Endpoint(), aws.ToString(ex.ExecutionArn)
}

// putCostRows writes a run's rows: a fetch, its replay, and a send-email,
// which the catalog gates.
func putCostRows(t *testing.T, store *ledger.Store, runID string) {
	t.Helper()
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i, r := range []ledger.Row{
		{Seq: "1", Attempt: 1, Step: "fetch", Tool: "structured-data-fetch", Status: ledger.StatusSucceeded, DurationMS: 200, MemoryMB: 512, InputBytes: 80, OutputBytes: 300},
		{Seq: "1", Attempt: 1, Step: "fetch", Tool: "structured-data-fetch", Status: ledger.StatusDeduplicated, DurationMS: 10, MemoryMB: 512, InputBytes: 80, OutputBytes: 300},
		{Seq: "2", Attempt: 1, Step: "send", Tool: "send-email", Status: ledger.StatusSucceeded, DurationMS: 100, MemoryMB: 256, InputBytes: 120, OutputBytes: 60},
	} {
		r.RunID, r.ToolsetID, r.IdempotencyKey = runID, "ts_x", fmt.Sprintf("%s/%s", runID, r.Seq)
		r.StartedAt = start.Add(time.Duration(i) * time.Second)
		r.EndedAt = r.StartedAt.Add(time.Duration(r.DurationMS) * time.Millisecond)
		if err := store.PutRow(t.Context(), &r); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLedgerCost(t *testing.T) {
	t.Parallel()
	store, flags := ledgerEnv(t)
	sfnEndpoint, execution := passExecution(t)
	putCostRows(t, store, execution)
	putCostRows(t, store, "run-1")
	ledgerArgs := func(args ...string) []string { return append(append([]string{"ledger"}, flags...), args...) }

	code, out, errs := run(ledgerArgs(execution, "--cost", "--sfn-endpoint", sfnEndpoint)...)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"Estimated cost of run " + execution,
		"Every figure is an estimate (~), not a bill: us-east-1 list prices as of 2025-01-31 (built-in resolver/cli/cost/prices.json)",
		"STATE TRANSITIONS",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	// Every figure of a tool and of the total is marked "~".
	for _, row := range []string{"send-email ", "structured-data-fetch ", "Step Functions ", "total (estimate) "} {
		line := lineStarting(out, row)
		if line == "" {
			t.Errorf("no line for %q in\n%s", row, out)
			continue
		}
		for _, f := range strings.Fields(strings.TrimPrefix(line, row))[1:] {
			if f != "-" && !strings.HasPrefix(f, "~") {
				t.Errorf("%q is not marked an estimate in %q", f, line)
			}
		}
	}
	if line := lineStarting(out, "Step Functions "); !strings.Contains(line, "~3 ") {
		t.Errorf("state transitions: %q, want ~3", line)
	}

	code, out, errs = run(ledgerArgs(execution, "--cost", "--json", "--sfn-endpoint", sfnEndpoint)...)
	var report cost.Report
	if code != ExitOK || json.Unmarshal([]byte(out), &report) != nil {
		t.Fatalf("--cost --json: exit %d\n%s%s", code, out, errs)
	}
	total := report.Total
	// fetch: the claim (1 unit) and the finish with its 300-byte result
	// (1: the compact item stays under 1 KB); its replay: the claim
	// request on the item with the result (1); send-email, gated: the
	// claim (1), the finish (1), the review's read and its binding write
	// (2 units).
	if !report.Estimate || !total.Estimate || !report.StepFunctions.Estimate || report.RunID != execution ||
		total.Invocations != 3 || total.LambdaRequests != 3 || total.LambdaGBSeconds != 0.1+0.005+0.025 ||
		total.WriteUnits != 2+1+4 || total.ReadUnits != 1 || total.SESMessages != 1 ||
		total.StateTransitions == nil || *total.StateTransitions != 3 || total.USD.Total <= 0 {
		t.Errorf("--cost --json total: %+v", total)
	}
	if len(report.Tools) != 2 || !report.Tools[0].Estimate || !report.Tools[1].Estimate || report.Tools[0].SESMessages != 1 {
		t.Errorf("--cost --json tools: %+v", report.Tools)
	}
	if !report.StepFunctions.Available || report.StepFunctions.Count != 3 || report.StepFunctions.USD != 3*0.025/1000 {
		t.Errorf("--cost --json step_functions: %+v", report.StepFunctions)
	}

	// Without the execution history the estimate still prints, and says so.
	for name, args := range map[string][]string{
		"a run id that is no execution ARN": ledgerArgs("run-1", "--cost"),
		"an endpoint nothing answers":       ledgerArgs(execution, "--cost", "--sfn-endpoint", "http://127.0.0.1:1"),
	} {
		code, out, errs := run(args...)
		if code != ExitOK || !strings.Contains(out, "Step Functions state transitions: not available (") ||
			!strings.Contains(lineStarting(out, "total (estimate) "), "not available") {
			t.Errorf("%s: exit %d\n%s%s", name, code, out, errs)
		}
	}
	code, out, _ = run(ledgerArgs("run-1", "--cost", "--json")...)
	var plain cost.Report
	if code != ExitOK || json.Unmarshal([]byte(out), &plain) != nil || plain.StepFunctions.Available ||
		plain.StepFunctions.Reason != "the run id is not a Step Functions execution ARN" || plain.Total.StateTransitions != nil {
		t.Errorf("--cost --json without a history: exit %d\n%s", code, out)
	}
}

func TestLedgerCostPrices(t *testing.T) {
	t.Parallel()
	store, flags := ledgerEnv(t)
	putCostRows(t, store, "run-1")
	ledgerArgs := func(args ...string) []string { return append(append([]string{"ledger"}, flags...), args...) }

	// Another table: $10 a write unit and $100 a read unit (and the rest
	// zero), so the total is the units' count in dollars: 7 write units
	// (9 in the call layout before the compact one, whose fetch item with
	// its result was over 1 KB for its finish and its replay's claim) and
	// 1 read unit, $170.
	prices := filepath.Join(t.TempDir(), "eu.json")
	os.WriteFile(prices, []byte(`{"region": "eu-west-1", "as_of": "2026-11-30", "currency": "USD",
		"sources": ["https://aws.amazon.com/dynamodb/pricing/on-demand/"],
		"lambda_arm64_usd_per_gb_second": 0, "lambda_usd_per_million_requests": 0,
		"dynamodb_usd_per_million_write_request_units": 10000000, "dynamodb_usd_per_million_read_request_units": 100000000,
		"ses_usd_per_thousand_messages": 0, "sfn_standard_usd_per_thousand_state_transitions": 0}`), 0o644)
	code, out, errs := run(ledgerArgs("run-1", "--cost", "--prices", prices)...)
	if code != ExitOK || !strings.Contains(out, "eu-west-1 list prices as of 2026-11-30 ("+prices+")") ||
		!strings.Contains(lineStarting(out, "total (estimate) "), "~$170.00000000") {
		t.Errorf("--prices: exit %d\n%s%s", code, out, errs)
	}

	// A malformed table stops the command, naming the file and the field.
	os.WriteFile(prices, []byte(`{"region": "eu-west-1", "as_of": "2026-11-30", "currency": "USD",
		"sources": ["https://aws.amazon.com/dynamodb/pricing/on-demand/"],
		"lambda_arm64_usd_per_gb_second": 0, "lambda_usd_per_million_requests": 0,
		"dynamodb_usd_per_million_write_request_units": "ten", "dynamodb_usd_per_million_read_request_units": 0,
		"ses_usd_per_thousand_messages": 0, "sfn_standard_usd_per_thousand_state_transitions": 0}`), 0o644)
	code, out, errs = run(ledgerArgs("run-1", "--cost", "--prices", prices)...)
	if code != ExitMisuse || out != "" || !strings.Contains(errs, "price table "+prices+": field \"dynamodb_usd_per_million_write_request_units\": want a number") {
		t.Errorf("a malformed price table: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := run(ledgerArgs("run-1", "--cost", "--prices", filepath.Join(t.TempDir(), "none.json"))...); code != ExitMisuse || !strings.Contains(errs, "none.json") {
		t.Errorf("a missing price table: exit %d %s", code, errs)
	}
	for _, args := range [][]string{ledgerArgs("run-1", "--prices", prices), ledgerArgs("run-1", "--sfn-endpoint", "http://127.0.0.1:1")} {
		if code, _, errs := run(args...); code != ExitMisuse || !strings.Contains(errs, "--cost [--prices FILE] [--sfn-endpoint URL]") {
			t.Errorf("%v without --cost: exit %d %s", args, code, errs)
		}
	}
	if code, _, errs := run(ledgerArgs("no-such-run", "--cost")...); code != ExitErrors || !strings.Contains(errs, "no rows for run no-such-run") {
		t.Errorf("--cost of an unknown run: exit %d %s", code, errs)
	}
}

// lineStarting returns the first line of out that starts with prefix.
func lineStarting(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// The register command's help says who registers: the deployment's
// operator with the deploy role, since no policy for people writes the
// ledger table.
func TestToolsetRegisterHelpNamesThePublishFunctionAndTheDeployRole(t *testing.T) {
	t.Parallel()
	code, out, errs := run("toolset", "register", "-h")
	help := strings.Join(strings.Fields(out), " ")
	if code != ExitOK || errs != "" || !strings.Contains(help, "People register through the publish function") || !strings.Contains(help, "for the deploy role only") || !strings.Contains(help, "--tool TOOL") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

// A call's replays print as one DEDUPLICATED line with their count.
func TestLedgerPrintsReplaysOnce(t *testing.T) {
	t.Parallel()
	store, flags := ledgerEnv(t)
	ctx := t.Context()
	claim := func() *ledger.Record {
		return &ledger.Record{Key: "run-replays/1", ExternalKey: "AAAAAAAAAAAAAAAAAAAAAA/1", Step: "fetch", Tool: "structured-data-fetch", ToolsetID: "ts_0123456789abcdef0123456789abcdef", InputDigest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", LeaseUntil: time.Now().Add(time.Minute)}
	}
	first := claim()
	if ok, _, err := store.Claim(ctx, first); !ok || err != nil {
		t.Fatal(ok, err)
	}
	now := time.Now()
	if ok, err := store.Finish(ctx, first.Key, first.Token, ledger.StateCompleted, json.RawMessage(`{"n":1}`),
		&ledger.Row{Attempt: 1, Status: ledger.StatusSucceeded, StartedAt: now, EndedAt: now, OutputBytes: 7}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	for range 3 {
		if ok, _, err := store.Claim(ctx, claim()); ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	code, out, errs := run(append(append([]string{"ledger"}, flags...), "run-replays")...)
	rowLines, _, _ := strings.Cut(out, "\n\n") // the keys after the rows
	if code != ExitOK || strings.Count(rowLines, "\n") != 2 || !strings.Contains(out, "SUCCEEDED") || !strings.Contains(out, "DEDUPLICATED ×3") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

// toolgate ledger --key finds the run of an external key through its
// run's key pointer and prints it with both keys of each call; a key no
// pointer knows is exit 1, a malformed one a misuse, and neither quotes a
// run.
func TestLedgerByExternalKey(t *testing.T) {
	t.Parallel()
	store, flags := ledgerEnv(t)
	ctx := context.Background()
	secret := []byte("the CLI tests' external key secret, 32+ bytes")
	runID := "arn:aws:states:us-east-1:000000000000:execution:toolgate-local_x:run-key"
	ext, err := externalkey.New(secret, runID, "1")
	if err != nil {
		t.Fatal(err)
	}
	rec := &ledger.Record{Key: runID + "/1", ExternalKey: ext, Step: "fetch", Tool: "structured-data-fetch", ToolsetID: "ts_0123456789abcdef0123456789abcdef",
		InputDigest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", LeaseUntil: time.Now().Add(time.Minute)}
	if ok, _, err := store.Claim(ctx, rec); !ok || err != nil {
		t.Fatalf("claim %v %v", ok, err)
	}
	now := time.Now()
	if ok, err := store.Finish(ctx, rec.Key, rec.Token, ledger.StateCompleted, json.RawMessage(`{"n":1}`),
		&ledger.Row{Attempt: 1, Status: ledger.StatusSucceeded, StartedAt: now, EndedAt: now}); !ok || err != nil {
		t.Fatalf("finish %v %v", ok, err)
	}
	if err := store.PutKeyPointer(ctx, externalkey.RunID(secret, runID), runID); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(append([]string{"ledger", "--key", ext}, flags...)...)
	if code != ExitOK || !strings.HasPrefix(out, "run "+runID+" (external key "+ext+")\n") || !strings.Contains(out, "SUCCEEDED") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if !regexp.MustCompile(`(?m)^1 +` + regexp.QuoteMeta(runID+"/1") + ` +` + regexp.QuoteMeta(ext) + `$`).MatchString(out) {
		t.Fatalf("no line with both keys of seq 1:\n%s", out)
	}
	code, out, _ = run(append([]string{"ledger", "--json", "--key", ext}, flags...)...)
	var rows []ledger.Row
	if code != ExitOK || json.Unmarshal([]byte(out), &rows) != nil || len(rows) == 0 || rows[0].ExternalKey != ext || rows[0].IdempotencyKey != runID+"/1" {
		t.Fatalf("json: exit %d %s", code, out)
	}
	unknown := "AAAAAAAAAAAAAAAAAAAAAA/1"
	if code, out, errs := run(append([]string{"ledger", "--key", unknown}, flags...)...); code != ExitErrors || !strings.Contains(errs, "no run is known for external key "+unknown) || out != "" {
		t.Fatalf("unknown key: exit %d %s %s", code, out, errs)
	}
	for _, bad := range []string{runID + "/1", "short/1", ext + ".2"} {
		if code, _, errs := run(append([]string{"ledger", "--key", bad}, flags...)...); code != ExitMisuse || !strings.Contains(errs, "--key") || strings.Contains(errs, "toolgate-local_x") {
			t.Errorf("malformed key %q: exit %d %s", bad, code, errs)
		}
	}
	if code, _, _ := run(append([]string{"ledger", "--key", ext, runID}, flags...)...); code != ExitMisuse {
		t.Errorf("a run id and --key: exit %d", code)
	}
	if code, _, errs := run(append([]string{"ledger", "--key", ""}, flags...)...); code != ExitMisuse || !strings.Contains(errs, "--key needs a key") {
		t.Errorf("--key \"\": exit %d %s", code, errs)
	}
	if code, _, errs := run(append([]string{"ledger", "--key", runID + "/1"}, flags...)...); code != ExitMisuse || !strings.Contains(errs, "use toolgate ledger RUN_ID") {
		t.Errorf("a ledger key: exit %d %s", code, errs)
	}

	// A pointer another tool function's role wrote: the victim's opaque
	// run id names the run above, whose calls carry another key.
	victim := "arn:aws:states:us-east-1:000000000000:execution:toolgate-local_x:run-victim"
	victimKey, _ := externalkey.New(secret, victim, "1")
	if err := store.PutKeyPointer(ctx, externalkey.RunID(secret, victim), runID); err != nil {
		t.Fatal(err)
	}
	for _, f := range [][]string{nil, {"--json"}} {
		code, out, errs := run(append(append([]string{"ledger", "--key", victimKey}, f...), flags...)...)
		if code != ExitErrors || !strings.Contains(errs, "the pointer names a run that holds no call with this key") || out != "" || strings.Contains(errs, "run-key") {
			t.Errorf("a forged pointer %v: exit %d %q %s", f, code, out, errs)
		}
	}
}

func TestCostCountsAnHTTPCallGatedOnlyWhenItRanUnderAnApproval(t *testing.T) {
	calls := costCalls([]ledger.Row{
		{Tool: "http", Attempt: 1, Status: ledger.StatusSucceeded},
		{Tool: "http", Attempt: 1, Status: ledger.StatusSucceeded, ReviewID: "rv_0123456789abcdef0123456789abcdef", Approver: "arn:aws:iam::000000000000:user/r"},
		{Tool: "send-email", Attempt: 1, Status: ledger.StatusSucceeded},
		{Tool: "structured-data-fetch", Attempt: 1, Status: ledger.StatusSucceeded},
	})
	want := []bool{false, true, true, false}
	for i, c := range calls {
		if c.Gated != want[i] {
			t.Errorf("call %d (%s) gated %v, want %v", i, c.Tool, c.Gated, want[i])
		}
	}
}

// A fork's call that took its parent's recorded result prints REUSED with
// the parent call's key.
func TestLedgerPrintsAReusedCallWithItsParentsKey(t *testing.T) {
	t.Parallel()
	store, flags := ledgerEnv(t)
	ctx := t.Context()
	rec := &ledger.Record{Key: "run-fork/1", ExternalKey: "AAAAAAAAAAAAAAAAAAAAAA/1", Step: "fetch", Tool: "structured-data-fetch", ToolsetID: "ts_0123456789abcdef0123456789abcdef", InputDigest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", LeaseUntil: time.Now().Add(time.Minute)}
	if ok, _, err := store.Claim(ctx, rec); !ok || err != nil {
		t.Fatal(ok, err)
	}
	now := time.Now()
	if ok, err := store.Finish(ctx, rec.Key, rec.Token, ledger.StateCompleted, json.RawMessage(`{"n":1}`),
		&ledger.Row{Attempt: 1, Status: ledger.StatusReused, ReusedFrom: "run-parent/3", StartedAt: now, EndedAt: now, OutputBytes: 7}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	code, out, errs := run(append(append([]string{"ledger"}, flags...), "run-fork")...)
	if code != ExitOK || !strings.Contains(out, "REUSED from run-parent/3") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}
