package publish

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/functionurl/functionurltest"
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

// urlEvent is functionurltest.Event with no query.
func urlEvent(method, rawPath string, headers map[string]string, body string, b64 bool) events.LambdaFunctionURLRequest {
	return functionurltest.Event(method, rawPath, "", headers, body, b64)
}

// Every route and every refusal of the publish function's Function URL
// answers with the status, headers and body in
// testdata/url_responses.golden: POST /solutions, POST /toolsets GET
// /toolsets/{id} and GET /shapes/{id} (trailing slashes, the caller proof header in any letter
// case, bodies plain and base64-encoded), and each refusal (no route, a
// body that is not base64 or not the route's JSON, an event that is not a
// Function URL request).
func TestURLResponses(t *testing.T) {
	proof := map[string]string{"x-toolgate-caller-proof": "P"}
	solution := `{"file":"hello.yaml","source":"name: hello\n"}`
	cases := []functionurltest.Case{
		{Name: "publish", Ev: urlEvent("POST", "/solutions", proof, solution, false)},
		{Name: "publish, trailing slash", Ev: urlEvent("POST", "/solutions/", proof, solution, false)},
		{Name: "refused: an escaped slash first", Ev: urlEvent("POST", "%2Fsolutions", proof, solution, false)},
		{Name: "refused: an escaped letter", Ev: urlEvent("POST", "/%73olutions", proof, solution, false)},
		{Name: "refused: an escaped slash last", Ev: urlEvent("POST", "/solutions%2F", proof, solution, false)},
		{Name: "refused: an escaped slash after an id", Ev: urlEvent("GET", "/toolsets/ts_x%2F", proof, "", false)},
		{Name: "refused: HEAD on a toolset", Ev: urlEvent("HEAD", "/toolsets/ts_x", proof, "", false)},
		{Name: "publish, proof header in other case", Ev: urlEvent("POST", "/solutions", map[string]string{"X-Toolgate-Caller-Proof": "Q"}, solution, false)},
		{Name: "publish, no proof", Ev: urlEvent("POST", "/solutions", nil, solution, false)},
		{Name: "publish, lower-case method", Ev: urlEvent("post", "/solutions", proof, solution, false)},
		{Name: "publish, base64", Ev: urlEvent("POST", "/solutions", proof, base64.StdEncoding.EncodeToString([]byte(solution)), true)},
		{Name: "publish, not base64", Ev: urlEvent("POST", "/solutions", proof, "!!!", true)},
		{Name: "publish, bad file", Ev: urlEvent("POST", "/solutions", proof, `{"file":"../x","source":"a"}`, false)},
		{Name: "publish, unknown member", Ev: urlEvent("POST", "/solutions", proof, `{"file":"a","source":"b","x":1}`, false)},
		{Name: "publish, not JSON", Ev: urlEvent("POST", "/solutions", proof, `nope`, false)},
		{Name: "register", Ev: urlEvent("POST", "/toolsets", proof, `{"toolset":"id: x\n"}`, false)},
		{Name: "register, empty", Ev: urlEvent("POST", "/toolsets", proof, `{"toolset":""}`, false)},
		{Name: "register, trailing slash", Ev: urlEvent("POST", "/toolsets/", proof, `{"toolset":""}`, false)},
		{Name: "register, unknown member", Ev: urlEvent("POST", "/toolsets", proof, `{"toolset":"a","b":1}`, false)},
		{Name: "register, not base64", Ev: urlEvent("POST", "/toolsets", proof, "!!!", true)},
		{Name: "show", Ev: urlEvent("GET", "/toolsets/ts-1", proof, "", false)},
		{Name: "show, trailing slash", Ev: urlEvent("GET", "/toolsets/ts-1/", proof, "", false)},
		{Name: "show, nested", Ev: urlEvent("GET", "/toolsets/ts-1/more", proof, "", false)},
		{Name: "show, lower-case method", Ev: urlEvent("get", "/toolsets/ts-1", proof, "", false)},
		{Name: "shapes", Ev: urlEvent("GET", "/shapes/ts_0123456789abcdef0123456789abcdef", proof, "", false)},
		{Name: "shapes, trailing slash", Ev: urlEvent("GET", "/shapes/ts_0123456789abcdef0123456789abcdef/", proof, "", false)},
		{Name: "shapes, no proof", Ev: urlEvent("GET", "/shapes/ts_0123456789abcdef0123456789abcdef", nil, "", false)},
		{Name: "refused: POST shapes", Ev: urlEvent("POST", "/shapes/ts-1", proof, "", false)},
		{Name: "GET the solutions", Ev: urlEvent("GET", "/solutions", proof, "", false)},
		{Name: "PUT a toolset", Ev: urlEvent("PUT", "/toolsets/ts-1", proof, "", false)},
		{Name: "GET the toolsets", Ev: urlEvent("GET", "/toolsets", proof, "", false)},
		{Name: "the root", Ev: urlEvent("GET", "/", proof, "", false)},
		{Name: "another path", Ev: urlEvent("POST", "/reviews", proof, `{}`, false)},
	}
	functionurltest.Golden(t, filepath.Join("testdata", "url_responses.golden"), *updateURL, urlHandler().Handle, cases)
}

// urlHandler is the function's handler with bindingEcho as its verifier
// and no store: every request the test sends is answered before the
// table would be read.
func urlHandler() *Handler {
	return NewHandler(&Service{Callers: bindingEcho{}, Stage: "test", Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
}
