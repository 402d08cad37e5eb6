package stack_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
)

// mailEach reviews and sends one e-mail per recipient: a for_each whose
// body is a review and the send it approves (docs/solutions.md,
// "for_each"), collecting each message id.
const mailEach = `solution: e2e-each
version: 1
input:
  type: object
  required: [people]
  properties:
    people: {type: array, maxItems: 3}
output:
  sent: "${steps.each.output}"
steps:
  - id: each
    for_each:
      items: "${input.people}"
      as: person
      max_items: 3
      collect:
        to: "${person.email}"
        message_id: "${steps.send.output.message_id}"
      steps:
        - id: approve
          review: {of: send}
          on_approve: send
          on_reject: rejected
        - id: send
          tool: send-email
          with:
            to: ["${person.email}"]
            subject: "Hello ${person.name}, item ${for_each.index}"
            text: "one e-mail per item"
        - id: rejected
          fail: {error: NotApproved}
`

// eachPeople are the three recipients the mailEach Solutions loop over, in
// item order.
var eachPeople = []map[string]string{
	{"email": "a@example.com", "name": "Ada"},
	{"email": "b@example.com", "name": "Bo"},
	{"email": "c@example.com", "name": "Cy"},
}

// approveEach approves n reviews of run as they come, each once.
func (e *env) approveEach(t *testing.T, run string, n int) {
	t.Helper()
	decided := map[string]bool{}
	for range n {
		id := e.pending(t, run, decided)
		e.decide(t, "approve", id)
		decided[id] = true
	}
}

// mailEveryone runs the published mailEach-shaped Solution over eachPeople
// with an empty mailbox, approves each item's review, and returns the run
// and its end, which must be SUCCEEDED.
func (e *env) mailEveryone(t *testing.T, solution string) (string, *runner.Outcome) {
	t.Helper()
	e.clearMails(t)
	run := e.start(t, solution, map[string]any{"people": eachPeople})
	e.approveEach(t, run, len(eachPeople))
	out := e.finish(t, run)
	if out.Status != "SUCCEEDED" {
		t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
	}
	return run, out
}

// everyoneMailedOnce checks a mailEveryone run: the emulator holds exactly
// one e-mail per recipient, and the run's output collects each recipient
// with a message id, in item order.
func (e *env) everyoneMailedOnce(t *testing.T, out *runner.Outcome) {
	t.Helper()
	var to []string
	for _, m := range e.mails(t) {
		to = append(to, m.Destination.To...)
	}
	slices.Sort(to)
	if fmt.Sprint(to) != "[a@example.com b@example.com c@example.com]" {
		t.Fatalf("mails to %v, want one per recipient", to)
	}
	var output struct {
		Sent []struct {
			To        string `json:"to"`
			MessageID string `json:"message_id"`
		}
	}
	if err := json.Unmarshal([]byte(out.Output), &output); err != nil || len(output.Sent) != len(eachPeople) {
		t.Fatalf("output %s: %v", out.Output, err)
	}
	for k, s := range output.Sent {
		if s.To != eachPeople[k]["email"] || s.MessageID == "" {
			t.Errorf("collected %d: %+v", k, s)
		}
	}
}

// A for_each of three items with a review and a send inside, on the local
// stack: three approvals, three keys (<seq of the loop>.<index>.1, in
// call order in the ledger), three e-mails, and the collected list as the
// run's output.
func TestForEachOnTheLocalStack(t *testing.T) {
	e := sharedEnv(t)
	e.publish(t, "e2e-each", mailEach)
	run, out := e.mailEveryone(t, "e2e-each")
	var sends []ledger.Row
	for _, r := range e.rows(t, run) {
		if r.Tool == "send-email" {
			sends = append(sends, r)
		}
	}
	var keys []string
	for k, r := range sends {
		want := fmt.Sprintf("1.%d.1", k)
		if r.Status != ledger.StatusSucceeded || string(r.Seq) != want || r.IdempotencyKey != run+"/"+want || r.Approver == "" {
			t.Errorf("send row %d: %+v, want seq %s approved", k, r, want)
		}
		keys = append(keys, r.IdempotencyKey)
	}
	if len(sends) != 3 || len(slices.Compact(slices.Clone(keys))) != 3 {
		t.Fatalf("send rows %+v", sends)
	}
	e.everyoneMailedOnce(t, out)
}

