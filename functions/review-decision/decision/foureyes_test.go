package decision_test

import (
	"context"
	"testing"

	"github.com/toolgate/toolgate/functions/review-decision/decision"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/review"
)

// pendingHeld stores a pending review, as pending does, of a run whose
// start record's origin names holders (review.Review.OriginHolders, as
// review-request copies them onto the review item).
func (s *stack) pendingHeld(t *testing.T, holders []string, mod func(*review.Params)) *review.Review {
	t.Helper()
	token := "token-" + review.NewID()
	p := review.Params{Requester: "arn:aws:sts::000000000000:assumed-role/toolgate-dev-inbound-start/src-billing", ID: review.IDForToken(token), TaskToken: token,
		RunID: runARN(), Step: "approve", Of: "send", Tool: "send-email", ToolsetID: "ts_f7826302d51ea15dba1ab8b9cf962a58",
		Input: []byte(`{"to":["team@example.com"],"subject":"s","text":"t"}`), TimeoutSeconds: 3600}
	if mod != nil {
		mod(&p)
	}
	r, err := review.New(p)
	if err != nil {
		t.Fatal(err)
	}
	r.OriginHolders = holders
	if created, _, err := s.store.Create(context.Background(), r); err != nil || !created {
		t.Fatal(created, err)
	}
	return r
}

// Who held a secret of the source (or added the schedule) that started
// an inbound run could have chosen its input: its approval is refused
// as the requester's (REVIEW_SELF_APPROVAL), with or without an answer,
// counted on the review, which stays pending; it may reject; another
// reviewer approves.
func TestOriginHolderCannotApproveTheRunsReview(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	holders := []string{principal("ops"), principal("rotator")}
	r := s.pendingHeld(t, holders, nil)
	for _, who := range []string{"ops", "rotator"} {
		if _, err := s.decide(t, who, r.ID, review.Approve, ""); codeOf(err) != review.CodeSelfApproval {
			t.Fatalf("holder %s approves: %v, want %s", who, err, review.CodeSelfApproval)
		}
	}
	got, err := s.store.Get(context.Background(), r.ID)
	if err != nil || got.Status != review.Pending || got.SelfApprovalRefusals != 2 || len(got.OriginHolders) != 2 {
		t.Fatalf("after two holders' approvals: %+v %v; want PENDING with 2 refusals and its holders", got, err)
	}
	if _, err := s.decide(t, "dave", r.ID, review.Approve, ""); err != nil {
		t.Fatalf("another reviewer approves: %v", err)
	}

	rejected := s.pendingHeld(t, holders, nil)
	if res, err := s.decide(t, "ops", rejected.ID, review.Reject, "not what I sent"); err != nil || res.Status != review.Rejected {
		t.Fatalf("a holder rejects: %+v, %v; want REJECTED", res, err)
	}
}

// A gated park of an inbound run is approved by a reviewer of the review
// its call carried, never by one of that review's origin holders, even
// when the Solution names them as reviewers; a holder may reject it.
func TestOriginHolderCannotApproveTheRunsGatedPark(t *testing.T) {
	t.Parallel()
	s := newParkStack(t, decision.ParkPolicy{}, nil)
	run := runARN()
	starter := "arn:aws:sts::000000000000:assumed-role/toolgate-dev-inbound-start/src-billing"
	rv := s.pendingHeld(t, []string{principal("ops")}, func(p *review.Params) {
		p.RunID, p.Tool, p.Requester, p.Reviewers = run, "crm.update", starter, []string{principal("ops"), principal("alice")}
	})
	r := s.parked(t, run, starter, rv.ID, park.SchemaChanged, true)
	if _, err := s.decide(t, "ops", r, park.Approve, ""); codeOf(err) != review.CodeSelfApproval {
		t.Fatalf("the holder approves the park: %v, want %s", err, review.CodeSelfApproval)
	}
	if calls := s.fake.Calls(r.TaskToken); len(calls) != 0 {
		t.Fatalf("a refused approval sent %+v", calls)
	}
	if res, err := s.decide(t, "alice", r, park.Approve, ""); err != nil || res.Status != park.StatusApproved {
		t.Fatalf("another reviewer approves the park: %+v, %v", res, err)
	}

	other := runARN()
	rv2 := s.pendingHeld(t, []string{principal("ops")}, func(p *review.Params) {
		p.RunID, p.Tool, p.Requester, p.Reviewers = other, "crm.update", starter, []string{principal("ops")}
	})
	r2 := s.parked(t, other, starter, rv2.ID, park.SchemaChanged, true)
	if res, err := s.decide(t, "ops", r2, park.Reject, "not mine to send"); err != nil || res.Status != park.StatusRejected {
		t.Fatalf("the holder rejects the park: %+v, %v", res, err)
	}
}
