package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/stack"
	"github.com/toolgate/toolgate/resolver/cli/runner"
	"github.com/toolgate/toolgate/shared/ledger"
)

// The reviews demo's answer to the question and the subject the
// reviewer puts in place of the drafted one.
const (
	demoAnswer  = "Leave it with the concierge"
	demoSubject = "Your order of 120 EUR is on its way"
)

// reviewsWait bounds the reviews demo's waits: the notice reaching the
// SES emulator, the run ending.
const reviewsWait = time.Minute

// richerReviews shows the richer reviews of docs/reviews.md in one run of
// testdata/demo/demo-reviews.yaml: the review that shows values (step
// check) asks a question and notifies ops@example.com, whose notice the
// SES emulator captures; the reviewer answers it (--answer), then
// approves the e-mail's own review with an edited subject (--edit); the
// e-mail sent carries the edited subject and the answer, and the ledger
// row the reviewed digest, the edited one and the editor. The SES
// emulator's store holds the earlier sections' e-mails too: this section
// counts its own from the store's length before it. An error names what
// differed (checkReviews).
func richerReviews(ctx context.Context, st *stack.Stack, sf *sfn.Client) error {
	step("richer reviews (testdata/demo/demo-reviews.yaml): a review that shows values, asks a question and notifies ops@example.com; then the e-mail's own review, approved with an edited subject")
	decision := st.Endpoints["review-decision"]
	if _, err := toolgate("publish", "testdata/demo/demo-reviews.yaml", "--endpoint", st.Endpoints["publish"], "--as", publisher); err != nil {
		return err
	}
	before, err := countMail(st.SES.Endpoint())
	if err != nil {
		return err
	}
	arn, err := startRun(st, "demo-reviews", "testdata/demo/demo-reviews-input.json", fmt.Sprintf("reviews-%d", time.Now().Unix()))
	if err != nil {
		return err
	}
	check, err := pendingReview(ctx, decision, arn, nil)
	if err != nil {
		return err
	}

	step("the review notice the SES emulator captured (from the platform's sender, to the notify addresses the notices allow-list admits; no reviewed value)")
	notice, err := newMails(ctx, st.SES.Endpoint(), before, 1)
	if err != nil {
		return err
	}
	printMails(notice)

	step("the review shows values and asks; the reviewer answers with the approval")
	if _, err := toolgate("review", "show", check, "--endpoint", decision, "--as", reviewer); err != nil {
		return err
	}
	if _, err := toolgate("review", "approve", check, "--reason", "the total is right", "--answer", demoAnswer, "--endpoint", decision, "--as", reviewer); err != nil {
		return err
	}

	step("the e-mail needs its own review (a review that shows values approves no call); approved with an edited subject")
	mail, err := pendingReview(ctx, decision, arn, map[string]bool{check: true})
	if err != nil {
		return err
	}
	if _, err := toolgate("review", "show", mail, "--endpoint", decision, "--as", reviewer); err != nil {
		return err
	}
	if _, err := toolgate("review", "approve", mail, "--reason", "a clearer subject", "--edit", "subject="+demoSubject, "--endpoint", decision, "--as", reviewer); err != nil {
		return err
	}
	outcome, err := follow(ctx, sf, arn, reviewsWait, true)
	if err != nil {
		return err
	}

	step("the e-mail sent, with the edited subject and the answer, and the ledger row's digests")
	all, err := newMails(ctx, st.SES.Endpoint(), before, 2)
	if err != nil {
		return err
	}
	printMails(all[len(notice):])
	rows, err := ledgerRows(st, arn)
	if err != nil {
		return err
	}
	for _, r := range rows {
		fmt.Printf("  ledger seq %s  %s  %s  review %s\n    input_digest  %s (the input reviewed)\n    edited_digest %s (the input sent)\n    editor        %s\n",
			r.Seq, r.Tool, r.Status, r.ReviewID, r.InputDigest, r.EditedDigest, r.Editor)
	}
	return checkReviews(outcome, check, all, rows)
}

