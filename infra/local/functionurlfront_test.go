package local_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
)

// frontPkg serves its Function URL events through functionurl.Serve and
// answers what the handler read (testdata/functionurlfront).
const frontPkg = "./testdata/functionurlfront"

// seen is testdata/functionurlfront's answer: what the handler read and the
// event the function received.
type seen struct {
	Method string      `json:"method"`
	Path   string      `json:"path"`
	Query  string      `json:"query"`
	Header http.Header `json:"header"`
	Body   string      `json:"body"`
	Event  struct {
		Version               string            `json:"version"`
		RouteKey              string            `json:"routeKey"`
		RawPath               string            `json:"rawPath"`
		RawQueryString        string            `json:"rawQueryString"`
		Cookies               []string          `json:"cookies"`
		Headers               map[string]string `json:"headers"`
		QueryStringParameters map[string]string `json:"queryStringParameters"`
		IsBase64Encoded       bool              `json:"isBase64Encoded"`
		Body                  string            `json:"body"`
		RequestContext        struct {
			AccountID    string `json:"accountId"`
			APIID        string `json:"apiId"`
			DomainName   string `json:"domainName"`
			DomainPrefix string `json:"domainPrefix"`
			RequestID    string `json:"requestId"`
			RouteKey     string `json:"routeKey"`
			Stage        string `json:"stage"`
			Time         string `json:"time"`
			TimeEpoch    int64  `json:"timeEpoch"`
			HTTP         struct {
				Method    string `json:"method"`
				Path      string `json:"path"`
				Protocol  string `json:"protocol"`
				SourceIP  string `json:"sourceIp"`
				UserAgent string `json:"userAgent"`
			} `json:"http"`
			Authorizer json.RawMessage `json:"authorizer"`
		} `json:"requestContext"`
	} `json:"event"`
}

