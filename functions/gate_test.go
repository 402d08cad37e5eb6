package functions_test

// The gate's bypasses an insider found, each reproduced against
// the real send-email and review-request bootstraps under the RIE, on
// dynalite and the SES v2 emulator: where nothing may be sent, the
// emulator's store stays empty.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/insider"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/toolset"
)

// sentMails returns the subjects and recipients of what the SES emulator
// holds.
func (s *reviewStack) sentMails(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range localtest.Mails(t, s.ses) {
		out = append(out, m.Subject+" -> "+strings.Join(m.Destination.To, ","))
	}
	return out
}

// putToolsetItem writes a toolset item with a plain PutItem, as a person
// with PutItem on TOOLSET#* could, bypassing registration.
func (s *reviewStack) putToolsetItem(t *testing.T, id, body string) {
	t.Helper()
	if err := insider.PutToolset(context.Background(), local.DynamoDB(s.dynamo), s.store.Table(), id, body); err != nil {
		t.Fatal(err)
	}
}

// weakened returns the send-email toolset with weaken applied and its id
// recomputed, and its body: a correct digest of a toolset the catalog does
// not allow.
func weakened(t *testing.T, weaken func(*toolset.Tool)) (*toolset.Toolset, string) {
	t.Helper()
	ts, err := insider.Weakened(weaken)
	if err != nil {
		t.Fatal(err)
	}
	body, err := ts.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	return ts, string(body)
}

// directCall is a direct-lane send-email envelope of a fresh run.
func directCall(toolsetID, to string, seq int, approval json.RawMessage) map[string]any {
	reviewRuns++
	run := fmt.Sprintf("invoke-gate-%d-%d", time.Now().UnixNano(), reviewRuns)
	return sendEnvelope(run, toolsetID, to, seq, approval)
}

func sendEnvelope(run, toolsetID, to string, seq int, approval json.RawMessage) map[string]any {
	m := map[string]any{"tool": "send-email", "toolset_id": toolsetID, "run_id": run, "seq": seq, "step": "send",
		"idempotency_key": fmt.Sprintf("%s/%d", run, seq), "attempt": 1, "tolerate_duplicates": false,
		"input": map[string]any{"to": []string{to}, "subject": "Weekly digest", "text": "Three items."}}
	if approval != nil {
		m["approval"] = approval
	}
	return m
}

// refusedLines returns the function's "toolset refused" log lines.
func refusedLines(t *testing.T, fn *local.Process) []map[string]any {
	t.Helper()
	return refusedIn(fn.Stdout())
}

// waitRefusedLines waits until the function has written n "toolset
// refused" lines in all (the RIE passes them on after the answer) and
// returns them.
func waitRefusedLines(t *testing.T, fn *local.Process, n int) []map[string]any {
	t.Helper()
	out := localtest.WaitStdout(t, fn, 5*time.Second, func(out string) bool { return len(refusedIn(out)) >= n })
	return refusedIn(out)
}

func refusedIn(stdout string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(stdout, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == toolset.RefusedLogMessage {
			out = append(out, m)
		}
	}
	return out
}

