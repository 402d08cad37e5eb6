package decision_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/functions/review-decision/decision"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/ledger"
	parkdynamo "github.com/toolgate/toolgate/shared/park/dynamo"
	"github.com/toolgate/toolgate/shared/review"
	reviewdynamo "github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/review/stepfunctions"
	"github.com/toolgate/toolgate/shared/tool"
)

// forkStack is a stack whose Service forks runs: fork items and the
// parent's call items on the test's table, executions on the local Step
// Functions endpoint, of a state machine of stage "test".
type forkStack struct {
	*stack
	sfn    *sfn.Client
	sm     string
	ledger *ledger.Store
	n      int
}

// startForkSFN starts the package's local Step Functions endpoint for the
// fork tests and a state machine toolgate-test_digest that waits an hour.
func startForkSFN(t *testing.T) (*sfn.Client, string) {
	return startWaitingSFN(t, "toolgate-test_digest")
}

// startWaitingSFN starts a local Step Functions endpoint for the test and
// creates on it the state machine name, whose executions wait an hour:
// runs a test stops, cancels or forks while they run.
func startWaitingSFN(t *testing.T, name string) (*sfn.Client, string) {
	t.Helper()
	ctx := t.Context()
	p, err := local.StartSFN(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	client := sfn.New(sfn.Options{BaseEndpoint: aws.String(p.Endpoint()), Region: local.Region,
		Credentials: credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")})
	sm, err := client.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String(name), RoleArn: aws.String("arn:aws:iam::000000000000:role/x"),
		Definition: aws.String(`{"StartAt": "wait", "States": {"wait": {"Type": "Wait", "Seconds": 3600, "End": true}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	return client, aws.ToString(sm.StateMachineArn)
}

func newForkStack(t *testing.T, client *sfn.Client, sm string, operators ...string) *forkStack {
	t.Helper()
	s := newStack(t)
	arn, ok := review.ParseExecutionARN(strings.Replace(sm, ":stateMachine:", ":execution:", 1) + ":x")
	if !ok {
		t.Fatalf("state machine %s", sm)
	}
	d := s.deps
	l := ledger.New(s.db, s.table)
	d.Forks = decision.ForkDeps{Store: s.store, Calls: l, Starters: parkdynamo.New(s.db, s.table, nil), Executions: stepfunctions.Forks{Client: client},
		Policy: decision.ForkPolicy{Operators: operators, Scope: review.StartScope{Account: arn.Account, Region: arn.Region, Stage: "test"}}}
	s.svc, s.deps = decision.NewService(d), d
	return &forkStack{stack: s, sfn: client, sm: sm, ledger: l}
}

// run starts an execution started by starter (its start record), and
// returns its ARN.
func (s *forkStack) run(t *testing.T, starter string) string {
	t.Helper()
	s.n++
	ex, err := s.sfn.StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: aws.String(s.sm),
		Name: aws.String(fmt.Sprintf("run-%s-%d", review.NewID()[:8], s.n)), Input: aws.String(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	arn := aws.ToString(ex.ExecutionArn)
	if err := s.store.RecordStart(t.Context(), arn, principal(starter)); err != nil {
		t.Fatal(err)
	}
	return arn
}

// forkARN is an execution ARN of the state machine no execution has yet.
func (s *forkStack) forkARN() string {
	s.n++
	return strings.Replace(s.sm, ":stateMachine:", ":execution:", 1) + fmt.Sprintf(":run-fork-%s-%d", review.NewID()[:8], s.n)
}

func (s *forkStack) fork(t *testing.T, as, parent, fork string) (*review.ForkResult, error) {
	t.Helper()
	req := decision.Request{Action: review.ActionRunFork, RunID: parent, ForkRunID: fork}
	req.Proof = s.callers.Proof(t, as, review.ForkBinding(parent, fork, false))
	_, res, err := s.svc.Do(context.Background(), req)
	if err != nil {
		return nil, err
	}
	return res.(*review.ForkResult), nil
}

// call claims the parent's call seq with a lease ending at lease, and
// ends it in state (IN_PROGRESS: left claimed).
func (s *forkStack) call(t *testing.T, parent, seq string, lease time.Time, state ledger.State) string {
	t.Helper()
	ctx := t.Context()
	key := parent + "/" + seq
	r := &ledger.Record{Key: key, RunID: parent, Seq: tool.Seq(seq), Step: "send", Tool: "send-email", ToolsetID: "ts_f7826302d51ea15dba1ab8b9cf962a58",
		InputDigest: "sha256:" + strings.Repeat("ab", 32), LeaseUntil: lease, ExternalKey: "AAAAAAAAAAAAAAAAAAAAAA/" + seq}
	if claimed, _, err := s.ledger.Claim(ctx, r); err != nil || !claimed {
		t.Fatalf("claim %s: %v, %v", key, claimed, err)
	}
	switch state {
	case ledger.StateUnknown:
		if _, err := s.ledger.MarkUnknown(ctx, r, "TOOL_TIMEOUT"); err != nil {
			t.Fatal(err)
		}
	case ledger.StateCompleted:
		if _, err := s.ledger.Finish(ctx, key, r.Token, ledger.StateCompleted, []byte(`{"ok":true}`), &ledger.Row{RunID: parent, Seq: r.Seq, Attempt: 1,
			Step: "send", Tool: "send-email", IdempotencyKey: key, Status: ledger.StatusSucceeded, StartedAt: time.Now(), EndedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	return key
}

func codeIs(err error, c review.Code) bool { return err != nil && review.AsError(err).Code == c }

// Who may fork: the parent's starter and a fork operator; anyone else,
// and an execution of another stage or account, is refused, and the
// parent keeps running.
func TestForkIsTheStartersOrAForkOperators(t *testing.T) {
	client, sm := startForkSFN(t)
	s := newForkStack(t, client, sm, principal("fork-ops-*"))

	parent := s.run(t, "alice")
	if _, err := s.fork(t, "mallory", parent, s.forkARN()); !codeIs(err, review.CodeForbidden) {
		t.Fatalf("another principal forks: %v, want %s", err, review.CodeForbidden)
	}
	d, err := client.DescribeExecution(t.Context(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(parent)})
	if err != nil || d.Status != sfntypes.ExecutionStatusRunning {
		t.Fatalf("the parent after a refused fork: %v, %v; want RUNNING", d.Status, err)
	}
	fork := s.forkARN()
	res, err := s.fork(t, "alice", parent, fork)
	if err != nil || res.ForkRunID != fork || res.ParentStatus != "RUNNING" {
		t.Fatalf("the starter forks: %+v, %v", res, err)
	}
	d, err = client.DescribeExecution(t.Context(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(parent)})
	if err != nil || d.Status != sfntypes.ExecutionStatusAborted || aws.ToString(d.Error) != stepfunctions.ForkedError || !strings.Contains(aws.ToString(d.Cause), fork) {
		t.Fatalf("the parent after its fork: %+v, %v; want ABORTED with %s naming the fork", d, err, stepfunctions.ForkedError)
	}
	rec, err := s.store.Fork(t.Context(), parent)
	if err != nil || rec.ForkRunID != fork || rec.ForkedBy != principal("alice") || rec.ParentStatus != "RUNNING" {
		t.Fatalf("the fork item: %+v, %v", rec, err)
	}

	other := s.run(t, "bob")
	if res, err := s.fork(t, "fork-ops-1", other, s.forkARN()); err != nil || res.ParentStatus != "RUNNING" {
		t.Fatalf("a fork operator forks: %+v, %v", res, err)
	}

	for name, c := range map[string]struct{ parent, fork string }{
		"parent of another account": {strings.Replace(s.run(t, "alice"), ":000000000000:", ":111111111111:", 1), s.forkARN()},
		"fork of another stage":     {s.run(t, "alice"), strings.Replace(s.forkARN(), "toolgate-test_", "toolgate-prod_", 1)},
		"fork with a child's name":  {s.run(t, "alice"), strings.Replace(sm, ":stateMachine:", ":execution:", 1) + ":tg-abc"},
		"fork is the parent":        {parent, parent},
	} {
		if _, err := s.fork(t, "alice", c.parent, c.fork); err == nil {
			t.Errorf("%s: forked", name)
		}
	}
}

// A parent is forked once: the same fork again answers the same, another
// is refused naming the first.
func TestForkIsOncePerParent(t *testing.T) {
	client, sm := startForkSFN(t)
	s := newForkStack(t, client, sm)
	parent := s.run(t, "alice")
	fork := s.forkARN()
	first, err := s.fork(t, "alice", parent, fork)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.fork(t, "alice", parent, fork)
	if err != nil || again.ParentStatus != first.ParentStatus || again.ForkRunID != fork {
		t.Fatalf("the same fork again: %+v, %v; want %+v", again, err, first)
	}
	_, err = s.fork(t, "alice", parent, s.forkARN())
	if !codeIs(err, review.CodeConflict) || !strings.Contains(err.Error(), "already forked as "+fork) {
		t.Fatalf("another fork: %v, want %s naming %s", err, review.CodeConflict, fork)
	}
}

// A parent older than the ledger's retention less a day is refused, and
// not stopped.
func TestForkOfAParentPastTheRetentionIsRefused(t *testing.T) {
	client, sm := startForkSFN(t)
	s := newForkStack(t, client, sm)
	parent := s.run(t, "alice")
	later := time.Now().Add(decision.MaxForkAge + time.Hour)
	d := s.deps
	d.Store = s.store.WithClock(func() time.Time { return later })
	svc := decision.NewService(d)
	fork := s.forkARN()
	req := decision.Request{Action: review.ActionRunFork, RunID: parent, ForkRunID: fork, Proof: s.callers.Proof(t, "alice", review.ForkBinding(parent, fork, false))}
	if _, _, err := svc.Do(t.Context(), req); !codeIs(err, review.CodeExpired) {
		t.Fatalf("an old parent: %v, want %s", err, review.CodeExpired)
	}
	ex, err := client.DescribeExecution(t.Context(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(parent)})
	if err != nil || ex.Status != sfntypes.ExecutionStatusRunning {
		t.Fatalf("the old parent: %v, %v; want RUNNING", ex.Status, err)
	}
}

// The parent's calls: one in progress under a live lease makes the fork
// wait (FORK_WAITING naming its key and lease), one whose outcome is
// unknown refuses it (FORK_UNRECONCILED naming the key and the
// reconcile command); completed calls are listed.
func TestForkWaitsForCallsInProgressAndRefusesUnknownOnes(t *testing.T) {
	client, sm := startForkSFN(t)
	s := newForkStack(t, client, sm)

	parent := s.run(t, "alice")
	done := s.call(t, parent, "1", time.Now().Add(time.Minute), ledger.StateCompleted)
	live := s.call(t, parent, "2", time.Now().Add(10*time.Minute), ledger.StateInProgress)
	fork := s.forkARN()
	_, err := s.fork(t, "alice", parent, fork)
	if !codeIs(err, review.CodeForkWaiting) {
		t.Fatalf("a call in progress: %v, want %s", err, review.CodeForkWaiting)
	}
	w, ok := review.ParseForkWaiting(review.AsError(err).Message)
	if !ok || len(w.Keys) != 1 || w.Keys[0] != live || w.LeaseUntil == "" {
		t.Fatalf("the waiting answer %q read as %+v, %v; want key %s", review.AsError(err).Message, w, ok, live)
	}
	if rec, err := s.store.Fork(t.Context(), parent); err != nil || rec.ForkRunID != fork {
		t.Fatalf("the fork item while waiting: %+v, %v", rec, err)
	}

	parent2 := s.run(t, "alice")
	s.call(t, parent2, "1", time.Now().Add(time.Minute), ledger.StateCompleted)
	unknown := s.call(t, parent2, "2", time.Now().Add(time.Minute), ledger.StateUnknown)
	expired := s.call(t, parent2, "3", time.Now().Add(-time.Minute), ledger.StateInProgress)
	_, err = s.fork(t, "alice", parent2, s.forkARN())
	if !codeIs(err, review.CodeForkUnreconciled) || !strings.Contains(err.Error(), unknown) || !strings.Contains(err.Error(), expired) ||
		!strings.Contains(err.Error(), "toolgate ledger reconcile") {
		t.Fatalf("unknown calls: %v, want %s naming %s and %s", err, review.CodeForkUnreconciled, unknown, expired)
	}

	parent3 := s.run(t, "alice")
	done = s.call(t, parent3, "1", time.Now().Add(time.Minute), ledger.StateCompleted)
	res, err := s.fork(t, "alice", parent3, s.forkARN())
	if err != nil || len(res.Calls) != 1 || res.Calls[0].Key != done || res.Calls[0].State != "COMPLETED" || res.Calls[0].Step != "send" {
		t.Fatalf("completed calls: %+v, %v", res, err)
	}
}

// reconciled is a fake Reconciliations: the reconciliation item kind is
// not declared in this package's table yet (docs/fork.md, "Reconciling"),
// so no store stands in for it. It reports the keys it holds reconciled.
type reconciled map[string]bool

func (r reconciled) Reconciled(_ context.Context, key string) (bool, error) { return r[key], nil }

// A call whose outcome is unknown no longer refuses the fork once it is
// reconciled; another one still does.
func TestForkTakesReconciledCallsAsKnown(t *testing.T) {
	client, sm := startForkSFN(t)
	s := newForkStack(t, client, sm)
	parent := s.run(t, "alice")
	done := s.call(t, parent, "1", time.Now().Add(-time.Minute), ledger.StateUnknown)
	open := s.call(t, parent, "2", time.Now().Add(-time.Minute), ledger.StateUnknown)
	d := s.deps
	d.Forks.Reconciliations = reconciled{done: true}
	s.svc = decision.NewService(d)
	_, err := s.fork(t, "alice", parent, s.forkARN())
	if !codeIs(err, review.CodeForkUnreconciled) || strings.Contains(err.Error(), done) || !strings.Contains(err.Error(), open) {
		t.Fatalf("one reconciled, one not: %v, want %s naming %s only", err, review.CodeForkUnreconciled, open)
	}
	d.Forks.Reconciliations = reconciled{done: true, open: true}
	s.svc = decision.NewService(d)
	rec, err := s.store.Fork(t.Context(), parent)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := s.fork(t, "alice", parent, rec.ForkRunID); err != nil || len(res.Calls) != 2 {
		t.Fatalf("both reconciled: %+v, %v", res, err)
	}
}

// The caller proof binds rerun_reads: a proof signed without it does not
// fork with it.
func TestForkProofBindsRerunReads(t *testing.T) {
	client, sm := startForkSFN(t)
	s := newForkStack(t, client, sm)
	parent, fork := s.run(t, "alice"), s.forkARN()
	req := decision.Request{Action: review.ActionRunFork, RunID: parent, ForkRunID: fork, RerunReads: true,
		Proof: s.callers.Proof(t, "alice", review.ForkBinding(parent, fork, false))}
	if _, _, err := s.svc.Do(t.Context(), req); !codeIs(err, review.CodeUnauthenticated) {
		t.Fatalf("a proof without rerun_reads: %v, want %s", err, review.CodeUnauthenticated)
	}
	if _, err := s.store.Fork(t.Context(), parent); err == nil {
		t.Fatal("a fork was recorded")
	}
}

// A review of a fork's call shows which of the parent's completed calls
// its approved call will take instead of running: those of the reviewed
// step with the reviewed input, in the parent's seq order; not a call of
// another input, nor one whose outcome is unknown; by key only to a
// reviewer who may fork the parent, by seq to any other, since a key names
// the parent's execution. A review of a run that is no fork shows none.
func TestAReviewInAForkShowsTheParentCallsItWouldReuse(t *testing.T) {
	client, sm := startForkSFN(t)
	s := newForkStack(t, client, sm)
	s.deps.Forks.Origins = parkdynamo.New(s.db, s.table, nil)
	s.svc = decision.NewService(s.deps)
	ctx := t.Context()

	parent, fork := s.run(t, "alice"), s.forkARN()
	if err := s.store.RecordForkStart(ctx, fork, principal("alice"), "sha256:"+strings.Repeat("0", 64), review.EndUserRecord{}, review.ForkOrigin{From: parent}); err != nil {
		t.Fatal(err)
	}
	r := s.pending(t, func(p *review.Params) { p.RunID, p.Requester = fork, principal("alice") })
	call := func(seq, digest string, state ledger.State) string {
		key := parent + "/" + seq
		rec := &ledger.Record{Key: key, RunID: parent, Seq: tool.Seq(seq), Step: "send", Tool: "send-email", ToolsetID: r.ToolsetID,
			InputDigest: digest, LeaseUntil: time.Now().Add(time.Minute), ExternalKey: "AAAAAAAAAAAAAAAAAAAAAA/" + seq}
		if claimed, _, err := s.ledger.Claim(ctx, rec); err != nil || !claimed {
			t.Fatalf("claim %s: %v, %v", key, claimed, err)
		}
		switch state {
		case ledger.StateCompleted:
			if _, err := s.ledger.Finish(ctx, key, rec.Token, ledger.StateCompleted, []byte(`{"message_id":"m"}`), &ledger.Row{RunID: parent, Seq: rec.Seq, Attempt: 1,
				Step: "send", Tool: "send-email", IdempotencyKey: key, Status: ledger.StatusSucceeded, StartedAt: time.Now(), EndedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
		case ledger.StateUnknown:
			if _, err := s.ledger.MarkUnknown(ctx, rec, "TOOL_TIMEOUT"); err != nil {
				t.Fatal(err)
			}
		}
		return key
	}
	first := call("1", r.InputDigest, ledger.StateCompleted)
	call("2", "sha256:"+strings.Repeat("cd", 32), ledger.StateCompleted) // another input
	call("3", r.InputDigest, ledger.StateUnknown)                        // not known to have applied
	second := call("4", r.InputDigest, ledger.StateCompleted)

	res, err := s.do(t, "reviewer", decision.Request{Action: review.ActionShow, ReviewID: r.ID})
	if err != nil {
		t.Fatal(err)
	}
	// The reviewer neither started the parent nor may fork it: the keys,
	// which name the parent's execution, are withheld; their seqs say
	// what the approval leads to.
	if got := res.(review.View).Reuses; strings.Join(got, ",") != "seq 1,seq 4" {
		t.Fatalf("reuses %v shown to a reviewer who may not fork the parent, want [seq 1 seq 4]", got)
	}
	if got := fmt.Sprint(res.(review.View)); strings.Contains(got, parent) {
		t.Fatalf("the view shown to a reviewer who may not fork the parent names it: %s", got)
	}
	// A reviewer who matches a fork operator is shown the keys.
	s.deps.Forks.Policy.Operators = []string{principal("reviewer")}
	s.svc = decision.NewService(s.deps)
	res, err = s.do(t, "reviewer", decision.Request{Action: review.ActionShow, ReviewID: r.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.(review.View).Reuses; strings.Join(got, ",") != first+","+second {
		t.Fatalf("reuses %v, want [%s %s]", got, first, second)
	}

	plain := s.pending(t, nil)
	res, err = s.do(t, "reviewer", decision.Request{Action: review.ActionShow, ReviewID: plain.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.(review.View).Reuses; len(got) != 0 {
		t.Fatalf("a review of a run that is no fork shows reuses %v", got)
	}
}

// A parent is forked by one forker, with one rerun_reads: the same fork
// asked by another principal who may fork (a fork operator), or by the
// forker with other reads, is refused naming the first, and the fork item
// stays the first's; so is the later of two requests that both read no
// fork item (the store's conditional write), whose start the start lane
// would refuse anyway.
func TestForkIsOneForkersWithItsReads(t *testing.T) {
	client, sm := startForkSFN(t)
	s := newForkStack(t, client, sm, principal("fork-ops-*"))
	parent, fork := s.run(t, "alice"), s.forkARN()
	if _, err := s.fork(t, "alice", parent, fork); err != nil {
		t.Fatal(err)
	}
	if _, err := s.fork(t, "fork-ops-1", parent, fork); !codeIs(err, review.CodeConflict) || !strings.Contains(err.Error(), principal("alice")) {
		t.Fatalf("the same fork by a fork operator: %v, want %s naming the forker", err, review.CodeConflict)
	}
	req := decision.Request{Action: review.ActionRunFork, RunID: parent, ForkRunID: fork, RerunReads: true,
		Proof: s.callers.Proof(t, "alice", review.ForkBinding(parent, fork, true))}
	if _, _, err := s.svc.Do(t.Context(), req); !codeIs(err, review.CodeConflict) {
		t.Fatalf("the same fork with rerun_reads: %v, want %s", err, review.CodeConflict)
	}
	if rec, err := s.store.Fork(t.Context(), parent); err != nil || rec.ForkedBy != principal("alice") || rec.RerunReads {
		t.Fatalf("the fork item: %+v, %v; want alice's without rerun_reads", rec, err)
	}

	// Two requests that both found no fork item: the later write loses.
	racing, fork2 := s.run(t, "alice"), s.forkARN()
	first := review.Fork{ParentRunID: racing, ForkRunID: fork2, ForkedBy: principal("alice"), ForkedAt: time.Now(), ParentStatus: "RUNNING"}
	if _, err := s.store.RecordFork(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]review.Fork{
		"another forker":    {ParentRunID: racing, ForkRunID: fork2, ForkedBy: principal("fork-ops-1"), ForkedAt: time.Now(), ParentStatus: "RUNNING"},
		"other rerun_reads": {ParentRunID: racing, ForkRunID: fork2, ForkedBy: principal("alice"), ForkedAt: time.Now(), RerunReads: true, ParentStatus: "RUNNING"},
	} {
		rec, err := s.store.RecordFork(t.Context(), f)
		if !errors.Is(err, reviewdynamo.ErrForkedElsewhere) || rec == nil || rec.ForkedBy != principal("alice") || rec.RerunReads {
			t.Errorf("%s: %+v, %v; want %v with alice's item", name, rec, err, reviewdynamo.ErrForkedElsewhere)
		}
	}
	if _, err := s.store.RecordFork(t.Context(), first); err != nil {
		t.Fatalf("the same request again: %v", err)
	}
}

// pendingRedrive answers PENDING_REDRIVE for every execution it describes
// and stops through Forks: the local Step Functions endpoint has no
// redrive (infra/local/sfn), so no stand-in shows that status, and this
// fake stands in for the status only.
type pendingRedrive struct{ stepfunctions.Forks }

func (p pendingRedrive) Describe(ctx context.Context, arn string) (string, time.Time, error) {
	_, started, err := p.Forks.Describe(ctx, arn)
	return "PENDING_REDRIVE", started, err
}

// A parent whose redrive was asked for (PENDING_REDRIVE) would run again
// and make calls the fork also makes: run.fork stops it as it stops a
// running one.
func TestForkStopsAParentPendingRedrive(t *testing.T) {
	client, sm := startForkSFN(t)
	s := newForkStack(t, client, sm)
	d := s.deps
	d.Forks.Executions = pendingRedrive{stepfunctions.Forks{Client: client}}
	s.svc = decision.NewService(d)
	parent := s.run(t, "alice")
	res, err := s.fork(t, "alice", parent, s.forkARN())
	if err != nil || res.ParentStatus != "PENDING_REDRIVE" {
		t.Fatalf("the fork: %+v, %v", res, err)
	}
	ex, err := client.DescribeExecution(t.Context(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(parent)})
	if err != nil || ex.Status != sfntypes.ExecutionStatusAborted || aws.ToString(ex.Error) != stepfunctions.ForkedError {
		t.Fatalf("the parent pending its redrive after the fork: %v, %v; want ABORTED by %s", ex.Status, err, stepfunctions.ForkedError)
	}
}

// A run.fork proof forks what it was signed for only: the same request
// sent again with it answers the same (the proof's record), and it never
// forks another parent. No proof, or a part of one, reaches
// review-decision's log or an answer's message, accepted, refused or
// replayed.
func TestForkProofForksWhatItWasSignedForAndIsNeverLogged(t *testing.T) {
	client, sm := startForkSFN(t)
	s := newForkStack(t, client, sm)
	var logs bytes.Buffer
	d := s.deps
	d.Log = slog.New(slog.NewJSONHandler(&logs, nil))
	s.svc = decision.NewService(d)
	parent, fork := s.run(t, "alice"), s.forkARN()
	proof := s.callers.Proof(t, "alice", review.ForkBinding(parent, fork, false))
	req := decision.Request{Action: review.ActionRunFork, RunID: parent, ForkRunID: fork, Proof: proof}
	if _, _, err := s.svc.Do(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if _, res, err := s.svc.Do(t.Context(), req); err != nil || res.(*review.ForkResult).ForkRunID != fork {
		t.Fatalf("the same request again: %v, want the same answer", err)
	}
	var msgs []string
	other := s.run(t, "alice")
	if _, _, err := s.svc.Do(t.Context(), decision.Request{Action: review.ActionRunFork, RunID: other, ForkRunID: fork, Proof: proof}); !codeIs(err, review.CodeUnauthenticated) {
		t.Fatalf("the proof for another parent: %v, want %s", err, review.CodeUnauthenticated)
	} else {
		msgs = append(msgs, err.Error())
	}
	mallory := s.callers.Proof(t, "mallory", review.ForkBinding(parent, fork, false))
	if _, _, err := s.svc.Do(t.Context(), decision.Request{Action: review.ActionRunFork, RunID: parent, ForkRunID: fork, Proof: mallory}); !codeIs(err, review.CodeForbidden) {
		t.Fatalf("mallory: %v, want %s", err, review.CodeForbidden)
	} else {
		msgs = append(msgs, err.Error())
	}
	u, err := url.Parse(proof)
	if err != nil {
		t.Fatal(err)
	}
	sig := u.Query().Get("X-Amz-Signature")
	if sig == "" {
		t.Fatalf("the proof %.60q... has no signature", proof)
	}
	for _, leak := range []string{sig, proof, mallory} {
		if strings.Contains(logs.String(), leak) {
			t.Errorf("the log holds a proof: %s", logs.String())
		}
		for _, m := range msgs {
			if strings.Contains(m, leak) {
				t.Errorf("a message holds a proof: %s", m)
			}
		}
	}
	if !strings.Contains(logs.String(), "run forked") {
		t.Fatalf("the log has no line of the fork: %s", logs.String())
	}
}

// A parent run.fork stopped may have a Task's invocation in flight, whose
// call is claimed after the stop: run.fork answers FORK_WAITING until
// ForkStopGrace after it stopped the parent, then, asked again, the
// calls. A parent that had already ended is answered at once.
func TestForkWaitsForTheGraceAfterStoppingARunningParent(t *testing.T) {
	client, sm := startForkSFN(t)
	s := newForkStack(t, client, sm)
	d := s.deps
	d.Forks.Policy.StopGrace = decision.ForkStopGrace
	s.svc = decision.NewService(d)
	parent, fork := s.run(t, "alice"), s.forkARN()
	_, err := s.fork(t, "alice", parent, fork)
	if !codeIs(err, review.CodeForkWaiting) {
		t.Fatalf("a parent just stopped: %v, want %s", err, review.CodeForkWaiting)
	}
	w, ok := review.ParseForkWaiting(review.AsError(err).Message)
	rec, rerr := s.store.Fork(t.Context(), parent)
	if rerr != nil {
		t.Fatal(rerr)
	}
	until, perr := time.Parse(time.RFC3339Nano, w.LeaseUntil)
	if !ok || perr != nil || until.Before(rec.ForkedAt.Add(decision.ForkStopGrace).Add(-time.Millisecond)) {
		t.Fatalf("the waiting answer %q read as %+v, %v; want a lease past %s", review.AsError(err).Message, w, ok, rec.ForkedAt.Add(decision.ForkStopGrace))
	}
	later := d
	later.Store = s.store.WithClock(func() time.Time { return until.Add(time.Second) })
	svc := decision.NewService(later)
	req := decision.Request{Action: review.ActionRunFork, RunID: parent, ForkRunID: fork, Proof: s.callers.Proof(t, "alice", review.ForkBinding(parent, fork, false))}
	if _, res, err := svc.Do(t.Context(), req); err != nil || res.(*review.ForkResult).ParentStatus != "RUNNING" {
		t.Fatalf("asked again after the grace: %v, %v", res, err)
	}

	ended := s.run(t, "alice")
	if _, err := client.StopExecution(t.Context(), &sfn.StopExecutionInput{ExecutionArn: aws.String(ended)}); err != nil {
		t.Fatal(err)
	}
	if res, err := s.fork(t, "alice", ended, s.forkARN()); err != nil || res.ParentStatus != "ABORTED" {
		t.Fatalf("a parent that had ended: %+v, %v; want its calls at once", res, err)
	}
}

// The grace after a fork stops a running parent is a minute unless
// TOOLGATE_FORK_STOP_GRACE_SECONDS says otherwise, in whole seconds from 0
// to 600; anything else stops the function at cold start, naming the
// variable.
func TestForkStopGraceIsAMinuteUnlessConfigured(t *testing.T) {
	base := map[string]string{review.EnvTable: "toolgate-test", caller.EnvAccount: "123456789012", "AWS_REGION": "us-east-1"}
	for _, c := range []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"", decision.ForkStopGrace, true},
		{"0", 0, true},
		{"3", 3 * time.Second, true},
		{"600", 10 * time.Minute, true},
		{"601", 0, false},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"a minute", 0, false},
	} {
		env := maps.Clone(base)
		env[decision.EnvForkStopGrace] = c.value
		cfg, err := decision.ConfigFromEnv(func(k string) string { return env[k] })
		switch {
		case (err == nil) != c.ok:
			t.Errorf("%q: %v, want ok %v", c.value, err, c.ok)
		case err != nil && !strings.Contains(err.Error(), decision.EnvForkStopGrace):
			t.Errorf("%q: %v, want the variable named", c.value, err)
		case c.ok && cfg.Forks.StopGrace != c.want:
			t.Errorf("%q: grace %s, want %s", c.value, cfg.Forks.StopGrace, c.want)
		}
	}
}

// A review of a fork's child's call: its reusable calls are the parent's
// child's (the child's start record's forked_from), named by key only to
// who may fork the parent's child (its starter, the parent's starter, or
// a fork operator); to any other reviewer by seq, so the view never names
// the parent's child's execution.
func TestAReviewInAForksChildWithholdsTheParentsChildFromOtherReviewers(t *testing.T) {
	client, sm := startForkSFN(t)
	s := newForkStack(t, client, sm)
	s.deps.Forks.Origins = parkdynamo.New(s.db, s.table, nil)
	s.svc = decision.NewService(s.deps)
	ctx := t.Context()

	base := strings.Replace(sm, ":stateMachine:", ":execution:", 1) + ":"
	fork, pChild, fChild := base+"run-f", base+"tg-pchild", base+"tg-fchild"
	digest := "sha256:" + strings.Repeat("0", 64)
	if err := s.store.RecordChildStart(ctx, pChild, review.ChildRecord{Starter: principal("alice"), ParentRunID: base + "run-p", InputDigest: digest, StateMachineARN: sm + ":1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.store.RecordChildStart(ctx, fChild, review.ChildRecord{Starter: principal("alice"), ParentRunID: fork, InputDigest: digest, StateMachineARN: sm + ":1",
		Fork: review.ForkOrigin{From: pChild}}); err != nil {
		t.Fatal(err)
	}
	r := s.pending(t, func(p *review.Params) { p.RunID, p.Requester = fChild, principal("alice") })
	key := pChild + "/2"
	rec := &ledger.Record{Key: key, RunID: pChild, Seq: "2", Step: "send", Tool: "send-email", ToolsetID: r.ToolsetID,
		InputDigest: r.InputDigest, LeaseUntil: time.Now().Add(time.Minute), ExternalKey: "AAAAAAAAAAAAAAAAAAAAAA/2"}
	if claimed, _, err := s.ledger.Claim(ctx, rec); err != nil || !claimed {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	if _, err := s.ledger.Finish(ctx, key, rec.Token, ledger.StateCompleted, []byte(`{"message_id":"m"}`), &ledger.Row{RunID: pChild, Seq: "2", Attempt: 1,
		Step: "send", Tool: "send-email", IdempotencyKey: key, Status: ledger.StatusSucceeded, StartedAt: time.Now(), EndedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}

	res, err := s.do(t, "reviewer", decision.Request{Action: review.ActionShow, ReviewID: r.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.(review.View).Reuses; strings.Join(got, ",") != "seq 2" {
		t.Fatalf("reuses %v shown to a reviewer who may not fork the parent's child, want [seq 2]", got)
	}
	s.deps.Forks.Policy.Operators = []string{principal("reviewer")}
	s.svc = decision.NewService(s.deps)
	if res, err = s.do(t, "reviewer", decision.Request{Action: review.ActionShow, ReviewID: r.ID}); err != nil {
		t.Fatal(err)
	}
	if got := res.(review.View).Reuses; strings.Join(got, ",") != key {
		t.Fatalf("reuses %v shown to a fork operator, want [%s]", got, key)
	}
}
