package decision_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/functions/review-decision/decision"
	"github.com/toolgate/toolgate/shared/caller"
)

var update = flag.Bool("update", false, "rewrite testdata/url_responses.golden")

// bindingEcho is a caller verifier that refuses every proof with a
// message naming the binding it was asked for: a fake, since what this
// test checks is which route a request reaches and what it answers, and
// the STS stand-in would refuse these proofs without saying which binding
// they were checked for.
type bindingEcho struct{}

func (bindingEcho) Verify(ctx context.Context, proof string, b caller.Binding) (caller.Identity, error) {
	return caller.Identity{}, &caller.Error{Reason: caller.Refused, Message: fmt.Sprintf("proof %q for %s %q", proof, b.Action, b.Target)}
}

func (v bindingEcho) VerifyAt(ctx context.Context, proof string, b caller.Binding, _ time.Time) (caller.Identity, error) {
	return v.Verify(ctx, proof, b)
}

// urlRequest is a Function URL event as Lambda sends it (payload format
// 2.0).
func urlRequest(method, rawPath, rawQuery string, headers map[string]string, body string, b64 bool) events.LambdaFunctionURLRequest {
	ev := events.LambdaFunctionURLRequest{Version: "2.0", RawPath: rawPath, RawQueryString: rawQuery, Headers: headers, Body: body, IsBase64Encoded: b64}
	if rawQuery != "" {
		ev.QueryStringParameters = map[string]string{}
		for _, kv := range strings.Split(rawQuery, "&") {
			k, v, _ := strings.Cut(kv, "=")
			ev.QueryStringParameters[k] = v
		}
	}
	ev.RequestContext.HTTP.Method = method
	ev.RequestContext.HTTP.Path = rawPath
	ev.RequestContext.DomainName = "abc.lambda-url.us-east-1.on.aws"
	ev.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{
		AccessKey: "AKIAEXAMPLE", AccountID: "000000000000", CallerID: "AIDAEXAMPLE", UserARN: "arn:aws:iam::000000000000:user/someone"}}
	return ev
}

// Every route and every refusal of the Function URL answers with the
// status, headers and body in testdata/url_responses.golden: the routes
// (GET /reviews with and without a status, GET and POST /reviews/{id},
// trailing slashes), the caller proof header in any letter case, the
// decision body plain and base64-encoded, and each refusal (no route, a
// method a route does not take, a body that is not base64 or not the
// decision's JSON, an event that is not a Function URL request).
func TestURLResponses(t *testing.T) {
	proof := map[string]string{"x-toolgate-caller-proof": "P"}
	cases := []struct {
		name string
		ev   events.LambdaFunctionURLRequest
	}{
		{"list", urlRequest("GET", "/reviews", "", proof, "", false)},
		{"list, trailing slash", urlRequest("GET", "/reviews/", "", proof, "", false)},
		{"list approved", urlRequest("GET", "/reviews", "status=approved", proof, "", false)},
		{"list, proof header in other case", urlRequest("GET", "/reviews", "", map[string]string{"X-Toolgate-Caller-Proof": "Q"}, "", false)},
		{"list, no proof", urlRequest("GET", "/reviews", "", nil, "", false)},
		{"list, lower-case method", urlRequest("get", "/reviews", "", proof, "", false)},
		{"show", urlRequest("GET", "/reviews/rv_1", "", proof, "", false)},
		{"show, trailing slash", urlRequest("GET", "/reviews/rv_1/", "", proof, "", false)},
		{"refused: an escaped slash first", urlRequest("GET", "%2Freviews", "a=b", proof, "", false)},
		{"refused: an escaped letter", urlRequest("GET", "/%72eviews", "", proof, "", false)},
		{"refused: an escaped slash last", urlRequest("GET", "/reviews/rv_1%2F", "", proof, "", false)},
		{"refused: HEAD on the list", urlRequest("HEAD", "/reviews", "", proof, "", false)},
		{"refused: HEAD on a review", urlRequest("HEAD", "/reviews/rv_1", "", proof, "", false)},
		{"list, a repeated status joined as a Function URL joins it", urlRequest("GET", "/reviews", "status=pending&status=approved", proof, "", false)},
		{"refused: a query with a semicolon", urlRequest("GET", "/reviews", "status=approved;x=1", proof, "", false)},
		{"decide, bad id", urlRequest("POST", "/reviews/rv_1", "", proof, `{"decision":"approve"}`, false)},
		{"decide, no proof", urlRequest("POST", "/reviews/rv_1", "", nil, `{"decision":"approve"}`, false)},
		{"decide, base64", urlRequest("POST", "/reviews/rv_1", "", nil, base64.StdEncoding.EncodeToString([]byte(`{"decision":"reject","reason":"no"}`)), true)},
		{"decide, bad decision", urlRequest("POST", "/reviews/rv_1", "", proof, `{"decision":"maybe"}`, false)},
		{"decide, reject without reason", urlRequest("POST", "/reviews/rv_1", "", proof, `{"decision":"reject"}`, false)},
		{"decide, not base64", urlRequest("POST", "/reviews/rv_1", "", proof, "!!!", true)},
		{"decide, unknown member", urlRequest("POST", "/reviews/rv_1", "", proof, `{"decision":"approve","who":"me"}`, false)},
		{"decide, not JSON", urlRequest("POST", "/reviews/rv_1", "", proof, `approve`, false)},
		{"decide, empty body", urlRequest("POST", "/reviews/rv_1", "", proof, ``, false)},
		{"PUT on a review", urlRequest("PUT", "/reviews/rv_1", "", proof, "", false)},
		{"DELETE on a review", urlRequest("DELETE", "/reviews/rv_1", "", proof, "", false)},
		{"POST on the list", urlRequest("POST", "/reviews", "", proof, `{}`, false)},
		{"a nested path", urlRequest("GET", "/reviews/rv_1/more", "", proof, "", false)},
		{"the root", urlRequest("GET", "/", "", proof, "", false)},
		{"another path", urlRequest("GET", "/solutions", "", proof, "", false)},
		{"a double slash", urlRequest("GET", "/reviews//rv_1", "", proof, "", false)},
		{"a long path", urlRequest("GET", "/"+strings.Repeat("x", 200), "", proof, "", false)},
	}
	h := urlHandler()
	var got strings.Builder
	for _, c := range cases {
		payload, err := json.Marshal(c.ev)
		if err != nil {
			t.Fatal(err)
		}
		out, err := h.Handle(context.Background(), payload)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		fmt.Fprintf(&got, "%s\n%s\n", c.name, out)
	}
	// An event with requestContext that does not decode as one.
	out, err := h.Handle(context.Background(), json.RawMessage(`{"requestContext":7}`))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&got, "%s\n%s\n", "not a Function URL request", out)
	golden := filepath.Join("testdata", "url_responses.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("responses differ from %s (-want +got):\n%s", golden, diff)
	}
}

// urlHandler is the function's handler with bindingEcho as its verifier
// and no store: every request the tests send is answered before the table
// would be read.
func urlHandler() *decision.Handler {
	return decision.NewHandler(decision.NewService(decision.Deps{Callers: bindingEcho{}, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}))
}
