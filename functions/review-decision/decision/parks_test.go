package decision_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/functions/review-decision/decision"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/park"
	parkdynamo "github.com/toolgate/toolgate/shared/park/dynamo"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/stepfunctions"
	"github.com/toolgate/toolgate/shared/table"
)

// parkStack is a stack whose Service also decides parks: park items on
// the test's table, decisions sent to the Step Functions fake (its
// SendTaskSuccess calls are read back), and runs stopped on stop, the
// local Step Functions endpoint when the test starts one, else the fake.
type parkStack struct {
	*stack
	stop *sfn.Client
}

func newParkStack(t *testing.T, policy decision.ParkPolicy, stop *sfn.Client) *parkStack {
	t.Helper()
	s := newStack(t)
	send := sfn.New(sfn.Options{BaseEndpoint: aws.String(s.fake.URL), Region: local.Region,
		Credentials: credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")})
	if stop == nil {
		stop = send
	}
	d := s.deps
	d.Parks = parkdynamo.New(s.db, s.table, nil)
	d.ParkTasks = stepfunctions.Parks{Client: split{send: send, stop: stop}}
	d.ParkPolicy = policy
	s.svc, s.deps = decision.NewService(d), d
	return &parkStack{stack: s, stop: stop}
}

// split sends task results to one endpoint and stops runs on another.
type split struct{ send, stop *sfn.Client }

func (c split) SendTaskSuccess(ctx context.Context, in *sfn.SendTaskSuccessInput, opts ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error) {
	return c.send.SendTaskSuccess(ctx, in, opts...)
}

func (c split) StopExecution(ctx context.Context, in *sfn.StopExecutionInput, opts ...func(*sfn.Options)) (*sfn.StopExecutionOutput, error) {
	return c.stop.StopExecution(ctx, in, opts...)
}

// parked writes a PARKED row of runID (naming reviewID when not empty),
// the park item review-request would record for it, and the run's start
// record by starter; it returns the park.
func (s *parkStack) parked(t *testing.T, runID, starter, reviewID string, cause park.Cause, gated bool) *park.Park {
	t.Helper()
	ctx := context.Background()
	rowPK, rowSK := table.Row.Key(runID), table.RowSK("000003", time.Now().UnixNano(), [4]byte{0x0a, 0x1b, 0x2c, 0x3d})
	row := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: rowPK}, "sk": &types.AttributeValueMemberS{Value: rowSK},
		"status": &types.AttributeValueMemberS{Value: "PARKED"}, "idempotency_key": &types.AttributeValueMemberS{Value: runID + "/3"}}
	if reviewID != "" {
		row["review_id"] = &types.AttributeValueMemberS{Value: reviewID}
	}
	s.put(t, row)
	id := park.ID(rowPK, rowSK)
	now := time.Now().UTC()
	created := now.Format(park.TimeFormat)
	item := map[string]types.AttributeValue{
		table.PK: &types.AttributeValueMemberS{Value: table.Park.Key(id)}, table.SK: &types.AttributeValueMemberS{Value: table.Park.SKValue},
		"run_id": &types.AttributeValueMemberS{Value: runID}, "step": &types.AttributeValueMemberS{Value: "send"},
		"seq": &types.AttributeValueMemberS{Value: "3"}, "idempotency_key": &types.AttributeValueMemberS{Value: runID + "/3"},
		"tool": &types.AttributeValueMemberS{Value: "crm.update"}, "toolset_id": &types.AttributeValueMemberS{Value: "ts_f7826302d51ea15dba1ab8b9cf962a58"},
		"cause": &types.AttributeValueMemberS{Value: string(cause)}, "gated": &types.AttributeValueMemberBOOL{Value: gated},
		"row_sk": &types.AttributeValueMemberS{Value: rowSK}, "task_token": &types.AttributeValueMemberS{Value: "token-" + id},
		"status": &types.AttributeValueMemberS{Value: "PARKED"}, "created_at": &types.AttributeValueMemberS{Value: created},
		"deadline":     &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(time.Hour).Unix(), 10)},
		"park_list_pk": &types.AttributeValueMemberS{Value: "PARKS#PARKED"}, "park_list_sk": &types.AttributeValueMemberS{Value: created + "#" + id},
	}
	switch cause {
	case park.SchemaChanged:
		item["pinned_digest"] = &types.AttributeValueMemberS{Value: "sha256:" + fmt.Sprintf("%064x", 1)}
		item["current_digest"] = &types.AttributeValueMemberS{Value: "sha256:" + fmt.Sprintf("%064x", 2)}
		item["changed_pointers"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "/inputSchema/required"}}}
	case park.CredentialsExpired:
		item["park_target"] = &types.AttributeValueMemberS{Value: "crm"}
		item["park_scope"] = &types.AttributeValueMemberS{Value: "toolset"}
		item["park_scope_key"] = &types.AttributeValueMemberS{Value: "crm#toolset"}
	}
	s.put(t, item)
	if starter != "" {
		if err := s.store.RecordStart(ctx, runID, starter); err != nil {
			t.Fatal(err)
		}
	}
	r, err := s.deps.Parks.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (s *parkStack) put(t *testing.T, item map[string]types.AttributeValue) {
	t.Helper()
	if _, err := s.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// decide runs a park decision as the local identity as, its proof bound
// to the park's current digest.
func (s *parkStack) decide(t *testing.T, as string, r *park.Park, d park.Decision, reason string) (*park.DecideResult, error) {
	t.Helper()
	req := decision.Request{Action: review.ActionParkDecide, ParkID: r.ID, Decision: review.Verdict(d), Reason: reason,
		Proof: s.callers.Proof(t, as, review.ParkDecideBinding(r.ID, string(d), r.CurrentDigest))}
	_, res, err := s.svc.Do(context.Background(), req)
	if err != nil {
		return nil, err
	}
	return res.(*park.DecideResult), nil
}

func (s *parkStack) list(t *testing.T, as, status string) *park.ListResult {
	t.Helper()
	req := decision.Request{Action: review.ActionParkList, Status: status, Proof: s.callers.Proof(t, as, review.ParkListBinding(status))}
	_, res, err := s.svc.Do(context.Background(), req)
	if err != nil {
		t.Fatalf("list as %s: %v", as, err)
	}
	return res.(*park.ListResult)
}

func (s *parkStack) cancel(t *testing.T, as string, r *park.Park) (*park.DecideResult, error) {
	t.Helper()
	req := decision.Request{Action: review.ActionParkCancel, ParkID: r.ID, Proof: s.callers.Proof(t, as, review.ParkCancelBinding(r.ID))}
	_, res, err := s.svc.Do(context.Background(), req)
	if err != nil {
		return nil, err
	}
	return res.(*park.DecideResult), nil
}

func runARN() string { return "arn:aws:states:us-east-1:123456789012:execution:sm:" + review.NewID() }

// A gated step's park is approved by a reviewer of the review its call
// carried, never by the run's starter nor by anyone else; the approval
// reaches the park Task once as park.Result, and a different decision
// afterwards is refused.
func TestGatedParkIsDecidedByItsReviewersNeverTheStarter(t *testing.T) {
	t.Parallel()
	s := newParkStack(t, decision.ParkPolicy{Deciders: []string{principal("decider")}}, nil)
	run := runARN()
	rv := s.pending(t, func(p *review.Params) { p.RunID, p.Tool, p.Reviewers = run, "crm.update", []string{principal("alice")} })
	r := s.parked(t, run, principal("bob"), rv.ID, park.SchemaChanged, true)

	for who, want := range map[string]int{"alice": 1, "bob": 1, "carol": 0} {
		if l := s.list(t, who, ""); len(l.Parks) != want {
			t.Errorf("%s lists %+v, want %d parks", who, l.Parks, want)
		}
	}
	if _, err := s.decide(t, "bob", r, park.Approve, ""); codeOf(err) != review.CodeSelfApproval {
		t.Fatalf("the starter approves: %v, want %s", err, review.CodeSelfApproval)
	}
	if _, err := s.decide(t, "decider", r, park.Approve, ""); codeOf(err) != review.CodeForbidden {
		t.Fatalf("a park decider approves a gated park: %v, want %s", err, review.CodeForbidden)
	}
	if _, err := s.decide(t, "alice", r, park.Resume, ""); codeOf(err) != review.CodeForbidden {
		t.Fatalf("resume of a schema change: %v, want %s", err, review.CodeForbidden)
	}
	if calls := s.fake.Calls(r.TaskToken); len(calls) != 0 {
		t.Fatalf("refused decisions sent %+v", calls)
	}
	res, err := s.decide(t, "alice", r, park.Approve, "")
	if err != nil || res.Status != park.StatusApproved || !res.Changed {
		t.Fatalf("the reviewer approves: %+v, %v", res, err)
	}
	calls := s.fake.Calls(r.TaskToken)
	if len(calls) != 1 || calls[0].Action != "SendTaskSuccess" {
		t.Fatalf("Step Functions calls %+v, want one SendTaskSuccess", calls)
	}
	var got park.Result
	if err := json.Unmarshal([]byte(calls[0].Output), &got); err != nil || got.ParkID != r.ID || got.Decision != park.Approve || got.Reason != nil {
		t.Fatalf("the Task's output %s, want park.Result approve with reason null", calls[0].Output)
	}
	if _, err := s.decide(t, "alice", r, park.Reject, "changed my mind"); codeOf(err) != review.CodeConflict {
		t.Fatalf("a second, different decision: %v, want %s", err, review.CodeConflict)
	}
	again, err := s.decide(t, "alice", r, park.Approve, "")
	if err != nil || again.Changed {
		t.Fatalf("the same approval again: %+v, %v; want unchanged", again, err)
	}
	if l := s.list(t, "alice", ""); len(l.Parks) != 0 {
		t.Errorf("an approved park is listed as parked: %+v", l.Parks)
	}
	if l := s.list(t, "alice", "approved"); len(l.Parks) != 1 || l.Parks[0].ParkID != r.ID || l.Parks[0].DecidedBy != principal("alice") {
		t.Errorf("approved parks %+v", l.Parks)
	}
	stored, err := s.deps.Parks.Get(context.Background(), r.ID)
	if err != nil || stored.Status != park.StatusApproved || stored.DecidedBy != principal("alice") {
		t.Fatalf("stored park %+v, %v", stored, err)
	}
}

// An ungated park is decided by the run's starter or a park decider; a
// rejection carries its reason to the Task; resume is for an expired
// credential only.
func TestUngatedParkIsDecidedByTheStarterOrAParkDecider(t *testing.T) {
	t.Parallel()
	s := newParkStack(t, decision.ParkPolicy{Deciders: []string{principal("decider")}}, nil)
	a := s.parked(t, runARN(), principal("bob"), "", park.SchemaChanged, false)
	if _, err := s.decide(t, "carol", a, park.Approve, ""); codeOf(err) != review.CodeForbidden {
		t.Fatalf("another principal approves: %v, want %s", err, review.CodeForbidden)
	}
	if _, err := s.decide(t, "bob", a, park.Reject, ""); codeOf(err) != review.CodeInvalid {
		t.Fatalf("a rejection without reason: %v, want %s", err, review.CodeInvalid)
	}
	if res, err := s.decide(t, "bob", a, park.Reject, "not this definition"); err != nil || res.Status != park.StatusRejected {
		t.Fatalf("the starter rejects: %+v, %v", res, err)
	}
	var got park.Result
	if calls := s.fake.Calls(a.TaskToken); len(calls) != 1 || json.Unmarshal([]byte(calls[0].Output), &got) != nil ||
		got.Decision != park.Reject || got.Reason == nil || *got.Reason != "not this definition" {
		t.Fatalf("Step Functions calls %+v", calls)
	}

	c := s.parked(t, runARN(), principal("bob"), "", park.CredentialsExpired, false)
	if _, err := s.decide(t, "decider", c, park.Approve, ""); codeOf(err) != review.CodeForbidden {
		t.Fatalf("approve of an expired credential: %v, want %s", err, review.CodeForbidden)
	}
	if res, err := s.decide(t, "decider", c, park.Resume, ""); err != nil || res.Status != park.StatusResumed {
		t.Fatalf("a park decider resumes: %+v, %v", res, err)
	}
}

// A park whose Task no longer waits is refused REVIEW_TASK_ENDED; a
// request for an id that is no park's is REVIEW_NOT_FOUND.
func TestParkDecisionOfAnEndedTask(t *testing.T) {
	t.Parallel()
	s := newParkStack(t, decision.ParkPolicy{}, nil)
	r := s.parked(t, runARN(), principal("bob"), "", park.SchemaChanged, false)
	s.fake.End(r.TaskToken, "TaskTimedOut")
	if _, err := s.decide(t, "bob", r, park.Approve, ""); codeOf(err) != review.CodeTaskEnded {
		t.Fatalf("approve of an ended Task: %v, want %s", err, review.CodeTaskEnded)
	}
	other := *r
	other.ID = park.ID(table.Row.Key("x"), table.CallSK("1"))
	if _, err := s.decide(t, "bob", &other, park.Approve, ""); codeOf(err) != review.CodeNotFound {
		t.Fatalf("an unknown park: %v, want %s", err, review.CodeNotFound)
	}
}

// Cancelling a park stops its run on the local Step Functions endpoint
// (ABORTED, error PARK_CANCELLED) and records it CANCELLED; only the
// starter or a park operator may, and a decision afterwards is refused.
func TestCancelStopsTheRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	client, sm := startWaitingSFN(t, "parked")
	ex, err := client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(sm), Name: aws.String("run-1"), Input: aws.String(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	run := aws.ToString(ex.ExecutionArn)

	s := newParkStack(t, decision.ParkPolicy{Operators: []string{principal("ops-*")}}, client)
	r := s.parked(t, run, principal("bob"), "", park.SchemaChanged, false)
	if _, err := s.cancel(t, "carol", r); codeOf(err) != review.CodeForbidden {
		t.Fatalf("another principal cancels: %v, want %s", err, review.CodeForbidden)
	}
	res, err := s.cancel(t, "ops-1", r)
	if err != nil || res.Status != park.StatusCancelled {
		t.Fatalf("an operator cancels: %+v, %v", res, err)
	}
	d, err := client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(run)})
	if err != nil || d.Status != sfntypes.ExecutionStatusAborted || aws.ToString(d.Error) != park.CancelError {
		t.Fatalf("the run after the cancel: %+v, %v; want ABORTED with %s", d, err, park.CancelError)
	}
	if calls := s.fake.Calls(r.TaskToken); len(calls) != 0 {
		t.Fatalf("a cancel sent %+v to the park Task", calls)
	}
	if _, err := s.decide(t, "bob", r, park.Approve, ""); codeOf(err) != review.CodeConflict {
		t.Fatalf("approve after the cancel: %v, want %s", err, review.CodeConflict)
	}
	if again, err := s.cancel(t, "ops-1", r); err != nil || again.Changed {
		t.Fatalf("the same cancel again: %+v, %v", again, err)
	}
}

