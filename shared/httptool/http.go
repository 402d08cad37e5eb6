package httptool

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/fetch"
	"github.com/toolgate/toolgate/shared/fetchurl"
	"github.com/toolgate/toolgate/shared/httprule"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Input is the http tool's input (catalog.json, "http").
type Input struct {
	// Method is one of httprule.Methods, as written (RFC 9110 §9.1).
	Method string `json:"method"`
	// URL is the http or https URL to send to (at most fetchurl.MaxBytes).
	URL string `json:"url"`
	// Headers are request headers by name (any letter case): the standard
	// ones (httprule.Standard) and those the host's entry names.
	Headers map[string]string `json:"headers,omitempty"`
	// Body is any JSON value (see encodeBody); absent or null: none.
	Body json.RawMessage `json:"body,omitempty"`
	// Accept is how to parse the response body: "json" (the default when
	// empty), "csv" or "text", as structured-data-fetch.
	Accept string `json:"accept,omitempty"`
	// Select is an RFC 6901 JSON Pointer into a JSON body; "" is the whole
	// body. Only with accept json.
	Select string `json:"select,omitempty"`
}

// Output is the http tool's result (catalog.json, "http").
type Output struct {
	// Status is the final response's HTTP status code.
	Status int `json:"status"`
	// ContentType is the final response's Content-Type header, as sent.
	ContentType string `json:"content_type"`
	// Bytes is the body's length after content decoding; 0 when Data is
	// null.
	Bytes int64 `json:"bytes"`
	// Headers are the response headers of KeptHeaders the response has,
	// and Location-Host: the host of its Location (never its path or
	// query). Always present, maybe empty.
	Headers map[string]string `json:"headers"`
	// Sends is how many times the request was sent: 1, or 2 when a 429's
	// Retry-After was waited out and the request sent once more under the
	// same key (docs/tools.md, "Retry-After"). The result is kept on the
	// call's record, so the count is too.
	Sends int `json:"sends"`
	// Data is the parsed body, as structured-data-fetch's: null for HEAD,
	// for 204, 205 and 304, for a 303 answering a method that is not a
	// read, and for an empty body.
	Data json.RawMessage `json:"data"`
}

// KeptHeaders are the response headers Output.Headers carries, under
// these names (the catalog's output schema): validators (RFC 9110 §8.8),
// Retry-After (§10.2.3) and the rate-limit headers of the IETF HTTPAPI
// draft and of common practice (X-RateLimit-*). A value that is longer
// than httprule.MaxHeaderValueBytes or not UTF-8 is left out.
var KeptHeaders = []string{
	"ETag", "Last-Modified", "Retry-After",
	"RateLimit", "RateLimit-Policy", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset",
	"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
}

// LocationHost is the Output.Headers name of the Location's host.
const LocationHost = "Location-Host"

// Tool returns the http tool, which its function runs behind the
// dispatcher (shared/toolfunction) with Contract. The pinned host entries
// are the run's Toolset.HTTPHosts; a toolset without them allows no
// request. The idempotency header's key is the call's ExternalKey; the
// trace headers carry the call's Trace.
func (c *Config) Tool() toolcall.Func {
	return func(ctx context.Context, call *toolcall.Call) (json.RawMessage, error) {
		var in Input
		dec := json.NewDecoder(bytes.NewReader(call.Input))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return nil, tool.Wrap(tool.InputInvalid, err, "the input is not an http input object")
		}
		var hosts []toolset.HTTPHost
		if call.Toolset != nil {
			hosts = call.Toolset.HTTPHosts
		}
		out, err := c.Do(ctx, in, hosts, call.ExternalKey, call.Trace, call.Credential)
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(out)
		if err != nil {
			return nil, tool.Wrap(tool.Internal, err, "internal error")
		}
		return raw, nil
	}
}

// request is one call's checked request, the same for every hop and
// attempt but for the URL.
type request struct {
	// cred is the credential of the entry the call's URL goes to (nil:
	// none), which credential.Transport presents only to its origin.
	cred    *credential.Credential
	method  string
	read    bool
	keyed   bool // the first host's entry declares an idempotency key
	headers map[string]string
	body    []byte
	accept  string
	ptr     []string
	trace   tool.TraceContext
}

