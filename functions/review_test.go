package functions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/reviewtest"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// call posts one event to a function under the RIE and returns its result,
// or its errorType and errorMessage.
func call(t *testing.T, fn *local.Process, payload any) (json.RawMessage, string, string) {
	t.Helper()
	return localtest.Invoke(t, fn, payload)
}

// reviewStack is the review functions and send-email under the RIE, on
// dynalite, with a FAKE Step Functions (reviewtest.SFN): no Step Functions
// stand-in is available to these tests, so SendTaskSuccess and
// SendTaskFailure go to an httptest server speaking AWS JSON 1.0.
type reviewStack struct {
	dynamo   string // dynalite's endpoint
	store    *ledger.Store
	reviews  *review.Store
	ts       *toolset.Toolset
	sfn      *reviewtest.SFN
	ses      *local.Process
	request  *local.Process // review-request
	decision *local.Process // review-decision, local: direct invocations allowed
	send     *local.Process // send-email
}

func newReviewStack(t *testing.T) *reviewStack {
	t.Helper()
	p := localtest.Dynalite(t)
	db := local.DynamoDB(p.Endpoint())
	if err := review.CreateTable(context.Background(), db, "toolgate-review"); err != nil {
		t.Fatal(err)
	}
	s := &reviewStack{dynamo: p.Endpoint(), store: ledger.New(db, "toolgate-review"), reviews: review.NewStore(db, "toolgate-review"), sfn: reviewtest.NewSFN(t)}
	var err error
	if s.ts, err = toolset.FromCatalog(catalog.Default(), []string{"send-email"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.store.RegisterToolset(context.Background(), s.ts); err != nil {
		t.Fatal(err)
	}
	table := map[string]string{dispatch.EnvTable: s.store.Table(), "AWS_ENDPOINT_URL_DYNAMODB": p.Endpoint()}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range table {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	s.request = localtest.RIE(t, "review-request", localtest.Bootstrap(t, "./review-request"), 10*time.Second, table)
	s.decision = localtest.RIE(t, "review-decision", localtest.Bootstrap(t, "./review-decision"), 10*time.Second,
		with(map[string]string{review.EnvAllowUnauthenticated: "true", "AWS_ENDPOINT_URL_SFN": s.sfn.URL}))
	s.ses = localtest.SES(t)
	s.send = localtest.RIE(t, "send-email", localtest.Bootstrap(t, "./send-email"), 30*time.Second, with(map[string]string{
		"TOOLGATE_SENDER": "noreply@example.com", "TOOLGATE_RECIPIENT_ALLOW": "@example.com", "AWS_ENDPOINT_URL_SESV2": s.ses.Endpoint(),
	}))
	return s
}

var reviewRuns = 0

// task is the payload a compiled review Task sends review-request.
func (s *reviewStack) task(token string, mod func(map[string]any)) map[string]any {
	reviewRuns++
	m := map[string]any{
		"task_token": token, "run_id": fmt.Sprintf("arn:aws:states:us-east-1:123456789012:execution:weekly-digest:run-%d-%d", time.Now().UnixNano(), reviewRuns),
		"step": "approve", "of": "send", "tool": "send-email", "toolset_id": s.ts.ID,
		"input":     map[string]any{"to": []string{"team@example.com"}, "subject": "Weekly digest", "text": "Three items."},
		"reviewers": []string{}, "timeout_seconds": 3600,
	}
	if mod != nil {
		mod(m)
	}
	return m
}

// requestReview invokes review-request and returns the review id.
func (s *reviewStack) requestReview(t *testing.T, task map[string]any) string {
	t.Helper()
	out, code, msg := call(t, s.request, task)
	if code != "" {
		t.Fatalf("review-request: %s: %s", code, msg)
	}
	var res review.RequestResult
	if err := json.Unmarshal(out, &res); err != nil || res.Status != review.Pending {
		t.Fatalf("review-request answered %s", out)
	}
	return res.ReviewID
}

func decide(id, as, decision, reason string) map[string]any {
	return map[string]any{"action": "decide", "review_id": id, "decision": decision, "as": as, "reason": reason}
}

// review-request stores the pending review (apart from the ledger's
// records and rows, listed through the index) and returns while the Task
// waits; the same Task asking again gets the same review.
func TestReviewRequestUnderRIE(t *testing.T) {
	s := newReviewStack(t)
	ctx := context.Background()
	task := s.task("token-request-1", func(m map[string]any) {
		m["reviewers"] = []string{"arn:aws:sts::*:assumed-role/editors/*"}
		m["input"] = map[string]any{"text": "Three items.", "to": []string{"team@example.com"}, "subject": "Weekly digest"}
	})
	id := s.requestReview(t, task)
	if id != review.IDForToken("token-request-1") {
		t.Fatalf("review id %s", id)
	}
	r, err := s.reviews.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	_, digest, _ := tool.InputDigest(json.RawMessage(`{"subject":"Weekly digest","text":"Three items.","to":["team@example.com"]}`))
	if r.Status != review.Pending || r.RunID != task["run_id"] || r.Step != "approve" || r.Of != "send" || r.Tool != "send-email" ||
		r.ToolsetID != s.ts.ID || r.TaskToken != "token-request-1" || r.InputDigest != digest ||
		string(r.Input) != `{"subject":"Weekly digest","text":"Three items.","to":["team@example.com"]}` ||
		len(r.Reviewers) != 1 || r.ExpiresAt.Unix() != r.CreatedAt.Unix()+3600 {
		t.Fatalf("stored review %+v", r)
	}
	// The record is no ledger row of the run.
	if rows, _ := s.store.RunRows(ctx, r.RunID); len(rows) != 0 {
		t.Fatalf("the review wrote ledger rows: %+v", rows)
	}
	if again := s.requestReview(t, task); again != id {
		t.Fatalf("the same Task got review %s, then %s", id, again)
	}
	if list, err := s.reviews.List(ctx, review.Pending, nil); err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("pending list %+v %v", list, err)
	}
	for name, c := range map[string]struct {
		mod  func(map[string]any)
		code string
	}{
		"no task token":     {func(m map[string]any) { delete(m, "task_token") }, "TOOL_INPUT_INVALID"},
		"unknown field":     {func(m map[string]any) { m["extra"] = 1 }, "TOOL_INPUT_INVALID"},
		"inexact number":    {func(m map[string]any) { m["input"] = json.RawMessage(`{"n":9007199254740993}`) }, "TOOL_INPUT_INVALID"},
		"reviewer not ARN":  {func(m map[string]any) { m["reviewers"] = []string{"alice"} }, "TOOL_INPUT_INVALID"},
		"unknown toolset":   {func(m map[string]any) { m["toolset_id"] = "ts_00000000000000000000000000000000" }, "TOOL_PERMISSION_DENIED"},
		"tool not pinned":   {func(m map[string]any) { m["tool"] = "structured-data-fetch" }, "TOOL_PERMISSION_DENIED"},
		"same token, other": {func(m map[string]any) { m["task_token"] = "token-request-1"; m["of"] = "other" }, "TOOL_INPUT_INVALID"},
	} {
		if _, code, msg := call(t, s.request, s.task("token-bad-"+name, c.mod)); code != c.code {
			t.Errorf("%s: %q %s, want %s", name, code, msg, c.code)
		}
	}
}

// The decision: approve records (approver, time, reason) and calls
// SendTaskSuccess exactly once with the decision JSON, which a gated tool
// step's envelope then carries as its approval: send-email sends exactly
// what was approved, once. Repeating the decision is a no-op that says so;
// the other decision is refused.
func TestReviewDecisionUnderRIE(t *testing.T) {
	s := newReviewStack(t)
	ctx := context.Background()
	task := s.task("token-approve", nil)
	id := s.requestReview(t, task)

	out, code, msg := call(t, s.decision, map[string]any{"action": "list", "as": "alice"})
	if code != "" || !strings.Contains(string(out), id) {
		t.Fatalf("list: %s %s %s", out, code, msg)
	}
	out, code, _ = call(t, s.decision, map[string]any{"action": "show", "review_id": id, "as": "alice"})
	if code != "" || !strings.Contains(string(out), `"subject":"Weekly digest"`) || strings.Contains(string(out), "token-approve") {
		t.Fatalf("show: %s %s (must show the inputs, never the task token)", out, code)
	}

	out, code, msg = call(t, s.decision, decide(id, "alice", "approve", "recipients checked"))
	if code != "" {
		t.Fatalf("approve: %s: %s", code, msg)
	}
	var res review.DecideResult
	json.Unmarshal(out, &res)
	if !res.Changed || res.Status != review.Approved || res.Delivery != review.Delivered {
		t.Fatalf("approve: %s", out)
	}
	calls := s.sfn.Calls("token-approve")
	if len(calls) != 1 || calls[0].Action != "SendTaskSuccess" {
		t.Fatalf("Step Functions calls %+v", calls)
	}
	var d review.Decision
	if err := json.Unmarshal([]byte(calls[0].Output), &d); err != nil {
		t.Fatal(err)
	}
	r, _ := s.reviews.Get(ctx, id)
	if d.ReviewID != id || d.Decision != review.Approve || d.Approver != "alice" || d.Authenticated || d.Reason != "recipients checked" ||
		d.InputDigest != r.InputDigest || d.DecidedAt == "" || r.Approver != "alice" || r.Reason != "recipients checked" || r.Status != review.Approved {
		t.Fatalf("decision %+v, record %+v", d, r)
	}

	out, code, _ = call(t, s.decision, decide(id, "alice", "approve", ""))
	if code != "" || !strings.Contains(string(out), `"changed":false`) || !strings.Contains(string(out), "already approved by alice") {
		t.Fatalf("repeated approval: %s %s", out, code)
	}
	if _, code, msg := call(t, s.decision, decide(id, "bob", "reject", "no")); code != string(review.CodeConflict) {
		t.Fatalf("conflicting rejection: %s %s", code, msg)
	}
	if n := len(s.sfn.Calls("token-approve")); n != 1 {
		t.Fatalf("%d Step Functions calls, want exactly 1", n)
	}

	// The tool step: Step Functions puts the task output at
	// $.reviews.send, and the envelope carries it as "approval".
	envelope := func(seq int, input map[string]any) map[string]any {
		run := task["run_id"].(string)
		return map[string]any{"tool": "send-email", "toolset_id": s.ts.ID, "run_id": run, "seq": seq, "step": "send",
			"idempotency_key": fmt.Sprintf("%s/%d", run, seq), "attempt": 1, "tolerate_duplicates": false,
			"input": input, "approval": json.RawMessage(calls[0].Output)}
	}
	approved := task["input"].(map[string]any)
	if out, code, msg := call(t, s.send, envelope(1, approved)); code != "" {
		t.Fatalf("approved send: %s: %s", code, msg)
	} else if !strings.Contains(string(out), "message_id") {
		t.Fatalf("approved send: %s", out)
	}
	edited := map[string]any{"to": []string{"team@example.com"}, "subject": "Weekly digest", "text": "Three items. And one more."}
	if _, code, msg := call(t, s.send, envelope(2, edited)); code != "TOOL_PERMISSION_DENIED" || !strings.Contains(msg, "not those review") {
		t.Fatalf("edited inputs: %s %s", code, msg)
	}
	if _, code, msg := call(t, s.send, envelope(3, approved)); code != "TOOL_PERMISSION_DENIED" || !strings.Contains(msg, "already authorised another call") {
		t.Fatalf("the approval used twice: %s %s", code, msg)
	}
	resp, err := http.Get(s.ses.Endpoint() + "/store")
	if err != nil {
		t.Fatal(err)
	}
	var mail struct{ Emails []struct{ Subject string } }
	json.NewDecoder(resp.Body).Decode(&mail)
	resp.Body.Close()
	if len(mail.Emails) != 1 {
		t.Fatalf("%d mails sent, want the one approved", len(mail.Emails))
	}
}

// reject calls SendTaskFailure with REVIEW_REJECTED exactly once; an
// expired review, a caller matching no reviewer pattern and a Task that
// has ended are refused with clear messages.
func TestReviewRefusalsUnderRIE(t *testing.T) {
	s := newReviewStack(t)
	id := s.requestReview(t, s.task("token-reject", nil))
	if _, code, _ := call(t, s.decision, decide(id, "alice", "reject", "")); code != string(review.CodeInvalid) {
		t.Fatalf("a rejection without a reason: %s", code)
	}
	for range 2 {
		if _, code, msg := call(t, s.decision, decide(id, "alice", "reject", "wrong audience")); code != "" {
			t.Fatalf("reject: %s %s", code, msg)
		}
	}
	calls := s.sfn.Calls("token-reject")
	if len(calls) != 1 || calls[0].Action != "SendTaskFailure" || calls[0].Error != "REVIEW_REJECTED" || !strings.Contains(calls[0].Cause, `"decision":"reject"`) {
		t.Fatalf("Step Functions calls %+v", calls)
	}

	expired := s.requestReview(t, s.task("token-expired", func(m map[string]any) { m["timeout_seconds"] = 1 }))
	time.Sleep(2 * time.Second)
	if _, code, msg := call(t, s.decision, decide(expired, "alice", "approve", "")); code != string(review.CodeExpired) || !strings.Contains(msg, "expired at") {
		t.Fatalf("expired: %s %s", code, msg)
	}
	if n := len(s.sfn.Calls("token-expired")); n != 0 {
		t.Fatalf("an expired review reached Step Functions %d times", n)
	}

	editors := s.requestReview(t, s.task("token-editors", func(m map[string]any) { m["reviewers"] = []string{"arn:aws:sts::*:assumed-role/editors/*"} }))
	if _, code, msg := call(t, s.decision, decide(editors, "bob", "approve", "")); code != string(review.CodeForbidden) || !strings.Contains(msg, "matches none") {
		t.Fatalf("bob: %s %s", code, msg)
	}
	if _, code, msg := call(t, s.decision, decide(editors, "arn:aws:sts::123456789012:assumed-role/editors/alice", "approve", "")); code != "" {
		t.Fatalf("an editor: %s %s", code, msg)
	}

	ended := s.requestReview(t, s.task("token-ended", nil))
	s.sfn.End("token-ended", "TaskDoesNotExist")
	for range 2 {
		if _, code, msg := call(t, s.decision, decide(ended, "alice", "approve", "")); code != string(review.CodeTaskEnded) || !strings.Contains(msg, "no longer waits") && !strings.Contains(msg, "TaskDoesNotExist") {
			t.Fatalf("ended: %s %s", code, msg)
		}
	}
	if n := len(s.sfn.Calls("token-ended")); n != 1 {
		t.Fatalf("the ended Task's token was sent %d times, want 1 (not retried)", n)
	}
}

// On AWS (no TOOLGATE_ALLOW_UNAUTHENTICATED) the approver is the IAM
// principal of the Function URL request; a direct invocation, or a URL
// request without IAM context, is refused.
func TestReviewDecisionFunctionURLUnderRIE(t *testing.T) {
	s := newReviewStack(t)
	onAWS := localtest.RIE(t, "review-decision", localtest.Bootstrap(t, "./review-decision"), 10*time.Second, map[string]string{
		dispatch.EnvTable: s.store.Table(), "AWS_ENDPOINT_URL_DYNAMODB": s.dynamo, "AWS_ENDPOINT_URL_SFN": s.sfn.URL,
	})
	id := s.requestReview(t, s.task("token-url", func(m map[string]any) { m["reviewers"] = []string{"arn:aws:sts::*:assumed-role/editors/*"} }))
	if _, code, _ := call(t, onAWS, decide(id, "arn:aws:sts::123456789012:assumed-role/editors/alice", "approve", "")); code != string(review.CodeUnauthenticated) {
		t.Fatalf("a direct invocation naming an editor: %s", code)
	}
	urlEvent := func(method, path, body string, arn string) map[string]any {
		ev := map[string]any{"version": "2.0", "rawPath": path, "rawQueryString": "", "headers": map[string]string{"content-type": "application/json"},
			"requestContext": map[string]any{"http": map[string]string{"method": method, "path": path}},
			"body":           body, "isBase64Encoded": false}
		if arn != "" {
			ev["requestContext"].(map[string]any)["authorizer"] = map[string]any{"iam": map[string]string{"userArn": arn, "accountId": "123456789012"}}
		}
		return ev
	}
	status := func(out json.RawMessage) (int, string) {
		var resp struct {
			StatusCode int    `json:"statusCode"`
			Body       string `json:"body"`
		}
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatalf("not a Function URL response: %s", out)
		}
		return resp.StatusCode, resp.Body
	}
	out, _, _ := call(t, onAWS, urlEvent("POST", "/reviews/"+id, `{"decision":"approve"}`, ""))
	if st, body := status(out); st != 401 || !strings.Contains(body, string(review.CodeUnauthenticated)) {
		t.Fatalf("no IAM context: %d %s", st, body)
	}
	out, _, _ = call(t, onAWS, urlEvent("POST", "/reviews/"+id, `{"decision":"approve"}`, "arn:aws:sts::123456789012:assumed-role/ops/bob"))
	if st, body := status(out); st != 403 {
		t.Fatalf("bob: %d %s", st, body)
	}
	out, _, _ = call(t, onAWS, urlEvent("GET", "/reviews", "", "arn:aws:sts::123456789012:assumed-role/editors/alice"))
	if st, body := status(out); st != 200 || !strings.Contains(body, id) {
		t.Fatalf("list: %d %s", st, body)
	}
	alice := "arn:aws:sts::123456789012:assumed-role/editors/alice"
	out, _, _ = call(t, onAWS, urlEvent("POST", "/reviews/"+id, `{"decision":"approve","reason":"fine"}`, alice))
	if st, body := status(out); st != 200 || !strings.Contains(body, `"authenticated":true`) {
		t.Fatalf("alice approves: %d %s", st, body)
	}
	r, _ := s.reviews.Get(context.Background(), id)
	if r.Approver != alice || !r.Authenticated || len(s.sfn.Accepted("token-url")) != 1 {
		t.Fatalf("record %+v", r)
	}
}

// The direct lane asks review-request for a review without a task token,
// and watches its decision there (never its inputs); a review Task's
// review is not the lane's to watch.
func TestReviewRequestDirectLaneUnderRIE(t *testing.T) {
	s := newReviewStack(t)
	lane := s.task("", func(m map[string]any) {
		delete(m, "task_token")
		m["action"] = "request"
		m["step"] = "invoke-review"
		m["of"] = "invoke"
	})
	id := s.requestReview(t, lane)
	status := func() review.LaneStatus {
		out, code, msg := call(t, s.request, map[string]any{"action": "status", "review_id": id})
		if code != "" {
			t.Fatalf("status: %s %s", code, msg)
		}
		var st review.LaneStatus
		if err := json.Unmarshal(out, &st); err != nil || strings.Contains(string(out), "Three items") {
			t.Fatalf("status answered %s", out)
		}
		return st
	}
	if st := status(); st.Status != review.Pending || st.Decision != nil {
		t.Fatalf("%+v", st)
	}
	if r, _ := s.reviews.Get(context.Background(), id); r.TaskToken != "" || r.Of != "invoke" {
		t.Fatalf("%+v", r)
	}
	if _, code, msg := call(t, s.decision, decide(id, "alice", "approve", "ok")); code != "" {
		t.Fatalf("approve: %s %s", code, msg)
	}
	if st := status(); st.Status != review.Approved || st.Decision == nil || st.Decision.Approver != "alice" || st.Decision.ReviewID != id {
		t.Fatalf("%+v", st)
	}
	if n := len(s.sfn.Calls("")); n != 0 {
		t.Fatalf("a direct-lane decision reached Step Functions %d times", n)
	}
	task := s.requestReview(t, s.task("token-not-the-lanes", nil))
	for name, req := range map[string]map[string]any{
		"a review Task's review": {"action": "status", "review_id": task},
		"unknown review":         {"action": "status", "review_id": review.NewID()},
		"unknown action":         {"action": "approve", "review_id": id},
		"an id chosen by caller": {"action": "request", "review_id": id, "run_id": "r", "step": "a", "of": "b", "tool": "send-email", "toolset_id": s.ts.ID, "input": map[string]any{}, "timeout_seconds": 60},
	} {
		if _, code, _ := call(t, s.request, req); code != "TOOL_INPUT_INVALID" {
			t.Errorf("%s: %q", name, code)
		}
	}
}