// startFront starts testdata/functionurlfront under the RIE and a front
// before it.
func startFront(t *testing.T) *local.FunctionURLFront {
	t.Helper()
	fn := localtest.RIE(t, "functionurlfront", localtest.Bootstrap(t, frontPkg), 5*time.Second, nil)
	f, err := local.StartFunctionURLFront(t.Context(), fn.InvokeURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if !strings.HasPrefix(f.URL(), "http://127.0.0.1:") {
		t.Fatalf("front URL %q is not on 127.0.0.1", f.URL())
	}
	return f
}

func send(t *testing.T, method, url string, header http.Header, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, out
}

// A request through the front reaches a handler served by
// functionurl.Serve with its exact body bytes, method, path, query and
// headers, in the event Lambda would send; text types as text, anything
// else (and text that is not UTF-8) base64-encoded, as Lambda does.
func TestFunctionURLFrontDeliversTheExactRequestInAFunctionURLEvent(t *testing.T) {
	t.Parallel()
	f := startFront(t)
	for _, tc := range []struct {
		name, contentType string
		body              []byte
		base64            bool
	}{
		{"json", "application/json", []byte(`{"type":"invoice.paid","id":"evt_1"}` + "\n"), false},
		{"json with charset", "application/json; charset=utf-8", []byte(`{"a":"é"}`), false},
		{"text", "text/plain", []byte("line one\r\nline two"), false},
		{"xml", "application/xml", []byte("<a/>"), false},
		{"binary", "application/octet-stream", []byte{0x00, 0xff, 0x80, 0x0a}, true},
		{"form", "application/x-www-form-urlencoded", []byte("a=1&b=2"), true},
		{"no content type", "", []byte(`{"a":1}`), true},
		{"text that is not UTF-8", "text/plain", []byte{'a', 0xc3, 0x28}, true},
		{"vendor json", "application/vnd.github+json", []byte(`{}`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{"X-Multi": {"a", "b"}, "Webhook-Signature": {"v1,abc="}, "User-Agent": {"front-test/1"},
				"Cookie": {"a=1; b=2"}}
			if tc.contentType != "" {
				h.Set("Content-Type", tc.contentType)
			}
			resp, out := send(t, http.MethodPost, f.URL()+"/in/billing%2Fx?x=1&x=2&y=%20z", h, tc.body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, out)
			}
			var s seen
			if err := json.Unmarshal(out, &s); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			got, _ := base64.StdEncoding.DecodeString(s.Body)
			if !bytes.Equal(got, tc.body) {
				t.Errorf("handler read body %q, want %q", got, tc.body)
			}
			ev := s.Event
			if ev.IsBase64Encoded != tc.base64 {
				t.Errorf("isBase64Encoded %v, want %v", ev.IsBase64Encoded, tc.base64)
			}
			if !tc.base64 && ev.Body != string(tc.body) {
				t.Errorf("event body %q, want the text %q", ev.Body, tc.body)
			}
			if s.Method != "POST" || s.Path != "/in/billing%2Fx" || s.Query != "x=1&x=2&y=%20z" {
				t.Errorf("handler read %s %s ? %s", s.Method, s.Path, s.Query)
			}
			if got, want := s.Header.Get("X-Multi"), "a,b"; got != want {
				t.Errorf("handler read X-Multi %q, want %q", got, want)
			}
			if got := s.Header.Get("Webhook-Signature"); got != "v1,abc=" {
				t.Errorf("handler read Webhook-Signature %q", got)
			}
			if got := s.Header.Get("Cookie"); got != "a=1; b=2" {
				t.Errorf("handler read Cookie %q", got)
			}
			if ev.Version != "2.0" || ev.RouteKey != "$default" || ev.RawPath != "/in/billing%2Fx" || ev.RawQueryString != "x=1&x=2&y=%20z" {
				t.Errorf("event %+v", ev)
			}
			if diff := cmp.Diff(map[string]string{"x": "1,2", "y": " z"}, ev.QueryStringParameters); diff != "" {
				t.Errorf("queryStringParameters (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"a=1", "b=2"}, ev.Cookies); diff != "" {
				t.Errorf("cookies (-want +got):\n%s", diff)
			}
			for name := range ev.Headers {
				if name != strings.ToLower(name) || name == "cookie" {
					t.Errorf("event header %q: want lower-case names and no cookie", name)
				}
			}
			if ev.Headers["x-multi"] != "a,b" || ev.Headers["host"] == "" || ev.Headers["x-forwarded-for"] != "127.0.0.1" {
				t.Errorf("event headers %v", ev.Headers)
			}
			rc := ev.RequestContext
			if rc.AccountID != "anonymous" || rc.RouteKey != "$default" || rc.Stage != "$default" || rc.RequestID == "" ||
				rc.APIID == "" || rc.DomainPrefix != rc.APIID || rc.DomainName != rc.APIID+".lambda-url."+local.Region+".on.aws" ||
				string(rc.Authorizer) != "" && string(rc.Authorizer) != "null" {
				t.Errorf("requestContext %+v", rc)
			}
			if rc.HTTP.Method != "POST" || rc.HTTP.Path != "/in/billing/x" || rc.HTTP.Protocol != "HTTP/1.1" ||
				rc.HTTP.SourceIP != "127.0.0.1" || rc.HTTP.UserAgent != "front-test/1" {
				t.Errorf("requestContext.http %+v", rc.HTTP)
			}
			if when := time.UnixMilli(rc.TimeEpoch); time.Since(when) > time.Minute || time.Until(when) > time.Second {
				t.Errorf("timeEpoch %d is not now", rc.TimeEpoch)
			}
			if _, err := time.Parse("02/Jan/2006:15:04:05 -0700", rc.Time); err != nil {
				t.Errorf("time %q: %v", rc.Time, err)
			}
			if got := resp.Header.Values("X-Echo"); len(got) != 1 || got[0] != "a,b" {
				t.Errorf("answer X-Echo %q, want one value a,b", got)
			}
			if diff := cmp.Diff([]string{"s=1", "t=2; Path=/"}, resp.Header.Values("Set-Cookie")); diff != "" {
				t.Errorf("answer Set-Cookie (-want +got):\n%s", diff)
			}
			if got := resp.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("answer Content-Type %q", got)
			}
		})
	}
}

