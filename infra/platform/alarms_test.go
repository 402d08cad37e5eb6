package platform

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/insider"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// TestToolsetRefusedFilterOnARealLine applies the synthesized template's
// filter patterns to the log lines the real send-email function writes
// when it refuses a stored toolset, not to a hand-written sample. It
// replays an insider's attack: a send-email toolset item with
// review_required false and a correct id, written with a plain PutItem
// around registration, then a call on it without an approval. CloudWatch
// Logs has no local stand-in, so matchJSONFilter evaluates the patterns
// (filterpattern_test.go). Stand-ins: dynalite, the SES emulator and the
// Lambda RIE, as in functions/review_test.go.
func TestToolsetRefusedFilterOnARealLine(t *testing.T) {
	refusedPattern := filterPattern(t, "SendEmailFunction", "ToolsetsRefused")
	unknownPattern := filterPattern(t, "SendEmailFunction", "LedgerUnknownRows")

	dynamo := localtest.Dynalite(t)
	db := local.DynamoDB(dynamo.Endpoint())
	const table = "toolgate-infra-alarms"
	if err := ledger.CreateTable(t.Context(), db, table); err != nil {
		t.Fatal(err)
	}
	weak, err := insider.Ungated()
	if err != nil {
		t.Fatal(err)
	}
	if err := insider.PutTheirs(t.Context(), db, table, weak); err != nil {
		t.Fatal(err)
	}

	ses := localtest.SES(t)
	send := localtest.RIE(t, "send-email", localtest.Bootstrap(t, "../../functions/send-email"), 30*time.Second, map[string]string{
		"TOOLGATE_TABLE": table, "AWS_ENDPOINT_URL_DYNAMODB": dynamo.Endpoint(),
		"TOOLGATE_SENDER": "noreply@example.com", "TOOLGATE_RECIPIENT_ALLOW": "@example.com",
		"AWS_ENDPOINT_URL_SESV2": ses.Endpoint(),
		lane.EnvLane:             string(lane.SFN), // the RIE has no aliases: a Solution's call
	})
	run := "arn:aws:states:us-east-1:123456789012:execution:toolgate-infra:toolset-refused"
	_, code, msg := localtest.Invoke(t, send, map[string]any{
		"tool": "send-email", "toolset_id": weak.ID, "run_id": run, "seq": 1, "step": "send",
		"idempotency_key": run + "/1", "attempt": 1, "tolerate_duplicates": false,
		"input": map[string]any{"to": []string{"team@example.com"}, "subject": "Weekly digest", "text": "Three items."},
	})
	if code != "TOOL_PERMISSION_DENIED" {
		t.Errorf("send-email on a toolset without review: errorType %q (%s), want TOOL_PERMISSION_DENIED", code, msg)
	}

	// The function's JSON lines, once the refused line and the row line
	// after it have come through the RIE.
	out := localtest.WaitStdout(t, send, 5*time.Second, func(out string) bool {
		return strings.Contains(out, `"msg":"`+toolset.RefusedLogMessage+`"`) && strings.Contains(out, `"ledger_status":"REFUSED"`)
	})
	lines := jsonLines(out)
	var refused []int
	for i, l := range lines {
		var f struct{ Msg string }
		if json.Unmarshal([]byte(l), &f) == nil && f.Msg == toolset.RefusedLogMessage {
			refused = append(refused, i)
		}
	}
	if len(refused) != 1 {
		t.Fatalf("no toolset refused line in the function's output (want exactly one with \"msg\":%q, found %d): %s",
			toolset.RefusedLogMessage, len(refused), send.Stdout())
	}
	line := lines[refused[0]]
	var got struct {
		Time, Level, Msg string
		ToolsetID        string `json:"toolset_id"`
		Rule, Reason     string
	}
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatal(err)
	}
	if got.Time == "" || got.Level != "ERROR" || got.ToolsetID != weak.ID || got.Rule != toolset.RuleReviewRequired || got.Reason == "" {
		t.Errorf("the toolset refused line %s: want level ERROR, toolset_id %s, rule %s, a reason and a time", line, weak.ID, toolset.RuleReviewRequired)
	}

	// The template's toolset-refused pattern matches exactly that line, not
	// the call's REFUSED row line; the ledger UNKNOWN pattern matches none
	// (a refusal is no UNKNOWN row).
	row := slices.IndexFunc(lines, func(l string) bool {
		var r struct {
			Msg    string
			Status string `json:"ledger_status"`
		}
		return json.Unmarshal([]byte(l), &r) == nil && r.Msg == "tool invocation" && r.Status == "REFUSED"
	})
	if row < 0 {
		t.Errorf("no REFUSED \"tool invocation\" row line in the function's output: %s", send.Stdout())
	}
	for i, l := range lines {
		ok, err := matchJSONFilter(refusedPattern, l)
		if err != nil {
			t.Fatal(err)
		}
		if want := i == refused[0]; ok != want {
			t.Errorf("toolset-refused pattern %s on %s: %v, want %v", refusedPattern, l, ok, want)
		}
		if ok, err := matchJSONFilter(unknownPattern, l); err != nil || ok {
			t.Errorf("ledger-unknown pattern %s on %s: %v %v, want no match", unknownPattern, l, ok, err)
		}
	}
	t.Logf("the function's JSON lines, the refused one %d:\n%s", refused[0], strings.Join(lines, "\n"))

	// Nothing ran: the SES emulator holds no mail.
	if m := localtest.Mails(t, ses); len(m) != 0 {
		t.Errorf("the SES emulator holds %d mails, want none", len(m))
	}
}