// newMails waits until the SES emulator at endpoint holds at least want
// e-mails after its first before, and returns those after before.
func newMails(ctx context.Context, endpoint string, before, want int) ([]local.Mail, error) {
	deadline := time.Now().Add(reviewsWait)
	for {
		mails, err := local.SentMails(ctx, endpoint)
		if err != nil {
			return nil, err
		}
		if len(mails) >= before+want {
			return mails[before:], nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the SES emulator holds %d new e-mails after %s, want %d", len(mails)-before, reviewsWait, want)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(300 * time.Millisecond): // a poll with a deadline: review-request sends the notice after it stored the review
		}
	}
}

// printMails prints e-mails as printMail does.
func printMails(mails []local.Mail) {
	for _, m := range mails {
		fmt.Printf("  From:    %s\n  To:      %s\n  Subject: %s\n\n  %s\n\n", m.From, strings.Join(m.Destination.To, ", "), m.Subject,
			strings.ReplaceAll(strings.TrimSpace(m.Body.Text), "\n", "\n  "))
	}
}

// checkReviews is the reviews demo's verdict on the run's outcome, the
// e-mails the SES emulator captured since the section began, and the
// run's ledger rows: the run SUCCEEDED; exactly two e-mails, the notice
// of review check (to ops@example.com only, naming the review) and the
// order's e-mail (the edited subject, the answer as its text); one
// SUCCEEDED send-email row whose edited digest differs from its reviewed
// input digest, edited by the reviewer.
func checkReviews(outcome *runner.Outcome, check string, mails []local.Mail, rows []ledger.Row) error {
	var problems []string
	if outcome.Status != "SUCCEEDED" {
		problems = append(problems, fmt.Sprintf("the run ended %s %s", outcome.Status, outcome.Error))
	}
	var notices, sent []local.Mail
	for _, m := range mails {
		if strings.HasPrefix(m.Subject, "Review ") {
			notices = append(notices, m)
		} else {
			sent = append(sent, m)
		}
	}
	switch {
	case len(notices) != 1:
		problems = append(problems, fmt.Sprintf("%d notices", len(notices)))
	case strings.Join(notices[0].Destination.To, ",") != "ops@example.com" || !strings.Contains(notices[0].Subject, check):
		problems = append(problems, fmt.Sprintf("the notice %q went to %v", notices[0].Subject, notices[0].Destination.To))
	}
	switch {
	case len(sent) != 1:
		problems = append(problems, fmt.Sprintf("%d order e-mails", len(sent)))
	case sent[0].Subject != demoSubject || strings.TrimSpace(sent[0].Body.Text) != demoAnswer:
		problems = append(problems, fmt.Sprintf("the order e-mail's subject %q and text %q are not the edited subject and the answer", sent[0].Subject, sent[0].Body.Text))
	}
	var sends []ledger.Row
	for _, r := range rows {
		if r.Tool == "send-email" {
			sends = append(sends, r)
		}
	}
	switch {
	case len(sends) != 1:
		problems = append(problems, fmt.Sprintf("%d send-email rows", len(sends)))
	case sends[0].Status != ledger.StatusSucceeded || sends[0].EditedDigest == "" || sends[0].EditedDigest == sends[0].InputDigest:
		problems = append(problems, fmt.Sprintf("the send-email row is %s with edited digest %q (input digest %s)", sends[0].Status, sends[0].EditedDigest, sends[0].InputDigest))
	case sends[0].Editor != local.LocalPrincipal(reviewer):
		problems = append(problems, fmt.Sprintf("the send-email row's editor is %q", sends[0].Editor))
	}
	if len(problems) > 0 {
		return fmt.Errorf("the reviews demo: %s; want SUCCEEDED, one notice to ops@example.com naming %s, one e-mail with the edited subject and the answer, and one SUCCEEDED send-email row edited by %s", strings.Join(problems, "; "), check, reviewer)
	}
	return nil
}
