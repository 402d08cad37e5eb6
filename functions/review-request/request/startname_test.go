package request_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/toolgate/toolgate/functions/review-request/request"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/inputrecord"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/tool"
)

// startLane is review-request's start alias on the childEnv's table, with
// a caller verifier on the STS stand-in, for the local account, region
// and stage "dev"; sign signs a start request's proof as a local user.
type startLane struct {
	h       *request.Handler
	callers review.Callers // h's
	sts     *local.STS
	keys    *local.LocalKeys
}

func newStartLane(t *testing.T, e *childEnv) *startLane {
	t.Helper()
	keys, err := local.NewLocalKeys()
	if err != nil {
		t.Fatal(err)
	}
	sts, err := local.StartSTS(keys)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sts.Close() })
	v, err := caller.NewVerifier(caller.Config{Endpoint: sts.Endpoint(), AllowHTTP: true, Account: local.LocalAccountID},
		ledger.ProofTable{DB: local.DynamoDB(e.ddb.Endpoint()), Table: e.table})
	if err != nil {
		t.Fatal(err)
	}
	return &startLane{sts: sts, keys: keys, callers: v, h: startHandler(e.store, v, "dev")}
}

// startHandler is review-request on the start lane of stage.
func startHandler(store *dynamo.Store, v review.Callers, stage string) *request.Handler {
	return request.NewHandler(request.Config{Lane: lane.Start, Callers: caller.Config{Account: local.LocalAccountID}, Region: local.Region, Stage: stage},
		request.Deps{Store: store, Callers: v})
}

// record asks the start lane, as local user name with a valid proof, to
// record the start of executionARN.
func (s *startLane) record(t *testing.T, name, executionARN, digest string) error {
	t.Helper()
	c, err := s.keys.Credentials(name)
	if err != nil {
		t.Fatal(err)
	}
	proof, err := caller.Sign(t.Context(), credentials.StaticCredentialsProvider{Value: c}, s.sts.Endpoint(), local.Region,
		review.StartBinding(executionARN, digest), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	req, err := json.Marshal(review.StartRequest{Action: review.StartAction, ExecutionARN: executionARN, InputDigest: digest, Proof: proof})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.h.Handle(t.Context(), req)
	return err
}

var startDigest = "sha256:" + strings.Repeat("0", 62) + "ab"

// The start lane records a start only for an execution of this
// deployment's Solutions: its account, its region, a state machine of its
// stage (toolgate-<stage>_<solution>), and never a name a workflow step's
// child is named with (tool.ChildNamePrefix), whoever asks and with a
// valid proof. Each refusal is REVIEW_FORBIDDEN with its reason word, and
// nothing is recorded. On dynalite and the STS stand-in.
func TestStartLaneRecordsOnlyThisDeploymentsSolutionRuns(t *testing.T) {
	e := startChildEnv(t)
	s := newStartLane(t, e)
	const sm = "arn:aws:states:us-east-1:000000000000:execution:"
	child := tool.ChildExecutionName(e.parent, "1")
	for _, c := range []struct {
		name, arn, reason string // reason "": recorded
	}{
		{"a run of this stage's Solution", sm + "toolgate-dev_weekly:run-1", ""},
		{"a workflow step's child name", sm + "toolgate-dev_weekly:" + child, request.ReasonStartChildName},
		{"a later attempt's child name", sm + "toolgate-dev_weekly:" + tool.ChildAttemptName(e.parent, "1", 2), request.ReasonStartChildName},
		{"any name with the children's prefix", sm + "toolgate-dev_weekly:tg-mine", request.ReasonStartChildName},
		{"another account", "arn:aws:states:us-east-1:111111111111:execution:toolgate-dev_weekly:run-1", request.ReasonStartAccount},
		{"another region", "arn:aws:states:eu-west-1:000000000000:execution:toolgate-dev_weekly:run-1", request.ReasonStartRegion},
		{"another stage's state machine", sm + "toolgate-prod_weekly:run-1", request.ReasonStartStateMachine},
		{"a stage whose name starts with this one's", sm + "toolgate-dev-2_weekly:run-1", request.ReasonStartStateMachine},
		{"a state machine not of toolgate", sm + "payroll:run-1", request.ReasonStartStateMachine},
		{"the stage's prefix without a Solution", sm + "toolgate-dev_:run-1", request.ReasonStartStateMachine},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := s.record(t, "alice", c.arn, startDigest)
			rec, readErr := e.store.RunStart(t.Context(), c.arn)
			if c.reason == "" {
				if err != nil || readErr != nil || rec.Starter != local.LocalPrincipal("alice") {
					t.Fatalf("%v; record %+v %v", err, rec, readErr)
				}
				return
			}
			var edge messages.InvokeResponse_Error
			if !errors.As(err, &edge) || edge.Type != "REVIEW_FORBIDDEN" || !strings.HasSuffix(edge.Message, "["+c.reason+"]") {
				t.Fatalf("%v, want REVIEW_FORBIDDEN [%s]", err, c.reason)
			}
			if !errors.Is(readErr, review.ErrNotFound) {
				t.Fatalf("a refused start was recorded: %+v %v", rec, readErr)
			}
		})
	}
	t.Run("a function without its stage admits nothing", func(t *testing.T) {
		dev := s.h
		s.h = startHandler(e.store, s.callers, "")
		defer func() { s.h = dev }()
		err := s.record(t, "alice", sm+"toolgate-dev_weekly:run-2", startDigest)
		if err == nil || !strings.Contains(err.Error(), "["+request.ReasonStartStateMachine+"]") {
			t.Fatalf("%v, want [%s]", err, request.ReasonStartStateMachine)
		}
	})
}