// filterPattern returns the FilterPattern of the synthesized template's
// metric filter counting metric on the log group of the function with
// logical ID fn.
func filterPattern(t *testing.T, fn, metric string) string {
	t.Helper()
	var found []string
	for _, f := range resources(platformJSON, "AWS::Logs::MetricFilter") {
		p := props(f)
		if text(p["LogGroupName"]) != "${"+fn+"Logs}" {
			continue
		}
		for _, m := range p["MetricTransformations"].([]any) {
			if m.(tmpl)["MetricName"] == metric {
				found = append(found, p["FilterPattern"].(string))
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d metric filters for %s on %s's log group in the template, want 1", len(found), metric, fn)
	}
	return found[0]
}

// jsonLines returns the lines of out that are JSON objects: what a JSON
// filter pattern can match.
func jsonLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		var obj map[string]any
		if json.Unmarshal([]byte(l), &obj) == nil && obj != nil {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestLedgerUnknownFilterOnARealLine applies the synthesized template's
// ledger-UNKNOWN pattern to the lines a real tool function writes (the
// dispatcher's test tool, shared/dispatch/testdata/testtool, built as a
// bootstrap and run under the RIE with the functions' logger): an
// at_most_once call whose process died after its effect, redriven once
// its lease ran out, writes the one UNKNOWN line the pattern must match,
// and none of its other lines may match. Were the functions' logger to
// rename "msg" or the fields (lambdacontext's logger writes "message"),
// this test fails instead of the alarm going quiet. CloudWatch Logs has no
// stand-in: matchJSONFilter evaluates the pattern.
func TestLedgerUnknownFilterOnARealLine(t *testing.T) {
	unknownPattern := filterPattern(t, "SendEmailFunction", "LedgerUnknownRows")
	dynamo := localtest.Dynalite(t)
	db := local.DynamoDB(dynamo.Endpoint())
	const table = "toolgate-infra-unknown"
	if err := ledger.CreateTable(t.Context(), db, table); err != nil {
		t.Fatal(err)
	}
	// test-send is not in the catalog (no function of the platform runs
	// it): at_most_once, not idempotent, ungated.
	ts := &toolset.Toolset{Tools: map[string]toolset.Tool{"test-send": {
		InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(`{"type":"object"}`), Policy: "at_most_once",
	}}, FetchHosts: []string{}}
	var err error
	if ts.ID, err = ts.ComputeID(); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.New(db, table).RegisterToolset(t.Context(), ts); err != nil {
		t.Fatal(err)
	}
	fn := localtest.RIE(t, "test-send", localtest.Bootstrap(t, "../../shared/dispatch/testdata/testtool"), 10*time.Second, map[string]string{
		"TOOLGATE_TOOL": "test-send", "TOOLGATE_TABLE": table, "AWS_ENDPOINT_URL_DYNAMODB": dynamo.Endpoint(),
		"TOOLGATE_LEASE_SECONDS": "1", "TEST_EFFECTS_FILE": filepath.Join(t.TempDir(), "effects"),
		lane.EnvLane: string(lane.SFN), // the RIE has no aliases: a Solution's call
	})
	run := "arn:aws:states:us-east-1:123456789012:execution:toolgate-infra:unknown"
	call := map[string]any{"tool": "test-send", "toolset_id": ts.ID, "run_id": run, "seq": 1, "step": "send",
		"idempotency_key": run + "/1", "attempt": 1, "tolerate_duplicates": false, "input": map[string]any{"text": "x", "fail": "crash"}}
	localtest.Invoke(t, fn, call)       // the process dies after its effect
	time.Sleep(1100 * time.Millisecond) // the lease (1 s) runs out: real time, for the function under the RIE reads the real clock
	if _, code, _ := localtest.Invoke(t, fn, call); code != "TOOL_RETRY_REQUIRES_IDEMPOTENCY" {
		t.Fatalf("the redrive: %q, want TOOL_RETRY_REQUIRES_IDEMPOTENCY", code)
	}
	out := localtest.WaitStdout(t, fn, 5*time.Second, func(out string) bool { return strings.Contains(out, `"UNKNOWN"`) })
	matched := 0
	for _, l := range jsonLines(out) {
		ok, err := matchJSONFilter(unknownPattern, l)
		if err != nil {
			t.Fatal(err)
		}
		var f map[string]any
		json.Unmarshal([]byte(l), &f)
		if want := f[tool.LogKeyMessage] == tool.LogInvocation && f[tool.LogFieldStatus] == "UNKNOWN"; ok != want {
			t.Errorf("ledger-unknown pattern %s on %s: %v, want %v", unknownPattern, l, ok, want)
		}
		if ok {
			matched++
		}
	}
	if matched != 1 {
		t.Fatalf("the pattern matched %d of the function's lines, want the one UNKNOWN line:\n%s", matched, out)
	}
}
