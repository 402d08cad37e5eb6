package request_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/functions/review-request/request"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/enduser"
	"github.com/toolgate/toolgate/shared/inputrecord"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/table"
	"github.com/toolgate/toolgate/shared/tool"
)

// endUserKey is the test's end-user key (32 bytes, as the deploy makes).
var endUserKey = []byte(strings.Repeat("e", 32))

// endUserLanes are review-request's start lane and sfn lane on one table,
// with an end-user mapping that lets local user alice act for end users
// customer-*, and nobody for anyone else.
func endUserLanes(t *testing.T, e *childEnv, s *startLane) (start, sfnLane *request.Handler) {
	t.Helper()
	m, err := enduser.Parse([]byte(`[{"principal": "`+local.LocalPrincipal("alice")+`", "endUser": "customer-*"}]`), local.LocalAccountID)
	if err != nil {
		t.Fatal(err)
	}
	cfg := request.Config{Callers: caller.Config{Account: local.LocalAccountID}, Region: local.Region, Stage: "dev", EndUsers: m}
	cfg.Lane = lane.Start
	start = request.NewHandler(cfg, request.Deps{Store: e.store, Callers: s.callers, EndUserKey: endUserKey})
	cfg.Lane = lane.SFN
	sfnLane = request.NewHandler(cfg, request.Deps{Store: e.store, Callers: s.callers, EndUserKey: endUserKey})
	return start, sfnLane
}

// startFor asks h, as local user name, to record the start of
// executionARN with the input input for end user endUser ("" for none),
// the proof signed for signedFor; it returns the answer.
func (s *startLane) startFor(t *testing.T, h *request.Handler, name, executionARN string, input []byte, endUser, signedFor string) (review.StartAnswer, error) {
	t.Helper()
	_, digest, err := tool.InputDigest(input)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.keys.Credentials(name)
	if err != nil {
		t.Fatal(err)
	}
	proof, err := caller.Sign(t.Context(), credentials.StaticCredentialsProvider{Value: c}, s.sts.Endpoint(), local.Region,
		review.StartBindingFor(executionARN, digest, signedFor), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	req, err := json.Marshal(review.StartRequest{Action: review.StartAction, ExecutionARN: executionARN, InputDigest: digest, EndUser: endUser, Proof: proof})
	if err != nil {
		t.Fatal(err)
	}
	var ans review.StartAnswer
	out, err := h.Handle(t.Context(), req)
	if err == nil {
		err = json.Unmarshal(out, &ans)
	}
	return ans, err
}

// startItem reads executionARN's start item as stored.
func startItem(t *testing.T, e *childEnv, executionARN string) map[string]string {
	t.Helper()
	out, err := local.DynamoDB(e.ddb.Endpoint()).GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: table.Start.Key(executionARN)}, "sk": &types.AttributeValueMemberS{Value: table.Start.SKValue}}})
	if err != nil || out.Item == nil {
		t.Fatalf("start item of %s: %v", executionARN, err)
	}
	got := map[string]string{}
	for k, v := range out.Item {
		got[k] = fmt.Sprint(v)
	}
	return got
}

// The start record holds the end user asked for, and its scope, only when
// the end-user mapping lets the verified starter act for it; otherwise it
// records why it was skipped, and the run starts without one. The Starter
// check answers the recorded scope (or null), which the state machine
// keeps at $.meta.start.end_user. On dynalite and the STS stand-in.
func TestTheStartRecordHoldsAnEndUserOnlyWhenTheStarterMayActForIt(t *testing.T) {
	e := startChildEnv(t)
	s := newStartLane(t, e)
	start, sfnLane := endUserLanes(t, e, s)
	const sm = "arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_weekly:"
	input := []byte(`{"input":{},"meta":{}}`)
	scope := enduser.Scope(endUserKey, "customer-42")
	for _, c := range []struct {
		name, who, endUser string
		wantScope          *string
		wantSkipped        string
	}{
		{"a mapped starter", "alice", "customer-42", &scope, ""},
		{"a starter the mapping names for other end users", "alice", "staff-1", nil, "has no entry that lets " + local.LocalPrincipal("alice") + " act for this end user"},
		{"a starter the mapping does not name", "bob", "customer-42", nil, "has no entry that lets " + local.LocalPrincipal("bob")},
		{"no end user asked for", "alice", "", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			arn := sm + "run-" + strings.ReplaceAll(c.name, " ", "-")
			ans, err := s.startFor(t, start, c.who, arn, input, c.endUser, c.endUser)
			if err != nil {
				t.Fatal(err)
			}
			if (ans.EndUser == nil) != (c.wantScope == nil) || (ans.EndUser != nil && *ans.EndUser != *c.wantScope) || !strings.Contains(ans.EndUserSkipped, c.wantSkipped) || (c.wantSkipped == "") != (ans.EndUserSkipped == "") {
				t.Fatalf("answer %+v, want end user %v skipped %q", ans, c.wantScope, c.wantSkipped)
			}
			item := startItem(t, e, arn)
			_, hasID := item["end_user"]
			_, hasScope := item["end_user_scope"]
			_, hasSkipped := item["end_user_skipped"]
			if hasID != (c.wantScope != nil) || hasScope != (c.wantScope != nil) || hasSkipped != (c.wantSkipped != "") {
				t.Fatalf("start item %v: want end_user and end_user_scope %v, end_user_skipped %v", item, c.wantScope != nil, c.wantSkipped != "")
			}
			if c.wantScope != nil && (!strings.Contains(item["end_user"], c.endUser) || !strings.Contains(item["end_user_scope"], scope)) {
				t.Fatalf("start item %v does not hold %s and its scope", item, c.endUser)
			}
			// The Starter Task of the execution.
			out, err := sfnLane.Handle(t.Context(), json.RawMessage(fmt.Sprintf(`{"check":"run.start","execution_arn":%q,"execution_input":%s,"start_time":%q}`,
				arn, input, time.Now().UTC().Format(time.RFC3339Nano))))
			if err != nil {
				t.Fatal(err)
			}
			want := `"end_user":null`
			if c.wantScope != nil {
				want = `"end_user":` + strconv.Quote(scope)
			}
			if !strings.Contains(string(out), want) || !strings.Contains(string(out), `"starter":"`+local.LocalPrincipal(c.who)+`"`) {
				t.Fatalf("the Starter check answered %s, want %s", out, want)
			}
		})
	}
}

