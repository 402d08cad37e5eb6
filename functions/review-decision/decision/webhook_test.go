package decision_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/functions/review-decision/decision"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhook/store"
)

// Canaries planted in a review's input and a decision's reason: no event
// may hold either, nor who decided.
const (
	inputCanary  = "canary-input-7d2a"
	reasonCanary = "canary-reason-19be"
)

// withEvents is s with its decisions' events recorded in its table, as
// the function's main wires it without an events queue (record only;
// the relay sends them), and the store to read them.
func withEvents(t *testing.T, s *stack, e decision.Emitter) *store.Store {
	t.Helper()
	events := store.New(s.db, s.table, nil)
	if e == nil {
		e = &store.Emitter{Store: events}
	}
	s.deps.Webhooks = e
	s.svc = decision.NewService(s.deps)
	return events
}

// solutionReview is a pending review of a run of Solution refunds in
// stage dev, with a canary in its input.
func solutionReview(t *testing.T, s *stack, run string) *review.Review {
	return s.pending(t, func(p *review.Params) {
		p.RunID = "arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_refunds:" + run
		p.Input = json.RawMessage(`{"to":["team@example.com"],"subject":"` + inputCanary + `","text":"t"}`)
	})
}

// unsent reads every event recorded in s's table and not yet sent.
func unsent(t *testing.T, events *store.Store) []webhook.Event {
	t.Helper()
	ids, err := events.Unsent(context.Background(), time.Now().Add(time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []webhook.Event
	for _, id := range ids {
		ev, ok, err := events.Event(context.Background(), id)
		if err != nil || !ok {
			t.Fatalf("event %s: %v", id, err)
		}
		for _, c := range []string{inputCanary, reasonCanary, "alice", "bob"} {
			if strings.Contains(string(ev.Data), c) {
				t.Fatalf("event %s holds %q: %s", id, c, ev.Data)
			}
		}
		out = append(out, ev)
	}
	return out
}

// A decision that reaches its review's Task records one review.decided
// event, id webhook.EventID(review.decided, review id), with the review,
// Solution, run, step, tool, decision and time, and neither the payload,
// the reason nor the approver; the same decision again records nothing
// more. A rejection records "rejected".
func TestADecisionRecordsReviewDecidedOnce(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	events := withEvents(t, s, nil)
	r := solutionReview(t, s, "run-7")
	for range 2 {
		if _, err := s.decide(t, "alice", r.ID, review.Approve, reasonCanary); err != nil {
			t.Fatal(err)
		}
	}
	got := unsent(t, events)
	if len(got) != 1 || got[0].ID != webhook.EventID(webhook.ReviewDecided, r.ID) || got[0].Type != webhook.ReviewDecided || got[0].Solution != "refunds" {
		t.Fatalf("events %+v", got)
	}
	if err := webhook.Validate(got[0]); err != nil {
		t.Fatal(err)
	}
	var data webhook.ReviewDecidedData
	if err := json.Unmarshal(got[0].Data, &data); err != nil {
		t.Fatal(err)
	}
	stored, err := s.store.Get(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := webhook.ReviewDecidedData{ReviewID: r.ID, Solution: "refunds", Run: "run-7", Step: "approve", Tool: "send-email",
		Decision: "approved", DecidedAt: review.FormatTime(stored.DecidedAt)}
	if data != want {
		t.Fatalf("data %+v, want %+v", data, want)
	}

	rejected := solutionReview(t, s, "run-8")
	if _, err := s.decide(t, "bob", rejected.ID, review.Reject, reasonCanary); err != nil {
		t.Fatal(err)
	}
	ev, ok, err := events.Event(context.Background(), webhook.EventID(webhook.ReviewDecided, rejected.ID))
	if err != nil || !ok || !strings.Contains(string(ev.Data), `"decision":"rejected"`) {
		t.Fatalf("the rejection's event: %s %v %v", ev.Data, ok, err)
	}
	if n := len(unsent(t, events)); n != 2 {
		t.Fatalf("%d events, want 2", n)
	}
}

// A decision recorded and not yet delivered (Step Functions could not be
// reached) records no event; the repeat that delivers it records it. A
// review of a run that is no Solution's records none.
func TestReviewDecidedWaitsForTheDelivery(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	events := withEvents(t, s, nil)
	r := solutionReview(t, s, "run-9")
	s.fake.FailNext(1)
	if _, err := s.decide(t, "alice", r.ID, review.Approve, ""); codeOf(err) != review.CodeUnavailable {
		t.Fatalf("a delivery that failed: %v", err)
	}
	if got := unsent(t, events); len(got) != 0 {
		t.Fatalf("an undelivered decision recorded %+v", got)
	}
	if _, err := s.decide(t, "alice", r.ID, review.Approve, ""); err != nil {
		t.Fatal(err)
	}
	if got := unsent(t, events); len(got) != 1 || got[0].ID != webhook.EventID(webhook.ReviewDecided, r.ID) {
		t.Fatalf("events %+v", got)
	}
	other := s.pending(t, nil) // state machine "sm": no Solution
	if _, err := s.decide(t, "alice", other.ID, review.Approve, ""); err != nil {
		t.Fatal(err)
	}
	if got := unsent(t, events); len(got) != 1 {
		t.Fatalf("a review of no Solution recorded an event: %+v", got)
	}
}

// A failure to record the event never fails the decision.
func TestAFailedEventLeavesTheDecisionDone(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	withEvents(t, s, failingEmitter{})
	r := solutionReview(t, s, "run-10")
	res, err := s.decide(t, "alice", r.ID, review.Approve, "")
	if err != nil || res.Delivery != review.Delivered {
		t.Fatalf("%+v %v", res, err)
	}
}

// failingEmitter fails every Emit, as an unreachable table would; a
// stand-in for the failure only.
type failingEmitter struct{}

func (failingEmitter) Emit(context.Context, webhook.Event) error {
	return errors.New("dial tcp: connection refused")
}