// A toolset item written around registration (send-email without
// review_required, its id the correct digest) no longer switches the gate
// off: send-email and review-request re-run the registration check on
// every load, refuse with TOOL_PERMISSION_DENIED and log one "toolset
// refused" line naming the toolset and the rule; nothing is sent, no key
// is claimed. The other weakenings and a tampered body are refused the
// same way, each for its rule.
func TestHandWrittenToolsetCannotSwitchTheGateOff(t *testing.T) {
	s := newReviewStack(t)
	ctx := context.Background()
	cases := []struct {
		name string
		ts   *toolset.Toolset
		body string
		rule string
	}{}
	add := func(name, rule string, weaken func(*toolset.Tool)) {
		ts, body := weakened(t, weaken)
		cases = append(cases, struct {
			name string
			ts   *toolset.Toolset
			body string
			rule string
		}{name, ts, body, rule})
	}
	add("review removed", toolset.RuleReviewRequired, func(tl *toolset.Tool) { tl.ReviewRequired = false })
	add("policy weakened", toolset.RulePolicy, func(tl *toolset.Tool) { tl.Policy = catalog.AtLeastOnce })
	add("claims idempotency", toolset.RuleIdempotent, func(tl *toolset.Tool) { tl.Idempotent = true })
	add("schema that does not compile", toolset.RuleSchema, func(tl *toolset.Tool) { tl.InputSchema = json.RawMessage(`{"type":12}`) })
	// The registered toolset's id over a body whose review was removed.
	_, ungated := weakened(t, func(tl *toolset.Tool) { tl.ReviewRequired = false })
	tampered := *s.ts
	tampered.ID = "ts_" + strings.Repeat("ab", 16)
	other := func(name, id, body, rule string) {
		cases = append(cases, struct {
			name string
			ts   *toolset.Toolset
			body string
			rule string
		}{name, &toolset.Toolset{ID: id}, body, rule})
	}
	other("tampered body", tampered.ID, ungated, toolset.RuleDigest)
	// Under a fresh id, a body naming another (verified) toolset's id: it
	// must not load as that toolset.
	loose, looseBody := weakened(t, func(tl *toolset.Tool) { tl.InputSchema = json.RawMessage(`true`) })
	other("body naming another id", "ts_"+strings.Repeat("cd", 16), `{"ID":"`+loose.ID+`",`+looseBody[1:], toolset.RuleFormat)
	other("body not in canonical form", loose.ID, strings.Replace(looseBody, `"tools":`, `"tools" :`, 1), toolset.RuleFormat)
	other("body not JSON", "ts_"+strings.Repeat("ef", 16), "<toolset/>", toolset.RuleFormat)
	// A schema whose compile error quotes a 190 000-character pattern: the
	// log line and the message stay small.
	add("huge schema error", toolset.RuleSchema, func(tl *toolset.Tool) {
		tl.InputSchema = json.RawMessage(`{"type":"object","properties":{"to":{"pattern":"(` + strings.Repeat("<", 190000) + `"}}}`)
	})

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s.putToolsetItem(t, c.ts.ID, c.body)
			before := len(refusedLines(t, s.send))
			env := directCall(c.ts.ID, "team@example.com", 1, nil)
			_, code, msg := call(t, s.send, env)
			if code != "TOOL_PERMISSION_DENIED" || !strings.Contains(msg, c.rule) {
				t.Fatalf("send-email: %q %s, want TOOL_PERMISSION_DENIED naming %s", code, msg, c.rule)
			}
			if got := s.sentMails(t); len(got) != 0 {
				t.Fatalf("the SES emulator holds %v", got)
			}
			run := env["run_id"].(string)
			if rec, err := s.store.Record(ctx, run+"/1"); !errors.Is(err, ledger.ErrNotFound) {
				t.Fatalf("the key was claimed: %+v %v", rec, err)
			}
			rows := ledgertest.RunRows(t, s.store, run)
			if len(rows) != 1 || rows[0].Status != ledger.StatusRefused || rows[0].ErrorCode != "TOOL_PERMISSION_DENIED" {
				t.Fatalf("rows %+v, want one REFUSED row", rows)
			}
			lines := waitRefusedLines(t, s.send, before+1)
			if len(lines) != before+1 {
				t.Fatalf("%d toolset refused lines after the call, want %d: %s", len(lines), before+1, s.send.Stdout())
			}
			if l := lines[len(lines)-1]; l["toolset_id"] != c.ts.ID || l["rule"] != c.rule || l["level"] != "ERROR" {
				t.Fatalf("log line %.500v, want toolset_id %s and rule %s", l, c.ts.ID, c.rule)
			}
			if b, _ := json.Marshal(lines[len(lines)-1]); len(b) > 1024 || len(msg) > 1024 {
				t.Fatalf("the log line is %d bytes and the message %d, want each under 1 KiB", len(b), len(msg))
			}

			// review-request loads it through the same check.
			beforeReq := len(refusedLines(t, s.request))
			task := s.task(t, "token-weak-"+strings.ReplaceAll(c.name, " ", "-"), func(m map[string]any) { m["toolset_id"] = c.ts.ID })
			if _, code, msg := call(t, s.request, task); code != "REVIEW_FORBIDDEN" || !strings.Contains(msg, c.rule) {
				t.Fatalf("review-request: %q %s", code, msg)
			}
			if n := len(waitRefusedLines(t, s.request, beforeReq+1)); n != beforeReq+1 {
				t.Fatalf("review-request wrote %d toolset refused lines, want 1", n-beforeReq)
			}
		})
	}
	// The function caches only toolsets that pass: the registered one still
	// runs (gated, so without approval it is refused for that reason).
	if _, code, msg := call(t, s.send, directCall(s.ts.ID, "team@example.com", 1, nil)); code != "TOOL_PERMISSION_DENIED" || !strings.Contains(msg, "carries no approval") {
		t.Fatalf("the registered toolset: %q %s", code, msg)
	}
}

