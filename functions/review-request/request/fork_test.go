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
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/enduser"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/tool"
)

// The start lane records a fork's forked_from only when the parent's fork
// item names the execution as its fork and the verified starter is the
// forker it names; a forged forked_from (a parent never forked, forked as
// another execution, or by someone else) is refused [start-fork] with
// nothing recorded. The fork acts for its parent's end user when the
// mapping lets the forker act for it, and its Starter check answers
// forked_from and rerun_reads. On dynalite and the STS stand-in.
func TestTheStartLaneRecordsForkedFromOnlyForTheRecordedFork(t *testing.T) {
	e := startChildEnv(t)
	s := newStartLane(t, e)
	start, sfnLane := endUserLanes(t, e, s)
	const sm = "arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_weekly:"
	input := []byte(`{"input":{},"meta":{}}`)
	_, digest, err := tool.InputDigest(input)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	send := func(who string, req review.StartRequest) (review.StartAnswer, error) {
		c, err := s.keys.Credentials(who)
		if err != nil {
			t.Fatal(err)
		}
		req.Action, req.InputDigest = review.StartAction, digest
		if req.Proof, err = caller.Sign(ctx, credentials.StaticCredentialsProvider{Value: c}, s.sts.Endpoint(), local.Region, review.StartBindingOf(&req), time.Now()); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(req)
		var ans review.StartAnswer
		out, err := start.Handle(ctx, b)
		if err == nil {
			err = json.Unmarshal(out, &ans)
		}
		return ans, err
	}
	// The parent, started by alice for end user customer-42.
	parent := sm + "run-parent"
	if _, err := send("alice", review.StartRequest{ExecutionARN: parent, EndUser: "customer-42"}); err != nil {
		t.Fatal(err)
	}
	fork := sm + "run-fork"
	// Not forked yet: refused.
	if _, err := send("alice", review.StartRequest{ExecutionARN: fork, ForkedFrom: parent}); !refusedStartFork(err) {
		t.Fatalf("a fork of a parent never forked: %v, want [start-fork]", err)
	}
	if _, err := e.store.RecordFork(ctx, review.Fork{ParentRunID: parent, ForkRunID: fork, ForkedBy: local.LocalPrincipal("alice"), ForkedAt: time.Now(), ParentStatus: "RUNNING"}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		who string
		req review.StartRequest
	}{
		"forked as another execution":        {"alice", review.StartRequest{ExecutionARN: sm + "run-other", ForkedFrom: parent}},
		"started by another than the forker": {"bob", review.StartRequest{ExecutionARN: fork, ForkedFrom: parent}},
		"other rerun_reads":                  {"alice", review.StartRequest{ExecutionARN: fork, ForkedFrom: parent, RerunReads: true}},
	} {
		if _, err := send(c.who, c.req); !refusedStartFork(err) {
			t.Errorf("%s: %v, want [start-fork]", name, err)
		}
		if _, err := e.store.RunStart(ctx, c.req.ExecutionARN); !errors.Is(err, review.ErrNotFound) {
			t.Errorf("%s: a start was recorded: %v", name, err)
		}
	}
	ans, err := send("alice", review.StartRequest{ExecutionARN: fork, ForkedFrom: parent})
	scope := enduser.Scope(endUserKey, "customer-42")
	if err != nil || ans.ForkedFrom != parent || ans.EndUser == nil || *ans.EndUser != scope {
		t.Fatalf("the recorded fork's start: %+v, %v; want forked_from %s and the parent's end user", ans, err, parent)
	}
	item := startItem(t, e, fork)
	if !strings.Contains(item["forked_from"], parent) || !strings.Contains(item["end_user"], "customer-42") {
		t.Fatalf("the fork's start item %v", item)
	}
	out, err := sfnLane.Handle(ctx, json.RawMessage(fmt.Sprintf(`{"check":"run.start","execution_arn":%q,"execution_input":%s,"start_time":%q}`,
		fork, input, time.Now().UTC().Format(time.RFC3339Nano))))
	if err != nil || !strings.Contains(string(out), `"forked_from":`+strconv.Quote(parent)) || !strings.Contains(string(out), `"rerun_reads":false`) {
		t.Fatalf("the fork's Starter check answered %s, %v", out, err)
	}
	out, err = sfnLane.Handle(ctx, json.RawMessage(fmt.Sprintf(`{"check":"run.start","execution_arn":%q,"execution_input":%s,"start_time":%q}`,
		parent, input, time.Now().UTC().Format(time.RFC3339Nano))))
	if err != nil || !strings.Contains(string(out), `"forked_from":null`) {
		t.Fatalf("the parent's Starter check answered %s, %v", out, err)
	}
}

