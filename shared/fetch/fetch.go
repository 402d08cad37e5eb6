package fetch

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"

	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/fetchurl"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// Accept types of the input.
const (
	AcceptJSON = "json"
	AcceptCSV  = "csv"
	AcceptText = "text"
)

// AllowedHeaders are the request headers a caller may set (the catalog's
// input schema): content negotiation and conditional requests only.
var AllowedHeaders = []string{"Accept", "Accept-Language", "If-None-Match", "If-Modified-Since"}

// maxHeaderValue bounds a header value, as the input schema does.
const maxHeaderValue = 1024

// Input is structured-data-fetch's input (catalog.json).
type Input struct {
	// URL is the http or https URL to GET (at most fetchurl.MaxBytes).
	URL string `json:"url"`
	// Accept is how to parse the body: "json" (the default when empty),
	// "csv" or "text".
	Accept string `json:"accept,omitempty"`
	// Select is an RFC 6901 JSON Pointer into a JSON body; "" is the whole
	// body. Only with accept json.
	Select string `json:"select,omitempty"`
	// Headers are request headers, named exactly as in AllowedHeaders.
	Headers map[string]string `json:"headers,omitempty"`
}

// Output is structured-data-fetch's result (catalog.json).
type Output struct {
	// Status is the final response's HTTP status code.
	Status int `json:"status"`
	// ContentType is the final response's Content-Type header, as sent.
	ContentType string `json:"content_type"`
	// Bytes is the body's length after content decoding.
	Bytes int64 `json:"bytes"`
	// Data is the parsed body: the JSON value at Select as it appears in
	// the body, CSV as a list of objects keyed by the header row, or text as
	// a string. It is null for 204, 205 and 304.
	Data json.RawMessage `json:"data"`
}

