package toolset

import (
	"errors"
	"fmt"
	"maps"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/toolgate/toolgate/shared/fetchurl"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/httprule"
)

// Auth is how a target a toolset pins (an MCP server, or an exact http
// host entry) is presented a credential (docs/credentials.md,
// "Declaring what a target needs"): a request header, or a segment of
// the pinned MCP URL's path. It is part of the toolset's content and id.
// A target without Auth never gets a credential.
//
// Its pinned form (CanonicalAuth) is the only one the registration check
// takes: Header in canonical form, OriginScheme empty for https.
type Auth struct {
	// Header is the request header that carries the credential, in
	// canonical form (textproto.CanonicalMIMEHeaderKey), such as
	// "Authorization" or "X-Api-Key". Empty with PathSegment.
	Header string `json:"header,omitempty"`
	// Scheme, with Header, is the authentication scheme written before
	// the credential, such as "Bearer" (RFC 6750 §2.1): the header's value
	// is "<Scheme> <credential>". Empty: the credential alone.
	Scheme string `json:"scheme,omitempty"`
	// PathSegment is the position, from 1, of the pinned MCP URL's path
	// segment written "{secret}", which the credential fills at call
	// time; 0 with Header. MCP servers only.
	PathSegment int `json:"path_segment,omitempty"`
	// OriginScheme is, on an http host entry, the scheme of the origin
	// the credential is bound to: "https" (when empty) or "http". An MCP
	// server's origin takes its pinned URL's scheme.
	OriginScheme string `json:"origin_scheme,omitempty"`
}

// SecretSegment is the path segment a pinned MCP URL holds, written
// exactly so, where its server's Auth.PathSegment says the credential
// goes: the credential fills it at call time, on the connection only, so
// that the URL pinned, shown and logged holds none (docs/toolsets.md,
// "Credentials: auth").
const SecretSegment = "{secret}"

// Origin schemes of an http host entry's Auth (OriginScheme): OriginHTTPS
// is pinned as "" (the default), OriginHTTP as written.
const (
	OriginHTTPS = "https"
	OriginHTTP  = "http"
)

// MaxAuthSchemeBytes bounds Auth.Scheme (toolgate's own bound): the
// registered schemes (IANA HTTP Authentication Scheme Registry) are at
// most 16 characters.
const MaxAuthSchemeBytes = 64

// RuleAuth: a target's auth declaration is malformed (CanonicalAuth), on
// a wildcard host entry, named among its entry's headers, or disagrees
// with the pinned URL ({secret} not at its path_segment), or the tools of
// one MCP server pin different auth.
const RuleAuth = "toolset-auth"

