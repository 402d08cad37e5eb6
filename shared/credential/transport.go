package credential

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// pathPlaceholder is the path segment a pinned MCP URL writes where a
// credential presented in the path goes (toolset.Auth.PathSegment).
const pathPlaceholder = "{secret}"

// Transport returns next with c presented on every request to c's exact
// origin (scheme, host and port, default ports normalized: RFC 6454 §4),
// and on no other: a redirect to another host, port or scheme goes out
// without it. The request is cloned before c is added; the caller's
// request is never changed. A nil c: next itself.
//
// A header credential sets c.Target.Auth.Header to "<Scheme> <secret>"
// (or the secret alone without a Scheme). A path credential replaces path
// segment c.Target.Auth.PathSegment (from 1) of a request to the origin,
// which must be written literally "{secret}": a request to the origin
// without the placeholder there fails, unsent, with an error that names
// the segment's position only.
func Transport(next http.RoundTripper, c *Credential) http.RoundTripper {
	if c == nil {
		return next
	}
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{next: next, cred: c, origin: normalizeOrigin(c.Target.Origin)}
}

// transport is the RoundTripper Transport returns.
type transport struct {
	next   http.RoundTripper
	cred   *Credential
	origin string
}

// RoundTrip sends req, with the credential when req is to its origin.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil || t.origin == "" || originOf(req.URL) != t.origin {
		return t.next.RoundTrip(req)
	}
	out := req.Clone(req.Context())
	a := t.cred.Target.Auth
	switch {
	case a.Header != "":
		v := string(t.cred.secret)
		if a.Scheme != "" {
			v = a.Scheme + " " + v
		}
		out.Header.Set(a.Header, v)
	case a.PathSegment > 0:
		segs := strings.Split(out.URL.Path, "/")
		// A path starts with "/", so segment N is segs[N].
		if a.PathSegment >= len(segs) || segs[a.PathSegment] != pathPlaceholder {
			closeBody(req)
			return nil, fmt.Errorf("credential: path segment %d of the request to %s is not %s", a.PathSegment, t.origin, pathPlaceholder)
		}
		segs[a.PathSegment] = string(t.cred.secret)
		out.URL.Path = strings.Join(segs, "/")
		out.URL.RawPath = ""
	default:
		closeBody(req)
		return nil, errors.New("credential: the target's auth names neither a header nor a path segment")
	}
	return t.next.RoundTrip(out)
}

// closeBody closes a request's body that will not be sent, as a
// RoundTripper must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// originOf is u's origin, "<scheme>://<host>[:<port>]", lowercase, the
// scheme's default port left out.
func originOf(u *url.URL) string {
	return buildOrigin(u.Scheme, u.Hostname(), u.Port())
}

// normalizeOrigin is origin in originOf's form; "" when it is not one
// (a path, a query, user information or no host).
func normalizeOrigin(origin string) string {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return ""
	}
	return originOf(u)
}

func buildOrigin(scheme, host, port string) string {
	scheme, host = strings.ToLower(scheme), strings.ToLower(strings.TrimSuffix(host, "."))
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		return scheme + "://" + net.JoinHostPort(strings.Trim(host, "[]"), port)
	}
	return scheme + "://" + host
}

// Digest is the SHA-256 of c's value (RFC 6234): a key for caches kept in
// memory that must tell two values apart, never to be logged or recorded
// (a short secret's digest can be guessed back). A nil c: zero.
func (c *Credential) Digest() [sha256.Size]byte {
	if c == nil {
		return [sha256.Size]byte{}
	}
	return sha256.Sum256(c.secret)
}

// Redact returns s with every occurrence of c's secret (as sent: raw,
// with its scheme, and percent-encoded; and as a JSON string's content
// writes it, RFC 8259 §7, with Go's HTML-safe escapes of < > & and with
// "/" escaped as "\/", since a server or encoding/json may re-encode an
// echoed header) replaced by "…": for error text and results built from a
// response of a request that carried c. A nil c: s.
func (c *Credential) Redact(s string) string {
	if c == nil || len(c.secret) == 0 {
		return s
	}
	raw := string(c.secret)
	forms := []string{raw, url.PathEscape(raw), url.QueryEscape(raw)}
	for _, j := range jsonForms(raw) {
		forms = append(forms, j, strings.ReplaceAll(j, "/", `\/`))
	}
	if sch := c.Target.Auth.Scheme; sch != "" {
		forms = append([]string{sch + " " + raw}, forms...)
	}
	for _, f := range forms {
		if f != "" {
			s = strings.ReplaceAll(s, f, "…")
		}
	}
	return s
}

// jsonForms are raw as the content of a JSON string: encoding/json's
// HTML-safe form (< > & as \u003c \u003e \u0026) and its plain one.
func jsonForms(raw string) []string {
	var out []string
	for _, html := range []bool{true, false} {
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(html)
		if e.Encode(raw) == nil {
			j := strings.TrimSuffix(b.String(), "\n")
			out = append(out, j[1:len(j)-1])
		}
	}
	return out
}
