package functionurl

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"
)

// echo answers with what the handler was given.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	rc, _ := RequestContext(r.Context())
	caller := ""
	if rc.Authorizer != nil && rc.Authorizer.IAM != nil {
		caller = rc.Authorizer.IAM.UserARN
	}
	w.Header().Add("X-Echo", "a")
	w.Header().Add("X-Echo", "b")
	w.Header().Add("Set-Cookie", "s=1")
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusTeapot)
	fmt.Fprintf(w, "%s %s path=%s raw=%s q=%v proof=%s cookie=%s host=%s remote=%s iam=%s body=%q err=%v",
		r.Method, r.URL.RequestURI(), r.URL.Path, r.URL.EscapedPath(), r.URL.Query(), r.Header.Get("X-Toolgate-Caller-Proof"),
		r.Header.Get("Cookie"), r.Host, r.RemoteAddr, caller, body, err != nil)
})

func event(method, rawPath, rawQuery, body string, b64 bool) events.LambdaFunctionURLRequest {
	ev := events.LambdaFunctionURLRequest{RawPath: rawPath, RawQueryString: rawQuery, Body: body, IsBase64Encoded: b64,
		Headers: map[string]string{"x-toolgate-caller-proof": "P", "accept": "a/b,c/d"}, Cookies: []string{"a=1", "b=2"}}
	ev.RequestContext.HTTP.Method = method
	ev.RequestContext.HTTP.SourceIP = "192.0.2.1"
	ev.RequestContext.DomainName = "x.lambda-url.us-east-1.on.aws"
	ev.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::000000000000:user/u"}}
	return ev
}

// Serve gives the handler the event's method, raw path, query, headers,
// cookies, body (base64-decoded as it is read) and request context, and
// returns the handler's status, headers (repeated ones joined, Set-Cookie
// as cookies) and body (base64 when it is not UTF-8).
func TestServe(t *testing.T) {
	for name, c := range map[string]struct {
		ev   events.LambdaFunctionURLRequest
		body string
	}{
		"a plain body": {event("POST", "/reviews/rv_1", "status=approved&x=1", `{"a":1}`, false),
			`POST /reviews/rv_1?status=approved&x=1 path=/reviews/rv_1 raw=/reviews/rv_1 q=map[status:[approved] x:[1]] proof=P cookie=a=1; b=2 host=x.lambda-url.us-east-1.on.aws remote=192.0.2.1 iam=arn:aws:iam::000000000000:user/u body="{\"a\":1}" err=false`},
		"a base64 body": {event("POST", "/s", "", base64.StdEncoding.EncodeToString([]byte("hi")), true),
			`POST /s path=/s raw=/s q=map[] proof=P cookie=a=1; b=2 host=x.lambda-url.us-east-1.on.aws remote=192.0.2.1 iam=arn:aws:iam::000000000000:user/u body="hi" err=false`},
		"a body that is not base64": {event("POST", "/s", "", "!!!", true),
			`POST /s path=/s raw=/s q=map[] proof=P cookie=a=1; b=2 host=x.lambda-url.us-east-1.on.aws remote=192.0.2.1 iam=arn:aws:iam::000000000000:user/u body="" err=true`},
		"an escaped path": {event("GET", "/a%2Fb/c%20d", "", "", false),
			`GET /a%2Fb/c%20d path=/a/b/c d raw=/a%2Fb/c%20d q=map[] proof=P cookie=a=1; b=2 host=x.lambda-url.us-east-1.on.aws remote=192.0.2.1 iam=arn:aws:iam::000000000000:user/u body="" err=false`},
	} {
		resp, err := Serve(context.Background(), echo, c.ev)
		if err != nil {
			t.Fatal(err)
		}
		want := events.LambdaFunctionURLResponse{StatusCode: http.StatusTeapot, Headers: map[string]string{"X-Echo": "a,b", "Content-Type": "text/plain"}, Body: c.body, Cookies: []string{"s=1"}}
		if diff := cmp.Diff(want, resp); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", name, diff)
		}
	}
	// The query parameters of a hand-written event without a raw query.
	ev := event("GET", "/", "", "", false)
	ev.QueryStringParameters = map[string]string{"status": "approved"}
	if r := Request(context.Background(), ev); r.URL.Query().Get("status") != "approved" {
		t.Errorf("query %q", r.URL.RawQuery)
	}
}