// CanonicalAuth returns a in its pinned form for a target of the kind
// mcp says (an MCP server, or else an http host entry), or an error
// saying which rule it breaks (docs/toolsets.md, "Credentials: auth"):
//
//   - exactly one of Header and PathSegment;
//   - Header an RFC 9110 §5.1 token that httprule.CheckHeaderName accepts
//     (neither standard nor forbidden), except that Authorization (RFC
//     9110 §11.6.2) is allowed; pinned in canonical form;
//   - Scheme only with Header: an RFC 9110 §11.1 auth-scheme (a token) of
//     at most MaxAuthSchemeBytes, kept as written;
//   - PathSegment only on an MCP server, from 1;
//   - OriginScheme only on an http host entry: "https" (pinned as "") or
//     "http".
//
// The error is the predicate alone, for the caller to name the target.
func CanonicalAuth(a Auth, mcp bool) (Auth, error) {
	out := a
	switch {
	case a.Header != "" && a.PathSegment != 0:
		return Auth{}, errors.New("auth names both header and path_segment: a credential is presented one way")
	case a.Header == "" && a.PathSegment == 0:
		return Auth{}, errors.New("auth names neither header nor path_segment: say how the credential is presented")
	case a.PathSegment != 0 && !mcp:
		return Auth{}, errors.New("auth path_segment is for MCP servers only: an http call's URL is its own, so an http host takes its credential in a header")
	case a.PathSegment < 0:
		return Auth{}, fmt.Errorf("auth path_segment %d is not a path segment's position (from 1)", a.PathSegment)
	case a.Scheme != "" && a.Header == "":
		return Auth{}, errors.New("auth scheme goes with header only: it is written before the credential in the header's value")
	case a.OriginScheme != "" && mcp:
		return Auth{}, errors.New("auth origin_scheme is for http host entries only: an MCP server's origin takes its URL's scheme")
	}
	if a.Header != "" {
		if !httpguts.ValidHeaderFieldName(a.Header) {
			return Auth{}, fmt.Errorf("auth header %.40q is not a header name (an RFC 9110 token)", a.Header)
		}
		if !httprule.SameName(a.Header, "Authorization") {
			if err := httprule.CheckHeaderName(a.Header); err != nil {
				return Auth{}, fmt.Errorf("auth header %v", err)
			}
		}
		out.Header = textproto.CanonicalMIMEHeaderKey(a.Header)
		if httprule.SameName(a.Header, "Authorization") {
			out.Header = "Authorization"
		}
	}
	if a.Scheme != "" && (len(a.Scheme) > MaxAuthSchemeBytes || !httpguts.ValidHeaderFieldName(a.Scheme)) {
		return Auth{}, fmt.Errorf("auth scheme %.40q is not an authentication scheme (an RFC 9110 §11.1 token of at most %d characters, such as Bearer)", a.Scheme, MaxAuthSchemeBytes)
	}
	switch a.OriginScheme {
	case "", OriginHTTP:
	case OriginHTTPS:
		out.OriginScheme = ""
	default:
		return Auth{}, fmt.Errorf("auth origin_scheme %.20q is not https or http", a.OriginScheme)
	}
	return out, nil
}

// sameAuth reports whether two declarations are the same (both nil
// included).
func sameAuth(a, b *Auth) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// ParseMCPURLAuth is ParseMCPURL for the URL of an MCP server whose
// declaration is auth (nil: none). With auth.PathSegment N, the URL's
// path segment N (from 1, after the leading "/") must be exactly
// SecretSegment, "{secret}", and is accepted there: the URL is checked
// as ParseMCPURL checks it with that segment left aside, and the result's
// Parsed is Go's reading of raw as written (its Path holds "{secret}";
// EscapedPath writes it %7Bsecret%7D). Anywhere else, and in the URL of a
// server that declares no path_segment, a "{secret}" segment is refused,
// naming its position: the credential fills only the segment the
// declaration names. Secret-looking segments are refused as ParseMCPURL
// refuses them. Every check of a pinned MCP URL whose pin has Auth is this
// one (checkMCP, ParseDraft, ResolveMCP; the MCP client before each
// listing and call).
func ParseMCPURLAuth(raw string, auth *Auth) (*fetchurl.URL, error) {
	n := 0
	if auth != nil {
		n = auth.PathSegment
	}
	if strings.ContainsAny(raw, "?#") {
		return parseMCPURL(raw) // refuses the query or fragment
	}
	head, segs, ok := splitPath(raw)
	if !ok {
		if _, err := parseMCPURL(raw); err != nil {
			return nil, err // no scheme, or no path: fetchurl's reason first
		}
	}
	at := slices.Index(segs, SecretSegment)
	switch {
	case n < 0:
		return nil, fmt.Errorf("auth path_segment %d is not a path segment's position (from 1)", n)
	case n == 0 && at >= 0:
		return nil, fmt.Errorf("path segment %d is %s, where a credential goes, but the server's auth declares no path_segment %d: declare it, or write the URL without %s", at+1, SecretSegment, at+1, SecretSegment)
	case n == 0:
		return parseMCPURL(raw)
	case !ok || n > len(segs) || segs[n-1] != SecretSegment:
		return nil, fmt.Errorf("path segment %d of the URL is not %s, where the server's auth (path_segment: %d) says the credential goes", n, SecretSegment, n)
	}
	if i := slices.Index(segs[n:], SecretSegment); i >= 0 {
		return nil, fmt.Errorf("path segment %d is %s too: the credential fills path segment %d only", n+i+1, SecretSegment, n)
	}
	stood := slices.Clone(segs)
	stood[n-1] = secretStandIn
	u, err := parseMCPURL(head + "/" + strings.Join(stood, "/"))
	if err != nil {
		return nil, err
	}
	parsed, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("the URL does not parse with its " + SecretSegment + " segment")
	}
	u.Parsed = parsed
	return u, nil
}

