package functionurl

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// ServePayload serves a Function URL event given as raw JSON, and answers
// anything else with the refusal it is given, as a Function URL response.
func TestServePayloadServesAnEventAndRefusesAnythingElse(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	refused := func() (int, []byte) { return http.StatusBadRequest, []byte(`{"error":"no"}`) }
	for _, tc := range []struct {
		payload string
		status  int
		body    string
	}{
		{`{"rawPath":"/x","requestContext":{"http":{"method":"GET"}}}`, http.StatusTeapot, ""},
		{`[1]`, http.StatusBadRequest, `{"error":"no"}`},
	} {
		out, err := ServePayload(t.Context(), h, json.RawMessage(tc.payload), refused)
		if err != nil {
			t.Fatal(err)
		}
		var resp events.LambdaFunctionURLResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tc.status || resp.Body != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.payload, resp.StatusCode, resp.Body, tc.status, tc.body)
		}
	}
}

// Codes.Status maps each named code to its status and any other, the
// empty code included, to 503.
func TestCodesStatusMapsNamedCodesAndElse503(t *testing.T) {
	c := Codes{Invalid: "X_INVALID", Unauthenticated: "X_UNAUTH", Refused: "X_REFUSED", NotFound: "X_NOT_FOUND"}
	for code, want := range map[string]int{"X_INVALID": 400, "X_UNAUTH": 401, "X_REFUSED": 403, "X_NOT_FOUND": 404, "X_UNAVAILABLE": 503, "": 503} {
		if got := c.Status(code); got != want {
			t.Errorf("%q: %d, want %d", code, got, want)
		}
	}
}
