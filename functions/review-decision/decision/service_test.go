package decision_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/functions/review-decision/decision"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/review/reviewtest"
	"github.com/toolgate/toolgate/shared/review/stepfunctions"
	"github.com/toolgate/toolgate/shared/table"
)

// stack is a review table on dynalite, the fake Step Functions and the STS
// stand-in that proves callers (local names, arn:aws:iam::000000000000:user/NAME).
type stack struct {
	table   string // the test's own table on the package's dynalite
	store   *dynamo.Store
	fake    *reviewtest.SFN
	svc     *decision.Service
	deps    decision.Deps // svc's
	callers *localtest.Callers
	db      *dynamodb.Client
}

// raw reads a review item's number attributes as DynamoDB holds them.
func (s *stack) raw(t *testing.T, id string) (map[string]int64, error) {
	t.Helper()
	out, err := s.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(s.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "REVIEW#" + id}, "sk": &types.AttributeValueMemberS{Value: "REVIEW"}}})
	if err != nil {
		return nil, err
	}
	nums := map[string]int64{}
	for k, v := range out.Item {
		if n, ok := v.(*types.AttributeValueMemberN); ok {
			nums[k], _ = strconv.ParseInt(n.Value, 10, 64)
		}
	}
	return nums, nil
}

func TestMain(m *testing.M) { os.Exit(localtest.RunShared(m)) }

