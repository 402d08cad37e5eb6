package functionurl

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// Serve runs h on the Function URL request ev and returns its buffered
// response. The request has the event's method, raw path and query
// (RawQueryString; QueryStringParameters when it is empty, as in
// hand-written events), headers (Function URLs join a repeated header's
// values with commas in one value; cookies come in ev.Cookies and become
// one Cookie header), body (decoded from base64 as it is read when
// IsBase64Encoded: a body that is not base64 fails the read, never the
// request), host (the URL's domain) and remote address (the caller's
// source IP), and ctx carries the event's request context, the IAM
// authorizer's included (RequestContext). The response has the status the
// handler wrote (200 when it wrote none), its headers (a repeated one
// joined with commas, Set-Cookie as the response's cookies) and its body,
// base64-encoded when it is not valid UTF-8. Serve never fails: the error
// is for lambda.Start's handler signature.
func Serve(ctx context.Context, h http.Handler, ev events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	w := &buffered{header: http.Header{}}
	h.ServeHTTP(w, Request(ctx, ev))
	return w.response(), nil
}

// ServePayload is Serve of a Function URL request event given as raw JSON,
// for a function that also takes direct invocations and tells the two
// apart itself: the serialized response, or, when payload is not such an
// event, the answer refused gives (its status and JSON body, with
// Content-Type application/json), never an error of the invocation.
func ServePayload(ctx context.Context, h http.Handler, payload json.RawMessage, refused func() (status int, body []byte)) (json.RawMessage, error) {
	var ev events.LambdaFunctionURLRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		status, body := refused()
		return json.Marshal(events.LambdaFunctionURLResponse{StatusCode: status, Headers: map[string]string{"Content-Type": "application/json"}, Body: string(body)})
	}
	resp, err := Serve(ctx, h, ev)
	if err != nil {
		return nil, err
	}
	return json.Marshal(resp)
}

// Codes names a function's error codes that map to an HTTP status other
// than 503 (Status).
type Codes struct{ Invalid, Unauthenticated, Refused, NotFound string }

// Status is the Function URL status of error code: 400 Bad Request for
// c.Invalid, 401 for c.Unauthenticated, 403 for c.Refused, 404 for
// c.NotFound, and 503 Service Unavailable (RFC 9110 §15.6.4: the caller
// may try again) for any other.
func (c Codes) Status(code string) int {
	switch code {
	case c.Invalid:
		return http.StatusBadRequest
	case c.Unauthenticated:
		return http.StatusUnauthorized
	case c.Refused:
		return http.StatusForbidden
	case c.NotFound:
		return http.StatusNotFound
	}
	return http.StatusServiceUnavailable
}

// Handler returns h as a Lambda handler for lambda.Start (Serve).
func Handler(h http.Handler) func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	return func(ctx context.Context, ev events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		return Serve(ctx, h, ev)
	}
}

type contextKey struct{}

// RequestContext returns the Function URL request context Serve put in
// ctx (the account, the IAM authorizer's caller, the request id), and
// whether there is one.
func RequestContext(ctx context.Context) (events.LambdaFunctionURLRequestContext, bool) {
	rc, ok := ctx.Value(contextKey{}).(events.LambdaFunctionURLRequestContext)
	return rc, ok
}

// Request is the *http.Request of ev with ctx (Serve describes it).
func Request(ctx context.Context, ev events.LambdaFunctionURLRequest) *http.Request {
	u := &url.URL{Scheme: "https", Host: ev.RequestContext.DomainName, Path: ev.RawPath, RawQuery: ev.RawQueryString}
	if p, err := url.PathUnescape(ev.RawPath); err == nil && p != ev.RawPath {
		u.Path, u.RawPath = p, ev.RawPath
	}
	if u.RawQuery == "" && len(ev.QueryStringParameters) > 0 {
		q := url.Values{}
		for k, v := range ev.QueryStringParameters {
			q.Set(k, v)
		}
		u.RawQuery = q.Encode()
	}
	var body io.Reader = strings.NewReader(ev.Body)
	if ev.IsBase64Encoded {
		body = base64.NewDecoder(base64.StdEncoding, body)
	}
	r := &http.Request{
		Method:     ev.RequestContext.HTTP.Method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     http.Header{},
		Body:       io.NopCloser(body),
		Host:       ev.RequestContext.DomainName,
		RemoteAddr: ev.RequestContext.HTTP.SourceIP,
		RequestURI: u.RequestURI(),
	}
	if !ev.IsBase64Encoded {
		r.ContentLength = int64(len(ev.Body))
	}
	for k, v := range ev.Headers {
		r.Header.Set(k, v)
	}
	if len(ev.Cookies) > 0 {
		r.Header.Set("Cookie", strings.Join(ev.Cookies, "; "))
	}
	return r.WithContext(context.WithValue(ctx, contextKey{}, ev.RequestContext))
}

