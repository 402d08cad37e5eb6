package httptool

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/textproto"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/httprule"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// checkHeaders checks the call's headers against the rules and the host
// entry, and returns them by canonical name. In order, for each name
// (sorted, so the first refusal is always the same): a name given twice
// in another letter case is TOOL_INPUT_INVALID; an httprule.Forbidden
// header, the entry's auth header (the tool presents the credential), the
// entry's idempotency header (the tool sets it) and a header
// neither httprule.Standard nor named by the entry are
// TOOL_PERMISSION_DENIED; a value httprule.CheckHeaderValue refuses is
// TOOL_INPUT_INVALID. Messages name the header and the rule, never the
// value.
func checkHeaders(in map[string]string, entry *toolset.HTTPHost) (map[string]string, error) {
	names := make([]string, 0, len(in))
	for n := range in {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make(map[string]string, len(in))
	for _, n := range names {
		c := textproto.CanonicalMIMEHeaderKey(n)
		shown := excerpt.Runes(c, 64, "…")
		if _, dup := out[c]; dup {
			return nil, tool.Errorf(tool.InputInvalid, "the header %s is given twice (header names are case-insensitive, RFC 9110 §5.1)", shown)
		}
		if bad, why := httprule.Forbidden(c); bad {
			return nil, tool.Errorf(tool.PermissionDenied, "refused by rule %s: the header %s may not be set: %s", RuleHeader, shown, why)
		}
		if a := entry.Auth; a != nil && a.Header != "" && httprule.SameName(a.Header, c) {
			// The toolset refuses an entry whose headers name it; a
			// standard header (Authorization) is refused here too.
			return nil, tool.Errorf(tool.PermissionDenied, "refused by rule %s: the header %s carries %s's credential, which the tool presents from the credentials set for it (docs/credentials.md)", RuleHeader, shown, entry.Host)
		}
		if k := entry.Idempotency; k != nil && httprule.SameName(k.Header, c) {
			return nil, tool.Errorf(tool.PermissionDenied, "refused by rule %s: the header %s carries %s's idempotency key, which the tool sets from the call's key", RuleHeader, shown, entry.Host)
		}
		if !httprule.Standard(c) && !namedBy(entry, c) {
			return nil, tool.Errorf(tool.PermissionDenied, "refused by rule %s: the header %s is neither a standard header nor named by the http_hosts entry %s (headers: %s)", RuleHeader, shown, entry.Host, listOrNone(entry.Headers))
		}
		if err := httprule.CheckHeaderValue(in[n]); err != nil {
			return nil, tool.Errorf(tool.InputInvalid, "the %s header value %v", shown, err)
		}
		out[c] = in[n]
	}
	return out, nil
}

func namedBy(entry *toolset.HTTPHost, canonical string) bool {
	return entry != nil && slices.ContainsFunc(entry.Headers, func(h string) bool { return strings.EqualFold(h, canonical) })
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

// hopHeaders are the headers a request to a redirect's target carries:
// the standard ones, and the custom ones only when the target is the same
// origin (sameOrigin: scheme, host and port) and its entry names them.
func hopHeaders(h map[string]string, entry *toolset.HTTPHost, sameOrigin bool) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		if httprule.Standard(k) || sameOrigin && namedBy(entry, k) {
			out[k] = v
		}
	}
	return out
}

// encodeBody encodes the input's body for a request of method with the
// call's Content-Type (contentType, "" when none): a JSON value is sent as
// its JSON text with Content-Type application/json when none is given or
// the given media type is JSON (application/json, or a +json suffix, RFC
// 6839 §3.1); with another media type the body must be a JSON string,
// sent as its UTF-8 bytes. A body of JSON null, or none, sends nothing. It
// returns the bytes and the Content-Type to send ("" to send none).
// Errors are TOOL_INPUT_INVALID: a body with a method other than POST,
// PUT and PATCH (httprule.TakesBody), a Content-Type that is no media type
// (RFC 9110 §8.3.1), a non-string body with a non-JSON media type, more
// than limit bytes. They name the rule, never the body.
func encodeBody(method string, body json.RawMessage, contentType string, limit int) ([]byte, string, error) {
	if len(body) == 0 || string(body) == "null" {
		return nil, "", nil
	}
	if !httprule.TakesBody(method) {
		return nil, "", tool.Errorf(tool.InputInvalid, "a %s request carries no body: only POST, PUT and PATCH do (RFC 9110 §9.3)", method)
	}
	var out []byte
	send := contentType
	switch mt, err := mediaType(contentType); {
	case err != nil:
		return nil, "", tool.Errorf(tool.InputInvalid, "the Content-Type header is not a media type (RFC 9110 §8.3.1): %v", err)
	case contentType == "":
		out, send = body, "application/json"
	case isJSON(mt):
		out = body
	default:
		var s string
		if err := json.Unmarshal(body, &s); err != nil {
			return nil, "", tool.Errorf(tool.InputInvalid, "with Content-Type %s the body must be a JSON string, sent as its UTF-8 bytes; only a JSON media type (application/json, +json) sends a JSON value", excerpt.Runes(mt, 64, "…"))
		}
		out = []byte(s)
	}
	if len(out) > limit {
		return nil, "", tool.Errorf(tool.InputInvalid, "the body is %d bytes as sent, over the %d-byte bound of this deployment's http tool", len(out), limit)
	}
	return out, send, nil
}

// mediaType reads a Content-Type value's media type, lower-case; "" for
// none.
func mediaType(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	mt, _, err := mime.ParseMediaType(v)
	if err != nil {
		return "", fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "mime: "))
	}
	if typ, sub, _ := strings.Cut(mt, "/"); typ == "" || sub == "" {
		return "", fmt.Errorf("no type/subtype")
	}
	return mt, nil
}

// isJSON reports whether a lower-case media type is JSON's
// (application/json, RFC 8259 §11) or has the +json structured syntax
// suffix (RFC 6839 §3.1).
func isJSON(mt string) bool {
	typ, sub, ok := strings.Cut(mt, "/")
	return ok && typ != "" && (mt == "application/json" || strings.HasSuffix(sub, "+json") && len(sub) > len("+json"))
}

// setHeaders puts h on req under their canonical names.
func setHeaders(req *http.Request, h map[string]string) {
	for k, v := range h {
		req.Header[k] = []string{v}
	}
}

// setTrace sets the W3C trace context headers (Trace Context Level 1 §3:
// traceparent, and tracestate when not empty) from tc, after the call's
// own headers: toolgate sets them, and httprule.Forbidden keeps a call
// from setting them (docs/tools.md, "http", "Headers"). An empty
// tc.Traceparent sets neither. Never baggage.
func setTrace(req *http.Request, tc tool.TraceContext) {
	if tc.Traceparent == "" {
		return
	}
	req.Header.Set("traceparent", tc.Traceparent)
	req.Header.Del("tracestate")
	if tc.Tracestate != "" {
		req.Header.Set("tracestate", tc.Tracestate)
	}
}
