package stack_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// outside is an AWS account that is not the local stack's: STS answers a
// presigned GetCallerIdentity for its keys as for any account's, and the
// STS stand-in does too (local.LocalKeys.CredentialsIn).
const outside = "999999999999"

// asOutsider makes the CLI sign its caller proofs, where --as is not
// given, with name's keys in the outside account, as anyone holding keys
// of a personal AWS account could.
func (e *env) asOutsider(t *testing.T, name string) {
	t.Helper()
	c, err := e.keys(t).CredentialsIn(outside, name)
	if err != nil {
		t.Fatal(err)
	}
	old := e.cli
	e.cli = maps.Clone(old)
	e.cli["AWS_ACCESS_KEY_ID"], e.cli["AWS_SECRET_ACCESS_KEY"] = c.AccessKeyID, c.SecretAccessKey
	t.Cleanup(func() { e.cli = old })
}

// Four eyes against someone who signs caller proofs with another AWS
// account's keys: each of the three ways it was beaten is refused
// ([caller-account]), with nothing sent and no decision delivered.
func TestCallerProofsOfAnotherAccountAreRefusedEndToEnd(t *testing.T) {
	e := sharedEnv(t)
	inAccountOnly := strings.NewReplacer("solution: e2e-digest", "solution: outside-start",
		"timeout_seconds: TIMEOUT}", "timeout_seconds: 600, reviewers: [\""+local.LocalPrincipal("tester")+"\"]}").Replace(reviewedDigest)
	e.publish(t, "outside-start", inAccountOnly)
	e.publish(t, "outside-digest", digestAs("outside-digest", "600"))
	input := filepath.Join(e.dir, "input.json")
	os.WriteFile(input, []byte(`{"recipient":"team@example.com"}`), 0o644)
	// toolgate runs the CLI and requires a refusal naming [caller-account].
	refusedForAccount := func(t *testing.T, args ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := e.cliRun(args, &out, &errb)
		if code == cli.ExitOK || !strings.Contains(errb.String(), "["+string(caller.WrongAccount)+"]") {
			t.Fatalf("toolgate %s: exit %d\n%s%s\nwant a refusal naming [%s]", strings.Join(args, " "), code, out.String(), errb.String(), caller.WrongAccount)
		}
	}
	callers := &localtest.Callers{STS: e.st.STS, Keys: e.keys(t)}
	// refusedDirect invokes fn directly, as whoever may invoke it could, with a
	// proof signed in the outside account, and requires a refusal of code
	// naming [caller-account].
	refusedDirect := func(t *testing.T, fn string, payload map[string]any, code string) {
		t.Helper()
		_, errType, msg := localtest.Invoke(t, e.st.Functions[fn], payload)
		if errType != code || !strings.Contains(msg, "["+string(caller.WrongAccount)+"]") || strings.Contains(msg, "X-Amz-Signature") {
			t.Fatalf("%s: %s %s, want %s naming [%s] without the proof", fn, errType, msg, code, caller.WrongAccount)
		}
	}

	// The start proof signed in another account would have made that
	// account's principal the run's starter, and so every review's
	// requester, whom an in-account reviewer then is not: review-request
	// refuses to record the start, so toolgate run starts nothing.
	t.Run("step functions lane: a run started with another account's keys", func(t *testing.T) {
		e.clearMails(t)
		before := e.executions(t, "outside-start")
		e.asOutsider(t, "mallory")
		var stdout, stderr bytes.Buffer
		code := e.cliRun([]string{"run", "outside-start", "--input", input, "--endpoint", e.st.SFN.Endpoint(), "--stage", stack.Stage, "--params", e.st.ParamsFile}, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if code == cli.ExitOK || !strings.Contains(out, "["+string(caller.WrongAccount)+"]") || !strings.Contains(out, "nothing was started") {
			t.Fatalf("toolgate run: exit %d %s, want a refusal naming [%s] that started nothing", code, out, caller.WrongAccount)
		}
		if strings.Contains(out, "X-Amz-Signature") {
			t.Fatalf("the refusal shows the proof: %s", out)
		}
		if after := e.executions(t, "outside-start"); len(after) != len(before) {
			t.Fatalf("executions %v after a refused start, want %v", after, before)
		}
		if m := e.mails(t); len(m) != 0 {
			t.Fatalf("%d mails", len(m))
		}
	})

	// Requested and sent with another account's keys on the direct lane,
	// approved in this one: the request is refused, so there is nothing to
	// approve, and the send itself is refused too.
	t.Run("direct lane: a gated call requested and sent with another account's keys", func(t *testing.T) {
		e.clearMails(t)
		// The platform registered send-email's one-tool toolset, as its
		// operator does to open the direct lane.
		if out, code := e.toolgate(t, "toolset", "register", "--tool", "send-email", "--function-endpoint", e.st.Endpoints["publish"], "--as", publisher); code != cli.ExitOK {
			t.Fatalf("register send-email's toolset: %s", out)
		}
		e.asOutsider(t, "mallory")
		mail := filepath.Join(e.dir, "mail.json")
		os.WriteFile(mail, []byte(`{"to":["team@example.com"],"subject":"from outside","text":"x"}`), 0o644)
		refusedForAccount(t, "invoke", "send-email", "--input", mail, "--endpoint", e.st.Endpoints["send-email"],
			"--review-endpoint", e.st.Endpoints["review-request"], "--dynamodb-endpoint", e.st.Dynamo.Endpoint(), "--table", stack.Table, "--wait-timeout", "5s")
		runID := lane.DirectRunPrefix(local.PrincipalIn(outside, "mallory")) + "outside-1"
		if ids := e.reviewsOf(t, lane.DirectRunPrefix(local.PrincipalIn(outside, "mallory"))); len(ids) != 0 {
			t.Fatalf("reviews %v for the outside request", ids)
		}
		// The send, straight to the function's direct lane with the
		// outsider's proof.
		key := runID + "/1"
		in := map[string]any{"to": []string{"team@example.com"}, "subject": "from outside", "text": "x"}
		raw, _ := json.Marshal(in)
		_, digest, _ := tool.InputDigest(raw)
		ts, err := toolset.FromCatalog(catalog.Default(), []string{"send-email"}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]any{"tool": "send-email", "toolset_id": ts.ID, "run_id": runID, "seq": 1, "step": "invoke",
			"idempotency_key": key, "attempt": 1, "tolerate_duplicates": false, "input": in,
			"caller_proof": callers.ProofIn(t, outside, "mallory", caller.Binding{Action: caller.ActionInvoke, Target: key, InputDigest: digest})}
		refusedDirect(t, "send-email", env, string(tool.PermissionDenied))
		if m := e.mails(t); len(m) != 0 {
			t.Fatalf("%d mails", len(m))
		}
	})

	// A review naming no reviewers (the demo's) admitted whoever reached
	// review-decision, and a pattern with an account wildcard any account's
	// principal of that name: the first is decided by this account's
	// principals only, the second no longer compiles.
	t.Run("reviewer patterns: no reviewers, or an account wildcard", func(t *testing.T) {
		e.clearMails(t)
		run := e.start(t, "outside-digest", map[string]string{"recipient": "team@example.com"})
		id := e.pending(t, run, nil)
		// review-decision, invoked as its Function URL would invoke it, by
		// "tester" of the outside account: approve, reject, show, list.
		r, err := dynamo.NewStore(local.DynamoDB(e.st.Dynamo.Endpoint()), stack.Table).Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		for _, verb := range []string{"approve", "reject"} {
			refusedDirect(t, "review-decision", map[string]any{"action": "decide", "review_id": id, "decision": verb, "reason": "from outside",
				"proof": callers.ProofIn(t, outside, "tester", caller.Binding{Action: caller.ActionDecide, Target: id, Decision: verb, InputDigest: r.InputDigest})},
				string(review.CodeUnauthenticated))
		}
		refusedDirect(t, "review-decision", map[string]any{"action": "show", "review_id": id,
			"proof": callers.ProofIn(t, outside, "tester", caller.Binding{Action: caller.ActionShow, Target: id})}, string(review.CodeUnauthenticated))
		refusedDirect(t, "review-decision", map[string]any{"action": "list",
			"proof": callers.ProofIn(t, outside, "tester", caller.Binding{Action: caller.ActionList})}, string(review.CodeUnauthenticated))
		if ids := e.reviewsOf(t, run); len(ids) != 1 || ids[0] != id {
			t.Fatalf("after the outside decisions the run's pending reviews are %v, want [%s]", ids, id)
		}
		if m := e.mails(t); len(m) != 0 {
			t.Fatalf("%d mails", len(m))
		}
		wild := filepath.Join(e.dir, "wildcard.yaml")
		os.WriteFile(wild, []byte(strings.NewReplacer("solution: e2e-digest", "solution: outside-wildcard", "DATA", strings.TrimPrefix(e.st.DataURL, "http://"),
			"timeout_seconds: TIMEOUT}", "timeout_seconds: 600, reviewers: [\"arn:aws:iam::*:user/tester\"]}").Replace(reviewedDigest)), 0o644)
		var out, errb bytes.Buffer
		if code := e.cliRun([]string{"publish", wild, "--endpoint", e.st.Endpoints["publish"], "--as", publisher}, &out, &errb); code == cli.ExitOK || !strings.Contains(errb.String(), "[reviewer-pattern]") {
			t.Fatalf("a reviewer pattern with an account wildcard: exit %d %s%s, want a [reviewer-pattern] refusal", code, out.String(), errb.String())
		}
		// The run's own reviewer, of this account, still decides it.
		e.decide(t, "reject", id)
		if got := e.finish(t, run); got.Status != "SUCCEEDED" {
			t.Fatalf("the rejected run: %s %s %s", got.Status, got.Error, got.Cause)
		}
	})
}

// reviewsOf lists run's pending reviews as an in-account reviewer sees them.
func (e *env) reviewsOf(t *testing.T, run string) []string {
	t.Helper()
	out, code := e.toolgate(t, "review", "list", "--json", "--endpoint", e.decisionEndpoint(), "--as", "auditor")
	var res review.ListResult
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("review list: %s", out)
	}
	var ids []string
	for _, v := range res.Reviews {
		if v.RunID == run || strings.HasPrefix(v.RunID, run) {
			ids = append(ids, v.ReviewID)
		}
	}
	return ids
}
