package local

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// FunctionURLMaxBody is the largest request body a Function URL front
// takes, in bytes: 6 MB (6 × 1024 × 1024), the AWS Lambda quota on a
// synchronous invocation's request payload, which a Function URL request
// is. A larger body is answered 413 Content Too Large and the function is
// not invoked.
const FunctionURLMaxBody = 6 << 20

// FunctionURLFront stands in for a Lambda Function URL whose auth type is
// NONE and whose invoke mode is BUFFERED, in front of one function under
// the RIE, which takes only invocations: an HTTP server on a free
// 127.0.0.1 port that turns each request into the
// events.LambdaFunctionURLRequest Lambda would send (payload format 2.0,
// AWS Lambda Developer Guide, "Invoking Lambda function URLs"), POSTs it to
// the RIE's invoke URL and answers with the function's
// events.LambdaFunctionURLResponse.
//
// The event, as Lambda builds it:
//   - version "2.0", routeKey "$default"; rawPath and rawQueryString as the
//     request line sent them (no decoding); queryStringParameters decoded,
//     a repeated name's values joined with "," (absent for no query);
//   - headers with lower-case names, a repeated header's values joined
//     with ",", host included, and x-forwarded-for/-proto/-port naming the
//     client's address and the front's; the Cookie header is not among
//     them: its cookies are the event's cookies, one entry each;
//   - requestContext: accountId "anonymous" (auth type NONE: no caller),
//     apiId and domainPrefix the front's URL id (32 lower-case letters and
//     digits, as a Function URL's), domainName
//     "<url id>.lambda-url.<region>.on.aws" (Region), http {method, path
//     (decoded), protocol, sourceIp, userAgent}, a fresh requestId, routeKey
//     and stage "$default", time ("02/Jan/2006:15:04:05 +0000", UTC) and
//     timeEpoch (Unix milliseconds);
//   - body and isBase64Encoded: Lambda base64-encodes a body whose content
//     type is binary. The guide does not list the types it takes as text;
//     observed, they are text/*, application/json, application/xml and
//     application/javascript (parameters such as charset aside), and any
//     other, a missing Content-Type and form posts included, is
//     base64-encoded. The front follows that rule, and also base64-encodes
//     a text body that is not valid UTF-8, which a JSON string cannot
//     carry unchanged: the function reads the exact bytes sent either way.
//
// The answer, as Lambda maps it: statusCode, headers (each value written
// as it is, commas and all), cookies (one Set-Cookie each) and body
// (decoded when isBase64Encoded); a function result without a statusCode
// member (a JSON string, a number, an object without it) is 200 with
// Content-Type application/json and the result as its body, as the guide
// describes. A function error (the RIE's {"errorType", ...} payload), an
// answer that is neither, a timed-out invocation (the RIE's plain-text
// answer) or an RIE that cannot be reached is 502 Bad Gateway with a fixed
// body: the error's text never reaches the caller. A body over
// FunctionURLMaxBody is 413 before any invocation.
//
// The RIE serves one invocation at a time, so the front sends one at a
// time (Lambda with a reserved concurrency of one); other requests wait.
// The front logs nothing: bodies and headers (signatures) stay out of its
// output.
type FunctionURLFront struct {
	invokeURL string
	urlID     string
	srv       *http.Server
	addr      string
	client    *http.Client
	mu        sync.Mutex // one invocation at a time
	now       func() time.Time
}

// StartFunctionURLFront serves a Function URL front (FunctionURLFront) for
// the function whose RIE invoke URL is invokeURL (Process.InvokeURL) on a
// free 127.0.0.1 port until Close; ctx bounds only the start. It fails
// when invokeURL is not an absolute http URL or no port can be had.
func StartFunctionURLFront(ctx context.Context, invokeURL string) (*FunctionURLFront, error) {
	if u, err := url.Parse(invokeURL); err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("local: function URL front: invoke URL %q is not an absolute http URL", invokeURL)
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("local: function URL front: %w", err)
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("local: function URL front: %w", err)
	}
	f := &FunctionURLFront{
		invokeURL: invokeURL,
		urlID:     hex.EncodeToString(id[:]),
		addr:      l.Addr().String(),
		client:    &http.Client{},
		now:       time.Now,
	}
	f.srv = &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go f.srv.Serve(l)
	return f, nil
}

// URL is the front's base URL, "http://127.0.0.1:PORT" (no trailing
// slash): a request to URL()+"/in/billing" reaches the function with
// rawPath "/in/billing".
func (f *FunctionURLFront) URL() string { return "http://" + f.addr }

// Close stops the front at once, dropping requests under way.
func (f *FunctionURLFront) Close() error { return f.srv.Close() }