// Do sends one request of the http tool, as the package comment says:
// every check of the input, the host entry and the headers first, with
// nothing sent when one refuses; then for the URL and each redirect a
// read follows, fetch's Decide and a request to the checked addresses;
// then the status's class, and the body parsed as accept says. key is
// the call's external idempotency key, sent in the host entry's
// idempotency header with a method that is not a read. tc is the call's
// W3C trace context (toolcall.Call.Trace), sent on every request (each
// redirect hop and a sending after a Retry-After wait too) as the
// traceparent header and, when not empty, the tracestate header; an
// empty tc.Traceparent sends neither. cred, when not nil, is the
// credential the dispatcher resolved for the entry of in.URL (its auth;
// docs/credentials.md): credential.Transport, under every sending,
// presents it on each request whose origin is its own, so that a
// redirect to another host never carries it; every message is redacted
// of it, and a 401 with error="invalid_token" to a request that carried
// it is CALL_PARKED, cause credentials.expired. It returns the
// output or a *tool.Error whose code, MaybeApplied and RetryAfter the
// package comment lists.
func (c *Config) Do(ctx context.Context, in Input, hosts []toolset.HTTPHost, key string, tc tool.TraceContext, cred *credential.Credential) (*Output, error) {
	out, err := c.do(ctx, in, hosts, key, tc, cred)
	if err != nil {
		return nil, cred.RedactError(tool.Classify(err))
	}
	if out.Data, err = redactData(out.Data, cred, httprule.IsRead(in.Method)); err != nil {
		return nil, err
	}
	// The kept headers and the content type are the server's text too.
	out.ContentType = cred.Redact(out.ContentType)
	for k, v := range out.Headers {
		out.Headers[k] = cred.Redact(v)
	}
	return out, nil
}

func (c *Config) do(ctx context.Context, in Input, hosts []toolset.HTTPHost, key string, tc tool.TraceContext, cred *credential.Credential) (*Output, error) {
	r, err := c.check(in, hosts, key)
	if err != nil {
		return nil, err
	}
	r.trace, r.cred = tc, cred
	pinned, err := pinnedFor(hosts, r.method)
	if err != nil {
		return nil, err
	}
	pinnedName := fmt.Sprintf("this run's toolset (http_hosts for %s)", r.method)
	// Config.Timeout bounds each sending, redirects and body included; a
	// Retry-After wait and the sending after it must fit in the caller's
	// deadline (the step's, the function's).
	callCtx := ctx
	ctx, cancel := context.WithTimeout(callCtx, c.EffectiveTimeout())
	defer cancel()

	current, headers, waited := in.URL, r.headers, false
	for hop := 0; ; {
		d := c.DecideFor(ctx, current, pinned, pinnedName)
		if !d.Allow {
			return nil, refusal(d, hop, c)
		}
		resp, written, err := c.send(ctx, d, r, headers)
		if err != nil {
			return nil, c.sendError(ctx, d, err, written)
		}
		code := resp.StatusCode
		if r.read && fetch.IsRedirect(code) {
			loc := resp.Header.Get("Location")
			fetch.Discard(resp)
			if loc == "" {
				return nil, tool.Errorf(tool.PermanentFailure, "%s answered %d without a Location to follow", d.Host, code)
			}
			if hop >= c.EffectiveMaxRedirects() {
				return nil, tool.Errorf(tool.PermissionDenied, "%s answered redirect %d, and at most %d are followed", d.Host, hop+1, c.EffectiveMaxRedirects())
			}
			next, reason := fetchurl.ResolveLocation(d.URL(), loc)
			if reason != "" {
				return nil, tool.Errorf(tool.PermissionDenied, "redirect %d refused: %s", hop+1, reason)
			}
			hop++
			current = next
			if headers, err = nextHopHeaders(hosts, r, d, next); err != nil {
				return nil, tool.Errorf(tool.PermissionDenied, "redirect %d refused: %s", hop, tool.Classify(err).Message)
			}
			continue
		}
		if code == http.StatusTooManyRequests && !waited && (r.read || r.keyed) {
			if wait, ok := c.retryWait(callCtx, resp.Header.Get("Retry-After")); ok {
				fetch.Discard(resp)
				if err := c.sleep(callCtx, wait); err != nil {
					return nil, tool.Wrap(tool.Timeout, err, "the call ended while waiting out %s's Retry-After", d.Host)
				}
				cancel()
				again, cancelAgain := context.WithTimeout(callCtx, c.EffectiveTimeout())
				defer cancelAgain() // at most once: waited is set
				ctx, waited = again, true
				continue // the same URL, decided and sent once more
			}
		}
		defer resp.Body.Close()
		return c.result(ctx, d, r, resp, waited)
	}
}

