package functions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/dispatch"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/tool"
)

// STS answers a presigned GetCallerIdentity for the keys of any AWS
// account, so whoever may reach a function could sign its caller proof with
// the keys of an account of their own. review-request, review-decision and
// a tool function's direct lane each refuse a proof of another account's
// principal ([caller-account]), whatever the request: nothing is recorded,
// sent or decided. A pending review that names no reviewers, or whose
// recorded pattern leaves the account open (compiled before patterns had to
// name it), stays pending.
func TestFunctionsRefuseCallerProofsOfAnotherAccount(t *testing.T) {
	const outside = "999999999999"
	s := newReviewStack(t)
	directSend := localtest.RIE(t, "send-email", localtest.Bootstrap(t, "./send-email"), 30*time.Second, s.callers.Env(map[string]string{
		dispatch.EnvTable: s.store.Table(), "AWS_ENDPOINT_URL_DYNAMODB": s.dynamo, "TOOLGATE_LANE": "direct",
		"TOOLGATE_SENDER": "noreply@example.com", "TOOLGATE_RECIPIENT_ALLOW": "@example.com", "AWS_ENDPOINT_URL_SESV2": s.ses.Endpoint(),
	}))
	proof := func(name string, b caller.Binding) string { return s.callers.ProofIn(t, outside, name, b) }

	open := s.requestReview(t, s.task(t, "token-no-reviewers", nil))
	wild := s.requestReview(t, s.task(t, "token-any-account", func(m map[string]any) {
		m["reviewers"] = []string{"arn:aws:iam::*:user/editor-*"}
	}))
	decide := func(id, decision string) map[string]any {
		r, err := s.reviews.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]any{"action": "decide", "review_id": id, "decision": decision, "reason": "from outside",
			"proof": proof("editor-mallory", caller.Binding{Action: caller.ActionDecide, Target: id, Decision: decision, InputDigest: r.InputDigest})}
	}
	input := map[string]any{"to": []string{"team@example.com"}, "subject": "Weekly digest", "text": "Three items."}
	raw, _ := json.Marshal(input)
	_, digest, err := tool.InputDigest(raw)
	if err != nil {
		t.Fatal(err)
	}
	runID := lane.DirectRunPrefix(local.PrincipalIn(outside, "mallory")) + "invoke-1"
	req := review.LaneRequest{Action: "request", ReviewedCall: tool.ReviewedCall{RunID: runID, Step: "invoke-review", Of: "invoke", Tool: "send-email", ToolsetID: s.ts.ID, TimeoutSeconds: 600}}
	execution := fmt.Sprintf("arn:aws:states:us-east-1:000000000000:execution:weekly-digest:outside-%d", time.Now().UnixNano())
	key := runID + "/1"

	for _, c := range []struct {
		name string
		fn   *local.Process
		req  map[string]any
		code string
	}{
		{"review-request: a run's start", s.request, map[string]any{
			"start_proof":   proof("mallory", caller.Binding{Action: caller.ActionStart, Target: execution}),
			"execution_arn": execution, "start_time": time.Now().UTC().Format(time.RFC3339Nano)}, string(review.CodeUnauthenticated)},
		{"review-request: a direct-lane review request", s.direct, map[string]any{"action": req.Action, "run_id": req.RunID, "step": req.Step,
			"of": req.Of, "tool": req.Tool, "toolset_id": req.ToolsetID, "input": input, "timeout_seconds": req.TimeoutSeconds,
			"proof": proof("mallory", review.RequestBinding(req, digest))}, string(review.CodeUnauthenticated)},
		{"review-request: a direct-lane review's status", s.direct, map[string]any{"action": "status", "review_id": open,
			"proof": proof("mallory", caller.Binding{Action: caller.ActionStatus, Target: open})}, string(review.CodeUnauthenticated)},
		{"review-decision: approve a review naming no reviewers", s.decision, decide(open, "approve"), string(review.CodeUnauthenticated)},
		{"review-decision: reject a review naming no reviewers", s.decision, decide(open, "reject"), string(review.CodeUnauthenticated)},
		{"review-decision: approve a review whose pattern leaves the account open", s.decision, decide(wild, "approve"), string(review.CodeUnauthenticated)},
		{"review-decision: show", s.decision, map[string]any{"action": "show", "review_id": wild,
			"proof": proof("editor-mallory", caller.Binding{Action: caller.ActionShow, Target: wild})}, string(review.CodeUnauthenticated)},
		{"review-decision: list", s.decision, map[string]any{"action": "list",
			"proof": proof("editor-mallory", caller.Binding{Action: caller.ActionList})}, string(review.CodeUnauthenticated)},
		{"send-email: a direct-lane call", directSend, map[string]any{"tool": "send-email", "toolset_id": s.ts.ID, "run_id": runID, "seq": 1,
			"step": "invoke", "idempotency_key": key, "attempt": 1, "tolerate_duplicates": false, "input": input,
			"caller_proof": proof("mallory", caller.Binding{Action: caller.ActionInvoke, Target: key, InputDigest: digest})}, string(tool.PermissionDenied)},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, code, msg := call(t, c.fn, c.req)
			if code != c.code || !strings.Contains(msg, "["+string(caller.WrongAccount)+"]") {
				t.Fatalf("%s %s (answer %s), want %s naming [%s]", code, msg, out, c.code, caller.WrongAccount)
			}
			if strings.Contains(msg, "X-Amz-Signature") || strings.Contains(msg, "X-Amz-Credential") {
				t.Fatalf("the refusal shows the proof: %s", msg)
			}
		})
	}
	for _, id := range []string{open, wild} {
		if r, err := s.reviews.Get(context.Background(), id); err != nil || r.Status != review.Pending || r.Approver != "" {
			t.Errorf("review %s after the outside decisions: %+v, %v; want it pending, undecided", id, r, err)
		}
	}
	if n := len(s.sfn.Calls("")); n != 0 {
		t.Errorf("%d decisions reached Step Functions", n)
	}
	if _, err := s.store.Record(context.Background(), key); err == nil {
		t.Error("the outside call claimed its idempotency key")
	}
	if rows, err := s.store.RunRows(context.Background(), runID); err != nil || len(rows) != 0 {
		t.Errorf("the outside calls wrote %d rows (%v)", len(rows), err)
	}
	if mails := localtest.Mails(t, s.ses); len(mails) != 0 {
		t.Errorf("the SES emulator received %d e-mail(s)", len(mails))
	}
	// The same names of the deployment's own account are admitted: the
	// refusal is the account's, not the request's.
	if out, code, msg := call(t, s.decision, s.show(t, open, "editor-mallory")); code != "" {
		t.Fatalf("editor-mallory of the deployment's account shows a review naming no reviewers: %s %s %s", code, msg, out)
	}
}

