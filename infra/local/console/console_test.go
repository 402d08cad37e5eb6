package console_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/toolgate/toolgate/shared/ledger"
)

// mailSolution reviews one e-mail built from its input (send-email's To,
// Cc, subject, text and HTML parts) and sends it when approved; a
// rejected review routes the run to the pass state declined.
const mailSolution = `solution: SOLUTION
version: 1
input:
  type: object
  required: [to, cc, subject, text, html]
  properties:
    to: {type: string, maxLength: 320}
    cc: {type: string, maxLength: 320}
    subject: {type: string, maxLength: 200}
    text: {type: string, maxLength: 2000}
    html: {type: string, maxLength: 4000}
steps:
  - id: approve_mail
    review: {of: send, timeout_seconds: 600}
    on_approve: send
    on_reject: declined
  - id: send
    tool: send-email
    with: {to: ["${input.to}"], cc: ["${input.cc}"], subject: "${input.subject}", text: "${input.text}", html: "${input.html}"}
  - id: declined
    pass: {status: declined}
`

// allowed and refused are recipients the local stack's send-email
// allow-list (@example.com) admits and refuses.
const (
	allowed = "reader@example.com"
	refused = "outsider@example.org"
)

// mailInput is mailSolution's input for an e-mail with subject to
// allowed, copied to cc.
func mailInput(subject, cc, html string) map[string]any {
	return map[string]any{"to": allowed, "cc": cc, "subject": subject, "text": "Plain text part of " + subject, "html": html}
}

// reviewedMail starts a run of a fresh mailSolution with input, waits for
// its review, and returns the env, the run and the review id.
func reviewedMail(t *testing.T, input map[string]any) (*env, string, string) {
	t.Helper()
	e := sharedEnv(t)
	name := fresh("console-mail")
	e.publish(t, name, mailSolution)
	run := e.start(t, name, input)
	return e, run, e.pending(t, run, nil)
}

// openConsole starts the console as the local name as and opens it in a
// new browser, which lands on the pending list.
func openConsole(t *testing.T, e *env, as string) (*console, *browser) {
	t.Helper()
	c := e.startConsole(t, as)
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(c.open), chromedp.WaitReady(chromedp.CSS("#pending")))
	if loc := eval[string](t, b, "location.href"); loc != c.base+"/" {
		t.Fatalf("opening %s landed on %s, want %s/", c.open, loc, c.base)
	}
	return c, b
}

// openReview follows the pending list's link to review id.
func (b *browser) openReview(t *testing.T, id string) {
	t.Helper()
	row := fmt.Sprintf(`#pending tr[data-review-id=%q]`, id)
	b.do(t, chromedp.WaitReady(chromedp.CSS(row)))
	b.follow(t, "the link to review "+id, chromedp.Click(chromedp.CSS(row+" a.open-review")))
	if path := eval[string](t, b, "location.pathname"); path != "/reviews/"+id {
		t.Fatalf("the link to review %s led to %s", id, path)
	}
	b.do(t, chromedp.WaitReady(chromedp.CSS("#approve-button")))
}

// follow runs action, which leaves the page (a click on a link or on a
// form's button), and returns once the browser has loaded the page it
// leads to: the old page is marked first, so that neither it nor a
// half-loaded new one is taken for the answer (nodes of a page being
// replaced are gone before an action on them runs).
func (b *browser) follow(t *testing.T, what string, action chromedp.Action[chromedp.Void]) {
	t.Helper()
	eval[bool](t, b, `document.documentElement.dataset.left = "1"; true`)
	b.do(t, action)
	deadline := time.Now().Add(30 * time.Second)
	for {
		// An evaluation while the old page unloads may fail: poll again.
		loaded, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`document.readyState === "complete" && !document.documentElement.dataset.left`))
		if err == nil && loaded {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s loaded no new page within 30 s", what)
		}
		time.Sleep(50 * time.Millisecond) // a poll with a deadline: the browser loads the next page
	}
}

// submit clicks the button that submits a form, waits for the page
// the server answers with, and returns the text of its element want
// (#outcome or #refusal); a page without it fails t with the page's text,
// so that a refusal of the console's own (a plain 4xx page) reads as one.
func (b *browser) submit(t *testing.T, button, want string) string {
	t.Helper()
	b.follow(t, "clicking "+button, chromedp.Click(chromedp.CSS(button)))
	if eval[int](t, b, fmt.Sprintf(`document.querySelectorAll(%q).length`, want)) == 0 {
		t.Fatalf("clicking %s led to %s, which shows no %s: %q", button, eval[string](t, b, "location.href"), want,
			strings.Join(strings.Fields(eval[string](t, b, "document.body ? document.body.innerText : ''")), " "))
	}
	return b.text(t, want)
}

