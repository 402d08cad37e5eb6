package publish

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

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/shared/caller"
)

var updateURL = flag.Bool("update", false, "rewrite testdata/url_responses.golden")

// bindingEcho is a caller verifier that refuses every proof with a
// message naming the binding it was asked for: a fake, since what the
// test checks is which route a request reaches and what it answers, and
// the STS stand-in would refuse these proofs without saying which binding
// they were checked for.
type bindingEcho struct{}

func (bindingEcho) Verify(ctx context.Context, proof string, b caller.Binding) (caller.Identity, error) {
	return caller.Identity{}, &caller.Error{Reason: caller.Refused, Message: fmt.Sprintf("proof %q for %s %q", proof, b.Action, b.Target)}
}

// urlEvent is a Function URL event as Lambda sends it (payload format
// 2.0).
func urlEvent(method, rawPath string, headers map[string]string, body string, b64 bool) events.LambdaFunctionURLRequest {
	ev := events.LambdaFunctionURLRequest{Version: "2.0", RawPath: rawPath, Headers: headers, Body: body, IsBase64Encoded: b64}
	ev.RequestContext.HTTP.Method = method
	ev.RequestContext.HTTP.Path = rawPath
	ev.RequestContext.DomainName = "abc.lambda-url.us-east-1.on.aws"
	ev.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{
		AccessKey: "AKIAEXAMPLE", AccountID: "000000000000", CallerID: "AIDAEXAMPLE", UserARN: "arn:aws:iam::000000000000:user/someone"}}
	return ev
}

// Every route and every refusal of the publish function's Function URL
// answers with the status, headers and body in
// testdata/url_responses.golden: POST /solutions, POST /toolsets and GET
// /toolsets/{id} (trailing slashes, the caller proof header in any letter
// case, bodies plain and base64-encoded), and each refusal (no route, a
// body that is not base64 or not the route's JSON, an event that is not a
// Function URL request).
func TestURLResponses(t *testing.T) {
	proof := map[string]string{"x-toolgate-caller-proof": "P"}
	solution := `{"file":"hello.yaml","source":"name: hello\n"}`
	cases := []struct {
		name string
		ev   events.LambdaFunctionURLRequest
	}{
		{"publish", urlEvent("POST", "/solutions", proof, solution, false)},
		{"publish, trailing slash", urlEvent("POST", "/solutions/", proof, solution, false)},
		{"refused: an escaped slash first", urlEvent("POST", "%2Fsolutions", proof, solution, false)},
		{"refused: an escaped letter", urlEvent("POST", "/%73olutions", proof, solution, false)},
		{"refused: an escaped slash last", urlEvent("POST", "/solutions%2F", proof, solution, false)},
		{"refused: an escaped slash after an id", urlEvent("GET", "/toolsets/ts_x%2F", proof, "", false)},
		{"refused: HEAD on a toolset", urlEvent("HEAD", "/toolsets/ts_x", proof, "", false)},
		{"publish, proof header in other case", urlEvent("POST", "/solutions", map[string]string{"X-Toolgate-Caller-Proof": "Q"}, solution, false)},
		{"publish, no proof", urlEvent("POST", "/solutions", nil, solution, false)},
		{"publish, lower-case method", urlEvent("post", "/solutions", proof, solution, false)},
		{"publish, base64", urlEvent("POST", "/solutions", proof, base64.StdEncoding.EncodeToString([]byte(solution)), true)},
		{"publish, not base64", urlEvent("POST", "/solutions", proof, "!!!", true)},
		{"publish, bad file", urlEvent("POST", "/solutions", proof, `{"file":"../x","source":"a"}`, false)},
		{"publish, unknown member", urlEvent("POST", "/solutions", proof, `{"file":"a","source":"b","x":1}`, false)},
		{"publish, not JSON", urlEvent("POST", "/solutions", proof, `nope`, false)},
		{"register", urlEvent("POST", "/toolsets", proof, `{"toolset":"id: x\n"}`, false)},
		{"register, empty", urlEvent("POST", "/toolsets", proof, `{"toolset":""}`, false)},
		{"register, trailing slash", urlEvent("POST", "/toolsets/", proof, `{"toolset":""}`, false)},
		{"register, unknown member", urlEvent("POST", "/toolsets", proof, `{"toolset":"a","b":1}`, false)},
		{"register, not base64", urlEvent("POST", "/toolsets", proof, "!!!", true)},
		{"show", urlEvent("GET", "/toolsets/ts-1", proof, "", false)},
		{"show, trailing slash", urlEvent("GET", "/toolsets/ts-1/", proof, "", false)},
		{"show, nested", urlEvent("GET", "/toolsets/ts-1/more", proof, "", false)},
		{"show, lower-case method", urlEvent("get", "/toolsets/ts-1", proof, "", false)},
		{"GET the solutions", urlEvent("GET", "/solutions", proof, "", false)},
		{"PUT a toolset", urlEvent("PUT", "/toolsets/ts-1", proof, "", false)},
		{"GET the toolsets", urlEvent("GET", "/toolsets", proof, "", false)},
		{"the root", urlEvent("GET", "/", proof, "", false)},
		{"another path", urlEvent("POST", "/reviews", proof, `{}`, false)},
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
	out, err := h.Handle(context.Background(), json.RawMessage(`{"requestContext":7}`))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&got, "%s\n%s\n", "not a Function URL request", out)
	golden := filepath.Join("testdata", "url_responses.golden")
	if *updateURL {
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
// and no store: every request the test sends is answered before the
// table would be read.
func urlHandler() *Handler {
	return NewHandler(&Service{Callers: bindingEcho{}, Stage: "test", Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
}
