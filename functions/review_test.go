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
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/review/reviewtest"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
	"github.com/toolgate/toolgate/shared/tracecontext"
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
	reviews  *dynamo.Store
	ts       *toolset.Toolset
	sfn      *reviewtest.SFN
	ses      *local.Process
	request  *local.Process // review-request, sfn lane
	direct   *local.Process // review-request, direct lane
	decision *local.Process // review-decision
	send     *local.Process // send-email, sfn lane
	// callers is the STS stand-in that proves who calls (local names,
	// arn:aws:iam::000000000000:user/NAME).
	callers *localtest.Callers
}

// requester is the local name that starts the stack's runs.
const requester = "requester"

func newReviewStack(t *testing.T) *reviewStack {
	t.Helper()
	// The package's one dynalite, a table of the test's own.
	p, db, tableName := localtest.SharedTable(t, "toolgate-review")
	s := &reviewStack{dynamo: p.Endpoint(), store: ledger.New(db, tableName), reviews: dynamo.NewStore(db, tableName), sfn: reviewtest.NewSFN(t)}
	var err error
	if s.ts, err = toolset.FromCatalog(catalog.Default(), []string{"send-email"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.store.RegisterToolset(context.Background(), s.ts); err != nil {
		t.Fatal(err)
	}
	s.callers = localtest.StartCallers(t)
	table := s.callers.Env(map[string]string{dispatch.EnvTable: s.store.Table(), "AWS_ENDPOINT_URL_DYNAMODB": p.Endpoint(), "TOOLGATE_STAGE": "dev"})
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
	s.direct = localtest.RIE(t, "review-request", localtest.Bootstrap(t, "./review-request"), 10*time.Second, with(map[string]string{
		"TOOLGATE_LANE": "direct", review.EnvDirectReviewers: `{"send-email": ["arn:aws:iam::000000000000:user/*"]}`,
	}))
	s.decision = localtest.RIE(t, "review-decision", localtest.Bootstrap(t, "./review-decision"), 10*time.Second,
		with(map[string]string{"AWS_ENDPOINT_URL_SFN": s.sfn.URL}))
	s.ses = localtest.SES(t)
	s.send = localtest.RIE(t, "send-email", localtest.Bootstrap(t, "./send-email"), 30*time.Second, with(map[string]string{
		"TOOLGATE_SENDER": "noreply@example.com", "TOOLGATE_RECIPIENT_ALLOW": "@example.com", "AWS_ENDPOINT_URL_SESV2": s.ses.Endpoint(),
	}))
	return s
}

var reviewRuns = 0

// task is the payload a compiled review Task sends review-request, for a
// new execution whose start requester proved through review-request (as a
// compiled Solution's Starter state does).
func (s *reviewStack) task(t *testing.T, token string, mod func(map[string]any)) map[string]any {
	t.Helper()
	reviewRuns++
	run := fmt.Sprintf("arn:aws:states:us-east-1:123456789012:execution:weekly-digest:run-%d-%d", time.Now().UnixNano(), reviewRuns)
	s.start(t, run, requester)
	m := map[string]any{
		"task_token": token, "run_id": run,
		"step": "approve", "of": "send", "tool": "send-email", "toolset_id": s.ts.ID,
		"input":     map[string]any{"to": []string{"team@example.com"}, "subject": "Weekly digest", "text": "Three items."},
		"reviewers": []string{}, "timeout_seconds": 3600, "requester": local.LocalPrincipal(requester),
	}
	if mod != nil {
		mod(m)
	}
	return m
}

// start has review-request verify as's start proof for execution run, as
// the Starter state does, and returns the starter it answers.
func (s *reviewStack) start(t *testing.T, run, as string) string {
	t.Helper()
	out, code, msg := call(t, s.request, map[string]any{
		"start_proof":   s.callers.Proof(t, as, caller.Binding{Action: caller.ActionStart, Target: run}),
		"execution_arn": run, "start_time": time.Now().UTC().Format(time.RFC3339Nano)})
	if code != "" {
		t.Fatalf("start of %s: %s %s", run, code, msg)
	}
	var res tool.StartResult
	if err := json.Unmarshal(out, &res); err != nil || res.Starter != local.LocalPrincipal(as) {
		t.Fatalf("start of %s answered %s", run, out)
	}
	return res.Starter
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

// decide is a direct invocation of review-decision deciding review id as
// the local identity as, with a caller proof bound to the review, the
// decision and the review's input digest (read from the table, as
// `toolgate review` learns it by showing the review first).
func (s *reviewStack) decide(t *testing.T, id, as, decision, reason string) map[string]any {
	t.Helper()
	digest := ""
	if r, err := s.reviews.Get(context.Background(), id); err == nil {
		digest = r.InputDigest
	}
	proof := s.callers.Proof(t, as, caller.Binding{Action: caller.ActionDecide, Target: id, Decision: decision, InputDigest: digest})
	return map[string]any{"action": "decide", "review_id": id, "decision": decision, "proof": proof, "reason": reason}
}

// list and show are direct invocations of review-decision as as.
func (s *reviewStack) list(t *testing.T, as string) map[string]any {
	return map[string]any{"action": "list", "proof": s.callers.Proof(t, as, caller.Binding{Action: caller.ActionList})}
}

func (s *reviewStack) show(t *testing.T, id, as string) map[string]any {
	return map[string]any{"action": "show", "review_id": id, "proof": s.callers.Proof(t, as, caller.Binding{Action: caller.ActionShow, Target: id})}
}

// review-request stores the pending review (apart from the ledger's
// records and rows, listed through the index) and returns while the Task
// waits; the same Task asking again gets the same review.
func TestReviewRequestUnderRIE(t *testing.T) {
	s := newReviewStack(t)
	ctx := context.Background()
	task := s.task(t, "token-request-1", func(m map[string]any) {
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
	if rows := ledgertest.RunRows(t, s.store, r.RunID); len(rows) != 0 {
		t.Fatalf("the review wrote ledger rows: %+v", rows)
	}
	// Another proof for the same execution's start, by someone else, is
	// refused: an execution has one starter.
	_, code, msg := call(t, s.request, map[string]any{
		"start_proof":   s.callers.Proof(t, "carol", caller.Binding{Action: caller.ActionStart, Target: task["run_id"].(string)}),
		"execution_arn": task["run_id"], "start_time": time.Now().UTC().Format(time.RFC3339Nano)})
	if code != "REVIEW_FORBIDDEN" || !strings.Contains(msg, "started by someone else") {
		t.Fatalf("a second starter: %s %s", code, msg)
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
		"no task token":     {func(m map[string]any) { delete(m, "task_token") }, "REVIEW_INVALID_REQUEST"},
		"unknown field":     {func(m map[string]any) { m["extra"] = 1 }, "REVIEW_INVALID_REQUEST"},
		"inexact number":    {func(m map[string]any) { m["input"] = json.RawMessage(`{"n":9007199254740993}`) }, "REVIEW_INVALID_REQUEST"},
		"reviewer not ARN":  {func(m map[string]any) { m["reviewers"] = []string{"alice"} }, "REVIEW_INVALID_REQUEST"},
		"unknown toolset":   {func(m map[string]any) { m["toolset_id"] = "ts_00000000000000000000000000000000" }, "REVIEW_FORBIDDEN"},
		"tool not pinned":   {func(m map[string]any) { m["tool"] = "structured-data-fetch" }, "REVIEW_FORBIDDEN"},
		"same token, other": {func(m map[string]any) { m["task_token"] = "token-request-1"; m["of"] = "other" }, "REVIEW_INVALID_REQUEST"},
		// A definition written by hand cannot name another requester than
		// the execution's proven starter, nor skip the Starter state.
		"another requester": {func(m map[string]any) { m["requester"] = local.LocalPrincipal("carol") }, "REVIEW_FORBIDDEN"},
		"never started": {func(m map[string]any) {
			m["run_id"] = "arn:aws:states:us-east-1:123456789012:execution:weekly-digest:never-started"
		}, "REVIEW_FORBIDDEN"},
	} {
		if _, code, msg := call(t, s.request, s.task(t, "token-bad-"+name, c.mod)); code != c.code {
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
	task := s.task(t, "token-approve", nil)
	id := s.requestReview(t, task)

	out, code, msg := call(t, s.decision, s.list(t, "alice"))
	if code != "" || !strings.Contains(string(out), id) {
		t.Fatalf("list: %s %s %s", out, code, msg)
	}
	out, code, _ = call(t, s.decision, s.show(t, id, "alice"))
	if code != "" || !strings.Contains(string(out), `"subject":"Weekly digest"`) || strings.Contains(string(out), "token-approve") {
		t.Fatalf("show: %s %s (must show the inputs, never the task token)", out, code)
	}

	out, code, msg = call(t, s.decision, s.decide(t, id, "alice", "approve", "recipients checked"))
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
	r := reviewtest.MustGet(t, s.reviews, id)
	if d.ReviewID != id || d.Decision != review.Approve || d.Approver != local.LocalPrincipal("alice") || !d.Authenticated || d.Reason != "recipients checked" ||
		d.InputDigest != r.InputDigest || d.DecidedAt == "" || r.Approver != local.LocalPrincipal("alice") || r.Reason != "recipients checked" || r.Status != review.Approved {
		t.Fatalf("decision %+v, record %+v", d, r)
	}

	out, code, _ = call(t, s.decision, s.decide(t, id, "alice", "approve", ""))
	if code != "" || !strings.Contains(string(out), `"changed":false`) || !strings.Contains(string(out), "already approved by "+local.LocalPrincipal("alice")) {
		t.Fatalf("repeated approval: %s %s", out, code)
	}
	if _, code, msg := call(t, s.decision, s.decide(t, id, "bob", "reject", "no")); code != string(review.CodeConflict) {
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
	id := s.requestReview(t, s.task(t, "token-reject", nil))
	if _, code, _ := call(t, s.decision, s.decide(t, id, "alice", "reject", "")); code != string(review.CodeInvalid) {
		t.Fatalf("a rejection without a reason: %s", code)
	}
	for range 2 {
		if _, code, msg := call(t, s.decision, s.decide(t, id, "alice", "reject", "wrong audience")); code != "" {
			t.Fatalf("reject: %s %s", code, msg)
		}
	}
	calls := s.sfn.Calls("token-reject")
	if len(calls) != 1 || calls[0].Action != "SendTaskFailure" || calls[0].Error != "REVIEW_REJECTED" || !strings.Contains(calls[0].Cause, `"decision":"reject"`) {
		t.Fatalf("Step Functions calls %+v", calls)
	}

	expired := s.requestReview(t, s.task(t, "token-expired", func(m map[string]any) { m["timeout_seconds"] = 1 }))
	// Real time: review-decision, under the RIE, reads the real clock, and a
	// 1 s review expires at most 1 s after review-request answered
	// (ExpiresAt is CreatedAt + timeout_seconds, to the second).
	time.Sleep(time.Second)
	if _, code, msg := call(t, s.decision, s.decide(t, expired, "alice", "approve", "")); code != string(review.CodeExpired) || !strings.Contains(msg, "expired at") {
		t.Fatalf("expired: %s %s", code, msg)
	}
	if n := len(s.sfn.Calls("token-expired")); n != 0 {
		t.Fatalf("an expired review reached Step Functions %d times", n)
	}

	editors := s.requestReview(t, s.task(t, "token-editors", func(m map[string]any) { m["reviewers"] = []string{"arn:aws:iam::*:user/editor-*"} }))
	if _, code, msg := call(t, s.decision, s.decide(t, editors, "bob", "approve", "")); code != string(review.CodeForbidden) || !strings.Contains(msg, "matches none") {
		t.Fatalf("bob: %s %s", code, msg)
	}
	if _, code, msg := call(t, s.decision, s.decide(t, editors, "editor-alice", "approve", "")); code != "" {
		t.Fatalf("an editor: %s %s", code, msg)
	}

	own := s.requestReview(t, s.task(t, "token-own", nil))
	if _, code, msg := call(t, s.decision, s.decide(t, own, requester, "approve", "mine")); code != string(review.CodeSelfApproval) {
		t.Fatalf("the run's starter approves its review: %s %s, want %s", code, msg, review.CodeSelfApproval)
	}
	if n := len(s.sfn.Calls("token-own")); n != 0 {
		t.Fatalf("a self-approval reached Step Functions %d times", n)
	}

	ended := s.requestReview(t, s.task(t, "token-ended", nil))
	s.sfn.End("token-ended", "TaskDoesNotExist")
	for range 2 {
		if _, code, msg := call(t, s.decision, s.decide(t, ended, "alice", "approve", "")); code != string(review.CodeTaskEnded) || !strings.Contains(msg, "no longer waits") && !strings.Contains(msg, "TaskDoesNotExist") {
			t.Fatalf("ended: %s %s", code, msg)
		}
	}
	if n := len(s.sfn.Calls("token-ended")); n != 1 {
		t.Fatalf("the ended Task's token was sent %d times, want 1 (not retried)", n)
	}
}

// The forged event: a Function-URL-shaped event whose authorizer names a
// reviewer, invoked directly, approved the review before caller proofs.
// Now the caller is whoever the caller proof (header
// X-Toolgate-Caller-Proof) proves, and the authorizer is never read.
func TestReviewDecisionTakesTheCallerFromTheProofNeverFromTheEvent(t *testing.T) {
	s := newReviewStack(t)
	id := s.requestReview(t, s.task(t, "token-url", func(m map[string]any) { m["reviewers"] = []string{"arn:aws:iam::*:user/editor-*"} }))
	urlEvent := func(method, path, body, authorizerARN, proof string) map[string]any {
		headers := map[string]string{"content-type": "application/json"}
		if proof != "" {
			headers["x-toolgate-caller-proof"] = proof
		}
		ev := map[string]any{"version": "2.0", "rawPath": path, "rawQueryString": "", "headers": headers,
			"requestContext": map[string]any{"http": map[string]string{"method": method, "path": path}},
			"body":           body, "isBase64Encoded": false}
		if authorizerARN != "" {
			ev["requestContext"].(map[string]any)["authorizer"] = map[string]any{"iam": map[string]string{"userArn": authorizerARN, "accountId": "000000000000"}}
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
	editor := local.LocalPrincipal("editor-alice")
	approve := func(as string) string {
		r := reviewtest.MustGet(t, s.reviews, id)
		return s.callers.Proof(t, as, caller.Binding{Action: caller.ActionDecide, Target: id, Decision: "approve", InputDigest: r.InputDigest})
	}
	out, _, _ := call(t, s.decision, urlEvent("POST", "/reviews/"+id, `{"decision":"approve"}`, editor, ""))
	if st, body := status(out); st != 401 || !strings.Contains(body, string(review.CodeUnauthenticated)) {
		t.Fatalf("the forged event (an authorizer naming an editor, no proof): %d %s, want 401", st, body)
	}
	if _, code, _ := call(t, s.decision, map[string]any{"action": "decide", "review_id": id, "decision": "approve", "as": editor}); code != string(review.CodeInvalid) {
		t.Fatalf("a direct invocation naming its caller: %s, want %s", code, review.CodeInvalid)
	}
	out, _, _ = call(t, s.decision, urlEvent("POST", "/reviews/"+id, `{"decision":"approve"}`, editor, approve("ops-bob")))
	if st, body := status(out); st != 403 {
		t.Fatalf("bob's proof under an authorizer naming an editor: %d %s, want 403", st, body)
	}
	out, _, _ = call(t, s.decision, urlEvent("POST", "/reviews/"+id, `{"decision":"reject","reason":"x"}`, "", approve("editor-alice")))
	if st, body := status(out); st != 401 {
		t.Fatalf("an approval's proof for a rejection: %d %s, want 401", st, body)
	}
	list := s.callers.Proof(t, "editor-alice", caller.Binding{Action: caller.ActionList})
	out, _, _ = call(t, s.decision, urlEvent("GET", "/reviews", "", "", list))
	if st, body := status(out); st != 200 || !strings.Contains(body, id) {
		t.Fatalf("list: %d %s", st, body)
	}
	out, _, _ = call(t, s.decision, urlEvent("POST", "/reviews/"+id, `{"decision":"approve","reason":"fine"}`, "", approve("editor-alice")))
	if st, body := status(out); st != 200 || !strings.Contains(body, `"authenticated":true`) {
		t.Fatalf("alice approves: %d %s", st, body)
	}
	r := reviewtest.MustGet(t, s.reviews, id)
	if r.Approver != editor || !r.Authenticated || len(s.sfn.Accepted("token-url")) != 1 {
		t.Fatalf("record %+v", r)
	}
}

// The direct lane asks review-request for a review without a task token,
// and watches its decision there (never its inputs); a review Task's
// review is not the lane's to watch.
func TestReviewRequestDirectLaneUnderRIE(t *testing.T) {
	s := newReviewStack(t)
	me := local.LocalPrincipal(requester)
	input := map[string]any{"to": []string{"team@example.com"}, "subject": "Weekly digest", "text": "Three items."}
	_, digest, _ := tool.InputDigest(json.RawMessage(`{"to":["team@example.com"],"subject":"Weekly digest","text":"Three items."}`))
	// request is a direct-lane review request as `as`, its proof bound to
	// the request (review.RequestBinding): before changes the request
	// before it is signed, after changes it once signed.
	request := func(as, runID string, before, after func(*review.LaneRequest, map[string]any)) map[string]any {
		req := review.LaneRequest{Action: "request", ReviewedCall: tool.ReviewedCall{RunID: runID, Step: "invoke-review", Of: "invoke", Tool: "send-email",
			ToolsetID: s.ts.ID, TimeoutSeconds: 600}}
		extra := map[string]any{}
		if before != nil {
			before(&req, extra)
		}
		m := map[string]any{"action": req.Action, "run_id": req.RunID, "step": req.Step, "of": req.Of, "tool": req.Tool,
			"toolset_id": req.ToolsetID, "input": input, "timeout_seconds": req.TimeoutSeconds,
			"proof": s.callers.Proof(t, as, review.RequestBinding(req, digest))}
		for k, v := range extra {
			m[k] = v
		}
		if after != nil {
			after(&req, m)
		}
		return m
	}
	statusAs := func(as, id string) map[string]any {
		return map[string]any{"action": "status", "review_id": id, "proof": s.callers.Proof(t, as, caller.Binding{Action: caller.ActionStatus, Target: id})}
	}
	runID := lane.DirectRunPrefix(me) + "invoke-1"
	out, code, msg := call(t, s.direct, request(requester, runID, nil, nil))
	if code != "" {
		t.Fatalf("request: %s %s", code, msg)
	}
	var requested review.RequestResult
	json.Unmarshal(out, &requested)
	id := requested.ReviewID
	status := func() review.LaneStatus {
		out, code, msg := call(t, s.direct, statusAs(requester, id))
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
	r := reviewtest.MustGet(t, s.reviews, id)
	if r.TaskToken != "" || r.Of != "invoke" || r.Requester != me || len(r.Reviewers) != 1 || r.Reviewers[0] != "arn:aws:iam::000000000000:user/*" {
		t.Fatalf("the direct-lane review: %+v (want the requester proven, the platform's reviewers)", r)
	}
	// Four eyes: the requester chose no reviewer and cannot decide.
	if _, code, msg := call(t, s.decision, s.decide(t, id, requester, "approve", "mine")); code != string(review.CodeSelfApproval) {
		t.Fatalf("the requester approves their own direct-lane review: %s %s", code, msg)
	}
	if _, code, _ := call(t, s.direct, statusAs("mallory", id)); code != "REVIEW_INVALID_REQUEST" {
		t.Fatalf("another caller reads the status (the approval): %s", code)
	}
	if _, code, msg := call(t, s.decision, s.decide(t, id, "alice", "approve", "ok")); code != "" {
		t.Fatalf("approve: %s %s", code, msg)
	}
	if st := status(); st.Status != review.Approved || st.Decision == nil || st.Decision.Approver != local.LocalPrincipal("alice") || st.Decision.ReviewID != id {
		t.Fatalf("%+v", st)
	}
	if n := len(s.sfn.Calls("")); n != 0 {
		t.Fatalf("a direct-lane decision reached Step Functions %d times", n)
	}
	execution := s.task(t, "token-execution", nil)["run_id"].(string)
	task := s.requestReview(t, s.task(t, "token-not-the-lanes", nil))
	for name, c := range map[string]struct {
		fn   *local.Process
		req  map[string]any
		code string
	}{
		"a review Task's review":        {s.direct, statusAs(requester, task), "REVIEW_INVALID_REQUEST"},
		"unknown review":                {s.direct, statusAs(requester, review.NewID()), "REVIEW_INVALID_REQUEST"},
		"unknown action":                {s.direct, map[string]any{"action": "approve", "review_id": id}, "REVIEW_INVALID_REQUEST"},
		"an id chosen by caller":        {s.direct, request(requester, runID, func(_ *review.LaneRequest, x map[string]any) { x["review_id"] = id }, nil), "REVIEW_INVALID_REQUEST"},
		"reviewers chosen by requester": {s.direct, request(requester, runID, func(_ *review.LaneRequest, x map[string]any) { x["reviewers"] = []string{me} }, nil), "REVIEW_INVALID_REQUEST"},
		"an execution's run id":         {s.direct, request(requester, execution, nil, nil), "REVIEW_FORBIDDEN"},
		"another caller's namespace":    {s.direct, request("mallory", runID, nil, nil), "REVIEW_FORBIDDEN"},
		"no proof":                      {s.direct, request(requester, runID, nil, func(_ *review.LaneRequest, m map[string]any) { delete(m, "proof") }), "REVIEW_UNAUTHENTICATED"},
		"a proof for other inputs": {s.direct, request(requester, runID, nil, func(_ *review.LaneRequest, m map[string]any) {
			m["input"] = map[string]any{"to": []string{"x@example.com"}}
		}), "REVIEW_UNAUTHENTICATED"},
		"a proof for another step":           {s.direct, request(requester, runID, nil, func(_ *review.LaneRequest, m map[string]any) { m["of"] = "other" }), "REVIEW_UNAUTHENTICATED"},
		"a proof for another timeout":        {s.direct, request(requester, runID, nil, func(_ *review.LaneRequest, m map[string]any) { m["timeout_seconds"] = 60 }), "REVIEW_UNAUTHENTICATED"},
		"over the direct lane's timeout":     {s.direct, request(requester, runID, func(r *review.LaneRequest, _ map[string]any) { r.TimeoutSeconds = 7200 }, nil), "REVIEW_INVALID_REQUEST"},
		"a lane request on the sfn lane":     {s.request, request(requester, runID, nil, nil), "REVIEW_FORBIDDEN"},
		"a review Task on the direct lane":   {s.direct, s.task(t, "token-wrong-lane", nil), "REVIEW_FORBIDDEN"},
		"a review Task with a direct run id": {s.request, s.task(t, "token-direct-run", func(m map[string]any) { m["run_id"] = runID }), "REVIEW_FORBIDDEN"},
	} {
		if _, code, msg := call(t, c.fn, c.req); code != c.code {
			t.Errorf("%s: %q %s, want %s", name, code, msg, c.code)
		}
	}
}

// A gated tool the platform names no direct-lane reviewers for cannot be
// called on the direct lane: the requester never picks who decides.
func TestDirectLaneClosedWithoutConfiguredReviewers(t *testing.T) {
	s := newReviewStack(t)
	closed := localtest.RIE(t, "review-request", localtest.Bootstrap(t, "./review-request"), 10*time.Second, s.callers.Env(map[string]string{
		dispatch.EnvTable: s.store.Table(), "AWS_ENDPOINT_URL_DYNAMODB": s.dynamo, "TOOLGATE_LANE": "direct", "TOOLGATE_STAGE": "dev",
	}))
	runID := lane.DirectRunPrefix(local.LocalPrincipal(requester)) + "x"
	input := map[string]any{"to": []string{"team@example.com"}}
	_, digest, _ := tool.InputDigest(json.RawMessage(`{"to":["team@example.com"]}`))
	_, code, msg := call(t, closed, map[string]any{"action": "request", "run_id": runID, "step": "invoke-review", "of": "invoke", "tool": "send-email",
		"toolset_id": s.ts.ID, "input": input, "timeout_seconds": 60,
		"proof": s.callers.Proof(t, requester, review.RequestBinding(review.LaneRequest{ReviewedCall: tool.ReviewedCall{RunID: runID, Step: "invoke-review", Of: "invoke",
			Tool: "send-email", ToolsetID: s.ts.ID, TimeoutSeconds: 60}}, digest))})
	if code != "REVIEW_FORBIDDEN" || !strings.Contains(msg, "direct lane is closed") {
		t.Fatalf("%s %s, want the direct lane closed", code, msg)
	}
}

// review-request stores a review's place in its run's trace on the
// review item: its own span, under the traceparent its Task carried, or,
// for a run given none (null), a span of the trace it derives from the
// run id under the stage's external key, which it reads at its cold
// start.
func TestReviewRequestStoresTheReviewTraceparent(t *testing.T) {
	s := newReviewStack(t)
	ctx := context.Background()
	const carried = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	id := s.requestReview(t, s.task(t, "token-trace-carried", func(m map[string]any) { m["traceparent"] = carried }))
	if r, err := s.reviews.Get(ctx, id); err != nil || !strings.HasPrefix(r.Traceparent, carried[:36]) || r.Traceparent == carried || !strings.HasSuffix(r.Traceparent, "-01") {
		t.Fatalf("a carried context stored as %q (%v): want a span of its own in the carried trace", r.Traceparent, err)
	}
	task := s.task(t, "token-trace-none", func(m map[string]any) { m["traceparent"] = nil })
	r, err := s.reviews.Get(ctx, s.requestReview(t, task))
	if err != nil {
		t.Fatal(err)
	}
	sc, ok := tracecontext.Parse(tool.TraceContext{Traceparent: r.Traceparent})
	if !ok || sc.TraceID().String() == "4bf92f3577b34da6a3ce929d0e0e4736" || !sc.IsSampled() {
		t.Fatalf("a run without a context stored %q", r.Traceparent)
	}
	// Another review of the same run is in the same trace.
	other := s.task(t, "token-trace-none-2", func(m map[string]any) { m["traceparent"] = nil; m["step"] = "approve2" })
	other["run_id"] = task["run_id"]
	r2, err := s.reviews.Get(ctx, s.requestReview(t, other))
	if err != nil {
		t.Fatal(err)
	}
	sc2, _ := tracecontext.Parse(tool.TraceContext{Traceparent: r2.Traceparent})
	if sc2.TraceID() != sc.TraceID() || sc2.SpanID() == sc.SpanID() {
		t.Fatalf("two reviews of a run placed at %q and %q", r.Traceparent, r2.Traceparent)
	}
}