// A Publisher who learns someone's parent run ARN knows its children's
// names (tool.ChildExecutionName). The start lane refuses to record a
// start under one; and a run's start record that holds a child's name
// anyway (one an earlier Starter wrote from a start proof, or toolgate
// run's) does not fail the parent's workflow step: the step passes to the
// next attempt's name, as for a name an execution holds, and leaves the
// record it did not write as it was. Past tool.MaxChildAttempts held
// names the step fails REVIEW_FORBIDDEN. On dynalite, the local Step
// Functions endpoint and the STS stand-in.
func TestAWorkflowStepPassesAChildNameARunStartHolds(t *testing.T) {
	e := startChildEnv(t)
	s := newStartLane(t, e)
	sm, version := e.publish(t, "toolgate-dev_child", `{"StartAt": "Start", "States": {"Start": {"Type": "Pass", "End": true, "Comment": `+
		strconv.Quote(inputrecord.Prefix+`{"input_limit_bytes":512}`)+`}}}`)
	name := func(seq tool.Seq, attempt int) string {
		arn, err := review.ChildExecutionARN(sm, tool.ChildAttemptName(e.parent, seq, attempt))
		if err != nil {
			t.Fatal(err)
		}
		return arn
	}
	mallory := local.LocalPrincipal("mallory")

	err := s.record(t, "mallory", name("1", 0), startDigest)
	if err == nil || !strings.Contains(err.Error(), "["+request.ReasonStartChildName+"]") {
		t.Fatalf("the start lane recorded a child's name: %v", err)
	}

	// A record under the name however it came to be: toolgate run's kind
	// for seq 1, an earlier Starter's for seq 2.
	if err := e.store.RecordRunStart(t.Context(), name("1", 0), mallory, startDigest, review.EndUserRecord{}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.RecordStart(t.Context(), name("2", 0), mallory); err != nil {
		t.Fatal(err)
	}
	for _, seq := range []tool.Seq{"1", "2"} {
		for range 2 { // a retried Task answers the same
			res, err := e.childStart(t, mustAtoi(t, seq), version, `{}`)
			if err != nil || res.Attempt != 1 || res.ExecutionARN != name(seq, 1) || res.ExecutionName != tool.ChildAttemptName(e.parent, seq, 1) || res.Taken {
				t.Fatalf("seq %s: %+v %v, want attempt 1 (%s)", seq, res, err, name(seq, 1))
			}
		}
		if rec, err := e.store.ChildStart(t.Context(), name(seq, 1)); err != nil || rec.ParentRunID != e.parent {
			t.Fatalf("seq %s: the next name's record %+v %v, want the parent's", seq, rec, err)
		}
		if starter, err := e.store.Starter(t.Context(), name(seq, 0)); err != nil || starter != mallory {
			t.Fatalf("seq %s: the held name's record changed: %q %v", seq, starter, err)
		}
	}

	// Every name held: the step fails, and records nothing.
	for attempt := range tool.MaxChildAttempts {
		if err := e.store.RecordRunStart(t.Context(), name("3", attempt), mallory, startDigest, review.EndUserRecord{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = e.childStart(t, 3, version, `{}`)
	var edge messages.InvokeResponse_Error
	if !errors.As(err, &edge) || edge.Type != "REVIEW_FORBIDDEN" || !strings.Contains(edge.Message, "were each held") {
		t.Fatalf("%v, want REVIEW_FORBIDDEN when every name is held", err)
	}
	for attempt := range tool.MaxChildAttempts {
		if _, err := e.store.ChildStart(t.Context(), name("3", attempt)); !errors.Is(err, review.ErrNotFound) {
			t.Fatalf("attempt %d: the parent recorded a held name: %v", attempt, err)
		}
	}
}

func mustAtoi(t *testing.T, s tool.Seq) int {
	t.Helper()
	n, err := strconv.Atoi(string(s))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