// secretStandIn stands for SecretSegment while the rest of a URL is
// checked: as long as it (so fetchurl's byte positions stay right), of
// characters fetchurl accepts in a path and none a secret or base64 is
// made of, so that it neither joins nor hides a token.
var secretStandIn = strings.Repeat("!", len(SecretSegment))

// splitPath splits raw, a URL without query or fragment, into its part
// before the path ("scheme://authority") and its path segments (after
// the leading "/"); ok is false when it has no "://" or no path.
func splitPath(raw string) (head string, segs []string, ok bool) {
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw, nil, false
	}
	slash := strings.IndexByte(raw[i+3:], '/')
	if slash < 0 {
		return raw, nil, false
	}
	slash += i + 3
	return raw[:slash], strings.Split(raw[slash+1:], "/"), true
}

// Origin returns the origin a credential for u is bound to:
// "<scheme>://<host>[:<port>]", the scheme lower-case, the host in
// hostlist's comparison form (a lower-case A-label, or an IP address's
// canonical text, an IPv6 address in brackets), and the port only when
// the URL writes one (RFC 6454 §6.2's serialization, without its default
// port rule: "https://h:443" and "https://h" are two origins here, as
// they are two host entries).
func Origin(u *fetchurl.URL) string {
	return originOf(u.Scheme, u.Host, u.Port)
}

func originOf(scheme, host, port string) string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host
}

// AuthTarget is one target of a toolset that declares auth: what a
// credential is stored for, with the toolset's name (docs/credentials.md).
type AuthTarget struct {
	// Name is the target: the MCP server's key, or the http host entry as
	// pinned (hostlist's canonical form, never a wildcard).
	Name string
	// Origin is what the credential is bound to (Origin's form): for an
	// MCP server, its pinned URL's scheme, host and port (the port only
	// when written); for an http host entry,
	// "<origin_scheme, or https>://<host entry>".
	Origin string
	// Auth is the declaration, in its pinned form.
	Auth Auth
	// MCP: the target is an MCP server, else an http host entry.
	MCP bool
}

