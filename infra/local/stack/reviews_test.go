package stack_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
)

// The richer reviews of docs/reviews.md ("Kinds of review", "The
// question", "Approve with edits", "Review notices") end to end on the
// shared local stack: compiled by the resolver, published through the
// publish function, requested by review Tasks under Step Functions Local,
// decided with toolgate review, and sent through the SES emulator.

// showThenSend shows an order's total and items (a review that shows
// values, step check), then reviews the e-mail that confirms it (a review
// of the call, step approve_mail): the show review's approval approves no
// call, so send has a review of its own.
const showThenSend = `solution: e2e-show
version: 1
input:
  type: object
  required: [recipient, items]
  properties:
    recipient: {type: string, maxLength: 320}
    items: {type: array, maxItems: 5, items: {type: string, maxLength: 50}}
steps:
  - id: sum
    pass: {total: 120, currency: EUR}
    next: check
  - id: check
    review:
      show: {total: "${steps.sum.total}", currency: "${steps.sum.currency}", items: "${input.items}"}
      timeout_seconds: 600
    on_approve: approve_mail
    on_reject: declined
  - id: approve_mail
    review: {of: send, timeout_seconds: 600}
    on_approve: send
    on_reject: declined
  - id: send
    tool: send-email
    with: {to: ["${input.recipient}"], subject: Your order, text: "Checked by ${reviews.check.approver}"}
  - id: declined
    pass: {status: declined}
`

// reviewer decides the tests' reviews: a local name other than the
// starter, in the stack's own account (the reviews name no reviewers).
const reviewer = "tester"

// reviewAs runs toolgate review SUB ID ARGS... as the local name as on
// review-decision's endpoint, and returns its exit code and output
// (stdout then stderr).
func (e *env) reviewAs(t *testing.T, as, sub, id string, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := e.cliRun(append([]string{"review", sub, id, "--endpoint", e.decisionEndpoint(), "--as", as}, args...), &out, &errb)
	return code, out.String() + errb.String()
}

// view is the review as toolgate review show --json prints it to the
// reviewer.
func (e *env) view(t *testing.T, id string) review.View {
	t.Helper()
	code, out := e.reviewAs(t, reviewer, "show", id, "--json")
	var v review.View
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("review show %s: exit %d\n%s", id, code, out)
	}
	return v
}

