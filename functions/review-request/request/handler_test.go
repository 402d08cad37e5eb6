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
	h := &request.Handler{Lane: lane.Direct}
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