// nextHopHeaders returns the headers of a read's request to the redirect
// target next, which d's request was redirected to: the entry that
// governs next's host must pin the method too, as the first URL's did
// (Contract; a wider entry that pins it does not), and custom headers
// stay with the origin they were set for, since a header a host's entry
// names may carry a credential of that host (as Go's client keeps
// Authorization to its domain). An error refuses the redirect.
func nextHopHeaders(hosts []toolset.HTTPHost, r *request, d fetch.Decision, next string) (map[string]string, error) {
	u, err := fetchurl.Parse(next)
	if err != nil {
		return nil, err
	}
	e, err := entryForMethod(hosts, u, r.method)
	if err != nil {
		return nil, err
	}
	same := u.Scheme == d.URL().Scheme && u.Host == d.Host && u.EffectivePort() == d.Port
	return hopHeaders(r.headers, e, same), nil
}

// check runs every check that needs no connection.
func (c *Config) check(in Input, hosts []toolset.HTTPHost, key string) (*request, error) {
	if !httprule.Known(in.Method) {
		return nil, tool.Errorf(tool.InputInvalid, "method %q is not one of %s", excerpt.Runes(in.Method, 16, "…"), strings.Join(httprule.Methods, ", "))
	}
	r := &request{method: in.Method, read: httprule.IsRead(in.Method), accept: in.Accept}
	switch r.accept {
	case "":
		r.accept = fetch.AcceptJSON
	case fetch.AcceptJSON, fetch.AcceptCSV, fetch.AcceptText:
	default:
		return nil, tool.Errorf(tool.InputInvalid, "accept %q is not one of json, csv, text", excerpt.Runes(in.Accept, 40, "…"))
	}
	ptr, err := fetch.ParsePointer(in.Select)
	if err != nil {
		return nil, tool.Errorf(tool.InputInvalid, "select: %v", err)
	}
	if in.Select != "" && r.accept != fetch.AcceptJSON {
		return nil, tool.Errorf(tool.InputInvalid, "select applies to accept json only")
	}
	r.ptr = ptr
	u, err := fetchurl.Parse(in.URL)
	if err != nil {
		return nil, tool.Errorf(tool.PermissionDenied, "%v", err)
	}
	entry, err := entryForMethod(hosts, u, in.Method)
	if err != nil {
		return nil, err
	}
	if r.headers, err = checkHeaders(in.Headers, entry); err != nil {
		return nil, err
	}
	if r.body, err = r.encode(in.Body, c.maxRequestBytes()); err != nil {
		return nil, err
	}
	if _, ok := r.headers["Accept"]; !ok {
		r.headers["Accept"] = fetch.DefaultAccept(r.accept)
	}
	if k := entry.Idempotency; k != nil && !r.read {
		v, err := KeyHeaderValue(k.Format, key)
		if err != nil {
			return nil, tool.Wrap(tool.Internal, err, "internal error: the idempotency key for %s cannot be written: %v", entry.Host, err)
		}
		r.keyed = true
		r.headers[k.Header] = v // canonical, as Verify holds it
	}
	return r, nil
}

// encode sets the body and its Content-Type header.
func (r *request) encode(body json.RawMessage, limit int) ([]byte, error) {
	b, ct, err := encodeBody(r.method, body, r.headers["Content-Type"], limit)
	if err != nil {
		return nil, err
	}
	if ct != "" {
		r.headers["Content-Type"] = ct
	}
	return b, nil
}