// Tool returns the structured-data-fetch tool, which its function runs
// behind the dispatcher (shared/toolfunction). The pinned host list is the run's Toolset.FetchHosts; a toolset without them
// allows no fetch.
func (c *Config) Tool() toolcall.Func {
	return func(ctx context.Context, call *toolcall.Call) (json.RawMessage, error) {
		var in Input
		dec := json.NewDecoder(bytes.NewReader(call.Input))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return nil, tool.Wrap(tool.InputInvalid, err, "the input is not a structured-data-fetch input object")
		}
		var hosts []string
		if call.Toolset != nil {
			hosts = call.Toolset.FetchHosts
		}
		pinned, err := hostlist.ParseList(hosts)
		if err != nil {
			return nil, tool.Wrap(tool.PermissionDenied, err, "the run's toolset holds an invalid fetch_hosts entry: %s", err)
		}
		out, err := Fetch(ctx, c, in, pinned)
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

// Fetch runs one structured-data-fetch: it checks in, then for the URL and
// each redirect runs Decide and, if allowed, a GET to the checked addresses;
// then it reads and parses the final body. It returns the output, or a
// *tool.Error whose code is listed in the package comment.
func Fetch(ctx context.Context, c *Config, in Input, pinned hostlist.List) (*Output, error) {
	ptr, err := checkInput(&in)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()

	current := in.URL
	for hop := 0; ; hop++ {
		d := c.Decide(ctx, current, pinned)
		if !d.Allow {
			switch {
			case d.Code == tool.Timeout:
				return nil, timeoutError(c)
			case hop > 0 && d.Code == tool.PermissionDenied:
				return nil, tool.Errorf(d.Code, "redirect %d refused: %s", hop, d.Reason)
			case hop > 0:
				return nil, tool.Errorf(d.Code, "redirect %d: %s", hop, d.Reason)
			}
			return nil, tool.Errorf(d.Code, "%s", d.Reason)
		}
		resp, err := c.get(ctx, d, in.Headers, in.Accept)
		if err != nil {
			return nil, transportError(ctx, c, d, err)
		}
		if !IsRedirect(resp.StatusCode) {
			defer resp.Body.Close()
			return c.result(ctx, d, resp, in.Accept, ptr)
		}
		loc := resp.Header.Get("Location")
		Discard(resp)
		if loc == "" {
			return nil, tool.Errorf(tool.PermanentFailure, "%s answered %d without a Location to follow", d.Host, resp.StatusCode)
		}
		if hop >= c.maxRedirects() {
			return nil, tool.Errorf(tool.PermissionDenied, "%s answered redirect %d, and at most %d are followed", d.Host, hop+1, c.maxRedirects())
		}
		next, reason := fetchurl.ResolveLocation(d.url, loc)
		if reason != "" {
			return nil, tool.Errorf(tool.PermissionDenied, "redirect %d refused: %s", hop+1, reason)
		}
		current = next
	}
}

// checkInput validates the fields the schema cannot, and fills defaults.
func checkInput(in *Input) ([]string, error) {
	switch in.Accept {
	case "":
		in.Accept = AcceptJSON
	case AcceptJSON, AcceptCSV, AcceptText:
	default:
		return nil, tool.Errorf(tool.InputInvalid, "accept %q is not one of json, csv, text", excerpt.Runes(in.Accept, 40, "…"))
	}
	ptr, err := parsePointer(in.Select)
	if err != nil {
		return nil, tool.Errorf(tool.InputInvalid, "select: %v", err)
	}
	if in.Select != "" && in.Accept != AcceptJSON {
		return nil, tool.Errorf(tool.InputInvalid, "select applies to accept json only")
	}
	for name, v := range in.Headers {
		if !slices.Contains(AllowedHeaders, name) {
			return nil, tool.Errorf(tool.PermissionDenied, "the header %q may not be set: only Accept, Accept-Language, If-None-Match and If-Modified-Since", excerpt.Runes(name, 40, "…"))
		}
		if len(v) > maxHeaderValue || !httpguts.ValidHeaderFieldValue(v) || !utf8.ValidString(v) {
			return nil, tool.Errorf(tool.InputInvalid, "the %s header value is not a valid HTTP field value of at most %d bytes", name, maxHeaderValue)
		}
	}
	return ptr, nil
}

var defaultAccept = map[string]string{
	AcceptJSON: "application/json",
	AcceptCSV:  "text/csv",
	AcceptText: "text/plain",
}

// DefaultAccept is the Accept header sent for an accept type (json:
// application/json, csv: text/csv, text: text/plain) when the call sets
// none; "" for any other.
func DefaultAccept(accept string) string { return defaultAccept[accept] }

// get sends one GET for d over a transport that dials d.Addrs only.
func (c *Config) get(ctx context.Context, d Decision, headers map[string]string, accept string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.url.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "toolgate-structured-data-fetch")
	req.Header.Set("Accept", DefaultAccept(accept))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return c.RoundTrip(d, req)
}

// transportFor returns a transport for one request that Decide allowed as
// d: it connects to d's host and port only, through d.Addrs in order (no
// second look-up), with no proxy, and does not reuse the connection.
func (c *Config) transportFor(d Decision) *http.Transport {
	dial := c.Dial
	if dial == nil {
		dial = (&net.Dialer{Control: c.control}).DialContext
	}
	port, _ := strconv.Atoi(d.Port)
	want := net.JoinHostPort(d.Host, d.Port)
	return &http.Transport{
		Proxy: nil, // never a proxy: it would connect to what was not checked
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			if addr != want {
				return nil, fmt.Errorf("transport asked for %s, checked %s", addr, want)
			}
			var last error
			for _, a := range d.Addrs {
				conn, err := dial(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
				if err == nil {
					return conn, nil
				}
				last = err
			}
			return nil, last
		},
		TLSClientConfig:        &tls.Config{RootCAs: c.RootCAs, MinVersion: tls.VersionTLS12},
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: 64 << 10,
	}
}