// twoLoops sends one reviewed e-mail in each of two loops in a row: each
// loop takes its own value of the call counter.
const twoLoops = `solution: e2e-two-loops
version: 1
input: {type: object, required: [people], properties: {people: {type: array, maxItems: 1}}}
steps:
  - id: first
    for_each:
      items: "${input.people}"
      as: person
      max_items: 1
      steps:
        - {id: approve_first, review: {of: send_first}, on_approve: send_first}
        - {id: send_first, tool: send-email, with: {to: ["${person}"], subject: first, text: t}}
    next: second
  - id: second
    for_each:
      items: "${input.people}"
      as: person
      max_items: 1
      steps:
        - {id: approve_second, review: {of: send_second}, on_approve: send_second}
        - {id: send_second, tool: send-email, with: {to: ["${person}"], subject: second, text: t}}
`

// Two loops in a row give distinct keys: 1.0.1 and 2.0.1.
func TestTwoLoopsOnTheLocalStack(t *testing.T) {
	e := sharedEnv(t)
	e.publish(t, "e2e-two-loops", twoLoops)
	run := e.start(t, "e2e-two-loops", map[string]any{"people": []string{"a@example.com"}})
	e.approveEach(t, run, 2)
	if out := e.finish(t, run); out.Status != "SUCCEEDED" {
		t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
	}
	var got []string
	for _, r := range e.rows(t, run) {
		if r.Tool == "send-email" && r.Status == ledger.StatusSucceeded {
			got = append(got, r.Step+" "+string(r.Seq))
		}
	}
	if fmt.Sprint(got) != "[send_first 1.0.1 send_second 2.0.1]" {
		t.Fatalf("send rows %v", got)
	}
}

// mailEachRetried is mailEach whose send is retried once when SES
// throttles it (TOOL_RATE_LIMITED: nothing was sent). send-email does not
// honour idempotency keys, so a second attempt needs tolerate_duplicates
// (docs/toolsets.md).
var mailEachRetried = strings.NewReplacer(
	"solution: e2e-each\n", "solution: e2e-each-retried\n",
	"            text: \"one e-mail per item\"\n", "            text: \"one e-mail per item\"\n"+
		"          retry: {max_attempts: 2, interval_seconds: 1, errors: [TOOL_RATE_LIMITED]}\n"+
		"          tolerate_duplicates: true\n",
).Replace(mailEach)

// throttleOnce stands between send-email and the SES v2 emulator. It
// answers the first SendEmail to recipient as SES answers a send over the
// account's sending rate, HTTP 429 TooManyRequestsException, which
// send-email classifies TOOL_RATE_LIMITED with nothing sent
// (shared/sendemail), so the dispatcher records the attempt FAILED and
// retryable and the Task's Retry runs it again. (Not a 5xx: SES may have
// sent the e-mail then, so the attempt would be UNKNOWN, not FAILED.) It
// accepts nothing itself: every other request, the retried send included,
// goes to the emulator, which sends and stores the e-mail or refuses the
// request.
type throttleOnce struct {
	recipient string
	emulator  *httputil.ReverseProxy
	sends     atomic.Int64 // SendEmail requests to recipient; the first is answered with the 429
}

func newThrottleOnce(emulator, recipient string) *throttleOnce {
	target, err := url.Parse(emulator)
	if err != nil {
		panic("the SES emulator's URL: " + err.Error()) // local.StartSES writes it
	}
	return &throttleOnce{recipient: recipient, emulator: httputil.NewSingleHostReverseProxy(target)}
}