// approvedTask requests a review of a send to team@example.com through
// review-request (a review Task's payload), approves it through
// review-decision, and returns the run id and the decision the Task's
// output carries: the approval.
func (s *reviewStack) approvedTask(t *testing.T, token string) (string, json.RawMessage) {
	t.Helper()
	task := s.task(t, token, func(m map[string]any) { m["of"] = "send" })
	id := s.requestReview(t, task)
	if _, code, msg := call(t, s.decision, s.decide(t, id, "alice", "approve", "recipients checked")); code != "" {
		t.Fatalf("approve: %s %s", code, msg)
	}
	calls := s.sfn.Calls(token)
	if len(calls) != 1 || calls[0].Action != "SendTaskSuccess" {
		t.Fatalf("Step Functions calls %+v", calls)
	}
	return task["run_id"].(string), json.RawMessage(calls[0].Output)
}

// An operator's call on the key of a running execution's next gated step,
// without an approval and with other inputs, is refused without claiming
// the key: the approved call on that key then sends, exactly once, to the
// approved recipient. Before, the refused call claimed the key and the
// approved call failed with "idempotency key reused with a different
// call".
func TestRefusedCallLeavesTheKeyToTheApprovedCall(t *testing.T) {
	s := newReviewStack(t)
	ctx := context.Background()
	run, approval := s.approvedTask(t, "token-key-squat")
	squat := sendEnvelope(run, s.ts.ID, "mallory@example.com", 1, nil)
	if _, code, msg := call(t, s.send, squat); code != "TOOL_PERMISSION_DENIED" || !strings.Contains(msg, "carries no approval") {
		t.Fatalf("the unapproved call: %q %s", code, msg)
	}
	// With the approval of another call (other inputs): refused too.
	squat["approval"] = approval
	if _, code, msg := call(t, s.send, squat); code != "TOOL_PERMISSION_DENIED" || !strings.Contains(msg, "not those review") {
		t.Fatalf("the call with another call's approval: %q %s", code, msg)
	}
	if rec, err := s.store.Record(ctx, run+"/1"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a refused call claimed the key: %+v %v", rec, err)
	}
	out, code, msg := call(t, s.send, sendEnvelope(run, s.ts.ID, "team@example.com", 1, approval))
	if code != "" || !strings.Contains(string(out), "message_id") {
		t.Fatalf("the approved call: %s %q %s", out, code, msg)
	}
	if got := s.sentMails(t); len(got) != 1 || got[0] != "Weekly digest -> team@example.com" {
		t.Fatalf("the SES emulator holds %v, want the approved e-mail once", got)
	}
	rows := ledgertest.RunRows(t, s.store, run)
	var statuses []string
	for _, r := range rows {
		statuses = append(statuses, fmt.Sprintf("%s/%d", r.Status, r.Attempt))
	}
	if strings.Join(statuses, " ") != "REFUSED/0 REFUSED/0 SUCCEEDED/1" {
		t.Fatalf("rows %v, want two REFUSED rows (no attempt) and the approved call's SUCCEEDED", statuses)
	}
}