// The start proof binds the end user: a proof signed for one end user
// (or none) does not record a start for another, and an end user that is
// no end-user id is refused before the proof is looked at. Nothing is
// recorded either way.
func TestTheStartProofBindsTheEndUser(t *testing.T) {
	e := startChildEnv(t)
	s := newStartLane(t, e)
	start, _ := endUserLanes(t, e, s)
	const arn = "arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_weekly:run-bound"
	input := []byte(`{"input":{},"meta":{}}`)
	for _, c := range []struct{ name, endUser, signedFor, code string }{
		{"signed for another end user", "customer-2", "customer-1", "REVIEW_UNAUTHENTICATED"},
		{"signed for none", "customer-2", "", "REVIEW_UNAUTHENTICATED"},
		{"signed with one, sent without", "", "customer-1", "REVIEW_UNAUTHENTICATED"},
		{"not an end-user id", "customer 2", "customer 2", "REVIEW_INVALID_REQUEST"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.startFor(t, start, "alice", arn, input, c.endUser, c.signedFor)
			var edge messages.InvokeResponse_Error
			if !errors.As(err, &edge) || edge.Type != c.code {
				t.Fatalf("%v, want %s", err, c.code)
			}
			if _, err := e.store.RunStart(t.Context(), arn); !errors.Is(err, review.ErrNotFound) {
				t.Fatalf("a start was recorded: %v", err)
			}
		})
	}
}

// A workflow step's child takes its parent's end-user scope: the parent's
// start-record Task records it on the child's start item, and the child's
// start check answers it. On dynalite and the local Step Functions
// endpoint.
func TestAChildRunActsForItsParentsEndUser(t *testing.T) {
	ctx := t.Context()
	e := startChildEnv(t)
	scope := enduser.Scope(endUserKey, "customer-42")
	e.parent = "arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_parent:run-eu"
	if err := e.store.RecordRunStart(ctx, e.parent, "arn:aws:iam::000000000000:user/starter", startDigest,
		review.EndUserRecord{ID: "customer-42", Scope: scope}); err != nil {
		t.Fatal(err)
	}
	_, version := e.publish(t, "toolgate-dev_euchild", `{"StartAt": "w", "States": {"w": {"Type": "Wait", "Seconds": 30, "End": true, "Comment": `+
		strconv.Quote(inputrecord.Prefix+`{"input_limit_bytes":1024}`)+`}}}`)
	res, err := e.childStart(t, 1, version, `{"title":"t"}`)
	if err != nil {
		t.Fatal(err)
	}
	// A retried record Task writes the same again.
	if _, err := e.childStart(t, 1, version, `{"title":"t"}`); err != nil {
		t.Fatalf("the retried record Task: %v", err)
	}
	rec, err := e.store.ChildStart(ctx, res.ExecutionARN)
	if err != nil || rec.EndUserScope != scope {
		t.Fatalf("child record %+v %v, want end-user scope %s", rec, err, scope)
	}
	input := fmt.Sprintf(`{"input":{"title":"t"},"meta":{"parent_run_id":%q,"parent_seq":1},"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID":%q}`, e.parent, e.parent)
	if _, err := e.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(version), Name: aws.String(res.ExecutionName), Input: aws.String(input)}); err != nil {
		t.Fatal(err)
	}
	out, err := e.h.Handle(ctx, json.RawMessage(fmt.Sprintf(`{"execution_arn":%q,"execution_input":%s,"start_time":%q}`, res.ExecutionARN, input, time.Now().UTC().Format(time.RFC3339Nano))))
	if err != nil || !strings.Contains(string(out), `"end_user":`+strconv.Quote(scope)) {
		t.Fatalf("the child's start check answered %s %v, want its parent's end-user scope", out, err)
	}
}