// A review that shows values routes the run by its decision, shows the
// values to the reviewer, and approves no tool call: the e-mail after it
// waits for its own review.
func TestShowReviewRoutesTheRunAndApprovesNoToolCall(t *testing.T) {
	e := sharedEnv(t)
	e.publish(t, "e2e-show", showThenSend)
	input := map[string]any{"recipient": "buyer@example.com", "items": []string{"paper", "ink"}}

	t.Run("approved, it shows the values and the e-mail still needs its own review", func(t *testing.T) {
		e.clearMails(t)
		run := e.start(t, "e2e-show", input)
		show := e.pending(t, run, nil)
		v := e.view(t, show)
		if v.Kind != tool.ReviewShow || v.Step != "check" || v.Of != "" || v.Tool != "" {
			t.Fatalf("review %s: kind %q step %q of %q tool %q, want a review that shows values at step check", show, v.Kind, v.Step, v.Of, v.Tool)
		}
		var shown map[string]any
		if err := json.Unmarshal(v.Input, &shown); err != nil || shown["total"] != float64(120) || shown["currency"] != "EUR" ||
			!slices.Equal(stringsOf(shown["items"]), []string{"paper", "ink"}) {
			t.Fatalf("review show %s: input %s (%v), want the total, the currency and the items", show, v.Input, err)
		}
		if code, out := e.reviewAs(t, reviewer, "show", show); code != cli.ExitOK || !strings.Contains(out, "shows values (step check)") {
			t.Fatalf("review show %s: exit %d, want \"shows values (step check)\"\n%s", show, code, out)
		}
		if code, out := e.reviewAs(t, reviewer, "approve", show, "--reason", "total checked"); code != cli.ExitOK {
			t.Fatalf("approve %s: exit %d\n%s", show, code, out)
		}
		// The e-mail's own review follows the show review's approval: the
		// approval of values authorised no call.
		mail := e.pending(t, run, map[string]bool{show: true})
		if m := e.view(t, mail); m.Kind != tool.ReviewOfCall || m.Step != "approve_mail" || m.Of != "send" || m.Tool != "send-email" {
			t.Fatalf("the second review %s: %+v, want approve_mail's review of send", mail, m)
		}
		// Its show says the e-mail as send-email will send it: the sender
		// and the recipient's verdict with send-email's own configuration,
		// the pinned input schema, and the run's Solution.
		if m := e.view(t, mail); m.Email == nil || m.Email.From.Address != "toolgate-demo@example.com" || len(m.Email.To) != 1 ||
			m.Email.To[0].Address != "buyer@example.com" || m.Email.To[0].Verdict != "allow" || len(m.InputSchema) == 0 || m.Solution != "e2e-show" {
			t.Fatalf("the e-mail's review %s shows email %+v, schema %d bytes, Solution %q", mail, m.Email, len(m.InputSchema), m.Solution)
		}
		if got := e.mails(t); len(got) != 0 {
			t.Fatalf("%d e-mails sent before the e-mail's own review was decided", len(got))
		}
		e.decide(t, "approve", mail)
		out, events := e.follow(t, run)
		if out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
		}
		if states := entered(events); !containsInOrder(states, []string{"check", "approve_mail", "send"}) || slices.Contains(states, "declined") {
			t.Fatalf("the approved run entered %v, want check, approve_mail, send and not declined", states)
		}
		got := e.mails(t)
		if len(got) != 1 || got[0].Subject != "Your order" {
			t.Fatalf("e-mails %+v, want the one order e-mail", got)
		}
		sends := e.toolRows(t, run, "send-email")
		if len(sends) != 1 || sends[0].ReviewID != mail || sends[0].Status != ledger.StatusSucceeded {
			t.Fatalf("send-email rows %+v, want one SUCCEEDED under review %s (never %s)", sends, mail, show)
		}
	})

	t.Run("rejected, the run goes on_reject and nothing is sent", func(t *testing.T) {
		e.clearMails(t)
		run := e.start(t, "e2e-show", input)
		show := e.pending(t, run, nil)
		e.decide(t, "reject", show)
		out, events := e.follow(t, run)
		if out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
		}
		if states := entered(events); !containsInOrder(states, []string{"check", "declined"}) || slices.Contains(states, "approve_mail") || slices.Contains(states, "send") {
			t.Fatalf("the rejected run entered %v, want check then declined only", states)
		}
		if v := e.view(t, show); v.Status != review.Rejected {
			t.Fatalf("review %s is %s, want REJECTED", show, v.Status)
		}
		if got := e.mails(t); len(got) != 0 {
			t.Fatalf("%d e-mails after a rejection", len(got))
		}
	})
}

// askedThenSent asks the reviewer a short text (a review that shows the
// recipient and asks), then mails the answer under the e-mail's own
// review, and puts it in the run's output.
const askedThenSent = `solution: e2e-ask
version: 1
input:
  type: object
  required: [recipient]
  properties: {recipient: {type: string, maxLength: 320}}
output:
  answer: "${reviews.ask.answer}"
  by: "${reviews.ask.approver}"
steps:
  - id: ask
    review:
      show: {recipient: "${input.recipient}"}
      ask: {type: string, maxLength: 200}
      timeout_seconds: 600
    on_approve: approve_mail
  - id: approve_mail
    review: {of: send, timeout_seconds: 600}
    on_approve: send
  - id: send
    tool: send-email
    with: {to: ["${input.recipient}"], subject: Your answer, text: "${reviews.ask.answer}"}
`