// A completed gated call replays its recorded result after its approval
// expired, and after its review item is gone (expired reviews leave the
// table by TTL): the same message id, a DEDUPLICATED row, nothing sent
// again. Another call with the expired approval is refused and claims
// nothing.
func TestCompletedGatedCallReplaysAfterItsApprovalExpired(t *testing.T) {
	s := newReviewStack(t)
	ctx := context.Background()
	run, approval := s.approvedTask(t, "token-replay-expired")
	env := sendEnvelope(run, s.ts.ID, "team@example.com", 1, approval)
	first, code, msg := call(t, s.send, env)
	if code != "" {
		t.Fatalf("the approved call: %s %s", code, msg)
	}
	var d struct {
		ReviewID string `json:"review_id"`
	}
	json.Unmarshal(approval, &d)
	db := local.DynamoDB(s.dynamo)
	key := map[string]types.AttributeValue{ledger.AttrPK: &types.AttributeValueMemberS{Value: "REVIEW#" + d.ReviewID}, ledger.AttrSK: &types.AttributeValueMemberS{Value: "REVIEW"}}
	// Its time ends: the review's deadline moves an hour into the past.
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.store.Table()), Key: key,
		UpdateExpression:          aws.String("SET deadline = :past"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":past": &types.AttributeValueMemberN{Value: fmt.Sprint(time.Now().Add(-time.Hour).Unix())}},
	}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.reviews.Get(ctx, d.ReviewID); err != nil || !r.Expired(time.Now()) {
		t.Fatalf("the review did not expire: %+v %v", r, err)
	}
	again, code, msg := call(t, s.send, env)
	if code != "" || string(again) != string(first) {
		t.Fatalf("replay after the approval expired: %s %q %s, want %s", again, code, msg, first)
	}
	// Another call of the run with the expired approval: refused, unclaimed.
	other := sendEnvelope(run, s.ts.ID, "team@example.com", 2, approval)
	if _, code, msg := call(t, s.send, other); code != "TOOL_PERMISSION_DENIED" || !strings.Contains(msg, "expired") {
		t.Fatalf("another call with the expired approval: %q %s", code, msg)
	}
	if _, err := s.store.Record(ctx, run+"/2"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a refused call claimed its key: %v", err)
	}
	// The review item is gone.
	if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.store.Table()), Key: key}); err != nil {
		t.Fatal(err)
	}
	again, code, msg = call(t, s.send, env)
	if code != "" || string(again) != string(first) {
		t.Fatalf("replay after the review item is gone: %s %q %s", again, code, msg)
	}
	// The same key with other inputs is not this call: refused.
	edited := sendEnvelope(run, s.ts.ID, "mallory@example.com", 1, approval)
	if _, code, msg := call(t, s.send, edited); code != "TOOL_PERMISSION_DENIED" {
		t.Fatalf("other inputs on the completed key: %q %s", code, msg)
	}
	if got := s.sentMails(t); len(got) != 1 {
		t.Fatalf("the SES emulator holds %v, want the one e-mail", got)
	}
	rows := ledgertest.RunRows(t, s.store, run)
	var statuses []string
	for _, r := range rows {
		statuses = append(statuses, fmt.Sprintf("%s:%s×%d", r.Seq, r.Status, r.Invocations()))
	}
	// The call's replays are one row with their count, after its attempts
	// and refusals.
	if strings.Join(statuses, " ") != "1:SUCCEEDED×1 1:REFUSED×1 1:DEDUPLICATED×2 2:REFUSED×1" {
		t.Fatalf("rows %v", statuses)
	}
}