func (p *throttleOnce) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// SES v2 SendEmail: POST /v2/email/outbound-emails, a JSON body.
	if r.Method == http.MethodPost && r.URL.Path == "/v2/email/outbound-emails" {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "read the request", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var in struct {
			Destination struct{ ToAddresses []string }
		}
		if json.Unmarshal(body, &in) == nil && slices.Contains(in.Destination.ToAddresses, p.recipient) && p.sends.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Amzn-Errortype", "TooManyRequestsException")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"message":"Maximum sending rate exceeded."}`)
			return
		}
	}
	p.emulator.ServeHTTP(w, r)
}

// A send inside a for_each that SES throttles once is retried by its
// Task's Retry under the same idempotency key and seq: the ledger shows
// that call's attempt 1 FAILED (TOOL_RATE_LIMITED, retryable) and attempt
// 2 SUCCEEDED, each item's call has a key of its own, and each recipient
// gets exactly one e-mail.
func TestForEachRetriedSendReusesItsKey(t *testing.T) {
	t.Parallel() // a stack of its own (startEnv)
	var throttle *throttleOnce
	e := startEnv(t, stack.StackOptions{SESEndpoint: func(emulator string) string {
		throttle = newThrottleOnce(emulator, "b@example.com")
		srv := httptest.NewServer(throttle)
		t.Cleanup(srv.Close)
		return srv.URL
	}})
	e.publish(t, "e2e-each-retried", mailEachRetried)
	run, out := e.mailEveryone(t, "e2e-each-retried")
	if n := throttle.sends.Load(); n != 2 {
		t.Fatalf("the proxy saw %d sends to %s, want the throttled one and its retry", n, throttle.recipient)
	}
	var got []string
	keys := map[string]bool{}
	reviews := map[string]string{} // seq -> the review its attempts ran under
	for _, r := range e.rows(t, run) {
		if r.Tool != "send-email" {
			continue
		}
		got = append(got, fmt.Sprintf("%s#%d %s %s retryable=%t", r.Seq, r.Attempt, r.Status, r.ErrorCode, r.Retryable))
		if r.IdempotencyKey != run+"/"+string(r.Seq) || r.Approver == "" || r.ReviewID == "" {
			t.Errorf("send row %+v: want the key %s/%s and an approval", r, run, r.Seq)
		}
		if id, ok := reviews[string(r.Seq)]; ok && id != r.ReviewID {
			t.Errorf("seq %s: attempts under reviews %s and %s, want one approval for the call", r.Seq, id, r.ReviewID)
		}
		reviews[string(r.Seq)] = r.ReviewID
		keys[r.IdempotencyKey] = true
	}
	want := []string{
		"1.0.1#1 SUCCEEDED  retryable=false",
		"1.1.1#1 FAILED TOOL_RATE_LIMITED retryable=true",
		"1.1.1#2 SUCCEEDED  retryable=false",
		"1.2.1#1 SUCCEEDED  retryable=false",
	}
	if !slices.Equal(got, want) || len(keys) != 3 {
		t.Fatalf("send rows:\n%q\nwant:\n%q", got, want)
	}
	e.everyoneMailedOnce(t, out)
}

// overlappingReviews runs a review and the send it approves for two
// recipients at once (max_concurrency 2). Each iteration first waits its
// item's delay, so that the reviews open at different times but are open
// together; a review that nobody decides within 6 seconds goes to a pass
// step. Each iteration collects its review's decision.
const overlappingReviews = `solution: e2e-each-overlap
version: 1
policy: {run_timeout_seconds: 3600}
input:
  type: object
  required: [people]
  properties:
    people: {type: array, maxItems: 2}
output:
  each: "${steps.each.output}"
steps:
  - id: each
    for_each:
      items: "${input.people}"
      as: person
      max_items: 2
      max_concurrency: 2
      collect:
        to: "${person.email}"
        decision: "${reviews.approve.decision}"
      steps:
        - id: delay
          wait: {seconds: "${person.delay}"}
          next: approve
        - id: approve
          review: {of: send, timeout_seconds: 6}
          on_approve: send
          on_timeout: timed_out
        - id: send
          tool: send-email
          with: {to: ["${person.email}"], subject: "Item ${for_each.index}", text: "approved in time"}
        - id: timed_out
          pass: {}
`