// The park deciders and operators are read at cold start as JSON lists of
// patterns of the deployment's own account: another account's pattern,
// or a value that is not a list, stops the function.
func TestParkPolicyFromEnv(t *testing.T) {
	t.Parallel()
	base := map[string]string{review.EnvTable: "toolgate-test", caller.EnvAccount: "123456789012", "AWS_REGION": "us-east-1"}
	for _, c := range []struct {
		name, deciders, operators, credentialAdmins string
		ok                                          bool
	}{
		{"unset", "", "", "", true},
		{"own account", `["arn:aws:iam::123456789012:role/park-*"]`, `["arn:aws:iam::123456789012:role/ops"]`, `["arn:aws:iam::123456789012:role/cred"]`, true},
		{"another account's decider", `["arn:aws:iam::210987654321:role/x"]`, "", "", false},
		{"another account's operator", "", `["arn:aws:iam::210987654321:role/x"]`, "", false},
		{"another account's credential admin", "", "", `["arn:aws:iam::210987654321:role/x"]`, false},
		{"not a list", `arn:aws:iam::123456789012:role/x`, "", "", false},
	} {
		env := maps.Clone(base)
		env[park.EnvDeciders], env[park.EnvOperators], env[publishapi.EnvCredentialAdmins] = c.deciders, c.operators, c.credentialAdmins
		cfg, err := decision.ConfigFromEnv(func(k string) string { return env[k] })
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok %v", c.name, err, c.ok)
			continue
		}
		if c.ok && c.deciders != "" && len(cfg.Parks.Deciders) != 1 {
			t.Errorf("%s: deciders %v", c.name, cfg.Parks.Deciders)
		}
		if c.ok && c.credentialAdmins != "" && len(cfg.Parks.CredentialAdmins) != 1 {
			t.Errorf("%s: credential admins %v", c.name, cfg.Parks.CredentialAdmins)
		}
	}
}