// control runs CheckAddr on the socket's address before the default dialer
// connects: a second line behind Decide.
func (c *Config) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial %s: not an address", address)
	}
	if ok, why := CheckAddr(ap.Addr(), c.AllowAddresses); !ok {
		return fmt.Errorf("dial refused: %s", why)
	}
	return nil
}

// IsRedirect reports whether code is a redirect the tools know: 301, 302,
// 303, 307 or 308 (RFC 9110 §15.4).
func IsRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// Discard reads at most 64 KiB of a body that is not used, so that its
// connection ends cleanly, and closes it.
func Discard(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
	resp.Body.Close()
}

// result maps the final response to an output or an error.
func (c *Config) result(ctx context.Context, d Decision, resp *http.Response, accept string, ptr []string) (*Output, error) {
	code := resp.StatusCode
	status := strings.TrimSpace(fmt.Sprintf("%s answered %d %s", d.Host, code, http.StatusText(code)))
	switch {
	case code == http.StatusTooManyRequests:
		return nil, &tool.Error{Code: tool.RateLimited, Message: status, RetryAfter: RetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	case code >= 500:
		return nil, &tool.Error{Code: tool.UpstreamUnavailable, Message: status, RetryAfter: RetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	case code >= 400:
		return nil, tool.Errorf(tool.PermanentFailure, "%s", status)
	case code == http.StatusNotModified || code == http.StatusNoContent || code == http.StatusResetContent:
		return &Output{Status: code, ContentType: resp.Header.Get("Content-Type"), Data: json.RawMessage("null")}, nil
	case code >= 300 || code < 200:
		return nil, tool.Errorf(tool.PermanentFailure, "%s, which is not a redirect the tool follows", status)
	}
	return c.ReadBody(ctx, d, resp, accept, ptr)
}

// ReadBody reads and parses the body of resp, a response to the request
// Decide allowed as d whose status the caller has judged a success, as
// the package comment's "Body" says: at most Config.MaxBytes (counted
// after content decoding; a larger body is refused, never cut), UTF-8,
// parsed as accept (AcceptJSON, AcceptCSV or AcceptText) and, for json,
// narrowed to the value at ptr (ParsePointer's tokens). ctx bounds the
// read. It returns the output with resp's status and Content-Type, or a
// *tool.Error: TOOL_PERMISSION_DENIED for a body over the bound,
// TOOL_PERMANENT_FAILURE for a body that is not UTF-8, does not parse or
// has no value at ptr, TOOL_UPSTREAM_UNAVAILABLE for a connection lost
// mid-body, TOOL_TIMEOUT when ctx ends first. Its messages name d's host,
// never the body's content. It does not close resp.Body.
func (c *Config) ReadBody(ctx context.Context, d Decision, resp *http.Response, accept string, ptr []string) (*Output, error) {
	code := resp.StatusCode
	limit := c.maxBytes()
	if resp.ContentLength > limit {
		return nil, tooLarge(d, limit)
	}
	body := &bodyReader{r: resp.Body, left: limit + 1}
	var data json.RawMessage
	var perr error
	switch accept {
	case AcceptJSON:
		br := bufio.NewReaderSize(body, 16) // for the BOM only: larger reads bypass it
		if b, _ := br.Peek(len(bom)); bytes.Equal(b, bom) {
			_, _ = br.Discard(len(bom)) // RFC 8259 §8.1 lets a parser ignore a BOM
		}
		data, perr = selectJSON(br, ptr)
	default:
		var buf bytes.Buffer
		if resp.ContentLength > 0 {
			buf.Grow(int(resp.ContentLength))
		}
		_, perr = buf.ReadFrom(body)
		if perr == nil {
			data, perr = encodeText(buf.Bytes(), accept)
		}
	}
	body.drain()
	switch {
	case body.err != nil:
		return nil, transportError(ctx, c, d, body.err)
	case ctx.Err() != nil && (perr != nil || body.n > limit):
		// Whatever the parser saw, the body was cut short by the bound.
		return nil, transportError(ctx, c, d, ctx.Err())
	case body.n > limit:
		return nil, tooLarge(d, limit)
	case !body.utf8.valid():
		return nil, tool.Errorf(tool.PermanentFailure, "the body from %s is not valid UTF-8", d.Host)
	}
	var nm *noMatch
	var pe *parseError
	switch {
	case errors.As(perr, &nm):
		return nil, tool.Errorf(tool.PermanentFailure, "select %q does not resolve: the body has no %q", pointerPrefix(ptr), nm.at)
	case errors.As(perr, &pe):
		return nil, tool.Errorf(tool.PermanentFailure, "%s (from %s, accept %s)", pe.msg, d.Host, accept)
	case perr != nil:
		return nil, transportError(ctx, c, d, perr)
	}
	return &Output{Status: code, ContentType: resp.Header.Get("Content-Type"), Bytes: body.n, Data: data}, nil
}

// encodeText turns a CSV or text body into its JSON output.
func encodeText(b []byte, accept string) (json.RawMessage, error) {
	if !utf8.Valid(b) {
		return nil, nil // reported by the UTF-8 check
	}
	if accept == AcceptText {
		return json.Marshal(string(b))
	}
	rows, err := parseCSV(b)
	if err != nil {
		return nil, err
	}
	return json.Marshal(rows)
}

func tooLarge(d Decision, limit int64) error {
	return tool.Errorf(tool.PermissionDenied, "the body from %s is larger than the %d-byte bound (%s); fetch a smaller resource", d.Host, limit, sizeText(limit))
}

func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

func timeoutError(c *Config) error {
	return tool.Errorf(tool.Timeout, "%s", timeoutMessage(c))
}

func timeoutMessage(c *Config) string {
	return fmt.Sprintf("the fetch did not finish within its %s bound", c.timeout())
}

// transportError classifies a failure to connect or to read: the time
// bound, an invalid certificate, or an unavailable upstream. The cause is
// kept for logs only.
func transportError(ctx context.Context, c *Config, d Decision, err error) error {
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		if errors.Is(ctx.Err(), context.Canceled) {
			return tool.Wrap(tool.UpstreamUnavailable, err, "the fetch was cancelled")
		}
		return tool.Wrap(tool.Timeout, err, "%s", timeoutMessage(c))
	}
	var cv *tls.CertificateVerificationError
	if errors.As(err, &cv) {
		return tool.Wrap(tool.PermanentFailure, err, "the TLS certificate of %s is not valid for it", d.Host)
	}
	return tool.Wrap(tool.UpstreamUnavailable, err, "could not fetch from %s (%s)", d.Host, addrList(d.Addrs))
}

func addrList(as []netip.Addr) string {
	var b bytes.Buffer
	for i, a := range as {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.String())
	}
	return b.String()
}

// RetryAfter reads a Retry-After header value (RFC 9110 §10.2.3):
// delay-seconds or an HTTP-date, relative to now. Anything else, or a time
// past, is 0; more than a day is a day (ParseRetryAfter).
func RetryAfter(v string, now time.Time) time.Duration {
	d, _ := ParseRetryAfter(v, now)
	return d
}

// ParseRetryAfter reads a Retry-After header value (RFC 9110 §10.2.3),
// relative to now: delay-seconds (1*DIGIT, of any length) or an
// HTTP-date. ok is false for an empty or unreadable value. The delay is
// at least 0 (a date past) and at most a day: delay-seconds past a day,
// however many digits, are a day, never wrapped around to a small number.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	const most = 24 * time.Hour
	if v != "" && strings.Trim(v, "0123456789") == "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n > uint64(most/time.Second) {
			return most, true // only digits: too many of them is a long delay
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now).Round(time.Second), 0), most), true
}
