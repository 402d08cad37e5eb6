// Package functionurltest checks a Function URL handler's answers against
// a golden file: each request an event as Lambda sends it (payload format
// 2.0, IAM-authorised), each answer the handler's JSON, in order.
package functionurltest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"
)

// Case is one request of a golden test: its name, written above its answer
// in the golden file, and its event.
type Case struct {
	Name string
	Ev   events.LambdaFunctionURLRequest
}

// Event is a Function URL event as Lambda sends it: the method, the raw
// path and query (queryStringParameters filled from the query as Lambda
// fills them, a repeated name's values joined with ","), the headers, the
// body (b64: base64-encoded), and an IAM authorizer of account
// 000000000000.
func Event(method, rawPath, rawQuery string, headers map[string]string, body string, b64 bool) events.LambdaFunctionURLRequest {
	ev := events.LambdaFunctionURLRequest{Version: "2.0", RawPath: rawPath, RawQueryString: rawQuery, Headers: headers, Body: body, IsBase64Encoded: b64}
	if rawQuery != "" {
		ev.QueryStringParameters = map[string]string{}
		for _, kv := range strings.Split(rawQuery, "&") {
			k, v, _ := strings.Cut(kv, "=")
			if prev, ok := ev.QueryStringParameters[k]; ok {
				v = prev + "," + v
			}
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

// Golden sends handle every case, then an event whose requestContext does
// not decode ("not a Function URL request"), and compares the names and
// answers with the file golden; with update it first rewrites the file. A
// handler error (rather than an answer) fails t.
func Golden(t *testing.T, golden string, update bool, handle func(context.Context, json.RawMessage) (json.RawMessage, error), cases []Case) {
	t.Helper()
	var got strings.Builder
	answer := func(name string, payload json.RawMessage) {
		out, err := handle(context.Background(), payload)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fmt.Fprintf(&got, "%s\n%s\n", name, out)
	}
	for _, c := range cases {
		payload, err := json.Marshal(c.Ev)
		if err != nil {
			t.Fatal(err)
		}
		answer(c.Name, payload)
	}
	answer("not a Function URL request", json.RawMessage(`{"requestContext":7}`))
	if update {
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
