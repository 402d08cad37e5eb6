package request_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/tool"
)

// reviewTask is a review Task's payload for a run e's table records the
// start of (its starter the requester), with members set or replaced.
func (e *parkEnv) reviewTask(t *testing.T, token string, set map[string]any) json.RawMessage {
	t.Helper()
	run := "arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_orders:" + strings.TrimPrefix(token, "token-")
	starter := "arn:aws:iam::000000000000:user/starter"
	if err := e.reviews.RecordStart(t.Context(), run, starter); err != nil {
		t.Fatal(err)
	}
	p := map[string]any{"task_token": token, "run_id": run, "step": "approve", "of": "send", "tool": "send-email", "toolset_id": e.toolset,
		"input": map[string]any{"to": []string{"team@example.com"}, "subject": "s", "text": "t"}, "reviewers": []string{},
		"timeout_seconds": 3600, "requester": starter, "kind": "call"}
	for k, v := range set {
		if v == nil {
			delete(p, k)
			continue
		}
		p[k] = v
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAReviewThatShowsValuesIsStoredWithoutATool(t *testing.T) {
	e := newParkEnv(t)
	token := "token-" + review.NewID()
	payload := e.reviewTask(t, token, map[string]any{"kind": "show", "of": "", "tool": "", "ask": map[string]any{"type": "string", "maxLength": 200},
		"input": map[string]any{"total": 42}, "notify": []string{"ops@example.com"}})
	if _, err := e.h.Handle(t.Context(), payload); err != nil {
		t.Fatal(err)
	}
	r, err := e.reviews.Get(t.Context(), review.IDForToken(token))
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != tool.ReviewShow || r.Of != "" || r.Tool != "" || string(r.Ask) != `{"maxLength":200,"type":"string"}` {
		t.Fatalf("%+v", r)
	}
	// The same Task again finds it; the same token with another question
	// is refused.
	if _, err := e.h.Handle(t.Context(), payload); err != nil {
		t.Fatalf("asked again: %v", err)
	}
	other := strings.Replace(string(payload), `"maxLength":200`, `"maxLength":300`, 1)
	if _, err := e.h.Handle(t.Context(), json.RawMessage(other)); errorType(t, err) != string(review.CodeInvalid) {
		t.Fatalf("another question under the same token: %v", err)
	}
}

func TestACallReviewStoresItsQuestionAndEditableMembers(t *testing.T) {
	e := newParkEnv(t)
	token := "token-" + review.NewID()
	if _, err := e.h.Handle(t.Context(), e.reviewTask(t, token, map[string]any{"kind": nil, "ask": map[string]any{"enum": []string{"a", "b"}},
		"editable": []string{"subject", "text"}})); err != nil {
		t.Fatal(err)
	}
	r, err := e.reviews.Get(t.Context(), review.IDForToken(token))
	if err != nil || r.Kind != tool.ReviewOfCall || strings.Join(r.Editable, ",") != "subject,text" || string(r.Ask) != `{"enum":["a","b"]}` {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestReviewTasksWithBadShowsQuestionsEditsOrNoticesAreRefused(t *testing.T) {
	e := newParkEnv(t)
	many := make([]string, tool.MaxNotify+1)
	for i := range many {
		many[i] = fmt.Sprintf("ops%d@example.com", i)
	}
	for name, c := range map[string]struct {
		set  map[string]any
		want string
	}{
		"a show review with a tool":  {map[string]any{"kind": "show", "of": ""}, `reviews no tool call`},
		"a bad ask schema":           {map[string]any{"ask": map[string]any{"type": 7}}, `ask does not compile`},
		"editable on a show review":  {map[string]any{"kind": "show", "of": "", "tool": "", "editable": []string{"text"}}, `editable is for reviews of a call`},
		"too many notify addresses":  {map[string]any{"notify": many}, `notify lists 51 addresses`},
		"a notify entry not an addr": {map[string]any{"notify": []string{"ops"}}, `notify[0] is not an addr-spec`},
	} {
		token := "token-" + review.NewID()
		_, err := e.h.Handle(t.Context(), e.reviewTask(t, token, c.set))
		if errorType(t, err) != string(review.CodeInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want REVIEW_INVALID_REQUEST mentioning %q", name, err, c.want)
			continue
		}
		if _, err := e.reviews.Get(t.Context(), review.IDForToken(token)); err == nil {
			t.Errorf("%s: the refused review was stored", name)
		}
	}
}