// A fork whose forker the mapping does not let act for the parent's end
// user runs without one, and the record says why.
func TestAForkSkipsAnEndUserItsForkerMayNotActFor(t *testing.T) {
	e := startChildEnv(t)
	s := newStartLane(t, e)
	start, _ := endUserLanes(t, e, s)
	ctx := t.Context()
	const sm = "arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_weekly:"
	parent, fork := sm+"run-eu-parent", sm+"run-eu-fork"
	if err := e.store.RecordRunStart(ctx, parent, local.LocalPrincipal("alice"), startDigest, review.EndUserRecord{ID: "customer-42", Scope: enduser.Scope(endUserKey, "customer-42")}); err != nil {
		t.Fatal(err)
	}
	// bob forked it as a fork operator.
	if _, err := e.store.RecordFork(ctx, review.Fork{ParentRunID: parent, ForkRunID: fork, ForkedBy: local.LocalPrincipal("bob"), ForkedAt: time.Now(), ParentStatus: "SUCCEEDED"}); err != nil {
		t.Fatal(err)
	}
	input := []byte(`{"input":{},"meta":{}}`)
	_, digest, _ := tool.InputDigest(input)
	c, err := s.keys.Credentials("bob")
	if err != nil {
		t.Fatal(err)
	}
	req := review.StartRequest{Action: review.StartAction, ExecutionARN: fork, InputDigest: digest, ForkedFrom: parent}
	if req.Proof, err = caller.Sign(ctx, credentials.StaticCredentialsProvider{Value: c}, s.sts.Endpoint(), local.Region, review.StartBindingOf(&req), time.Now()); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(req)
	out, err := start.Handle(ctx, b)
	var ans review.StartAnswer
	if err == nil {
		err = json.Unmarshal(out, &ans)
	}
	if err != nil || ans.EndUser != nil || !strings.Contains(ans.EndUserSkipped, local.LocalPrincipal("bob")) || ans.ForkedFrom != parent {
		t.Fatalf("bob's fork: %+v, %v; want no end user, skipped naming bob", ans, err)
	}
}

func refusedStartFork(err error) bool {
	var edge messages.InvokeResponse_Error
	return errors.As(err, &edge) && edge.Type == string(review.CodeForbidden) && strings.Contains(edge.Message, "[start-fork]")
}

// A start request's caller proof binds its fork members: a proof the
// forker signed for one parent, for no parent or without rerun_reads,
// sent with another parent, with a forked_from added or with rerun_reads,
// is refused REVIEW_UNAUTHENTICATED, and nothing is recorded; a fork
// naming an end user of its own is refused as invalid. On dynalite and
// the STS stand-in.
func TestAStartProofBindsItsForkMembers(t *testing.T) {
	e := startChildEnv(t)
	s := newStartLane(t, e)
	start, _ := endUserLanes(t, e, s)
	ctx := t.Context()
	const sm = "arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_weekly:"
	parent, other, fork := sm+"run-bind-parent", sm+"run-bind-other", sm+"run-bind-fork"
	for _, p := range []string{parent, other} {
		if _, err := e.store.RecordFork(ctx, review.Fork{ParentRunID: p, ForkRunID: fork, ForkedBy: local.LocalPrincipal("alice"), ForkedAt: time.Now(), ParentStatus: "SUCCEEDED"}); err != nil {
			t.Fatal(err)
		}
	}
	_, digest, _ := tool.InputDigest([]byte(`{"input":{},"meta":{}}`))
	c, err := s.keys.Credentials("alice")
	if err != nil {
		t.Fatal(err)
	}
	sign := func(r review.StartRequest) string {
		p, err := caller.Sign(ctx, credentials.StaticCredentialsProvider{Value: c}, s.sts.Endpoint(), local.Region, review.StartBindingOf(&r), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := review.StartRequest{Action: review.StartAction, ExecutionARN: fork, InputDigest: digest}
	signedFor := func(from string, rerun bool) review.StartRequest {
		r := base
		r.ForkedFrom, r.RerunReads = from, rerun
		return r
	}
	for name, cc := range map[string]struct {
		signed, sent review.StartRequest
		code         review.Code
	}{
		"another parent":       {signedFor(parent, false), signedFor(other, false), review.CodeUnauthenticated},
		"forked_from added":    {signedFor("", false), signedFor(parent, false), review.CodeUnauthenticated},
		"rerun_reads added":    {signedFor(parent, false), signedFor(parent, true), review.CodeUnauthenticated},
		"forked_from dropped":  {signedFor(parent, false), signedFor("", false), review.CodeUnauthenticated},
		"an end user, forking": {signedFor(parent, false), func() review.StartRequest { r := signedFor(parent, false); r.EndUser = "customer-42"; return r }(), review.CodeInvalid},
	} {
		req := cc.sent
		req.Proof = sign(cc.signed)
		b, _ := json.Marshal(req)
		_, err := start.Handle(ctx, b)
		var edge messages.InvokeResponse_Error
		if !errors.As(err, &edge) || edge.Type != string(cc.code) {
			t.Errorf("%s: %v, want %s", name, err, cc.code)
		}
		if strings.Contains(fmt.Sprint(err), req.Proof[:40]) {
			t.Errorf("%s: the error quotes the proof", name)
		}
		if _, err := e.store.RunStart(ctx, fork); !errors.Is(err, review.ErrNotFound) {
			t.Fatalf("%s: a start was recorded: %v", name, err)
		}
	}
}