// AuthTargets lists every target of ts that declares auth, sorted by
// Name: each MCP server whose pinned tools carry Auth (or, in a draft,
// each server of MCPServers with Auth), and each http host entry with
// Auth. A target whose origin cannot be told (a URL ParseMCPURLAuth
// refuses, an entry hostlist refuses: a toolset Verify refuses) is left
// out, so it never gets a credential. The result is nil when none
// declares auth.
func (ts *Toolset) AuthTargets() []AuthTarget {
	var out []AuthTarget
	seen := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(ts.Tools)) {
		m := ts.Tools[name].MCP
		if m == nil || m.Auth == nil || seen[m.Server] {
			continue
		}
		seen[m.Server] = true
		if t, ok := mcpTarget(m.Server, m.URL, m.Auth); ok {
			out = append(out, t)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(ts.MCPServers)) {
		srv := ts.MCPServers[key]
		if srv.Auth == nil || seen[key] {
			continue
		}
		seen[key] = true
		if t, ok := mcpTarget(key, srv.URL, srv.Auth); ok {
			out = append(out, t)
		}
	}
	for _, h := range ts.HTTPHosts {
		if t, ok := httpTarget(h); ok {
			out = append(out, t)
		}
	}
	slices.SortStableFunc(out, func(a, b AuthTarget) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// MCPAuthTarget returns the target of MCP server key server (the part of
// an MCP tool's name before its first dot) when it declares auth; ok is
// false when it does not, or when ts has no such server.
func (ts *Toolset) MCPAuthTarget(server string) (AuthTarget, bool) {
	for _, name := range slices.Sorted(maps.Keys(ts.Tools)) {
		if m := ts.Tools[name].MCP; m != nil && m.Server == server {
			if m.Auth == nil {
				return AuthTarget{}, false
			}
			return mcpTarget(server, m.URL, m.Auth)
		}
	}
	if srv, ok := ts.MCPServers[server]; ok && srv.Auth != nil {
		return mcpTarget(server, srv.URL, srv.Auth)
	}
	return AuthTarget{}, false
}

// HTTPAuthTarget returns the target of http host entry host, exactly as
// pinned (the entry the http tool chose for a call, MatchHTTPHost), when
// it declares auth; ok is false when it does not, or when ts has no such
// entry.
func (ts *Toolset) HTTPAuthTarget(host string) (AuthTarget, bool) {
	i := slices.IndexFunc(ts.HTTPHosts, func(h HTTPHost) bool { return h.Host == host })
	if i < 0 {
		return AuthTarget{}, false
	}
	return httpTarget(ts.HTTPHosts[i])
}

func mcpTarget(server, rawURL string, a *Auth) (AuthTarget, bool) {
	u, err := ParseMCPURLAuth(rawURL, a)
	if err != nil {
		return AuthTarget{}, false
	}
	return AuthTarget{Name: server, Origin: Origin(u), Auth: *a, MCP: true}, true
}

func httpTarget(h HTTPHost) (AuthTarget, bool) {
	if h.Auth == nil {
		return AuthTarget{}, false
	}
	e, err := hostlist.ParseEntry(h.Host)
	if err != nil || e.Wildcard {
		return AuthTarget{}, false
	}
	scheme := OriginHTTPS
	if h.Auth.OriginScheme != "" {
		scheme = h.Auth.OriginScheme
	}
	port := ""
	if e.Port != 0 {
		port = strconv.Itoa(e.Port)
	}
	return AuthTarget{Name: h.Host, Origin: originOf(scheme, e.Host, port), Auth: *h.Auth}, true
}

// checkAuth refuses (RuleAuth) a toolset whose MCP tools of one server
// pin different auth or, when one declares auth, different URLs (a
// target has one declaration and one origin); an MCP pin whose auth is
// not in its pinned form (CanonicalAuth); and an MCP server and an http
// host entry of one name that both declare auth (a target's name names
// one target).
func (ts *Toolset) checkAuth() error {
	first := map[string]*MCP{}
	for _, name := range slices.Sorted(maps.Keys(ts.Tools)) {
		m := ts.Tools[name].MCP
		if m == nil {
			continue
		}
		if m.Auth != nil {
			if c, err := CanonicalAuth(*m.Auth, true); err != nil {
				return refuse(ts.ID, RuleAuth, "MCP tool %s: server %s: %v", name, m.Server, err)
			} else if c != *m.Auth {
				return refuse(ts.ID, RuleAuth, "MCP tool %s: server %s: auth is not in its pinned form (header in canonical form)", name, m.Server)
			}
		}
		f, ok := first[m.Server]
		if !ok {
			first[m.Server] = m
			continue
		}
		if (f.Auth != nil || m.Auth != nil) && (!sameAuth(f.Auth, m.Auth) || f.URL != m.URL) {
			return refuse(ts.ID, RuleAuth, "the tools of MCP server %s pin different auth or URLs: a server that declares auth is one target, with one declaration and one origin", m.Server)
		}
	}
	for _, server := range slices.Sorted(maps.Keys(first)) {
		if first[server].Auth == nil {
			continue
		}
		if i := slices.IndexFunc(ts.HTTPHosts, func(h HTTPHost) bool { return h.Host == server && h.Auth != nil }); i >= 0 {
			return refuse(ts.ID, RuleAuth, "MCP server %s and http host %s both declare auth: a credential's target names one of them", server, server)
		}
	}
	return nil
}