// An answer to a review's question is checked against its schema at the
// decision (a refused one leaves the review PENDING and the run waiting),
// then bound into later steps: the e-mail's text and the run's output.
func TestAnsweredQuestionIsBoundIntoLaterSteps(t *testing.T) {
	e := sharedEnv(t)
	e.publish(t, "e2e-ask", askedThenSent)
	e.clearMails(t)
	run := e.start(t, "e2e-ask", map[string]string{"recipient": "asker@example.com"})
	id := e.pending(t, run, nil)
	if v := e.view(t, id); v.Kind != tool.ReviewShow || compact(v.Ask) != `{"maxLength":200,"type":"string"}` {
		t.Fatalf("review %s: kind %q ask %s, want the question's schema", id, v.Kind, v.Ask)
	}

	t.Run("an answer over maxLength is refused and the review stays PENDING", func(t *testing.T) {
		tooLong := "too-long-answer-" + strings.Repeat("x", 200)
		code, out := e.reviewAs(t, reviewer, "approve", id, "--reason", "answered", "--answer", tooLong)
		if code != cli.ExitErrors || !strings.Contains(out, string(review.CodeInvalid)) || !strings.Contains(out, "maxLength") {
			t.Fatalf("an answer of %d characters: exit %d, want %d and %s naming maxLength\n%s", len(tooLong), code, cli.ExitErrors, review.CodeInvalid, out)
		}
		if strings.Contains(out, "too-long-answer") {
			t.Fatalf("the refusal quotes the answer:\n%s", out)
		}
		if v := e.view(t, id); v.Status != review.Pending || v.Answer != nil {
			t.Fatalf("after a refused answer the review is %s with answer %s, want PENDING without one", v.Status, v.Answer)
		}
		if s := e.status(t, run); s != sfntypes.ExecutionStatusRunning {
			t.Fatalf("after a refused answer the run is %s, want RUNNING", s)
		}
	})

	t.Run("an approval without an answer is refused too", func(t *testing.T) {
		code, out := e.reviewAs(t, reviewer, "approve", id, "--reason", "answered")
		if code != cli.ExitErrors || !strings.Contains(out, string(review.CodeInvalid)) {
			t.Fatalf("an approval without an answer: exit %d\n%s", code, out)
		}
	})

	t.Run("a valid answer completes the run and reaches the e-mail and the output", func(t *testing.T) {
		const answer = "Ship on Friday, gift-wrapped"
		if code, out := e.reviewAs(t, reviewer, "approve", id, "--reason", "answered", "--answer", answer); code != cli.ExitOK {
			t.Fatalf("approve %s --answer: exit %d\n%s", id, code, out)
		}
		if v := e.view(t, id); v.Status != review.Approved || compact(v.Answer) != `"`+answer+`"` {
			t.Fatalf("review %s: %s answer %s, want APPROVED with the answer as a JSON string", id, v.Status, v.Answer)
		}
		e.decide(t, "approve", e.pending(t, run, map[string]bool{id: true}))
		out, _ := e.follow(t, run)
		if out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
		}
		var output struct{ Answer, By string }
		if err := json.Unmarshal([]byte(out.Output), &output); err != nil || output.Answer != answer || output.By != local.LocalPrincipal(reviewer) {
			t.Fatalf("output %s (%v), want the answer and its approver", out.Output, err)
		}
		got := e.fullMails(t)
		if len(got) != 1 || got[0].Body.Text != answer {
			t.Fatalf("e-mails %+v, want one whose text is the answer", got)
		}
	})
}

// editedSend reviews an e-mail whose subject the reviewer may replace.
const editedSend = `solution: e2e-edit
version: 1
input:
  type: object
  required: [recipient]
  properties: {recipient: {type: string, maxLength: 320}}
steps:
  - id: approve
    review: {of: send, editable: [subject], timeout_seconds: 600}
    on_approve: send
  - id: send
    tool: send-email
    with: {to: ["${input.recipient}"], subject: Draft subject, text: the body as drafted}
`