// Start records are kept a year and a day, and those written before the
// verifier compared accounts may name another account's principal: the
// run's reviews would have that principal as requester, whom the same
// person signed in with the deployment's account is not. review-request
// refuses such a record for a review Task, and review-decision refuses to
// approve a review already requested by one (a rejection stays open).
func TestStartRecordsOfAnotherAccountAreRefused(t *testing.T) {
	const outside = "999999999999"
	s := newReviewStack(t)
	mallory := local.PrincipalIn(outside, "mallory")
	// A run started before the upgrade with another account's keys.
	old := fmt.Sprintf("arn:aws:states:us-east-1:000000000000:execution:weekly-digest:old-%d", time.Now().UnixNano())
	if err := s.reviews.RecordStart(context.Background(), old, mallory); err != nil {
		t.Fatal(err)
	}
	task := s.task(t, "token-old-run", func(m map[string]any) { m["run_id"] = old; m["requester"] = mallory })
	if _, code, msg := call(t, s.request, task); code != string(review.CodeForbidden) || !strings.Contains(msg, "["+string(caller.WrongAccount)+"]") {
		t.Fatalf("a review Task of a run started by another account's principal: %s %s, want %s naming [%s]", code, msg, review.CodeForbidden, caller.WrongAccount)
	}
	// A review requested before the upgrade by another account's principal.
	pending := s.requestReview(t, s.task(t, "token-requested-before", nil))
	r, err := s.reviews.Get(context.Background(), pending)
	if err != nil {
		t.Fatal(err)
	}
	_, err = local.DynamoDB(s.dynamo).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(s.store.Table()),
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "REVIEW#" + r.ID}, "sk": &types.AttributeValueMemberS{Value: "REVIEW"}},
		UpdateExpression:          aws.String("SET requester = :m"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":m": &types.AttributeValueMemberS{Value: mallory}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, code, msg := call(t, s.decision, s.decide(t, pending, "mallory", "approve", "mine")); code != string(review.CodeForbidden) || !strings.Contains(msg, "["+string(caller.WrongAccount)+"]") {
		t.Fatalf("approving a review its outside requester asked for, signed in here: %s %s, want %s naming [%s]", code, msg, review.CodeForbidden, caller.WrongAccount)
	}
	if n := len(s.sfn.Calls("")); n != 0 {
		t.Fatalf("%d decisions reached Step Functions", n)
	}
	if _, code, msg := call(t, s.decision, s.decide(t, pending, "alice", "reject", "started from another account")); code != "" {
		t.Fatalf("rejecting it: %s %s", code, msg)
	}
}
