package functions_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/reviewtest"
	"github.com/toolgate/toolgate/shared/tool"
)

// An approval with edits, end to end: review-request stores the editable
// members, review-decision takes edits bound by the caller proof and
// sends the decision JSON with the edited members, and send-email, sent
// the reviewed input, sends the edited one (SES emulator); its row names
// the edited input's digest and the editor; the same call again replays.
func TestAnEditedApprovalSendsTheEditedEmailUnderRIE(t *testing.T) {
	s := newReviewStack(t)
	task := s.task(t, "token-edit", func(m map[string]any) { m["kind"], m["editable"] = "call", []string{"subject", "text"} })
	id := s.requestReview(t, task)
	r := reviewtest.MustGet(t, s.reviews, id)
	edits := json.RawMessage(`{"subject":"Weekly digest, edited"}`)
	decide := func(as string, signedEdits json.RawMessage) (json.RawMessage, string, string) {
		b, err := review.DecideBinding(id, review.Approve, r.InputDigest, nil, signedEdits)
		if err != nil {
			t.Fatal(err)
		}
		return call(t, s.decision, map[string]any{"action": "decide", "review_id": id, "decision": "approve", "edits": edits,
			"proof": s.callers.Proof(t, as, b)})
	}
	if _, code, msg := decide("alice", nil); code != string(review.CodeUnauthenticated) {
		t.Fatalf("a proof made without the edits: %s %s", code, msg)
	}
	if _, code, msg := decide(requester, edits); code != string(review.CodeSelfApproval) {
		t.Fatalf("the requester edits: %s %s", code, msg)
	}
	if _, code, msg := decide("alice", edits); code != "" {
		t.Fatalf("approve with edits: %s %s", code, msg)
	}
	calls := s.sfn.Calls("token-edit")
	if len(calls) != 1 || !strings.Contains(calls[0].Output, `"edited":["subject"]`) || !strings.Contains(calls[0].Output, `"reviewed_digest":"`+r.InputDigest+`"`) {
		t.Fatalf("Step Functions calls %+v", calls)
	}
	run := task["run_id"].(string)
	envelope := map[string]any{"tool": "send-email", "toolset_id": s.ts.ID, "run_id": run, "seq": 1, "step": "send",
		"idempotency_key": fmt.Sprintf("%s/%d", run, 1), "attempt": 1, "tolerate_duplicates": false,
		"input": task["input"], "approval": json.RawMessage(calls[0].Output)}
	if _, code, msg := call(t, s.send, envelope); code != "" {
		t.Fatalf("send: %s %s", code, msg)
	}
	if _, code, msg := call(t, s.send, envelope); code != "" {
		t.Fatalf("the same call again: %s %s", code, msg)
	}
	resp, err := http.Get(s.ses.Endpoint() + "/store")
	if err != nil {
		t.Fatal(err)
	}
	var mail struct{ Emails []struct{ Subject string } }
	json.NewDecoder(resp.Body).Decode(&mail)
	resp.Body.Close()
	if len(mail.Emails) != 1 || mail.Emails[0].Subject != "Weekly digest, edited" {
		t.Fatalf("mails %+v, want the edited one once", mail.Emails)
	}
	cur := reviewtest.MustGet(t, s.reviews, id)
	_, sent, _ := tool.InputDigest(r.Input)
	rows := ledgertest.RunRows(t, s.store, run)
	if len(rows) == 0 || rows[0].InputDigest != sent || rows[0].EditedDigest != cur.ApprovedDigest || rows[0].Editor != local.LocalPrincipal("alice") {
		t.Fatalf("rows %+v", rows)
	}
}