// buffered is the http.ResponseWriter Serve collects a response in.
type buffered struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *buffered) Header() http.Header { return w.header }

func (w *buffered) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *buffered) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// response is the buffered Function URL response.
func (w *buffered) response() events.LambdaFunctionURLResponse {
	resp := events.LambdaFunctionURLResponse{StatusCode: w.status, Headers: map[string]string{}}
	if resp.StatusCode == 0 {
		resp.StatusCode = http.StatusOK
	}
	for k, vs := range w.header {
		if k == "Set-Cookie" {
			resp.Cookies = append(resp.Cookies, vs...)
			continue
		}
		resp.Headers[k] = strings.Join(vs, ",")
	}
	if b := w.body.Bytes(); utf8.Valid(b) {
		resp.Body = string(b)
	} else {
		resp.Body, resp.IsBase64Encoded = base64.StdEncoding.EncodeToString(b), true
	}
	return resp
}

// Answer is a Function URL answer's status and JSON body: 200 and res
// encoded as JSON when err is nil; otherwise the status and body fail
// gives for err (each function has its own error codes and error body:
// publishapi.ErrorBody, review.ErrorBody). A res that cannot be encoded is
// an error too, "encode the result: ..." wrapping the encoder's, which fail
// answers as any error that is not one of its function's.
func Answer(res any, err error, fail func(error) (status int, body []byte)) (int, []byte) {
	if err == nil {
		body, merr := json.Marshal(res)
		if merr == nil {
			return http.StatusOK, body
		}
		err = fmt.Errorf("encode the result: %w", merr)
	}
	return fail(err)
}

// WriteJSON writes an answer of status with body, a JSON document, as
// application/json: the one shape of every toolgate Function URL answer.
func WriteJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// Plain reports whether r can be routed by an http.ServeMux exactly as
// its path was sent: the path starts with "/", holds no percent-encoding
// (ServeMux would match "/%72eviews" as "/reviews", and redirect a path
// whose escaped form it would clean, "%2F…"), is in the clean form ServeMux
// routes without redirecting (path.Clean's, a trailing slash kept: no "//",
// ".", ".."), and the method is not HEAD, which ServeMux serves with a GET
// route. The routes of toolgate's Function URLs are ASCII and their ids
// need no escaping (review and toolset ids), so a handler that must answer
// every other request itself refuses one that is not plain, before its mux
// sees it.
func Plain(r *http.Request) bool {
	p := r.URL.EscapedPath()
	if r.Method == http.MethodHead || strings.Contains(p, "%") || p != r.URL.Path || p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if p[len(p)-1] == '/' && c != "/" {
		c += "/"
	}
	return c == p
}

// Routes serves mux with the request's method in upper case and one
// trailing slash of its path dropped, as toolgate's routes take them
// (publish's, webhooks'); a request that is not Plain, which
// http.ServeMux would redirect or serve under another route, goes to
// none instead.
func Routes(mux *http.ServeMux, none http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r2 := *r
		r2.Method = strings.ToUpper(r.Method)
		if !Plain(&r2) {
			none(w, r)
			return
		}
		if p := strings.TrimSuffix(r.URL.Path, "/"); p != r.URL.Path && p != "" {
			u := *r.URL
			u.Path, u.RawPath = p, strings.TrimSuffix(r.URL.RawPath, "/")
			r2.URL = &u
		}
		mux.ServeHTTP(w, &r2)
	})
}