// The function's answer comes back as Lambda maps it: a binary body
// decoded with its status and type; a result without statusCode as 200
// application/json; a function error as 502 without its message; and
// requests with no body, in another method, or several at once.
func TestFunctionURLFrontAnswersAsLambdaMapsTheFunctionsResponse(t *testing.T) {
	t.Parallel()
	f := startFront(t)

	t.Run("binary answer", func(t *testing.T) {
		body := []byte{0x89, 'P', 'N', 'G', 0x00, 0xfe}
		resp, out := send(t, http.MethodPut, f.URL()+"/binary", http.Header{"Content-Type": {"image/png"}}, body)
		if resp.StatusCode != http.StatusCreated || !bytes.Equal(out, body) || resp.Header.Get("Content-Type") != "application/octet-stream" {
			t.Errorf("%d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), out)
		}
	})
	t.Run("inferred answer", func(t *testing.T) {
		resp, out := send(t, http.MethodGet, f.URL()+"/inferred", nil, nil)
		if resp.StatusCode != http.StatusOK || string(out) != `{"inferred":true}` || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), out)
		}
	})
	t.Run("function error", func(t *testing.T) {
		resp, out := send(t, http.MethodPost, f.URL()+"/fail", nil, []byte(`{}`))
		if resp.StatusCode != http.StatusBadGateway || strings.Contains(string(out), "secret-detail") || strings.Contains(string(out), "FrontError") {
			t.Errorf("%d %q", resp.StatusCode, out)
		}
	})
	t.Run("no body", func(t *testing.T) {
		resp, out := send(t, http.MethodDelete, f.URL()+"/", nil, nil)
		var s seen
		if err := json.Unmarshal(out, &s); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, out)
		}
		if s.Method != "DELETE" || s.Path != "/" || s.Body != "" || s.Event.Body != "" || s.Event.IsBase64Encoded ||
			s.Event.QueryStringParameters != nil || s.Event.RawQueryString != "" {
			t.Errorf("%+v", s)
		}
	})
	t.Run("several at once", func(t *testing.T) {
		var wg sync.WaitGroup
		statuses := make([]int, 4)
		for i := range statuses {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, f.URL()+"/x", strings.NewReader(`{}`))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				statuses[i] = resp.StatusCode
			})
		}
		wg.Wait()
		for i, s := range statuses {
			if s != http.StatusOK {
				t.Errorf("request %d: status %d", i, s)
			}
		}
	})
}

// A body over the Function URL limit (6 MB) is 413 and invokes nothing;
// one at the limit is sent. The front here has no function behind it (an
// invoke URL on a closed port), so an invocation would answer 502.
func TestFunctionURLFrontRefusesABodyOverTheLimitBeforeInvoking(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + local.InvokePath
	l.Close()
	f, err := local.StartFunctionURLFront(t.Context(), dead)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	for _, tc := range []struct {
		name string
		size int
		want int
	}{
		{"over the limit", local.FunctionURLMaxBody + 1, http.StatusRequestEntityTooLarge},
		{"at the limit", local.FunctionURLMaxBody, http.StatusBadGateway},
	} {
		resp, _ := send(t, http.MethodPost, f.URL()+"/in/x", http.Header{"Content-Type": {"application/json"}}, bytes.Repeat([]byte("a"), tc.size))
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
	// Sent without a Content-Length (chunked), the body is still counted.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, f.URL()+"/in/x", io.MultiReader(bytes.NewReader(make([]byte, local.FunctionURLMaxBody)), strings.NewReader("a")))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || req.ContentLength != 0 {
		t.Errorf("chunked over the limit: status %d (content length %d)", resp.StatusCode, req.ContentLength)
	}
}

// StartFunctionURLFront takes only an absolute http invoke URL.
func TestStartFunctionURLFrontRefusesAnInvokeURLThatIsNotHTTP(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "127.0.0.1:9000/x", "ftp://127.0.0.1/x", "http://"} {
		if f, err := local.StartFunctionURLFront(t.Context(), u); err == nil {
			f.Close()
			t.Errorf("%q: no error", u)
		}
	}
}
