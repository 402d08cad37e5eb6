package decision_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/functions/review-decision/decision"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/review/stepfunctions"
)

// Step Functions accepts SendTaskSuccess (the token is spent), but the
// answer is lost on the way back (connection reset). The delivery is sent
// once per request (no SDK retry, which Step Functions would answer
// TaskTimedOut for the spent token), so the decision is not recorded as
// TASK_ENDED, and the approval the execution received stays usable.
func TestDeliveredApprovalIsNotRecordedAsTaskEnded(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	r := s.pending(t, nil)
	var first atomic.Bool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		out, err := http.NewRequest(req.Method, s.fake.URL+req.URL.Path, bytes.NewReader(body))
		if err != nil {
			t.Error(err)
			return
		}
		out.Header = req.Header.Clone()
		resp, err := http.DefaultClient.Do(out)
		if err != nil {
			t.Error(err)
			return
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if first.CompareAndSwap(false, true) {
			// Step Functions has taken the call; its answer is lost.
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		w.Write(answer)
	}))
	defer front.Close()
	deps := s.deps
	deps.Tasks = stepfunctions.Sender{Client: sfn.New(sfn.Options{BaseEndpoint: aws.String(front.URL), Region: local.Region,
		Credentials: credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")})}
	s.svc = decision.NewService(deps)

	res, err := s.decide(t, "alice", r.ID, review.Approve, "ok")
	if n := len(s.fake.Accepted(r.TaskToken)); n != 1 {
		t.Fatalf("Step Functions accepted %d deliveries, want 1 (the setup failed)", n)
	}
	rec, gerr := s.store.Get(context.Background(), r.ID)
	if gerr != nil {
		t.Fatal(gerr)
	}
	check := review.CheckApproval(rec, review.Use{RunID: rec.RunID, Step: rec.Of, Tool: rec.Tool, ToolsetID: rec.ToolsetID,
		InputDigest: rec.InputDigest, Key: rec.RunID + "/2", Now: time.Now()})
	if codeOf(err) == review.CodeTaskEnded || rec.Delivery == review.TaskEnded || !check.Allowed {
		t.Fatalf("Step Functions accepted the approval, but the reviewer was told %v (result %+v); record delivery %s; "+
			"the dispatcher will refuse the approval the execution now carries: %s", err, res, rec.Delivery, check.Reason)
	}
}

// review list reads at most dynamo.MaxList (1000) items of a status,
// oldest first, and only then filters out expired reviews and those whose
// reviewers do not admit the caller. A thousand older pending reviews of
// another team (or a thousand expired ones that the TTL has not deleted
// yet: dynalite never does, DynamoDB does so late) hide a live review from
// its reviewer for good: its run waits until it times out.
func TestListShowsLiveReviewsBehindOthers(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	past := s.store.WithClock(func() time.Time { return time.Now().Add(-time.Hour) })
	saved := s.store
	s.store = past
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := 0; i < dynamo.MaxList; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			token := fmt.Sprintf("token-old-%d-%s", i, review.NewID())
			p := review.Params{Requester: "arn:aws:iam::000000000000:user/requester", ID: review.IDForToken(token), TaskToken: token, RunID: "arn:aws:states:us-east-1:123456789012:execution:sm:old",
				Step: "approve", Of: "send", Tool: "send-email", ToolsetID: "ts_f7826302d51ea15dba1ab8b9cf962a58",
				Input: json.RawMessage(`{"to":["team@example.com"],"subject":"s","text":"t"}`), TimeoutSeconds: 60,
				Reviewers: []string{"arn:aws:iam::*:user/other-team-*"}}
			r, err := review.New(p)
			if err != nil {
				t.Error(err)
				return
			}
			if _, _, err := past.Create(context.Background(), r); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	s.store = saved
	live := s.pending(t, func(p *review.Params) { p.Reviewers = []string{"arn:aws:iam::*:user/editor-*"} })
	out, err := s.do(t, "editor-alice", decision.Request{Action: review.ActionList})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range out.(*review.ListResult).Reviews {
		if v.ReviewID == live.ID {
			return
		}
	}
	t.Fatalf("alice's live pending review %s is not listed: the listing stopped at the %d oldest items (expired, or other reviewers')", live.ID, dynamo.MaxList)
}
