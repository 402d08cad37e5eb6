package decision_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/functions/review-decision/decision"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// withToolsets is s with a catalog toolset of tools (send-email when
// none is named) registered in its table and the service reading it (Deps.Toolsets), as review-decision's main wires
// it; it returns the toolset's id.
func (s *stack) withToolsets(t *testing.T, tools ...string) string {
	t.Helper()
	if len(tools) == 0 {
		tools = []string{"send-email"}
	}
	l := ledger.New(s.db, s.table)
	ts, err := toolset.FromCatalog(catalog.Default(), tools, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.RegisterToolset(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	s.deps.Toolsets = l
	s.svc = decision.NewService(s.deps)
	return ts.ID
}

// decideWith decides review id as the local identity as with an answer
// and edits, its proof bound to them (review.DecideBinding); signed, when
// not nil, replaces what the proof is bound to.
func (s *stack) decideWith(t *testing.T, as, id string, v review.Verdict, answer, edits string, signed *[2]string) (*review.DecideResult, error) {
	t.Helper()
	r, err := s.store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	raw := func(x string) json.RawMessage {
		if x == "" {
			return nil
		}
		return json.RawMessage(x)
	}
	ba, be := raw(answer), raw(edits)
	if signed != nil {
		ba, be = raw(signed[0]), raw(signed[1])
	}
	b, err := review.DecideBinding(id, v, r.InputDigest, ba, be)
	if err != nil { // an answer that is not JSON: refused before its proof is read
		b, _ = review.DecideBinding(id, v, r.InputDigest, nil, nil)
	}
	req := decision.Request{Action: review.ActionDecide, ReviewID: id, Decision: v, Reason: "because", Answer: raw(answer), Edits: raw(edits)}
	req.Proof = s.callers.Proof(t, as, b)
	_, res, err := s.svc.Do(context.Background(), req)
	if err != nil {
		return nil, err
	}
	return res.(*review.DecideResult), nil
}

// asking is a pending review that asks a short string and lets subject
// and text be edited.
func (s *stack) asking(t *testing.T, toolsetID string) *review.Review {
	return s.pending(t, func(p *review.Params) {
		p.Ask, p.Editable = json.RawMessage(`{"type":"string","maxLength":10}`), []string{"subject", "text"}
		if toolsetID != "" {
			p.ToolsetID = toolsetID
		}
	})
}

func TestAnAnswerIsCheckedByTheQuestion(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	r := s.asking(t, "")
	for name, c := range map[string]struct{ answer, want string }{
		"too long":      {`"secret-answer-text"`, `/ fails "maxLength"`},
		"another type":  {`{"secret-answer-text":1}`, `/ fails "type"`},
		"not given":     {``, `must carry an answer`},
		"not even JSON": {`secret`, `must be JSON`},
	} {
		_, err := s.decideWith(t, "alice", r.ID, review.Approve, c.answer, "", nil)
		if codeOf(err) != review.CodeInvalid || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want REVIEW_INVALID_REQUEST mentioning %q", name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the refusal quotes the answer: %v", name, err)
		}
	}
	if cur, _ := s.store.Get(context.Background(), r.ID); cur.Status != review.Pending {
		t.Fatalf("a refused answer decided the review: %s", cur.Status)
	}
	res, err := s.decideWith(t, "alice", r.ID, review.Approve, `"yes"`, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := s.fake.Calls(r.TaskToken)
	var d map[string]json.RawMessage
	if len(calls) != 1 || json.Unmarshal([]byte(calls[0].Output), &d) != nil || string(d["answer"]) != `"yes"` || string(res.Decision.Answer) != `"yes"` {
		t.Fatalf("%+v %s", calls, res.Decision.Answer)
	}
	// The same approval again is a no-op; another answer is a conflict.
	if again, err := s.decideWith(t, "alice", r.ID, review.Approve, `"yes"`, "", nil); err != nil || again.Changed {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	if _, err := s.decideWith(t, "alice", r.ID, review.Approve, `"no"`, "", nil); codeOf(err) != review.CodeConflict {
		t.Fatalf("another answer: %v", err)
	}
}

func TestARejectionCarriesNoAnswer(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	r := s.asking(t, "")
	if _, err := s.decideWith(t, "alice", r.ID, review.Reject, `"no"`, "", nil); codeOf(err) != review.CodeInvalid || !strings.Contains(err.Error(), "approvals only") {
		t.Fatalf("%v", err)
	}
	res, err := s.decideWith(t, "alice", r.ID, review.Reject, "", "", nil)
	if err != nil || res.Status != review.Rejected || string(res.Decision.Answer) != "null" {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestAnApprovalWithEditsRecordsTheApprovedInput(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	r := s.asking(t, s.withToolsets(t))
	res, err := s.decideWith(t, "alice", r.ID, review.Approve, `"ok"`, `{"text":"Four items."}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, want, _ := tool.InputDigest(json.RawMessage(`{"to":["team@example.com"],"subject":"s","text":"Four items."}`))
	d := res.Decision
	if !slices.Equal(d.Edited, []string{"text"}) || d.ReviewedDigest != r.InputDigest || d.InputDigest != want {
		t.Fatalf("decision %+v", d)
	}
	cur, _ := s.store.Get(context.Background(), r.ID)
	if string(cur.Edits) != `{"text":"Four items."}` || cur.ApprovedDigest != want || string(cur.Answer) != `"ok"` {
		t.Fatalf("item %+v", cur)
	}
	var out map[string]json.RawMessage
	calls := s.fake.Calls(r.TaskToken)
	if len(calls) != 1 || json.Unmarshal([]byte(calls[0].Output), &out) != nil || string(out["input_digest"]) != `"`+want+`"` ||
		string(out["reviewed_digest"]) != `"`+r.InputDigest+`"` || string(out["edited"]) != `["text"]` {
		t.Fatalf("Step Functions calls %+v", calls)
	}
}

func TestEditsThatAreNotAllowedAreRefused(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	r := s.asking(t, s.withToolsets(t))
	for name, c := range map[string]struct{ edits, want string }{
		"a member not editable":    {`{"to":["x@example.com"]}`, `member "to" is not editable`},
		"failing the tool schema":  {`{"subject":42}`, `/subject fails "type"`},
		"edits that are no object": {`["text"]`, `JSON object`},
	} {
		_, err := s.decideWith(t, "alice", r.ID, review.Approve, `"ok"`, c.edits, nil)
		if codeOf(err) != review.CodeInvalid || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want REVIEW_INVALID_REQUEST mentioning %q", name, err, c.want)
		}
	}
	if cur, _ := s.store.Get(context.Background(), r.ID); cur.Status != review.Pending {
		t.Fatalf("refused edits decided the review: %s", cur.Status)
	}
}

// A tool its toolset does not gate runs without an approval, so no
// dispatcher would merge edits into its call: they are refused rather
// than recorded as approved and then never sent.
func TestEditsOfAToolThatRunsWithoutAnApprovalAreRefused(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	tsID := s.withToolsets(t, "structured-data-fetch")
	r := s.pending(t, func(p *review.Params) {
		p.Of, p.Tool, p.ToolsetID, p.Editable = "fetch", "structured-data-fetch", tsID, []string{"select"}
		p.Input = json.RawMessage(`{"url":"https://data.example.com/x.json","select":"/a"}`)
	})
	if _, err := s.decideWith(t, "alice", r.ID, review.Approve, "", `{"select":"/b"}`, nil); codeOf(err) != review.CodeInvalid || !strings.Contains(err.Error(), "runs without an approval") {
		t.Fatalf("%v, want REVIEW_INVALID_REQUEST", err)
	}
	if cur, _ := s.store.Get(context.Background(), r.ID); cur.Status != review.Pending || cur.Edits != nil {
		t.Fatalf("%+v", cur)
	}
}

// Edits the review item cannot hold beside its input (DynamoDB's item
// size) are refused naming the bound, not answered as if the table were
// unavailable, and the review stays pending.
func TestEditsTheReviewItemCannotHoldAreRefused(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	tsID := s.withToolsets(t)
	r := s.pending(t, func(p *review.Params) {
		p.Editable, p.ToolsetID = []string{"text"}, tsID
		p.Input = json.RawMessage(`{"to":["team@example.com"],"subject":"s","text":"` + strings.Repeat("a", 250<<10) + `"}`)
	})
	edits, _ := json.Marshal(map[string]string{"text": strings.Repeat("b", 250<<10)})
	if _, err := s.decideWith(t, "alice", r.ID, review.Approve, "", string(edits), nil); codeOf(err) != review.CodeInvalid || !strings.Contains(err.Error(), "item size") {
		t.Fatalf("%v, want REVIEW_INVALID_REQUEST naming the item size", err)
	}
	if cur, _ := s.store.Get(context.Background(), r.ID); cur.Status != review.Pending {
		t.Fatalf("%+v", cur.Status)
	}
}

// An http read runs without an approval, whatever its step was compiled
// for (a bound method): edits of one are refused, and those of another
// method are taken.
func TestEditsOfAnHTTPReadAreRefused(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	tsID := s.withToolsets(t, "http")
	for method, want := range map[string]review.Code{"GET": review.CodeInvalid, "HEAD": review.CodeInvalid, "POST": ""} {
		r := s.pending(t, func(p *review.Params) {
			p.Of, p.Tool, p.ToolsetID, p.Editable = "call", "http", tsID, []string{"select"}
			p.Input = json.RawMessage(`{"method":"` + method + `","url":"https://api.example.com/x","select":"/a"}`)
		})
		_, err := s.decideWith(t, "alice", r.ID, review.Approve, "", `{"select":"/b"}`, nil)
		if codeOf(err) != want || (want != "" && !strings.Contains(err.Error(), "is a read")) {
			t.Errorf("%s: %v, want %q", method, err, want)
		}
	}
}

func TestTheRequesterCannotApproveWithEdits(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	r := s.pending(t, func(p *review.Params) {
		p.Editable, p.Requester, p.ToolsetID = []string{"text"}, principal("carol"), s.withToolsets(t)
	})
	if _, err := s.decideWith(t, "carol", r.ID, review.Approve, "", `{"text":"mine"}`, nil); codeOf(err) != review.CodeSelfApproval {
		t.Fatalf("%v", err)
	}
	if cur, _ := s.store.Get(context.Background(), r.ID); cur.Status != review.Pending || cur.Edits != nil {
		t.Fatalf("%+v", cur)
	}
}

func TestAProofWithoutTheEditsDecidesNothingWithThem(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	r := s.asking(t, s.withToolsets(t))
	for name, signed := range map[string][2]string{
		"signed without the edits":  {`"ok"`, ``},
		"signed with other edits":   {`"ok"`, `{"text":"other"}`},
		"signed with another reply": {`"no"`, `{"text":"Four items."}`},
	} {
		if _, err := s.decideWith(t, "alice", r.ID, review.Approve, `"ok"`, `{"text":"Four items."}`, &signed); codeOf(err) != review.CodeUnauthenticated {
			t.Errorf("%s: %v, want REVIEW_UNAUTHENTICATED", name, err)
		}
	}
	if cur, _ := s.store.Get(context.Background(), r.ID); cur.Status != review.Pending {
		t.Fatalf("%+v", cur)
	}
}

func TestShowOfAReviewThatShowsValues(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	r := s.pending(t, func(p *review.Params) {
		p.Kind, p.Of, p.Tool, p.Ask = tool.ReviewShow, "", "", json.RawMessage(`{"type":"string","maxLength":10}`)
	})
	res, err := s.do(t, "alice", decision.Request{Action: review.ActionShow, ReviewID: r.ID})
	if err != nil {
		t.Fatal(err)
	}
	v := res.(review.View)
	if v.Kind != tool.ReviewShow || v.Tool != "" || string(v.Ask) != `{"type":"string","maxLength":10}` {
		t.Fatalf("%+v", v)
	}
	list, err := s.do(t, "alice", decision.Request{Action: review.ActionList})
	if err != nil || len(list.(*review.ListResult).Reviews) != 1 || list.(*review.ListResult).Reviews[0].Kind != tool.ReviewShow {
		t.Fatalf("%+v %v", list, err)
	}
	if _, err := s.decideWith(t, "alice", r.ID, review.Approve, `"seen"`, "", nil); err != nil {
		t.Fatal(err)
	}
}

// A decision repeated with the same edits, written another way, is the
// no-op a repeated decision is; with other edits it is a conflict, and
// the edits recorded stay the first ones.
func TestARepeatedApprovalWithOtherEditsIsAConflict(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	r := s.asking(t, s.withToolsets(t))
	if _, err := s.decideWith(t, "alice", r.ID, review.Approve, `"ok"`, `{"text":"Four items.","subject":"S"}`, nil); err != nil {
		t.Fatal(err)
	}
	if again, err := s.decideWith(t, "alice", r.ID, review.Approve, `"ok"`, `{ "subject" : "S", "text" : "Four\u0020items." }`, nil); err != nil || again.Changed {
		t.Fatalf("the same edits again: %+v %v", again, err)
	}
	for name, edits := range map[string]string{"other edits": `{"text":"Five items.","subject":"S"}`, "fewer edits": `{"text":"Four items."}`} {
		if _, err := s.decideWith(t, "bob", r.ID, review.Approve, `"ok"`, edits, nil); codeOf(err) != review.CodeConflict {
			t.Errorf("%s: %v, want REVIEW_CONFLICT", name, err)
		}
	}
	if cur, _ := s.store.Get(context.Background(), r.ID); string(cur.Edits) != `{"subject":"S","text":"Four items."}` || cur.Approver != principal("alice") {
		t.Fatalf("item %s by %s", cur.Edits, cur.Approver)
	}
}
