package review_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/tool"
)

// A direct-lane request and a review Task carry the one ReviewedCall: the
// same members, in the same order, with only their own around it.
func TestLaneRequestAndReviewTaskShareTheReviewedCall(t *testing.T) {
	call := tool.FieldNames(tool.ReviewedCall{})
	want := []string{"run_id", "step", "of", "tool", "toolset_id", "input", "reviewers", "timeout_seconds"}
	if diff := cmp.Diff(want, call); diff != "" {
		t.Fatalf("ReviewedCall members (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(slices.Concat([]string{"task_token"}, call, []string{"requester", "traceparent", "kind", "ask", "editable", "notify"}), tool.FieldNames(tool.ReviewTask{})); diff != "" {
		t.Errorf("ReviewTask members (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(slices.Concat([]string{"action", "review_id"}, call, []string{"proof"}), tool.FieldNames(review.LaneRequest{})); diff != "" {
		t.Errorf("LaneRequest members (-want +got):\n%s", diff)
	}
	// Every member of a review Task stays required but those added since
	// the first (traceparent, kind, ask, editable, notify), which the
	// review Tasks of definitions published before them lack.
	added := []string{"traceparent", "kind", "ask", "editable", "notify"}
	for _, m := range tool.FieldNames(tool.ReviewTask{}) {
		if tool.Optional(tool.ReviewTask{}, m) != slices.Contains(added, m) {
			t.Errorf("ReviewTask member %s is optional", m)
		}
	}
}

// A status request as the CLI sent it before the call was embedded (no
// call members at all) decodes to the same request as one with them zero.
func TestLaneRequestStatusDecodesWithOrWithoutTheCallMembers(t *testing.T) {
	var before, now review.LaneRequest
	if err := json.Unmarshal([]byte(`{"action":"status","review_id":"r-1","proof":"p"}`), &before); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(review.LaneRequest{Action: "status", ReviewID: "r-1", Proof: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &now); err != nil {
		t.Fatal(err)
	}
	now.Input = nil // "input": null decodes to the raw null
	if diff := cmp.Diff(before, now); diff != "" {
		t.Errorf("status request (-before +now):\n%s", diff)
	}
	if before.ReviewID != "r-1" || before.Proof != "p" || before.RunID != "" {
		t.Errorf("decoded %+v", before)
	}
}