// send sends r with headers to d's URL; written reports that the request
// line and headers went out, so that the host may have acted on them.
func (c *Config) send(ctx context.Context, d fetch.Decision, r *request, headers map[string]string) (*http.Response, bool, error) {
	var written atomic.Bool
	trace := &httptrace.ClientTrace{WroteHeaders: func() { written.Store(true) }}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), r.method, d.URL().String(), body)
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("User-Agent", "toolgate-http")
	setHeaders(req, headers)
	setTrace(req, r.trace)
	var rt http.RoundTripper = roundTripper(func(req *http.Request) (*http.Response, error) { return c.RoundTrip(d, req) })
	if r.cred != nil {
		// At the bottom: it adds the header to its own copy of the
		// request, for the credential's origin only (every hop is a new
		// request, checked anew).
		rt = credential.Transport(rt, r.cred)
	}
	resp, err := rt.RoundTrip(req)
	return resp, written.Load(), err
}

// roundTripper is a function as an http.RoundTripper.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// refusal is the error of a URL Decide did not allow: nothing was sent
// to it.
func refusal(d fetch.Decision, hop int, c *Config) error {
	code := d.Code
	if code == tool.PermanentFailure {
		// A name that does not exist: a DNS failure, not applied and
		// retryable like any other (docs/tools.md, "http").
		code = tool.UpstreamUnavailable
	}
	switch {
	case code == tool.Timeout:
		return tool.Errorf(code, "the request did not finish within its %s bound (%s)", c.EffectiveTimeout(), d.Reason)
	case hop > 0 && code == tool.PermissionDenied:
		return tool.Errorf(code, "redirect %d refused: %s", hop, d.Reason)
	case hop > 0:
		return tool.Errorf(code, "redirect %d: %s", hop, d.Reason)
	}
	return tool.Errorf(code, "%s", d.Reason)
}

// sendError classifies a request that got no answer: the time bound, an
// invalid certificate, or an unavailable upstream; maybe applied when the
// request had been written. The cause is kept for logs only.
func (c *Config) sendError(ctx context.Context, d fetch.Decision, err error, written bool) error {
	var te *tool.Error
	var cv *tls.CertificateVerificationError
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		te = tool.Wrap(tool.UpstreamUnavailable, err, "the request to %s was cancelled", d.Host)
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		te = tool.Wrap(tool.Timeout, err, "the request to %s did not finish within its %s bound", d.Host, c.EffectiveTimeout())
	case errors.As(err, &cv):
		te = tool.Wrap(tool.PermanentFailure, err, "the TLS certificate of %s is not valid for it", d.Host)
	case written:
		te = tool.Wrap(tool.UpstreamUnavailable, err, "the connection to %s ended before its answer", d.Host)
	default:
		te = tool.Wrap(tool.UpstreamUnavailable, err, "could not send the request to %s", d.Host)
	}
	te.MaybeApplied = written
	return te
}

