package httprule

import (
	"fmt"
	"net/textproto"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"

	"github.com/toolgate/toolgate/shared/catalog"
)

// Rules a refusal of the http tool names, at compile time (the resolver's
// diagnostics on literal values) and at run time (the function's
// TOOL_PERMISSION_DENIED messages), under the same names (docs/tools.md,
// "http").
const (
	// RuleHost: the URL's host and port match no entry of http_hosts, or
	// there are none.
	RuleHost = "http-host"
	// RuleMethod: the host's entry does not pin the call's method.
	RuleMethod = "http-method"
	// RuleHeader: a request header the call may not set.
	RuleHeader = "http-header"
)

// Methods the http tool sends (RFC 9110 §9.3; PATCH: RFC 5789), sorted.
var Methods = []string{"DELETE", "GET", "HEAD", "PATCH", "POST", "PUT"}

// Known reports whether m is one of Methods, exactly as written (methods
// are case-sensitive, RFC 9110 §9.1).
func Known(m string) bool { return slices.Contains(Methods, m) }

// IsRead reports whether m is GET or HEAD: safe methods (RFC 9110
// §9.2.1), which the http tool sends without review, at least once, and
// whose redirects it follows.
func IsRead(m string) bool { return m == "GET" || m == "HEAD" }

// TakesBody reports whether a request of method m may carry the call's
// body: POST, PUT and PATCH. A body with any other method is refused
// (TOOL_INPUT_INVALID): GET, HEAD and DELETE bodies have no defined
// semantics (RFC 9110 §9.3.1, §9.3.2, §9.3.5).
func TakesBody(m string) bool { return m == "POST" || m == "PUT" || m == "PATCH" }

// Idempotency key formats a host entry may declare (docs/tools.md,
// "Idempotency keys").
const (
	// FormatRaw sends the call's external idempotency key as it is (visible
	// ASCII). The default.
	FormatRaw = "raw"
	// FormatSFString sends it as an RFC 8941 sf-string (a quoted string),
	// as the IETF HTTPAPI draft "The Idempotency-Key HTTP Header Field"
	// defines the header's value.
	FormatSFString = "sf-string"
	// FormatUUID sends a UUID derived from it (RFC 9562 version 8, from
	// its SHA-256), for hosts that accept only UUID keys.
	FormatUUID = "uuid"
)

// Formats are the idempotency key formats, sorted.
var Formats = []string{FormatRaw, FormatSFString, FormatUUID}

// KnownFormat reports whether f is one of Formats.
func KnownFormat(f string) bool { return slices.Contains(Formats, f) }

// standardHeaders are the request headers any call may set, by canonical
// name (textproto.CanonicalMIMEHeaderKey): content negotiation, the
// request content's type and language, conditional requests (RFC 9110
// §12.5, §8.3, §8.5, §13.1) and Cache-Control (RFC 9111 §5.2).
var standardHeaders = []string{
	"Accept", "Accept-Charset", "Accept-Encoding", "Accept-Language",
	"Cache-Control", "Content-Language", "Content-Type",
	"If-Match", "If-Modified-Since", "If-None-Match", "If-Range", "If-Unmodified-Since",
}

// Standard reports whether name (any letter case) is a header every call
// may set without its host entry naming it.
func Standard(name string) bool {
	return slices.Contains(standardHeaders, textproto.CanonicalMIMEHeaderKey(name))
}

// forbidden are header names no call sets and no host entry names, by
// canonical name, with the reason a refusal gives.
var forbidden = map[string]string{
	"Host":                   "the host comes from the URL",
	"Authorization":          "credentials come from the platform, never from a call",
	"Cookie":                 "credentials come from the platform, never from a call",
	"Content-Length":         "the tool sets the length of the body it sends",
	"Transfer-Encoding":      "a hop-by-hop header (RFC 9110 §7.6.1)",
	"Te":                     "a hop-by-hop header (RFC 9110 §7.6.1)",
	"Trailer":                "a hop-by-hop header (RFC 9110 §7.6.1)",
	"Connection":             "a hop-by-hop header (RFC 9110 §7.6.1)",
	"Keep-Alive":             "a hop-by-hop header (RFC 9110 §7.6.1)",
	"Upgrade":                "a hop-by-hop header (RFC 9110 §7.6.1)",
	"Expect":                 "the tool sends the body without waiting for 100-continue",
	"X-Http-Method-Override": "a method-override header would send another method than the one reviewed",
	"X-Http-Method":          "a method-override header would send another method than the one reviewed",
	"X-Method-Override":      "a method-override header would send another method than the one reviewed",
	"Forwarded":              "a forwarding header (RFC 7239) would claim another client",
	"X-Real-Ip":              "a forwarding header would claim another client",
	"Traceparent":            "the trace context comes from the run",
	"Tracestate":             "the trace context comes from the run",
	"Baggage":                "toolgate never sends W3C baggage: it would carry a run's values to every host",
}