// An approval's proof is bound to the park's current digest: a proof
// signed for another definition of the tool is refused, and nothing is
// decided.
func TestParkApprovalIsBoundToTheCurrentDigest(t *testing.T) {
	t.Parallel()
	s := newParkStack(t, decision.ParkPolicy{}, nil)
	r := s.parked(t, runARN(), principal("bob"), "", park.SchemaChanged, false)
	req := decision.Request{Action: review.ActionParkDecide, ParkID: r.ID, Decision: review.Verdict(park.Approve),
		Proof: s.callers.Proof(t, "bob", review.ParkDecideBinding(r.ID, string(park.Approve), "sha256:"+strings.Repeat("f", 64)))}
	if _, _, err := s.svc.Do(context.Background(), req); codeOf(err) != review.CodeUnauthenticated {
		t.Fatalf("a proof for another digest: %v, want %s", err, review.CodeUnauthenticated)
	}
	if got, _ := s.deps.Parks.Get(context.Background(), r.ID); got.Status != park.StatusParked {
		t.Fatalf("the park is %s after a refused proof", got.Status)
	}
}

// expire moves r's deadline (epoch seconds) ago seconds into the past, as
// if its park Task had timed out, and returns r as it now is.
func (s *parkStack) expire(t *testing.T, r *park.Park, ago time.Duration) *park.Park {
	t.Helper()
	deadline := time.Now().Add(-ago).Unix()
	if _, err := s.db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(s.table),
		Key: map[string]types.AttributeValue{table.PK: &types.AttributeValueMemberS{Value: table.Park.Key(r.ID)},
			table.SK: &types.AttributeValueMemberS{Value: table.Park.SKValue}},
		UpdateExpression: aws.String("SET deadline = :d"), ExpressionAttributeValues: map[string]types.AttributeValue{":d": &types.AttributeValueMemberN{Value: strconv.FormatInt(deadline, 10)}},
	}); err != nil {
		t.Fatal(err)
	}
	cur, err := s.deps.Parks.Get(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	return cur
}