// retryWait is how long to wait before sending once more after a 429
// whose Retry-After is v: ok when v is delay-seconds or an HTTP-date
// (RFC 9110 §10.2.3) at most MaxRetryAfterWait away, and the wait ends
// at least retryAfterMargin before ctx's deadline.
func (c *Config) retryWait(ctx context.Context, v string) (time.Duration, bool) {
	wait, ok := fetch.ParseRetryAfter(v, c.now())
	if !ok {
		return 0, false
	}
	if wait > MaxRetryAfterWait {
		return 0, false
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait+retryAfterMargin {
		return 0, false
	}
	return wait, true
}

// result maps the final response to an output or an error, by the status
// classes of the package comment.
func (c *Config) result(ctx context.Context, d fetch.Decision, r *request, resp *http.Response, waited bool) (*Output, error) {
	code := resp.StatusCode
	status := strings.TrimSpace(fmt.Sprintf("%s answered %d %s", d.Host, code, http.StatusText(code)))
	retryAfter := fetch.RetryAfter(resp.Header.Get("Retry-After"), c.now())
	switch {
	case code == http.StatusTooManyRequests:
		if waited {
			status += ", again after its Retry-After"
		}
		return nil, &tool.Error{Code: tool.RateLimited, Message: status, RetryAfter: retryAfter}
	case code == http.StatusNotImplemented || code == http.StatusHTTPVersionNotSupported:
		return nil, tool.Errorf(tool.PermanentFailure, "%s", status)
	case code == http.StatusServiceUnavailable:
		return nil, &tool.Error{Code: tool.UpstreamUnavailable, Message: status, RetryAfter: retryAfter, MaybeApplied: !r.read}
	case code >= 500:
		return nil, &tool.Error{Code: tool.UpstreamUnavailable, Message: status, RetryAfter: retryAfter, MaybeApplied: true}
	case code == http.StatusRequestTimeout:
		return nil, tool.Errorf(tool.Timeout, "%s", status)
	case code == http.StatusUnauthorized && presented(r.cred, d) && credential.InvalidToken(resp.Header):
		// RFC 6750 §3.1: the token is expired, revoked or malformed, and
		// the host did nothing with the request.
		e := r.cred.Refused()
		e.Message += fmt.Sprintf(" (%s); set a new one with toolgate credentials set (docs/credentials.md)", status)
		return nil, e
	case (code == http.StatusUnauthorized || code == http.StatusForbidden) && presented(r.cred, d):
		return nil, tool.Errorf(tool.PermissionDenied, "%s: the host refused %s", status, r.cred.Name())
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return nil, tool.Errorf(tool.PermissionDenied, "%s", status)
	case code >= 400:
		return nil, tool.Errorf(tool.PermanentFailure, "%s", status)
	case !r.read && fetch.IsRedirect(code) && code != http.StatusSeeOther:
		to := "a Location the tool cannot read"
		if h := locationHost(d, resp); h != "" {
			to = h
		} else if resp.Header.Get("Location") == "" {
			to = "no Location"
		}
		return nil, tool.Errorf(tool.PermanentFailure, "%s, redirecting to %s; a %s follows no redirect, so it was not sent there: call the new location directly", status, to, r.method)
	case code == http.StatusSeeOther && !r.read, code == http.StatusNotModified:
		return c.output(resp, d, nil, 0, waited), nil
	case code < 200:
		// A final 1xx (101 Switching Protocols) to a write: the host took
		// the request, so it may have acted on it.
		te := tool.Errorf(tool.PermanentFailure, "%s, which is not a final answer the tool reads", status)
		te.MaybeApplied = !r.read
		return nil, te
	case code >= 300:
		return nil, tool.Errorf(tool.PermanentFailure, "%s, which is not a redirect the tool follows", status)
	case r.method == http.MethodHead || code == http.StatusNoContent || code == http.StatusResetContent:
		return c.output(resp, d, nil, 0, waited), nil
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.Peek(1); err == io.EOF {
		return c.output(resp, d, nil, 0, waited), nil
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{br, resp.Body}
	out, err := c.ReadBody(ctx, d, resp, r.accept, r.ptr)
	if err != nil {
		var te *tool.Error
		if !errors.As(err, &te) {
			te = tool.Classify(err)
		}
		// The host answered success: a request that is not a read was
		// applied, whatever became of its answer.
		te.MaybeApplied = te.MaybeApplied || !r.read
		return nil, te
	}
	return c.output(resp, d, out.Data, out.Bytes, waited), nil
}

// output is the result of a success.
func (c *Config) output(resp *http.Response, d fetch.Decision, data json.RawMessage, n int64, waited bool) *Output {
	if data == nil {
		data = json.RawMessage("null")
	}
	sends := 1
	if waited {
		sends = 2
	}
	return &Output{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Bytes: n, Headers: keptHeaders(d, resp), Sends: sends, Data: data}
}

// keptHeaders picks KeptHeaders and Location-Host from resp.
func keptHeaders(d fetch.Decision, resp *http.Response) map[string]string {
	out := map[string]string{}
	for _, name := range KeptHeaders {
		v := resp.Header.Get(name)
		if v != "" && len(v) <= httprule.MaxHeaderValueBytes && utf8.ValidString(v) {
			out[name] = v
		}
	}
	if h := locationHost(d, resp); h != "" {
		out[LocationHost] = h
	}
	return out
}

// locationHost is the host of resp's Location, resolved against the
// request's URL, in hostlist's comparison form; "" when there is none or
// fetchurl does not accept it.
func locationHost(d fetch.Decision, resp *http.Response) string {
	loc := resp.Header.Get("Location")
	if loc == "" {
		return ""
	}
	abs, reason := fetchurl.ResolveLocation(d.URL(), loc)
	if reason != "" {
		return ""
	}
	u, err := fetchurl.Parse(abs)
	if err != nil {
		return ""
	}
	return u.Host
}