// verdicts are the addresses and data-verdict attributes of the elements
// the CSS selector matches, as "address=verdict".
func verdicts(t *testing.T, b *browser, sel string) []string {
	t.Helper()
	return eval[[]string](t, b, fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map(e => e.textContent.trim().split(/\s+/)[0] + "=" + e.dataset.verdict)`, sel))
}

func TestPendingEmailReviewShowsTheCallAsSentAndItsHTMLPartReachesNothing(t *testing.T) {
	t.Parallel()
	c := newCanary(t)
	subject := "Invoice 42 for ACME, due 2026-12-31"
	e, run, id := reviewedMail(t, mailInput(subject, refused, leakyHTML(c.url(""), 0)))
	_, b := openConsole(t, e, reviewer)
	b.openReview(t, id)

	if got := b.text(t, "#tool"); !strings.Contains(got, "send-email") {
		t.Errorf("#tool %q, want send-email", got)
	}
	if got := b.text(t, "#email-subject"); got != subject {
		t.Errorf("#email-subject %q, want the call's subject %q", got, subject)
	}
	if got := b.text(t, "#email-text"); got != "Plain text part of "+subject {
		t.Errorf("#email-text %q, want the call's text part", got)
	}
	if got := verdicts(t, b, "#email-to li"); !slices.Equal(got, []string{allowed + "=allow"}) {
		t.Errorf("#email-to: %v, want %s allowed", got, allowed)
	}
	if got := verdicts(t, b, "#email-cc li"); !slices.Equal(got, []string{refused + "=refuse"}) {
		t.Errorf("#email-cc: %v, want %s refused", got, refused)
	}
	if got := b.text(t, "#input-digest"); got == "" {
		t.Error("#input-digest is empty")
	}
	if n := eval[int](t, b, `document.querySelectorAll("iframe#html-body[sandbox]").length`); n != 1 {
		t.Fatalf("%d sandboxed iframe#html-body, want 1", n)
	}
	if sb := eval[string](t, b, `document.querySelector("iframe#html-body").getAttribute("sandbox")`); sb != "" {
		t.Errorf("iframe#html-body sandbox=%q, want no tokens", sb)
	}
	b.clickInFrame(t, "a")
	if got := waitForRequests(c, 1); len(got) != 0 {
		t.Fatalf("the e-mail's HTML part reached the canary: %v", got)
	}

	// Rejecting needs a reason: the browser holds the form back
	// (required), and the server refuses it when the browser does not.
	b.do(t, chromedp.RemoveAttribute(chromedp.CSS(`#reject textarea[name="reason"]`), "required"))
	if got := b.submit(t, "#reject-button", "#refusal"); !strings.Contains(strings.ToLower(got), "reason") {
		t.Errorf("a reject without a reason: #refusal %q, want it to name the reason", got)
	}
	b.do(t, chromedp.SetValue(chromedp.CSS(`#reject textarea[name="reason"]`), "wrong customer"))
	b.submit(t, "#reject-button", "#outcome")
	out, states := e.finish(t, run)
	if !slices.Contains(states, "declined") || slices.Contains(states, "send") {
		t.Fatalf("the rejected run went %v (%s), want it through declined and not send", states, out.Status)
	}
	if m := e.mailsWithSubject(t, subject); len(m) != 0 {
		t.Fatalf("the rejected e-mail was sent: %+v", m)
	}
}

func TestApprovingFromThePageSendsTheEmailOnce(t *testing.T) {
	t.Parallel()
	subject := fresh("Newsletter approved in the console")
	e, run, id := reviewedMail(t, mailInput(subject, "editor@example.com", "<p>This week's <b>news</b>.</p>"))
	_, b := openConsole(t, e, reviewer)
	b.openReview(t, id)
	if got := b.submit(t, "#approve-button", "#outcome"); !strings.Contains(got, "approved") {
		t.Errorf("#outcome %q, want it to say approved", got)
	}
	out, states := e.finish(t, run)
	if out.Status != "SUCCEEDED" || !slices.Contains(states, "send") {
		t.Fatalf("the approved run: %s via %v, want it to succeed through send", out.Status, states)
	}
	var sends []ledger.Row
	for _, r := range e.rows(t, run) {
		if r.Tool == "send-email" {
			sends = append(sends, r)
		}
	}
	if len(sends) != 1 || sends[0].Status != ledger.StatusSucceeded {
		t.Fatalf("the ledger's send-email rows: %+v, want one SUCCEEDED", sends)
	}
	if m := e.mailsWithSubject(t, subject); len(m) != 1 {
		t.Fatalf("the SES emulator holds %d e-mails with the subject %q, want 1: %+v", len(m), subject, m)
	}
}

func TestRequesterIsRefusedAsReviewerInWords(t *testing.T) {
	t.Parallel()
	subject := fresh("Self-approved invoice")
	e, _, id := reviewedMail(t, mailInput(subject, "finance@example.com", "<p>Invoice</p>"))
	_, b := openConsole(t, e, starter)
	b.openReview(t, id)
	if got := b.submit(t, "#approve-button", "#refusal"); !strings.Contains(got, "another reviewer must decide it") {
		t.Fatalf("the requester approving their own call: #refusal %q, want \"... another reviewer must decide it\"", got)
	}
	if again := e.pending(t, runOf(t, e, id), nil); again != id {
		t.Fatalf("after the requester's refused approval the pending review is %s, want %s still pending", again, id)
	}
}

// runOf is the run of the pending review id.
func runOf(t *testing.T, e *env, id string) string {
	t.Helper()
	for _, v := range e.list(t) {
		if v.ReviewID == id {
			return v.RunID
		}
	}
	t.Fatalf("review %s is not pending", id)
	return ""
}

// answerThenEdit asks the reviewer for a delivery note, then reviews the
// e-mail whose text is the note, with its subject editable (the demo's
// testdata/demo/demo-reviews.yaml).
const answerThenEdit = `solution: SOLUTION
version: 1
input:
  type: object
  required: [customer, total]
  properties:
    customer: {type: string, maxLength: 320}
    total: {type: number}
steps:
  - id: check
    review:
      show: {customer: "${input.customer}", total: "${input.total}"}
      ask: {type: string, maxLength: 200}
      timeout_seconds: 600
    on_approve: approve_mail
  - id: approve_mail
    review: {of: send, editable: [subject], timeout_seconds: 600}
    on_approve: send
  - id: send
    tool: send-email
    with: {to: ["${input.customer}"], subject: Your order, text: "${reviews.check.answer}"}
`

func TestAnswerAndEditSubmittedFromThePageReachTheRun(t *testing.T) {
	t.Parallel()
	e := sharedEnv(t)
	name := fresh("console-answer-edit")
	e.publish(t, name, answerThenEdit)
	run := e.start(t, name, map[string]any{"customer": "customer@example.com", "total": 120})
	check := e.pending(t, run, nil)
	c, b := openConsole(t, e, reviewer)

	note := "Leave it with the neighbour, " + name
	b.openReview(t, check)
	b.do(t, chromedp.SetValue(chromedp.CSS(`#approve [name="answer"]`), note))
	b.submit(t, "#approve-button", "#outcome")

	mailReview := e.pending(t, run, map[string]bool{check: true})
	subject := "Your order, checked: " + name
	b.do(t, chromedp.Navigate(c.base+"/"), chromedp.WaitReady(chromedp.CSS("#pending")))
	b.openReview(t, mailReview)
	b.do(t, chromedp.SetValue(chromedp.CSS(`#approve [name="edit.subject"]`), subject))
	b.submit(t, "#approve-button", "#outcome")

	out, _ := e.finish(t, run)
	if out.Status != "SUCCEEDED" {
		t.Fatalf("the run: %s, want it to succeed", out.Status)
	}
	if m := e.mailsWithSubject(t, subject); len(m) != 1 {
		t.Fatalf("the SES emulator holds %d e-mails with the edited subject %q, want 1", len(m), subject)
	}
	if got := e.mailsWithSubject(t, subject)[0].Body.Text; got != note {
		t.Fatalf("the e-mail %q has the text %q, want the answer %q", subject, got, note)
	}
}

func TestPagesFitA360PixelScreenAndTabReachesApproveAndReject(t *testing.T) {
	t.Parallel()
	subject := fresh("A subject long enough to wrap on a narrow screen, with a token_that_has_no_spaces_at_all_and_goes_on_and_on")
	e, _, id := reviewedMail(t, mailInput(subject, "averyveryveryverylongmailboxnamethatdoesnotbreak@example.com", "<p>narrow</p>"))
	c, b := openConsole(t, e, reviewer)
	b.do(t, chromedp.EmulateViewport(360, 800), chromedp.Navigate(c.base+"/"), chromedp.WaitReady(chromedp.CSS("#pending")))
	fits := func(page string) {
		t.Helper()
		sw, cw := eval[int](t, b, "document.documentElement.scrollWidth"), eval[int](t, b, "document.documentElement.clientWidth")
		if sw > cw {
			t.Errorf("%s at 360 px: scrollWidth %d > clientWidth %d (it scrolls sideways)", page, sw, cw)
		}
	}
	fits("the pending list")
	b.openReview(t, id)
	fits("the review page")

	reached := map[string]bool{}
	for range 80 {
		b.do(t, chromedp.KeyEvent(kb.Tab))
		reached[eval[string](t, b, "document.activeElement ? document.activeElement.id : ''")] = true
		if reached["approve-button"] && reached["reject-button"] {
			return
		}
	}
	t.Fatalf("80 Tab presses reached %v, want approve-button and reject-button among them", keys(reached))
}

// keys are m's keys, sorted.
func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