// A PARKED park past its deadline is recorded TIMED_OUT by the first
// request that meets it (docs/parking.md, "Timed out"): a listing of
// parked ones leaves it out and records it, a show answers it TIMED_OUT,
// and a decision or a cancel is refused REVIEW_EXPIRED, before or after
// the record, and sends nothing.
func TestAParkPastItsDeadlineIsRecordedTimedOutWhenMet(t *testing.T) {
	t.Parallel()
	s := newParkStack(t, decision.ParkPolicy{Operators: []string{principal("operator")}}, nil)
	ctx := context.Background()
	timedOut := func(r *park.Park) {
		t.Helper()
		got, err := s.deps.Parks.Get(ctx, r.ID)
		if err != nil || got.Status != park.StatusTimedOut || got.DecidedBy != "" || !got.DecidedAt.Equal(r.Deadline) {
			t.Fatalf("park %+v (%v), want TIMED_OUT, decided by nobody at its deadline %s", got, err, r.Deadline)
		}
	}
	listed := s.parked(t, runARN(), principal("bob"), "", park.SchemaChanged, false)
	shown := s.parked(t, runARN(), principal("bob"), "", park.SchemaChanged, false)
	decided := s.parked(t, runARN(), principal("bob"), "", park.CredentialsExpired, false)

	listed = s.expire(t, listed, time.Minute)
	if l := s.list(t, "bob", ""); len(l.Parks) != 2 || slices.ContainsFunc(l.Parks, func(v park.View) bool { return v.ParkID == listed.ID }) {
		t.Fatalf("parked listing %+v, want the two parks before their deadline", l.Parks)
	}
	timedOut(listed)
	if l := s.list(t, "bob", "timed_out"); len(l.Parks) != 1 || l.Parks[0].ParkID != listed.ID || l.Parks[0].Status != park.StatusTimedOut || l.Parks[0].DecidedBy != "" {
		t.Fatalf("timed_out listing %+v, want %s", l.Parks, listed.ID)
	}
	if _, err := s.cancel(t, "operator", listed); codeOf(err) != review.CodeExpired {
		t.Fatalf("cancel of a timed-out park: %v, want %s", err, review.CodeExpired)
	}

	shown = s.expire(t, shown, time.Second)
	req := decision.Request{Action: review.ActionParkShow, ParkID: shown.ID, Proof: s.callers.Proof(t, "bob", review.ParkShowBinding(shown.ID))}
	if _, res, err := s.svc.Do(ctx, req); err != nil || res.(park.View).Status != park.StatusTimedOut || res.(park.View).Expired {
		t.Fatalf("show of a park past its deadline: %+v, %v; want it TIMED_OUT", res, err)
	}
	timedOut(shown)

	decided = s.expire(t, decided, time.Second)
	for range 2 { // the first records it, the second finds it recorded
		if _, err := s.decide(t, "bob", decided, park.Resume, ""); codeOf(err) != review.CodeExpired || !strings.Contains(err.Error(), "timed out at") {
			t.Fatalf("resume of a park past its deadline: %v, want %s", err, review.CodeExpired)
		}
		timedOut(decided)
	}
	for _, r := range []*park.Park{listed, shown, decided} {
		if calls := s.fake.Calls(r.TaskToken); len(calls) != 0 {
			t.Errorf("park %s: Step Functions calls %+v, want none", r.ID, calls)
		}
	}
}

