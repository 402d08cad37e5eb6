package stack_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/ledger"
)

// reviewCanary asks a question and lets the reviewer edit the subject and
// the text of the e-mail it approves; the answer is bound nowhere.
const reviewCanary = `solution: NAME
version: 1
input:
  type: object
  required: [recipient]
  properties:
    recipient: {type: string, maxLength: 100}
steps:
  - id: approve
    review:
      of: send
      ask: {type: string, maxLength: 200}
      editable: [subject, text]
      timeout_seconds: 600
    on_approve: send
    on_reject: end
  - id: send
    tool: send-email
    with: {to: ["${input.recipient}"], subject: "as written", text: "as written"}
`

// An approval's answer and edits, and the values of refused answers and
// edits, in the places nothing but the review item may hold them
// (docs/reviews.md, "The question" and "Approve with edits"): no form of
// an edited value is in a function's log, a ledger item other than the
// review's own (its answer and edits attributes), an exported span, the
// execution's history (the decision JSON names the edited members and
// digests, never their values), or the CLI's answers to the decisions;
// no form of the answer is in a log, a ledger item but the review's, a
// span or a refusal (it is in the decision JSON, and so in the history,
// by design); refused answers and edits are nowhere. The e-mail sent
// carries the edits: they did go through the functions searched.
func TestCanaryAnswersAndEditsAreNeverRecorded(t *testing.T) {
	e := sharedEnv(t)
	name := fresh("canary-review")
	e.publish(t, name, strings.ReplaceAll(reviewCanary, "NAME", name))
	e.clearMails(t)

	answer, subject, text := newCanary(t), newCanary(t), newCanary(t)
	refused := map[string]string{
		"refused answer": newCanary(t), "refused edit of to": newCanary(t),
		"refused subject": newCanary(t), "requester's answer": newCanary(t), "requester's subject": newCanary(t),
	}
	run := e.start(t, name, map[string]string{"recipient": "team@example.com"})
	id := e.pending(t, run, nil)

	var printed bytes.Buffer
	// approve prints what the CLI answered (never the arguments, which
	// hold the canaries).
	approve := func(what, as string, args ...string) int {
		t.Helper()
		var out, errb bytes.Buffer
		code := e.cliRun(append([]string{"review", "approve", id, "--reason", "canary", "--endpoint", e.decisionEndpoint(), "--as", as}, args...), &out, &errb)
		fmt.Fprintf(&printed, "%s: exit %d\n%s\n%s\n", what, code, out.String(), errb.String())
		return code
	}
	for what, args := range map[string][]string{
		"an answer over the question's maxLength": {"--answer", refused["refused answer"] + strings.Repeat("x", 200)},
		"an edit of a member not editable":        {"--answer", "fine", "--edit", "to=" + refused["refused edit of to"] + "@example.com"},
		"an edit the pinned schema refuses":       {"--answer", "fine", "--edit", "subject=" + refused["refused subject"] + strings.Repeat("x", 998)},
	} {
		if code := approve(what, "tester", args...); code != cli.ExitErrors {
			t.Fatalf("%s: exit %d, want %d\n%s", what, code, cli.ExitErrors, printed.String())
		}
	}
	if code := approve("the requester", starter, "--answer", refused["requester's answer"], "--edit", "subject="+refused["requester's subject"]); code != cli.ExitErrors ||
		!strings.Contains(printed.String(), "REVIEW_SELF_APPROVAL") {
		t.Fatalf("the requester approves with an answer and edits: exit %d\n%s", code, printed.String())
	}
	if code := approve("the approval", "tester", "--answer", answer, "--edit", "subject=Subject "+subject, "--edit", "text=Text "+text); code != cli.ExitOK {
		t.Fatalf("approve: exit %d\n%s", code, printed.String())
	}
	out, _ := e.follow(t, run)
	if out.Status != "SUCCEEDED" {
		t.Fatalf("run %s: %s %s %s", run, out.Status, out.Error, out.Cause)
	}
	// Not vacuous: the edits reached SES through send-email, and its row
	// names the edited input.
	if m := e.mails(t); len(m) != 1 || m[0].Subject != "Subject "+subject {
		t.Fatalf("mails %+v, want the edited one", m)
	}
	var sends []ledger.Row
	for _, r := range e.rows(t, run) {
		if r.Tool == "send-email" {
			sends = append(sends, r)
		}
	}
	if len(sends) != 1 || sends[0].EditedDigest == "" || sends[0].Editor != local.LocalPrincipal("tester") {
		t.Fatalf("send-email rows %+v, want one naming its edited digest and its editor", sends)
	}

	edits := map[string]string{"edited subject": subject, "edited text": text}
	all := maps.Clone(refused)
	maps.Copy(all, edits)
	all["answer"] = answer
	places := map[string]string{}

	// The ledger table, every item; the review's own answer and edits
	// attributes are where they are recorded, and are checked to hold them.
	var table bytes.Buffer
	var own map[string]any
	for _, raw := range tableItems(t, e.st) {
		var it map[string]any
		if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
			t.Fatal(err)
		}
		if it["review_id"] == id && it["answer"] != nil {
			own = maps.Clone(it)
			delete(it, "answer")
			delete(it, "edits")
		}
		b, _ := json.Marshal(it)
		table.Write(append(b, '\n'))
	}
	if own == nil || !strings.Contains(fmt.Sprint(own["answer"]), answer) || !strings.Contains(fmt.Sprint(own["edits"]), subject) {
		t.Fatalf("review %s's item %v does not record the answer and the edits", id, own)
	}
	if !strings.Contains(table.String(), run) {
		t.Fatalf("the ledger table holds no item of %s: not this stack's table", run)
	}
	places["the ledger table's items"] = table.String()

	for _, fn := range []string{"review-decision", "send-email"} {
		if _, own := functionLogs(e.st, fn); !strings.Contains(own, id) && !strings.Contains(own, run) {
			t.Fatalf("%s's logs name neither the review %s nor the run %s:\n%.2000s", fn, id, run, own)
		}
	}
	places["the functions' logs"], _ = functionLogs(e.st, "")

	var spans bytes.Buffer
	for _, s := range e.st.Traces.Spans() {
		b, _ := json.Marshal(s)
		fmt.Fprintf(&spans, "%s %+v\n", b, s)
	}
	if len(e.st.Traces.Trace(e.runTraceID(t, run))) == 0 {
		t.Error("no span of the run's trace: the spans searched are not its")
	}
	places["the exported spans"] = spans.String()
	places["the CLI's answers to the decisions"] = printed.String()
	places["the run's error and cause"] = out.Error + " " + out.Cause

	for _, where := range slices.Sorted(maps.Keys(places)) {
		if got := canaryFind(places[where], all); got != "" {
			t.Errorf("%s hold %s", where, got)
		}
	}

	// The history: the decision JSON carries the answer by design
	// (${reviews.approve.answer} binds it), never an edited value.
	var history bytes.Buffer
	pages := sfn.NewGetExecutionHistoryPaginator(e.sf, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(run)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(page.Events)
		history.Write(b)
	}
	if !strings.Contains(history.String(), answer) || !strings.Contains(history.String(), `edited`) {
		t.Errorf("the history holds no decision JSON with the answer and the edited members: not the run searched")
	}
	delete(all, "answer")
	if got := canaryFind(history.String(), all); got != "" {
		t.Errorf("the execution's history holds %s", got)
	}
}
