package request_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/functions/review-request/request"
	"github.com/toolgate/toolgate/shared/lane"
)

// The direct lane's requests are decoded as strictly as the review Task's:
// members by their exact names, once each, valid UTF-8; a review Task's
// Nothing is read or written for them.
func TestLaneRequestsAreStrict(t *testing.T) {
	h := request.NewHandler(request.Config{Lane: lane.Direct}, request.Deps{})
	for name, payload := range map[string]string{
		"a member in other letter case": `{"action":"request","RUN_ID":"r1"}`,
		"a member twice":                `{"action":"request","run_id":"r1","run_id":"r2"}`,
		"the action twice, cased":       `{"action":"request","Action":"status"}`,
		"not UTF-8":                     "{\"action\":\"status\",\"review_id\":\"rv_\xff\"}",
	} {
		_, err := h.Handle(context.Background(), json.RawMessage(payload))
		if err == nil || !strings.Contains(err.Error(), "REVIEW_INVALID_REQUEST") {
			t.Errorf("%s: %v, want REVIEW_INVALID_REQUEST", name, err)
		}
	}
}

// The start alias takes start requests only, and a start request is
// refused on the other aliases: a Publisher, who may invoke the start
// alias, can neither send a review Task, a Starter check or a direct-lane
// request through it, nor record a start through another alias. Nothing
// is read or written for them.
func TestStartLaneTakesStartRequestsOnly(t *testing.T) {
	start := `{"action":"run.start","execution_arn":"arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_x:run-1","input_digest":"sha256:` + strings.Repeat("0", 64) + `","proof":"p"}`
	for name, c := range map[string]struct {
		lane    lane.Lane
		payload string
		want    string
	}{
		"a review Task on the start alias":         {lane.Start, `{"task_token":"t","run_id":"arn:x","step":"s","of":"o","tool":"send-email","toolset_id":"ts","input":{},"reviewers":[],"timeout_seconds":60,"requester":"r"}`, "REVIEW_INVALID_REQUEST"},
		"a Starter check on the start alias":       {lane.Start, `{"check":"run.start","execution_arn":"arn:x","execution_input":{},"start_time":"2026-01-01T00:00:00Z"}`, "REVIEW_INVALID_REQUEST"},
		"a direct-lane request on the start alias": {lane.Start, `{"action":"request","run_id":"direct/x/1"}`, "REVIEW_INVALID_REQUEST"},
		"a start request with another member":      {lane.Start, strings.Replace(start, `"proof"`, `"starter":"me","proof"`, 1), "REVIEW_INVALID_REQUEST"},
		"a start request with a bad digest":        {lane.Start, strings.Replace(start, "sha256:", "md5:", 1), "REVIEW_INVALID_REQUEST"},
		"a start request on the sfn alias":         {lane.SFN, start, "REVIEW_FORBIDDEN"},
		"a start request on the direct alias":      {lane.Direct, start, "REVIEW_INVALID_REQUEST"},
	} {
		h := request.NewHandler(request.Config{Lane: c.lane}, request.Deps{})
		_, err := h.Handle(context.Background(), json.RawMessage(c.payload))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %s", name, err, c.want)
		}
	}
}