// pendingTo waits for the run's pending review of a send to recipient and
// returns its id; it shows each pending review to read its input.
func (e *env) pendingTo(t *testing.T, run, recipient string) string {
	t.Helper()
	others := map[string]bool{}
	for {
		id := e.pending(t, run, others)
		out, code := e.toolgate(t, "review", "show", id, "--json", "--endpoint", e.decisionEndpoint(), "--as", "tester")
		var v review.View
		var in struct{ To []string }
		if code != cli.ExitOK || json.Unmarshal([]byte(out), &v) != nil || json.Unmarshal(v.Input, &in) != nil {
			t.Fatalf("review show %s: %s", id, out)
		}
		if slices.Contains(in.To, recipient) {
			return id
		}
		others[id] = true
	}
}

// timedOut reports whether a Task of the run has timed out
// (a TaskTimedOut event in its history).
func (e *env) timedOut(t *testing.T, run string) bool {
	t.Helper()
	pages := sfn.NewGetExecutionHistoryPaginator(e.sf, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(run)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range page.Events {
			if ev.Type == sfntypes.HistoryEventTypeTaskTimedOut {
				return true
			}
		}
	}
	return false
}

// Two reviews of a loop are open at once; the second item's times out
// and the first item's is approved after that. The timeout closes only its
// own iteration's task token (the local Step Functions endpoint once closed
// every open token of the state's name, and the approval then failed the
// run with States.Runtime): the run succeeds, the approved item alone is
// sent, under seq 1.0.1, and the collected decisions say which item timed
// out.
func TestForEachOverlappingReviewsOneTimesOut(t *testing.T) {
	e := sharedEnv(t)
	e.publish(t, "e2e-each-overlap", overlappingReviews)
	e.clearMails(t)
	// The first item's review opens 3 s after the second's, which times
	// out 6 s after it opened: the first is open from then on, and until
	// 3 s after the second has timed out.
	people := []map[string]any{{"email": "a@example.com", "delay": 3}, {"email": "b@example.com", "delay": 0}}
	run := e.start(t, "e2e-each-overlap", map[string]any{"people": people})
	first := e.pendingTo(t, run, "a@example.com")
	if e.timedOut(t, run) {
		t.Fatal("the second review timed out before the first was open: nothing would show that a timeout leaves another iteration's token open")
	}
	for deadline := time.Now().Add(30 * time.Second); !e.timedOut(t, run); {
		if time.Now().After(deadline) {
			t.Fatal("the second review did not time out")
		}
		time.Sleep(200 * time.Millisecond) // a poll with a deadline: the review's 6 s timeout, in Step Functions Local
	}
	e.decide(t, "approve", first)
	out := e.finish(t, run)
	if out.Status != "SUCCEEDED" {
		t.Fatalf("run %s: %s %s", out.Status, out.Error, out.Cause)
	}
	var output struct {
		Each []struct{ To, Decision string }
	}
	if err := json.Unmarshal([]byte(out.Output), &output); err != nil {
		t.Fatalf("output %s: %v", out.Output, err)
	}
	if got := fmt.Sprint(output.Each); got != "[{a@example.com approve} {b@example.com timeout}]" {
		t.Fatalf("collected %s", got)
	}
	if m := e.mails(t); len(m) != 1 || fmt.Sprint(m[0].Destination.To) != "[a@example.com]" {
		t.Fatalf("mails %+v, want one to a@example.com", m)
	}
	var sends []string
	for _, r := range e.rows(t, run) {
		if r.Tool == "send-email" {
			sends = append(sends, fmt.Sprintf("%s %s %s", r.Seq, r.Status, r.IdempotencyKey))
		}
	}
	if want := "1.0.1 SUCCEEDED " + run + "/1.0.1"; len(sends) != 1 || sends[0] != want {
		t.Fatalf("send rows %q, want [%q]", sends, want)
	}
}