// An approval with an edit sends the edited e-mail once; the call's row
// keeps the reviewed input's digest and adds the edited one and the
// editor. The run's starter may not edit (four eyes), and a recipient is
// never editable (the resolver refuses it before anything is published).
func TestEditedApprovalSendsTheEditedEmail(t *testing.T) {
	e := sharedEnv(t)

	t.Run("an editable recipient is refused at compile time and nothing is published", func(t *testing.T) {
		path := filepath.Join(e.dir, "e2e-edit-to.yaml")
		src := strings.NewReplacer("solution: e2e-edit", "solution: e2e-edit-to", "editable: [subject]", "editable: [to]").Replace(editedSend)
		os.WriteFile(path, []byte(src), 0o644)
		var stdout, stderr bytes.Buffer
		code := e.cliRun([]string{"publish", path, "--endpoint", e.st.Endpoints["publish"], "--as", publisher}, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if code == cli.ExitOK || !strings.Contains(out, "[review-edit]") || !strings.Contains(out, `"to"`) {
			t.Fatalf("publish with editable [to]: exit %d, want a [review-edit] refusal naming \"to\"\n%s", code, out)
		}
		if _, err := e.sf.DescribeStateMachine(t.Context(), &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(stateMachineARN("e2e-edit-to"))}); err == nil {
			t.Fatal("the refused Solution's state machine exists")
		}
	})

	e.publish(t, "e2e-edit", editedSend)
	e.clearMails(t)
	run := e.start(t, "e2e-edit", map[string]string{"recipient": "editor-test@example.com"})
	id := e.pending(t, run, nil)
	shown := e.view(t, id)
	if !slices.Equal(shown.Editable, []string{"subject"}) {
		t.Fatalf("review %s: editable %v, want [subject]", id, shown.Editable)
	}

	t.Run("the run's starter may not edit", func(t *testing.T) {
		code, out := e.reviewAs(t, starter, "approve", id, "--reason", "mine", "--edit", "subject=Starter's own subject")
		if code == cli.ExitOK || !strings.Contains(out, string(review.CodeSelfApproval)) {
			t.Fatalf("the starter's edit: exit %d, want %s\n%s", code, review.CodeSelfApproval, out)
		}
		if v := e.view(t, id); v.Status != review.Pending || v.Edits != nil {
			t.Fatalf("after the starter's edit the review is %s with edits %s, want PENDING without", v.Status, v.Edits)
		}
	})

	t.Run("an edit of a member not editable is refused", func(t *testing.T) {
		code, out := e.reviewAs(t, reviewer, "approve", id, "--reason", "edited", "--edit", "text=another body")
		if code != cli.ExitErrors || !strings.Contains(out, string(review.CodeInvalid)) || !strings.Contains(out, "text") {
			t.Fatalf("an edit of text: exit %d\n%s", code, out)
		}
	})

	t.Run("the reviewer's edit is what SES receives, and the row names both digests and the editor", func(t *testing.T) {
		const edited = "Edited subject, checked"
		if code, out := e.reviewAs(t, reviewer, "approve", id, "--reason", "edited", "--edit", "subject="+edited); code != cli.ExitOK {
			t.Fatalf("approve %s --edit: exit %d\n%s", id, code, out)
		}
		v := e.view(t, id)
		if v.Status != review.Approved || v.ApprovedDigest == "" || v.ApprovedDigest == v.InputDigest || compact(v.Edits) != `{"subject":"`+edited+`"}` {
			t.Fatalf("review %s: %s edits %s approved %s (shown %s), want APPROVED with the edit and another digest", id, v.Status, v.Edits, v.ApprovedDigest, v.InputDigest)
		}
		out, _ := e.follow(t, run)
		if out.Status != "SUCCEEDED" {
			t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
		}
		got := e.fullMails(t)
		if len(got) != 1 || got[0].Subject != edited || got[0].Body.Text != "the body as drafted" || !slices.Equal(got[0].Destination.To, []string{"editor-test@example.com"}) {
			t.Fatalf("e-mails %+v, want one with the edited subject, the drafted text, to the input's recipient", got)
		}
		sends := e.toolRows(t, run, "send-email")
		if len(sends) != 1 {
			t.Fatalf("send-email rows %+v, want one", sends)
		}
		r := sends[0]
		if r.Status != ledger.StatusSucceeded || r.ReviewID != id || r.InputDigest != shown.InputDigest || r.EditedDigest != v.ApprovedDigest ||
			r.EditedDigest == r.InputDigest || r.Editor != local.LocalPrincipal(reviewer) || r.Approver != local.LocalPrincipal(reviewer) {
			t.Fatalf("the row %+v: want SUCCEEDED under %s, input_digest %s (reviewed), edited_digest %s, editor %s", r, id, shown.InputDigest, v.ApprovedDigest, local.LocalPrincipal(reviewer))
		}
	})
}

// noticeCanary is in the noticed review's input: it must reach neither
// the notice e-mail, nor the notice item, nor review-request's logs.
const noticeCanary = "canary-7f3a9c-never-in-a-notice"

// noticed shows a note and tells two addresses that the review waits:
// ops@example.com is on the local stack's notices allow-list
// (stack.ReviewNotices), someone@elsewhere.example is not.
const noticed = `solution: e2e-notice
version: 1
input:
  type: object
  required: [note]
  properties: {note: {type: string, maxLength: 200}}
steps:
  - id: check
    review:
      show: {note: "${input.note}"}
      notify: [ops@example.com, someone@elsewhere.example]
      timeout_seconds: 600
    on_approve: done
  - id: done
    pass: {status: checked}
`