// Forbidden reports whether a header (any letter case) may never be set by
// a call or named by a host entry, and why: Host, Authorization, Cookie,
// Proxy-*, hop-by-hop headers, Content-Length, Expect, method-override
// headers, forwarding headers (Forwarded, X-Forwarded-*, X-Real-IP),
// X-Amz-* and the W3C trace context's headers (traceparent, tracestate, baggage). Underscores count as
// hyphens: CGI-style servers (RFC 3875 §4.1.18) and the frameworks behind
// them read X_Forwarded_For as X-Forwarded-For, both HTTP_X_FORWARDED_FOR.
func Forbidden(name string) (bool, string) {
	c := textproto.CanonicalMIMEHeaderKey(strings.ReplaceAll(name, "_", "-"))
	if why, ok := forbidden[c]; ok {
		return true, why
	}
	switch {
	case strings.HasPrefix(c, "Proxy-"):
		return true, "a proxy header is for a proxy, and the tool uses none"
	case strings.HasPrefix(c, "X-Forwarded-"):
		return true, "a forwarding header would claim another client"
	case strings.HasPrefix(c, "X-Amz-"):
		return true, "an AWS request header could sign or redirect a request to AWS"
	}
	return false, ""
}

// SameName reports whether header names a and b name one header for the
// server: equal in any ASCII letter case (RFC 9110 §5.1), underscores
// counting as hyphens, as CGI-style servers read them (RFC 3875
// §4.1.18).
func SameName(a, b string) bool {
	return len(a) == len(b) && strings.EqualFold(strings.ReplaceAll(a, "_", "-"), strings.ReplaceAll(b, "_", "-")) && isASCII(a) && isASCII(b)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// MaxHeaderValueBytes bounds one request header value (toolgate's own,
// docs/tools.md): longer values are refused, never cut.
const MaxHeaderValueBytes = 1024

// CheckHeaderName checks a header name a host entry's headers list names:
// an RFC 9110 §5.1 token, neither standard (any call may set those) nor
// forbidden. The error is the predicate alone, for the caller to name the
// entry.
func CheckHeaderName(name string) error {
	switch {
	case !httpguts.ValidHeaderFieldName(name):
		return fmt.Errorf("%q is not a header name (an RFC 9110 token)", name)
	case Standard(name):
		return fmt.Errorf("%s is a standard header every call may set: leave it out", textproto.CanonicalMIMEHeaderKey(name))
	}
	if bad, why := Forbidden(name); bad {
		return fmt.Errorf("%s may not be set: %s", textproto.CanonicalMIMEHeaderKey(name), why)
	}
	return nil
}

// CheckHeaderValue checks a request header value: at most
// MaxHeaderValueBytes, an RFC 9110 §5.5 field value (no CR, LF or NUL, no
// other control character but tab), valid UTF-8.
func CheckHeaderValue(v string) error {
	if len(v) > MaxHeaderValueBytes || !httpguts.ValidHeaderFieldValue(v) {
		return fmt.Errorf("is not an HTTP field value of at most %d bytes without CR, LF or NUL", MaxHeaderValueBytes)
	}
	if !utf8.ValidString(v) {
		return fmt.Errorf("is not valid UTF-8")
	}
	return nil
}

// Contract is what a call of the http tool gets from its method and its
// host entry, whatever its step was compiled for (Decide).
type Contract struct {
	// Review: the call needs an approved review.
	Review bool
	// Policy: at_least_once for reads and for hosts that honour an
	// idempotency key, at_most_once otherwise.
	Policy catalog.Policy
	// Idempotent: a retry cannot repeat the call's effect (a read, or a
	// host that honours the key the call sends).
	Idempotent bool
}

// Decide returns the contract of a call with method m to a host whose
// entry declares an idempotency key (keyed) or not: GET and HEAD are
// reads, no review, at_least_once; POST, PUT, PATCH and DELETE are side
// effects that need a review, at_most_once unless the host honours an
// idempotency key, in which case a call is retried under it. An unknown
// method gets the strictest contract.
func Decide(m string, keyed bool) Contract {
	switch {
	case IsRead(m):
		return Contract{Policy: catalog.AtLeastOnce, Idempotent: true}
	case Known(m) && keyed:
		return Contract{Review: true, Policy: catalog.AtLeastOnce, Idempotent: true}
	}
	return Contract{Review: true, Policy: catalog.AtMostOnce}
}