// ServeHTTP answers one request through the function (see
// FunctionURLFront).
func (f *FunctionURLFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > FunctionURLMaxBody {
		plain(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, FunctionURLMaxBody+1))
	if err != nil {
		plain(w, http.StatusBadRequest, "Bad Request")
		return
	}
	if len(body) > FunctionURLMaxBody {
		plain(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return
	}
	payload, err := json.Marshal(f.event(r, body))
	if err != nil {
		plain(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	answer, err := f.invoke(r.Context(), payload)
	if err != nil {
		plain(w, http.StatusBadGateway, "Bad Gateway")
		return
	}
	resp, err := functionURLResponse(answer)
	if err != nil {
		plain(w, http.StatusBadGateway, "Bad Gateway")
		return
	}
	out := resp.Body
	if resp.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			plain(w, http.StatusBadGateway, "Bad Gateway")
			return
		}
		out = string(b)
	}
	h := w.Header()
	h["Content-Type"] = nil // no sniffed type: Lambda adds none the function did not give
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	for _, c := range resp.Cookies {
		h.Add("Set-Cookie", c)
	}
	w.WriteHeader(resp.StatusCode)
	io.WriteString(w, out)
}

// event is the Function URL request event of r with body (see
// FunctionURLFront).
func (f *FunctionURLFront) event(r *http.Request, body []byte) payloadEvent {
	now := f.now().UTC()
	rawPath, rawQuery, _ := strings.Cut(r.RequestURI, "?")
	if u, err := url.Parse(r.RequestURI); err == nil && u.IsAbs() { // absolute-form request target
		rawPath, rawQuery = u.EscapedPath(), u.RawQuery
	}
	sourceIP, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		sourceIP = r.RemoteAddr
	}
	_, port, _ := net.SplitHostPort(f.addr)
	headers := map[string]string{}
	var cookies []string
	for k, vs := range r.Header {
		name := strings.ToLower(k)
		if name == "cookie" {
			for _, v := range vs {
				for c := range strings.SplitSeq(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		headers[name] = strings.Join(vs, ",")
	}
	headers["host"] = r.Host
	if len(body) > 0 {
		headers["content-length"] = strconv.Itoa(len(body))
	}
	headers["x-forwarded-for"] = sourceIP
	headers["x-forwarded-proto"] = "http"
	headers["x-forwarded-port"] = port

	var reqID [16]byte
	rand.Read(reqID[:])
	ev := events.LambdaFunctionURLRequest{
		Version:        "2.0",
		RawPath:        rawPath,
		RawQueryString: rawQuery,
		Cookies:        cookies,
		Headers:        headers,
		RequestContext: events.LambdaFunctionURLRequestContext{
			AccountID:    "anonymous",
			RequestID:    uuid(reqID),
			APIID:        f.urlID,
			DomainName:   f.urlID + ".lambda-url." + Region + ".on.aws",
			DomainPrefix: f.urlID,
			Time:         now.Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    now.UnixMilli(),
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  sourceIP,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if rawQuery != "" {
		q, _ := url.ParseQuery(rawQuery) // the pairs that decode, as Lambda gives them
		ev.QueryStringParameters = map[string]string{}
		for k, vs := range q {
			ev.QueryStringParameters[k] = strings.Join(vs, ",")
		}
	}
	if len(body) > 0 {
		if textual(r.Header.Get("Content-Type")) && utf8.Valid(body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return payloadEvent{LambdaFunctionURLRequest: ev, RouteKey: "$default",
		RequestContext: payloadRequestContext{LambdaFunctionURLRequestContext: ev.RequestContext, RouteKey: "$default", Stage: "$default"}}
}

// payloadEvent is the event with the members Lambda sends that the
// aws-lambda-go type lacks (routeKey, and the request context's routeKey
// and stage); its requestContext member replaces the embedded one.
type payloadEvent struct {
	events.LambdaFunctionURLRequest
	RouteKey       string                `json:"routeKey"`
	RequestContext payloadRequestContext `json:"requestContext"`
}

type payloadRequestContext struct {
	events.LambdaFunctionURLRequestContext
	RouteKey string `json:"routeKey"`
	Stage    string `json:"stage"`
}

// textual reports whether a request of contentType reaches the function as
// text rather than base64 (see FunctionURLFront).
func textual(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch {
	case strings.HasPrefix(mt, "text/"):
		return true
	case mt == "application/json", mt == "application/xml", mt == "application/javascript":
		return true
	}
	return false
}

// invoke sends payload to the RIE, one invocation at a time, and returns
// the function's answer, or an error when the RIE cannot be reached or
// answers with a status other than 200.
func (f *FunctionURLFront) invoke(ctx context.Context, payload []byte) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.invokeURL, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the RIE answered %d", resp.StatusCode)
	}
	return answer, nil
}

// errFunction is a function's answer that is no HTTP response: a function
// error, or not JSON (a timed-out invocation).
var errFunction = errors.New("the function failed")

// functionURLResponse is the HTTP response Lambda makes of a function's
// answer (see FunctionURLFront).
func functionURLResponse(answer []byte) (events.LambdaFunctionURLResponse, error) {
	if !json.Valid(answer) {
		return events.LambdaFunctionURLResponse{}, errFunction
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(answer, &members) == nil {
		if _, ok := members["errorType"]; ok {
			return events.LambdaFunctionURLResponse{}, errFunction
		}
		if _, ok := members["statusCode"]; ok {
			var resp events.LambdaFunctionURLResponse
			if err := json.Unmarshal(answer, &resp); err != nil || resp.StatusCode < 100 || resp.StatusCode > 599 {
				return events.LambdaFunctionURLResponse{}, errFunction
			}
			return resp, nil
		}
	}
	return events.LambdaFunctionURLResponse{StatusCode: http.StatusOK, Headers: map[string]string{"Content-Type": "application/json"}, Body: string(answer)}, nil
}

// plain answers status with a fixed text body.
func plain(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, text)
}

// uuid formats b as an RFC 9562 version 4 UUID, the shape of Lambda's
// request ids.
func uuid(b [16]byte) string {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