// A review Task with notify gets one notice e-mail from the platform's
// sender to the addresses the notices allow-list admits, naming the
// review and holding none of its values; its notice item records SENT
// with the counts.
func TestReviewNoticeGoesToAdmittedAddressesOnlyWithoutValues(t *testing.T) {
	e := sharedEnv(t)
	e.publish(t, "e2e-notice", noticed)
	e.clearMails(t)
	run := e.start(t, "e2e-notice", map[string]string{"note": "pay the invoice " + noticeCanary})
	id := e.pending(t, run, nil)

	// review-request stores the review before it sends the notice: wait
	// for the e-mail (a poll with a deadline, NoticeTimeout bounds it).
	var got []fullMail
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if got = e.fullMails(t); len(got) > 0 {
			break
		}
	}
	if len(got) != 1 {
		t.Fatalf("e-mails %+v, want the one notice", got)
	}
	m := got[0]
	if !slices.Equal(m.Destination.To, []string{"ops@example.com"}) || len(m.Destination.Cc)+len(m.Destination.Bcc) != 0 {
		t.Fatalf("the notice went to %+v, want ops@example.com only", m.Destination)
	}
	if m.From != "toolgate-demo@example.com" {
		t.Fatalf("the notice is from %q, want the platform's sender", m.From)
	}
	if !strings.HasPrefix(m.Subject, "Review "+id+" is waiting: ") || !strings.HasSuffix(m.Subject, "e2e-notice/check") {
		t.Fatalf("the notice's subject %q, want it to name review %s and e2e-notice/check", m.Subject, id)
	}
	for _, want := range []string{id, "toolgate review show " + id, "shows values"} {
		if !strings.Contains(m.Body.Text, want) {
			t.Fatalf("the notice's text does not hold %q:\n%s", want, m.Body.Text)
		}
	}
	for _, part := range []string{m.Subject, m.Body.Text, m.Body.HTML} {
		if strings.Contains(part, noticeCanary) || strings.Contains(part, "someone@elsewhere.example") {
			t.Fatalf("the notice holds the reviewed value or the skipped address:\n%s", part)
		}
	}

	out, err := local.DynamoDB(e.st.Dynamo.Endpoint()).GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(stack.Table),
		Key: map[string]types.AttributeValue{table.PK: &types.AttributeValueMemberS{Value: table.Notice.Key(id)},
			table.SK: &types.AttributeValueMemberS{Value: table.Notice.SKValue}}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	var item map[string]any
	if err := attributevalue.UnmarshalMap(out.Item, &item); err != nil {
		t.Fatal(err)
	}
	if item["status"] != "SENT" || item["recipients"] != float64(1) || item["skipped"] != float64(1) || item["message_id"] == nil {
		t.Fatalf("the notice item %v, want SENT to 1 recipient, 1 skipped, with its message id", item)
	}
	if b, _ := json.Marshal(item); bytes.Contains(b, []byte(noticeCanary)) || bytes.Contains(b, []byte("@")) {
		t.Fatalf("the notice item holds a reviewed value or an address: %s", b)
	}

	var logs strings.Builder
	for _, p := range e.st.Processes() {
		if strings.Contains(p.Name, "review-request") {
			logs.WriteString(p.Stdout())
			logs.WriteString(p.Stderr())
		}
	}
	// Not vacuous: the logs reach the notice of this review.
	if !strings.Contains(logs.String(), "review notice sent") || !strings.Contains(logs.String(), id) {
		t.Fatalf("review-request's logs do not reach the notice of %s:\n%.2000s", id, logs.String())
	}
	if strings.Contains(logs.String(), noticeCanary) || strings.Contains(logs.String(), "someone@elsewhere.example") {
		t.Fatal("review-request's logs hold the reviewed value or the skipped address")
	}

	e.decide(t, "approve", id)
	if res, _ := e.follow(t, run); res.Status != "SUCCEEDED" {
		t.Fatalf("run %s: %s %s", res.Status, res.Error, res.Cause)
	}
	if got := e.fullMails(t); len(got) != 1 {
		t.Fatalf("%d e-mails after the decision, want the notice only", len(got))
	}
}

// compact is raw as compact JSON (toolgate review show --json indents
// its members); raw itself when it is not JSON.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// fullMail is one e-mail the SES emulator holds, with its sender and body.
type fullMail struct {
	MessageID   string `json:"messageId"`
	From        string
	Destination struct{ To, Cc, Bcc []string }
	Subject     string
	Body        struct{ Text, HTML string }
}

// fullMails are the e-mails SES accepted since the env last cleared its
// mails (clearMails), as mails, with their senders and bodies.
func (e *env) fullMails(t *testing.T) []fullMail {
	t.Helper()
	resp, err := http.Get(e.st.SES.Endpoint() + "/store")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var store struct{ Emails []fullMail }
	if err := json.NewDecoder(resp.Body).Decode(&store); err != nil {
		t.Fatalf("the SES emulator's store: %v", err)
	}
	var out []fullMail
	for _, m := range store.Emails {
		if !e.seenMails[m.MessageID] {
			out = append(out, m)
		}
	}
	return out
}