// A handler that writes nothing answers 200 with an empty body; a body
// that is not UTF-8 is sent base64-encoded.
func TestServeDefaultsAndBinaryBodies(t *testing.T) {
	resp, _ := Serve(context.Background(), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), event("GET", "/", "", "", false))
	if resp.StatusCode != http.StatusOK || resp.Body != "" || resp.IsBase64Encoded || resp.Cookies != nil {
		t.Errorf("%+v", resp)
	}
	resp, _ = Serve(context.Background(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte{0xff, 0}) }), event("GET", "/", "", "", false))
	if resp.StatusCode != http.StatusOK || !resp.IsBase64Encoded || resp.Body != base64.StdEncoding.EncodeToString([]byte{0xff, 0}) {
		t.Errorf("%+v", resp)
	}
}

// Plain is a request http.ServeMux routes exactly as its path was sent:
// nothing it would clean, redirect, unescape or serve with another method.
func TestPlain(t *testing.T) {
	cases := []struct {
		name, method, raw string
		want              bool
	}{
		{"root", "GET", "/", true},
		{"a route", "GET", "/reviews", true},
		{"a trailing slash", "GET", "/reviews/", true},
		{"an id", "POST", "/reviews/rv_0123", true},
		{"no leading slash", "GET", "reviews", false},
		{"empty", "GET", "", false},
		{"a double slash", "GET", "//reviews", false},
		{"a dot segment", "GET", "/a/./b", false},
		{"a dot-dot segment", "GET", "/reviews/..", false},
		{"an escaped letter", "GET", "/%72eviews", false},
		{"an escaped slash first", "GET", "%2Freviews", false},
		{"an escaped slash last", "GET", "/toolsets/ts_1%2F", false},
		{"escaped dots", "GET", "/reviews/%2e%2e", false},
		{"a space", "GET", "/reviews/a b", false},
		{"not UTF-8", "GET", "/reviews/\xff", false},
		{"HEAD, which ServeMux serves with GET routes", "HEAD", "/reviews", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Request(context.Background(), event(c.method, c.raw, "", "", false))
			if got := Plain(r); got != c.want {
				t.Errorf("Plain(%s %q) = %v", c.method, c.raw, got)
			}
		})
	}
}

// Answer encodes a result as 200, and hands an error, or a result that
// cannot be encoded, to the function's own failure answer.
func TestAnswerEncodesTheResultOrAsksFailure(t *testing.T) {
	t.Parallel()
	var failed []error
	fail := func(err error) (int, []byte) {
		failed = append(failed, err)
		return http.StatusConflict, []byte(`{"error":{"code":"X"}}`)
	}
	if st, b := Answer(map[string]int{"n": 1}, nil, fail); st != http.StatusOK || string(b) != `{"n":1}` || len(failed) != 0 {
		t.Fatalf("result: %d %s, failures %v", st, b, failed)
	}
	refused := errors.New("refused")
	if st, b := Answer(nil, refused, fail); st != http.StatusConflict || string(b) != `{"error":{"code":"X"}}` || len(failed) != 1 || failed[0] != refused {
		t.Fatalf("error: %d %s, failures %v", st, b, failed)
	}
	var unsupported *json.UnsupportedTypeError
	if st, _ := Answer(func() {}, nil, fail); st != http.StatusConflict || len(failed) != 2 || !errors.As(failed[1], &unsupported) ||
		!strings.HasPrefix(failed[1].Error(), "encode the result: ") {
		t.Fatalf("unencodable result: %d, failures %v", st, failed)
	}
}
