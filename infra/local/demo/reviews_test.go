package main

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/ledger"
)

// demoMail is an e-mail of the reviews demo as the SES emulator's store
// returns it.
func demoMail(to, subject, text string) local.Mail {
	var m local.Mail
	m.From, m.Destination.To, m.Subject, m.Body.Text = "toolgate-demo@example.com", []string{to}, subject, text
	return m
}

// TestCheckReviewsRefusesEveryOtherOutcome checks the reviews demo's
// verdict: only a SUCCEEDED run with one notice to ops@example.com naming
// the review, one e-mail with the edited subject and the answer, and one
// SUCCEEDED send-email row whose edited digest differs from its reviewed
// one, edited by the reviewer, passes.
func TestCheckReviewsRefusesEveryOtherOutcome(t *testing.T) {
	const check = "rv_0123456789abcdef0123456789abcdef"
	notice := demoMail("ops@example.com", "Review "+check+" is waiting: toolgate-local_demo-reviews/check", "Review "+check+" waits.")
	sent := demoMail("customer@example.com", demoSubject, demoAnswer+"\n")
	row := ledger.Row{Tool: "send-email", Status: ledger.StatusSucceeded, ReviewID: "rv_fedcba9876543210fedcba9876543210",
		InputDigest: "sha256:" + strings.Repeat("a", 64), EditedDigest: "sha256:" + strings.Repeat("b", 64), Editor: local.LocalPrincipal(reviewer)}
	ok := &runner.Outcome{Status: "SUCCEEDED"}
	if err := checkReviews(ok, check, []local.Mail{notice, sent}, []ledger.Row{row}); err != nil {
		t.Fatalf("the demo's own outcome: %v", err)
	}
	elsewhere := demoMail("someone@elsewhere.example", notice.Subject, notice.Body.Text)
	unedited := demoMail("customer@example.com", "Your order", demoAnswer)
	unanswered := demoMail("customer@example.com", demoSubject, "")
	notEdited, sameDigest, byStarter := row, row, row
	notEdited.EditedDigest, notEdited.Editor = "", ""
	sameDigest.EditedDigest = row.InputDigest
	byStarter.Editor = local.LocalPrincipal(author)
	for _, c := range []struct {
		name    string
		outcome *runner.Outcome
		mails   []local.Mail
		rows    []ledger.Row
		want    string
	}{
		{"the run failed", &runner.Outcome{Status: "FAILED", Error: "States.Runtime"}, []local.Mail{notice, sent}, []ledger.Row{row}, "ended FAILED"},
		{"no notice", ok, []local.Mail{sent}, []ledger.Row{row}, "0 notices"},
		{"two notices", ok, []local.Mail{notice, notice, sent}, []ledger.Row{row}, "2 notices"},
		{"a notice to an address not admitted", ok, []local.Mail{elsewhere, sent}, []ledger.Row{row}, "went to"},
		{"the subject as drafted", ok, []local.Mail{notice, unedited}, []ledger.Row{row}, "not the edited subject"},
		{"no answer in the text", ok, []local.Mail{notice, unanswered}, []ledger.Row{row}, "not the edited subject and the answer"},
		{"sent twice", ok, []local.Mail{notice, sent, sent}, []ledger.Row{row, row}, "2 order e-mails"},
		{"a row without its edit", ok, []local.Mail{notice, sent}, []ledger.Row{notEdited}, "edited digest"},
		{"an edited digest equal to the reviewed one", ok, []local.Mail{notice, sent}, []ledger.Row{sameDigest}, "edited digest"},
		{"edited by another", ok, []local.Mail{notice, sent}, []ledger.Row{byStarter}, "editor"},
		{"no row", ok, []local.Mail{notice, sent}, nil, "0 send-email rows"},
	} {
		err := checkReviews(c.outcome, check, c.mails, c.rows)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
}
