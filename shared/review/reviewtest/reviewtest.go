package reviewtest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/tool"
)

// Approver is the approver of the reviews this package approves, and
// Requester their requester when Params names none.
const (
	Approver  = "arn:aws:iam::000000000000:user/reviewtest"
	Requester = "arn:aws:iam::000000000000:user/reviewtest-requester"
)

// Store is what this package needs of a review store: the methods of
// shared/review/dynamo's Store that create, decide and read a review. The
// fixtures take it as an interface so that they link no store of their own.
type Store interface {
	Create(ctx context.Context, r *review.Review) (created bool, existing *review.Review, err error)
	Get(ctx context.Context, id string) (*review.Review, error)
	Decide(ctx context.Context, r *review.Review, v review.Verdict, approver string, authenticated bool, reason string, lease time.Duration) (applied bool, cur *review.Review, err error)
}

// Decided stores the review p asks for (a random id when p.ID is empty,
// one hour when p.TimeoutSeconds is 0, Requester when p names none) and records verdict v on it, with
// the store's clock. It returns the decided review.
func Decided(t testing.TB, s Store, p review.Params, v review.Verdict) *review.Review {
	t.Helper()
	if p.ID == "" {
		p.ID = review.NewID()
	}
	if p.Step == "" {
		p.Step = "approve"
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 3600
	}
	if p.Requester == "" {
		p.Requester = Requester
	}
	r, err := review.New(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if created, _, err := s.Create(ctx, r); err != nil || !created {
		t.Fatalf("create review %s: created %v, %v", r.ID, created, err)
	}
	applied, cur, err := s.Decide(ctx, r, v, Approver, true, "reviewtest "+string(v), time.Minute)
	if err != nil || !applied {
		t.Fatalf("decide review %s: applied %v, %v", r.ID, applied, err)
	}
	return cur
}

// Approval returns the decision JSON of r, as the envelope's "approval".
func Approval(t testing.TB, r *review.Review) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(r.Decision())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Approve stores an approved review of exactly the call payload (an
// envelope) describes — its run, step, tool, toolset and input — and
// returns the envelope with that approval added.
func Approve(t testing.TB, s Store, payload json.RawMessage) json.RawMessage {
	t.Helper()
	env, err := tool.DecodeEnvelope(payload)
	if err != nil {
		t.Fatalf("reviewtest: %v", err)
	}
	r := Decided(t, s, review.Params{RunID: env.RunID, Of: env.Step, Tool: env.Tool, ToolsetID: env.ToolsetID, Input: env.Input}, review.Approve)
	return WithApproval(t, payload, Approval(t, r))
}

// WithApproval returns the envelope payload with its "approval" set.
func WithApproval(t testing.TB, payload, approval json.RawMessage) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatal(err)
	}
	m["approval"] = approval
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// MustGet reads review id (Store.Get), failing t with the error
// rather than handing it a nil review to dereference.
func MustGet(t testing.TB, s Store, id string) *review.Review {
	t.Helper()
	r, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return r
}
