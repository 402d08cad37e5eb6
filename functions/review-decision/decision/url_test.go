package decision_test

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/functions/review-decision/decision"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/functionurl/functionurltest"
	"github.com/toolgate/toolgate/shared/ledger"
	parkdynamo "github.com/toolgate/toolgate/shared/park/dynamo"
	"github.com/toolgate/toolgate/shared/review/stepfunctions"
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

// urlRequest is functionurltest.Event.
var urlRequest = functionurltest.Event

// Every route and every refusal of the Function URL answers with the
// status, headers and body in testdata/url_responses.golden: the routes
// (GET /reviews with and without a status, GET and POST /reviews/{id},
// GET /parks, GET and POST /parks/{id}, POST /reconciliations, trailing slashes), the caller proof header in any letter case, the
// decision body plain and base64-encoded, and each refusal (no route, a
// method a route does not take, a body that is not base64 or not the
// decision's JSON, an event that is not a Function URL request).
func TestURLResponses(t *testing.T) {
	proof := map[string]string{"x-toolgate-caller-proof": "P"}
	cases := []functionurltest.Case{
		{Name: "list", Ev: urlRequest("GET", "/reviews", "", proof, "", false)},
		{Name: "list, trailing slash", Ev: urlRequest("GET", "/reviews/", "", proof, "", false)},
		{Name: "list approved", Ev: urlRequest("GET", "/reviews", "status=approved", proof, "", false)},
		{Name: "list, proof header in other case", Ev: urlRequest("GET", "/reviews", "", map[string]string{"X-Toolgate-Caller-Proof": "Q"}, "", false)},
		{Name: "list, no proof", Ev: urlRequest("GET", "/reviews", "", nil, "", false)},
		{Name: "list, lower-case method", Ev: urlRequest("get", "/reviews", "", proof, "", false)},
		{Name: "show", Ev: urlRequest("GET", "/reviews/rv_1", "", proof, "", false)},
		{Name: "show, trailing slash", Ev: urlRequest("GET", "/reviews/rv_1/", "", proof, "", false)},
		{Name: "refused: an escaped slash first", Ev: urlRequest("GET", "%2Freviews", "a=b", proof, "", false)},
		{Name: "refused: an escaped letter", Ev: urlRequest("GET", "/%72eviews", "", proof, "", false)},
		{Name: "refused: an escaped slash last", Ev: urlRequest("GET", "/reviews/rv_1%2F", "", proof, "", false)},
		{Name: "refused: HEAD on the list", Ev: urlRequest("HEAD", "/reviews", "", proof, "", false)},
		{Name: "refused: HEAD on a review", Ev: urlRequest("HEAD", "/reviews/rv_1", "", proof, "", false)},
		{Name: "list, a repeated status joined as a Function URL joins it", Ev: urlRequest("GET", "/reviews", "status=pending&status=approved", proof, "", false)},
		{Name: "refused: a query with a semicolon", Ev: urlRequest("GET", "/reviews", "status=approved;x=1", proof, "", false)},
		{Name: "decide, bad id", Ev: urlRequest("POST", "/reviews/rv_1", "", proof, `{"decision":"approve"}`, false)},
		{Name: "decide, no proof", Ev: urlRequest("POST", "/reviews/rv_1", "", nil, `{"decision":"approve"}`, false)},
		{Name: "decide, base64", Ev: urlRequest("POST", "/reviews/rv_1", "", nil, base64.StdEncoding.EncodeToString([]byte(`{"decision":"reject","reason":"no"}`)), true)},
		{Name: "decide, bad decision", Ev: urlRequest("POST", "/reviews/rv_1", "", proof, `{"decision":"maybe"}`, false)},
		{Name: "decide, reject without reason", Ev: urlRequest("POST", "/reviews/rv_1", "", proof, `{"decision":"reject"}`, false)},
		{Name: "decide, not base64", Ev: urlRequest("POST", "/reviews/rv_1", "", proof, "!!!", true)},
		{Name: "decide, unknown member", Ev: urlRequest("POST", "/reviews/rv_1", "", proof, `{"decision":"approve","who":"me"}`, false)},
		{Name: "decide, not JSON", Ev: urlRequest("POST", "/reviews/rv_1", "", proof, `approve`, false)},
		{Name: "decide, empty body", Ev: urlRequest("POST", "/reviews/rv_1", "", proof, ``, false)},
		{Name: "PUT on a review", Ev: urlRequest("PUT", "/reviews/rv_1", "", proof, "", false)},
		{Name: "DELETE on a review", Ev: urlRequest("DELETE", "/reviews/rv_1", "", proof, "", false)},
		{Name: "POST on the list", Ev: urlRequest("POST", "/reviews", "", proof, `{}`, false)},
		{Name: "a nested path", Ev: urlRequest("GET", "/reviews/rv_1/more", "", proof, "", false)},
		{Name: "the root", Ev: urlRequest("GET", "/", "", proof, "", false)},
		{Name: "another path", Ev: urlRequest("GET", "/solutions", "", proof, "", false)},
		{Name: "a double slash", Ev: urlRequest("GET", "/reviews//rv_1", "", proof, "", false)},
		{Name: "a long path", Ev: urlRequest("GET", "/"+strings.Repeat("x", 200), "", proof, "", false)},
		{Name: "parks: list", Ev: urlRequest("GET", "/parks", "", proof, "", false)},
		{Name: "parks: list resumed", Ev: urlRequest("GET", "/parks/", "status=resumed", proof, "", false)},
		{Name: "parks: show", Ev: urlRequest("GET", "/parks/pk_1", "", proof, "", false)},
		{Name: "parks: approve, bad id", Ev: urlRequest("POST", "/parks/pk_1", "", proof, `{"decision":"approve"}`, false)},
		{Name: "parks: resume, no proof", Ev: urlRequest("POST", "/parks/pk_1", "", nil, `{"decision":"resume"}`, false)},
		{Name: "parks: cancel, bad id", Ev: urlRequest("POST", "/parks/pk_1/", "", proof, `{"decision":"cancel"}`, false)},
		{Name: "parks: reject without reason", Ev: urlRequest("POST", "/parks/pk_1", "", proof, `{"decision":"reject"}`, false)},
		{Name: "parks: bad decision", Ev: urlRequest("POST", "/parks/pk_1", "", proof, `{"decision":"maybe"}`, false)},
		{Name: "parks: unknown member", Ev: urlRequest("POST", "/parks/pk_1", "", proof, `{"decision":"approve","park":"x"}`, false)},
		{Name: "parks: DELETE", Ev: urlRequest("DELETE", "/parks/pk_1", "", proof, "", false)},
		{Name: "reconcile", Ev: urlRequest("POST", "/reconciliations", "", proof, `{"key":"arn:aws:states:us-east-1:123456789012:execution:sm:r/2","outcome":"not_applied","reason":"no"}`, false)},
		{Name: "reconcile, trailing slash, a result", Ev: urlRequest("POST", "/reconciliations/", "", proof, `{"key":"k/2","outcome":"applied","result":{"id":"canary"}}`, false)},
		{Name: "reconcile, unknown member", Ev: urlRequest("POST", "/reconciliations", "", proof, `{"key":"k/2","outcome":"applied","by":"me"}`, false)},
		{Name: "reconcile, GET", Ev: urlRequest("GET", "/reconciliations", "", proof, "", false)},
	}
	functionurltest.Golden(t, filepath.Join("testdata", "url_responses.golden"), *update, urlHandler().Handle, cases)
}

// urlHandler is the function's handler with bindingEcho as its verifier
// and no store: every request the tests send is answered before the table
// would be read.
func urlHandler() *decision.Handler {
	// Parks and reconciliations on no table and no Step Functions: never
	// reached either.
	return decision.NewHandler(decision.NewService(decision.Deps{Callers: bindingEcho{}, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Parks: parkdynamo.New(nil, "", nil), ParkTasks: stepfunctions.Parks{}, Reconciles: ledger.New(nil, "")}))
}