// One listing records at most MaxTimeOutsPerList parks TIMED_OUT; the next
// records the rest, and neither lists them.
func TestAListingRecordsABoundedNumberOfTimeOuts(t *testing.T) {
	t.Parallel()
	s := newParkStack(t, decision.ParkPolicy{}, nil)
	var parks []*park.Park
	for range decision.MaxTimeOutsPerList + 1 {
		parks = append(parks, s.expire(t, s.parked(t, runARN(), principal("bob"), "", park.SchemaChanged, false), time.Second))
	}
	count := func() (n int) {
		for _, r := range parks {
			if got, err := s.deps.Parks.Get(context.Background(), r.ID); err == nil && got.Status == park.StatusTimedOut {
				n++
			}
		}
		return n
	}
	for i, want := range []int{decision.MaxTimeOutsPerList, decision.MaxTimeOutsPerList + 1} {
		if l := s.list(t, "bob", ""); len(l.Parks) != 0 {
			t.Fatalf("listing %d: %+v, want none", i+1, l.Parks)
		}
		if got := count(); got != want {
			t.Fatalf("after listing %d: %d parks TIMED_OUT, want %d", i+1, got, want)
		}
	}
}

// withScope makes r, a credentials.expired park, wait on the credential
// of scope instead, as review-request records it from its PARKED row.
func (s *parkStack) withScope(t *testing.T, r *park.Park, scope string) *park.Park {
	t.Helper()
	ctx := context.Background()
	if _, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.table),
		Key: map[string]types.AttributeValue{table.PK: &types.AttributeValueMemberS{Value: table.Park.Key(r.ID)},
			table.SK: &types.AttributeValueMemberS{Value: table.Park.SKValue}},
		UpdateExpression: aws.String("SET park_scope = :s, park_scope_key = :k"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: scope},
			":k": &types.AttributeValueMemberS{Value: r.Target + "#" + scope}}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.deps.Parks.Get(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A credentials.expired park is resumed, besides by the run's starter and
// a park decider, by whoever may set the credential's scope: a credential
// admin for a toolset's or an end user's scope, who also lists and shows
// it; nobody else, and a run's scope stays its starter's.
func TestCredentialsParkIsResumedByWhoMaySetItsScope(t *testing.T) {
	t.Parallel()
	s := newParkStack(t, decision.ParkPolicy{CredentialAdmins: []string{principal("cred-admin")}}, nil)
	endUser := "end_user:" + strings.Repeat("ab", 32)
	for _, c := range []struct {
		scope string
		admin bool // the credential admin may resume it
	}{
		{"toolset", true},
		{endUser, true},
		{"run:" + "run-7", false},
	} {
		r := s.withScope(t, s.parked(t, runARN(), principal("bob"), "", park.CredentialsExpired, false), c.scope)
		if _, err := s.decide(t, "carol", r, park.Resume, ""); codeOf(err) != review.CodeForbidden {
			t.Fatalf("%s: another principal resumes: %v, want %s", c.scope, err, review.CodeForbidden)
		}
		listed := slices.ContainsFunc(s.list(t, "cred-admin", "").Parks, func(v park.View) bool { return v.ParkID == r.ID })
		if listed != c.admin {
			t.Errorf("%s: the credential admin lists it: %t, want %t", c.scope, listed, c.admin)
		}
		if _, err := s.decide(t, "cred-admin", r, park.Reject, "no"); codeOf(err) != review.CodeForbidden {
			t.Fatalf("%s: the credential admin rejects: %v, want %s", c.scope, err, review.CodeForbidden)
		}
		res, err := s.decide(t, "cred-admin", r, park.Resume, "")
		switch {
		case c.admin && (err != nil || res.Status != park.StatusResumed || res.Changed != true):
			t.Fatalf("%s: the credential admin resumes: %+v, %v", c.scope, res, err)
		case !c.admin && codeOf(err) != review.CodeForbidden:
			t.Fatalf("%s: the credential admin resumes a run's park: %v, want %s", c.scope, err, review.CodeForbidden)
		case !c.admin:
			if res, err := s.decide(t, "bob", r, park.Resume, ""); err != nil || res.Status != park.StatusResumed {
				t.Fatalf("%s: the starter resumes: %+v, %v", c.scope, res, err)
			}
		}
	}
}

// A gated park's deciders are the reviewers of the review its call
// carried, found through the review_id of its PARKED row. Every tool
// role writes row items of the run's partition, so a row may name any
// review of the run: one of another tool step (or another tool), whose
// reviewers never reviewed this call, decides nothing. Nobody may
// approve or reject the park; it can only be cancelled.
func TestAGatedParkIsNotDecidedByTheReviewersOfAnotherStepsReview(t *testing.T) {
	t.Parallel()
	s := newParkStack(t, decision.ParkPolicy{}, nil)
	for name, mod := range map[string]func(*review.Params){
		"another step": func(p *review.Params) { p.Of, p.Tool = "lookup", "crm.update" },
		"another tool": func(p *review.Params) { p.Of, p.Tool = "send", "send-email" },
	} {
		t.Run(name, func(t *testing.T) {
			run := runARN()
			lax := s.pending(t, func(p *review.Params) { p.RunID, p.Reviewers = run, []string{principal("mallory")}; mod(p) })
			r := s.parked(t, run, principal("bob"), lax.ID, park.SchemaChanged, true)
			if l := s.list(t, "mallory", ""); slices.ContainsFunc(l.Parks, func(v park.View) bool { return v.ParkID == r.ID }) {
				t.Errorf("mallory lists the park: %+v", l.Parks)
			}
			if _, err := s.decide(t, "mallory", r, park.Approve, ""); codeOf(err) != review.CodeForbidden {
				t.Fatalf("a reviewer of another step's review approves: %v, want %s", err, review.CodeForbidden)
			}
			if calls := s.fake.Calls(r.TaskToken); len(calls) != 0 {
				t.Fatalf("a refused decision sent %+v", calls)
			}
		})
	}
}