// newStack is a stack of t's own but for the package's dynalite, where t
// has a table of its own: the tests run in parallel.
func newStack(t *testing.T) *stack {
	t.Helper()
	// The package's one dynalite, a table of the test's own.
	_, db, table := localtest.SharedTable(t, "toolgate-reviews")
	// Step Functions is a fake (reviewtest.SFN): no stand-in is available.
	fake := reviewtest.NewSFN(t)
	client := sfn.New(sfn.Options{BaseEndpoint: aws.String(fake.URL), Region: local.Region,
		Credentials: credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")})
	store := dynamo.NewStore(db, table)
	callers := localtest.StartCallers(t)
	v, err := caller.NewVerifier(caller.Config{Endpoint: callers.STS.Endpoint(), AllowHTTP: true, Account: local.LocalAccountID}, ledger.ProofTable{DB: db, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	deps := decision.Deps{Store: store, Tasks: stepfunctions.Sender{Client: client}, Callers: v, Account: local.LocalAccountID, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	return &stack{table: table, store: store, fake: fake, callers: callers, db: db, deps: deps, svc: decision.NewService(deps)}
}

// do runs req as the local identity as, with a caller proof bound to it.
func (s *stack) do(t *testing.T, as string, req decision.Request) (any, error) {
	t.Helper()
	b := caller.Binding{Action: caller.ActionList, Target: req.Status}
	switch req.Action {
	case review.ActionShow:
		b = caller.Binding{Action: caller.ActionShow, Target: req.ReviewID}
	case review.ActionDecide:
		digest := ""
		if r, err := s.store.Get(context.Background(), req.ReviewID); err == nil {
			digest = r.InputDigest
		}
		b = caller.Binding{Action: caller.ActionDecide, Target: req.ReviewID, Decision: string(req.Decision), InputDigest: digest}
	}
	req.Proof = s.callers.Proof(t, as, b)
	_, res, err := s.svc.Do(context.Background(), req)
	return res, err
}

// principal is a local name's principal.
func principal(name string) string { return local.LocalPrincipal(name) }

// pending stores a pending review of a send-email step with a task token.
func (s *stack) pending(t *testing.T, mod func(*review.Params)) *review.Review {
	t.Helper()
	token := "token-" + review.NewID()
	p := review.Params{Requester: "arn:aws:iam::000000000000:user/requester", ID: review.IDForToken(token), TaskToken: token, RunID: "arn:aws:states:us-east-1:123456789012:execution:sm:" + review.NewID(),
		Step: "approve", Of: "send", Tool: "send-email", ToolsetID: "ts_f7826302d51ea15dba1ab8b9cf962a58",
		Input: json.RawMessage(`{"to":["team@example.com"],"subject":"s","text":"t"}`), TimeoutSeconds: 3600}
	if mod != nil {
		mod(&p)
	}
	r, err := review.New(p)
	if err != nil {
		t.Fatal(err)
	}
	if created, _, err := s.store.Create(context.Background(), r); err != nil || !created {
		t.Fatal(created, err)
	}
	return r
}

func codeOf(err error) review.Code {
	var e *review.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func (s *stack) decide(t *testing.T, as string, id string, v review.Verdict, reason string) (*review.DecideResult, error) {
	t.Helper()
	res, err := s.do(t, as, decision.Request{Action: review.ActionDecide, ReviewID: id, Decision: v, Reason: reason})
	if err != nil {
		return nil, err
	}
	return res.(*review.DecideResult), nil
}

func TestStoreCreateGetList(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()
	r := s.pending(t, func(p *review.Params) { p.Reviewers = []string{"arn:aws:sts::*:assumed-role/editors/*"} })
	got, err := s.store.Get(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != review.Pending || got.RunID != r.RunID || got.Of != "send" || got.Tool != "send-email" || got.TaskToken != r.TaskToken ||
		string(got.Input) != string(r.Input) || got.InputDigest != r.InputDigest || len(got.Reviewers) != 1 ||
		got.ExpiresAt.Unix()-got.CreatedAt.Unix() != 3600 {
		t.Fatalf("%+v", got)
	}
	// The same request again (a retried Lambda invocation) finds it.
	again, err := review.New(review.Params{Requester: "arn:aws:iam::000000000000:user/requester", ID: r.ID, TaskToken: r.TaskToken, RunID: r.RunID, Step: r.Step, Of: r.Of, Tool: r.Tool,
		ToolsetID: r.ToolsetID, Input: r.Input, Reviewers: r.Reviewers, TimeoutSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	if created, existing, err := s.store.Create(ctx, again); err != nil || created || existing.ID != r.ID {
		t.Fatalf("second create: %v %+v %v", created, existing, err)
	}
	// The index lists it without its inputs or token.
	list, err := s.store.List(ctx, review.Pending, nil)
	if err != nil || len(list) != 1 || list[0].ID != r.ID || list[0].Input != nil || list[0].TaskToken != "" || list[0].InputDigest != r.InputDigest {
		t.Fatalf("pending list %+v %v", list, err)
	}
	if _, err := s.store.Get(ctx, review.NewID()); !errors.Is(err, review.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
}

// approve: recorded (approver, time, reason), SendTaskSuccess exactly once
// with the decision JSON; the same decision again is a no-op that says so;
// the other decision is refused.
func TestApproveOnceThenNoOpThenConflict(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	r := s.pending(t, nil)
	res, err := s.decide(t, "alice", r.ID, review.Approve, "looks right")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || res.Status != review.Approved || res.Delivery != review.Delivered || !strings.Contains(res.Message, "approved by "+principal("alice")) {
		t.Fatalf("%+v", res)
	}
	calls := s.fake.Calls(r.TaskToken)
	if len(calls) != 1 || calls[0].Action != "SendTaskSuccess" {
		t.Fatalf("Step Functions calls %+v", calls)
	}
	var d review.Decision
	if err := json.Unmarshal([]byte(calls[0].Output), &d); err != nil {
		t.Fatal(err)
	}
	if d.ReviewID != r.ID || d.Decision != review.Approve || d.Approver != principal("alice") || !d.Authenticated || d.Reason != "looks right" ||
		d.InputDigest != r.InputDigest || d.DecidedAt == "" {
		t.Fatalf("decision JSON %+v", d)
	}
	rec := reviewtest.MustGet(t, s.store, r.ID)
	if rec.Status != review.Approved || rec.Approver != principal("alice") || rec.Reason != "looks right" || rec.DecidedAt.IsZero() || rec.Delivery != review.Delivered {
		t.Fatalf("record %+v", rec)
	}

	res, err = s.decide(t, "bob", r.ID, review.Approve, "")
	if err != nil || res.Changed || !strings.Contains(res.Message, "already approved by "+principal("alice")) || !strings.Contains(res.Message, "nothing changed") {
		t.Fatalf("repeated approval: %+v %v", res, err)
	}
	if _, err := s.decide(t, "bob", r.ID, review.Reject, "no"); codeOf(err) != review.CodeConflict {
		t.Fatalf("conflicting rejection: %v", err)
	}
	if n := len(s.fake.Calls(r.TaskToken)); n != 1 {
		t.Fatalf("%d Step Functions calls, want exactly 1", n)
	}
}

func TestRejectSendsTaskFailureOnce(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	r := s.pending(t, nil)
	if _, err := s.decide(t, "alice", r.ID, review.Reject, ""); codeOf(err) != review.CodeInvalid {
		t.Fatalf("a rejection without a reason: %v", err)
	}
	res, err := s.decide(t, "alice", r.ID, review.Reject, "wrong list")
	if err != nil || res.Status != review.Rejected {
		t.Fatal(res, err)
	}
	if _, err := s.decide(t, "alice", r.ID, review.Reject, "wrong list"); err != nil {
		t.Fatal(err)
	}
	calls := s.fake.Calls(r.TaskToken)
	if len(calls) != 1 || calls[0].Action != "SendTaskFailure" || calls[0].Error != review.ErrorRejected || !strings.Contains(calls[0].Cause, `"reason":"wrong list"`) {
		t.Fatalf("%+v", calls)
	}
	if _, err := s.decide(t, "alice", r.ID, review.Approve, ""); codeOf(err) != review.CodeConflict {
		t.Fatalf("approval after a rejection: %v", err)
	}
}

func TestExpiredRefused(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	past := s.store.WithClock(func() time.Time { return time.Now().Add(-time.Hour) })
	saved := s.store
	s.store = past
	r := s.pending(t, func(p *review.Params) { p.TimeoutSeconds = 60 })
	s.store = saved
	_, err := s.decide(t, "alice", r.ID, review.Approve, "")
	if codeOf(err) != review.CodeExpired || !strings.Contains(err.Error(), "expired at") {
		t.Fatalf("%v", err)
	}
	if n := len(s.fake.Calls("")); n != 0 {
		t.Fatalf("%d Step Functions calls", n)
	}
	list, _ := s.do(t, "alice", decision.Request{Action: review.ActionList})
	if n := len(list.(*review.ListResult).Reviews); n != 0 {
		t.Fatalf("an expired review is listed as pending: %d", n)
	}
}

func TestReviewersPattern(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	editors := func(p *review.Params) { p.Reviewers = []string{"arn:aws:iam::*:user/editor-*"} }
	r := s.pending(t, editors)
	bob, alice := "ops-bob", "editor-alice"
	if _, err := s.do(t, bob, decision.Request{Action: review.ActionDecide, ReviewID: r.ID, Decision: review.Approve}); codeOf(err) != review.CodeForbidden {
		t.Fatalf("bob approves: %v", err)
	}
	if _, err := s.do(t, bob, decision.Request{Action: review.ActionShow, ReviewID: r.ID}); codeOf(err) != review.CodeForbidden {
		t.Fatalf("bob reads: %v", err)
	}
	list, _ := s.do(t, bob, decision.Request{Action: review.ActionList})
	if n := len(list.(*review.ListResult).Reviews); n != 0 {
		t.Fatalf("bob lists %d reviews", n)
	}
	shown, err := s.do(t, alice, decision.Request{Action: review.ActionShow, ReviewID: r.ID})
	if err != nil || string(shown.(review.View).Input) != string(r.Input) {
		t.Fatalf("alice reads: %+v %v", shown, err)
	}
	res, err := s.do(t, alice, decision.Request{Action: review.ActionDecide, ReviewID: r.ID, Decision: review.Approve})
	if err != nil {
		t.Fatal(err)
	}
	if d := res.(*review.DecideResult).Decision; d.Approver != principal(alice) || !d.Authenticated {
		t.Fatalf("%+v", d)
	}
}

// A token whose Task has ended gets a clear message, and the decision is
// not delivered again.
func TestTaskEnded(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	for _, name := range []string{"TaskTimedOut", "TaskDoesNotExist"} {
		r := s.pending(t, nil)
		s.fake.End(r.TaskToken, name)
		_, err := s.decide(t, "alice", r.ID, review.Approve, "")
		if codeOf(err) != review.CodeTaskEnded || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "not retried") {
			t.Fatalf("%s: %v", name, err)
		}
		_, err = s.decide(t, "alice", r.ID, review.Approve, "")
		if codeOf(err) != review.CodeTaskEnded {
			t.Fatalf("%s again: %v", name, err)
		}
		if n := len(s.fake.Calls(r.TaskToken)); n != 1 {
			t.Fatalf("%s: %d calls, want 1", name, n)
		}
		rec := reviewtest.MustGet(t, s.store, r.ID)
		if rec.Delivery != review.TaskEnded || rec.DeliveryError != name {
			t.Fatalf("%+v", rec)
		}
	}
}

// Step Functions unreachable: the decision is recorded, the caller is told
// to repeat it, and the repeat delivers it once.
func TestTransientDeliveryFailure(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	r := s.pending(t, nil)
	s.fake.FailNext(1) // one attempt per request: SendTask* is never retried by the SDK
	_, err := s.decide(t, "alice", r.ID, review.Approve, "")
	if codeOf(err) != review.CodeUnavailable || !strings.Contains(err.Error(), "repeat the same decision") {
		t.Fatalf("%v", err)
	}
	res, err := s.decide(t, "alice", r.ID, review.Approve, "")
	if err != nil || res.Changed || res.Delivery != review.Delivered || !strings.Contains(res.Message, "delivered to Step Functions now") {
		t.Fatalf("repeat: %+v %v", res, err)
	}
	if n := len(s.fake.Accepted(r.TaskToken)); n != 1 {
		t.Fatalf("%d accepted deliveries", n)
	}
}

// The direct lane's review has no token: the decision is only recorded.
func TestNoTaskDecision(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	r := s.pending(t, func(p *review.Params) { p.TaskToken, p.ID = "", review.NewID() })
	res, err := s.decide(t, "alice", r.ID, review.Approve, "")
	if err != nil || res.Delivery != review.NoTask || len(s.fake.Calls("")) != 0 {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestCheckApproval(t *testing.T) {
	now := time.Now()
	r := &review.Review{ID: "rv_x", RunID: "run", Of: "send", Tool: "send-email", ToolsetID: "ts", InputDigest: "sha256:a",
		Status: review.Approved, ExpiresAt: now.Add(time.Hour), Approver: "arn:aws:iam::1:user/a", DecidedAt: now}
	use := review.Use{RunID: "run", Step: "send", Tool: "send-email", ToolsetID: "ts", InputDigest: "sha256:a", Key: "run/2", Now: now}
	if c := review.CheckApproval(r, use); !c.Allowed || c.Bound {
		t.Fatalf("%+v", c)
	}
	// A review written APPROVED by anything but review-decision (which
	// alone writes the approver and the decision time) approves nothing.
	forged := *r
	forged.Approver, forged.DecidedAt = "", time.Time{}
	if c := review.CheckApproval(&forged, use); c.Allowed || !strings.Contains(c.Reason, "no recorded decision") {
		t.Fatalf("a review APPROVED without a decision: %+v", c)
	}
	r.BoundKey = "run/2"
	if c := review.CheckApproval(r, use); !c.Allowed || !c.Bound {
		t.Fatalf("bound to this key: %+v", c)
	}
	r.BoundKey = "run/1"
	if c := review.CheckApproval(r, use); c.Allowed {
		t.Fatalf("bound to another key: %+v", c)
	}
	r.BoundKey = ""
	for name, u := range map[string]review.Use{
		"run":    {RunID: "other", Step: "send", Tool: "send-email", ToolsetID: "ts", InputDigest: "sha256:a", Key: "other/2", Now: now},
		"step":   {RunID: "run", Step: "other", Tool: "send-email", ToolsetID: "ts", InputDigest: "sha256:a", Key: "run/2", Now: now},
		"digest": {RunID: "run", Step: "send", Tool: "send-email", ToolsetID: "ts", InputDigest: "sha256:b", Key: "run/2", Now: now},
		"expiry": {RunID: "run", Step: "send", Tool: "send-email", ToolsetID: "ts", InputDigest: "sha256:a", Key: "run/2", Now: now.Add(time.Hour)},
	} {
		if c := review.CheckApproval(r, u); c.Allowed || c.Reason == "" {
			t.Errorf("%s: %+v", name, c)
		}
	}
}

// The requester of a review can never decide it (four eyes): refused with
// REVIEW_SELF_APPROVAL, counted on the review, and the review stays
// pending for another reviewer.
func TestRequesterCannotDecideTheirOwnReview(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	r := s.pending(t, func(p *review.Params) { p.Requester = principal("carol") })
	for _, v := range []review.Verdict{review.Approve, review.Reject} {
		if _, err := s.decide(t, "carol", r.ID, v, "mine"); codeOf(err) != review.CodeSelfApproval {
			t.Fatalf("the requester %ss: %v, want %s", v, err, review.CodeSelfApproval)
		}
	}
	got, err := s.store.Get(context.Background(), r.ID)
	if err != nil || got.Status != review.Pending || got.SelfApprovalRefusals != 2 {
		t.Fatalf("after two self-approvals: %+v %v; want PENDING with 2 refusals", got, err)
	}
	if _, err := s.decide(t, "dave", r.ID, review.Approve, ""); err != nil {
		t.Fatalf("another reviewer: %v", err)
	}
}

// A decision's proof binds the review, the decision and the review's
// inputs: a proof for one cannot record another, and a missing proof is
// refused whatever else the request says.
func TestDecisionProofBindsTheDecision(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	r := s.pending(t, nil)
	other := s.pending(t, nil)
	for _, c := range []struct {
		name string
		b    caller.Binding
	}{
		{"another review", caller.Binding{Action: caller.ActionDecide, Target: other.ID, Decision: "approve", InputDigest: other.InputDigest}},
		{"the other decision", caller.Binding{Action: caller.ActionDecide, Target: r.ID, Decision: "reject", InputDigest: r.InputDigest}},
		{"other inputs", caller.Binding{Action: caller.ActionDecide, Target: r.ID, Decision: "approve", InputDigest: "sha256:00"}},
		{"a show", caller.Binding{Action: caller.ActionShow, Target: r.ID}},
	} {
		req := decision.Request{Action: review.ActionDecide, ReviewID: r.ID, Decision: review.Approve, Proof: s.callers.Proof(t, "alice", c.b)}
		if _, _, err := s.svc.Do(context.Background(), req); codeOf(err) != review.CodeUnauthenticated {
			t.Fatalf("a proof for %s: %v, want %s", c.name, err, review.CodeUnauthenticated)
		}
	}
	if _, _, err := s.svc.Do(context.Background(), decision.Request{Action: review.ActionDecide, ReviewID: r.ID, Decision: review.Approve}); codeOf(err) != review.CodeUnauthenticated {
		t.Fatalf("no proof: %v", err)
	}
	if got := reviewtest.MustGet(t, s.store, r.ID); got.Status != review.Pending {
		t.Fatalf("a refused proof decided the review: %s", got.Status)
	}
}

// A decided review lives as long as the ledger's rows: its TTL
// (expires_at) moves to the retention, while its deadline, which the
// decision and the approval's use read, stays: the approval still ends
// with its review.
func TestDecidedReviewOutlivesItsDeadlineButItsApprovalDoesNot(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	r := s.pending(t, func(p *review.Params) { p.TimeoutSeconds = 60 })
	if _, err := s.decide(t, "alice", r.ID, review.Approve, "ok"); err != nil {
		t.Fatal(err)
	}
	out, err := s.raw(t, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	ttl, deadline := out[ledger.AttrExpiresAt], out[dynamo.AttrDeadline]
	if deadline != r.ExpiresAt.Unix() || ttl < time.Now().Add(ledger.DefaultRetention-time.Hour).Unix() {
		t.Fatalf("decided review: deadline %d (want %d), TTL %d (want the retention)", deadline, r.ExpiresAt.Unix(), ttl)
	}
	later := s.store.WithClock(func() time.Time { return r.ExpiresAt.Add(time.Second) })
	got, err := later.GetApproval(context.Background(), r.ID)
	if err != nil || !got.Expired(later.Now()) {
		t.Fatalf("the decided review after its deadline: %+v %v, want it read and expired", got, err)
	}
	use := review.Use{RunID: got.RunID, Step: got.Of, Tool: got.Tool, ToolsetID: got.ToolsetID, InputDigest: got.InputDigest, Key: "run/1", Now: later.Now()}
	if c := review.CheckApproval(got, use); c.Allowed || !c.Expired {
		t.Fatalf("its approval after the deadline: %+v, want refused as expired", c)
	}
	// The dispatcher's read holds what the check needs and nothing of the
	// inputs, the task token or the requester.
	if got.Input != nil || got.TaskToken != "" || got.Requester != "" || got.Approver == "" {
		t.Fatalf("GetApproval read %+v", got)
	}
}

// A review whose stored inputs do not digest to its input digest is never
// shown or decided: the reviewer would approve inputs other than the
// digest the approval binds.
func TestReviewWithMismatchedDigestIsRefused(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	token := "token-" + review.NewID()
	r, err := review.New(review.Params{Requester: principal("requester"), ID: review.IDForToken(token), TaskToken: token,
		RunID: "arn:aws:states:us-east-1:123456789012:execution:sm:x", Step: "approve", Of: "send", Tool: "send-email",
		ToolsetID: "ts_f7826302d51ea15dba1ab8b9cf962a58", Input: json.RawMessage(`{"to":["attacker@example.com"]}`), TimeoutSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	r.Input = json.RawMessage(`{"to":["team@example.com"]}`) // shown, but not what the digest says
	if _, _, err := s.store.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if _, err := s.do(t, "alice", decision.Request{Action: review.ActionShow, ReviewID: r.ID}); codeOf(err) != review.CodeConflict {
		t.Fatalf("show: %v, want %s", err, review.CodeConflict)
	}
	if _, err := s.decide(t, "alice", r.ID, review.Approve, ""); codeOf(err) != review.CodeConflict {
		t.Fatalf("approve: %v, want %s", err, review.CodeConflict)
	}
}

// Only review items are listed: another item carrying the index's keys
// (a role that writes its own items whole could add them) is skipped.
func TestListSkipsItemsThatAreNotReviews(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	live := s.pending(t, nil)
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	for i := range 3 {
		if _, err := s.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: map[string]types.AttributeValue{
			"pk": str("RUN#forged"), "sk": str(fmt.Sprint(i)), "review_id": str(review.NewID()), table.ReviewsByStatus.PK: str("REVIEWS#PENDING"),
			table.ReviewsByStatus.SK: str(fmt.Sprintf("0000-%d", i)), "tool": str("send-email"), "status": str("PENDING"),
			"expires_at": &types.AttributeValueMemberN{Value: fmt.Sprint(time.Now().Add(time.Hour).Unix())},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.do(t, "alice", decision.Request{Action: review.ActionList})
	if err != nil {
		t.Fatal(err)
	}
	got := list.(*review.ListResult).Reviews
	if len(got) != 1 || got[0].ReviewID != live.ID {
		t.Fatalf("listed %+v, want only %s", got, live.ID)
	}
}

// An approval bound before bindings had items of their own (bound_key on
// the review item) stays bound to that call: GetApproval reads it, and
// CheckApproval refuses any other key.
func TestApprovalBoundOnTheReviewItemStaysBound(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	r := s.pending(t, nil)
	if _, err := s.decide(t, "alice", r.ID, review.Approve, "ok"); err != nil {
		t.Fatal(err)
	}
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	if _, err := s.db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(s.table),
		Key:              map[string]types.AttributeValue{"pk": str("REVIEW#" + r.ID), "sk": str("REVIEW")},
		UpdateExpression: aws.String("SET bound_key = :k"), ExpressionAttributeValues: map[string]types.AttributeValue{":k": str(r.RunID + "/1")}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.store.GetApproval(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	use := review.Use{RunID: r.RunID, Step: r.Of, Tool: r.Tool, ToolsetID: r.ToolsetID, InputDigest: r.InputDigest, Key: r.RunID + "/2", Now: time.Now()}
	if c := review.CheckApproval(got, use); c.Allowed {
		t.Fatalf("an approval bound on its review item authorised another key: %+v", c)
	}
	use.Key = r.RunID + "/1"
	if c := review.CheckApproval(got, use); !c.Allowed || !c.Bound {
		t.Fatalf("the call it was bound to: %+v", c)
	}
}
