package fetchurl

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolgate/toolgate/shared/dnsname"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/hostlist"
)

// MaxBytes bounds a URL, as the catalog's input schema does (maxLength 8192).
const MaxBytes = 8192

// URL is a URL that Parse accepts.
type URL struct {
	// Scheme is "http" or "https", lower case.
	Scheme string
	// Host is the host in hostlist's comparison form (hostlist.NormalizeHost):
	// a lower-case A-label name without trailing dot, or the canonical text
	// of an IP address, without brackets.
	Host string
	// Port is the port as written, "" when the URL has none.
	Port string
	// Parsed is Go's net/url reading of the URL, which the WHATWG URL
	// Standard shares for every URL Parse accepts. Its host is as written.
	Parsed *url.URL
}

// EffectivePort is the port a connection goes to: Port, or the scheme's
// default ("80" for http, "443" for https) when none is written.
func (u *URL) EffectivePort() string {
	switch {
	case u.Port != "":
		return u.Port
	case u.Scheme == "https":
		return "443"
	}
	return "80"
}

// Addr returns the host's address when the host is an IP literal; ok is
// false for a host name, whose addresses only a look-up can tell.
func (u *URL) Addr() (a netip.Addr, ok bool) {
	a, err := netip.ParseAddr(u.Host)
	return a, err == nil
}

// Parse parses a URL the way the structured-data-fetch tool does before
// every request (package fetch, Decide), without any look-up: it accepts
// only URLs that Go's net/url (RFC 3986) and the WHATWG URL Standard read
// the same way (see the package documentation), and a host that
// hostlist.NormalizeHost accepts. The error says what to change; it is
// lower-case text without a full stop, such as "the URL contains a blank
// (U+0020) at byte 29: remove it, or write %20 in the path". It quotes a
// piece of the URL (the scheme, the host) only when the piece is
// quotable, and never the port: it names their length instead.
func Parse(raw string) (*URL, error) {
	u, rawHost, port, reason := parse(raw)
	if reason != "" {
		return nil, errors.New(reason)
	}
	host, err := hostlist.NormalizeHost(rawHost)
	if err != nil {
		return nil, errors.New(hostRefusal(rawHost, err))
	}
	return &URL{Scheme: u.Scheme, Host: host, Port: port, Parsed: u}, nil
}

// CheckText refuses the characters no URL Parse accepts may hold anywhere
// (blanks, control and format characters, backslashes, invalid UTF-8). It
// is for text that is only part of a URL, such as the literal text of a
// Solution's URL template around its bindings: if CheckText refuses a part,
// Parse refuses every URL holding it.
func CheckText(s string) error {
	if r := checkChars(s); r != "" {
		return errors.New(r)
	}
	return nil
}

// Listed returns nil when l allows u's host and port, and otherwise an
// error saying why, naming the list as name ("the platform allow-list",
// "policy.fetch_hosts"): the host is not on it, only another port of the
// host is, or a wildcard entry stops at a registrable domain
// (hostlist.List.WildcardRefusal). An empty list allows nothing.
func Listed(l hostlist.List, name string, u *URL) error {
	if len(l) == 0 {
		return fmt.Errorf("no fetch is possible: %s is empty", name)
	}
	if _, ok := l.Match(u.Scheme, u.Host, u.Port); ok {
		return nil
	}
	// Say whether another port of this host is listed.
	for _, e := range l {
		p := ""
		if e.Port != 0 {
			p = fmt.Sprint(e.Port)
		}
		if _, ok := (hostlist.List{e}).Match(u.Scheme, u.Host, p); ok {
			return fmt.Errorf("port %s of %s is not on %s: an entry without a port allows only 80 for http and 443 for https, and an entry with a port allows that port only", u.EffectivePort(), u.Host, name)
		}
	}
	if why := l.WildcardRefusal(u.Host); why != "" {
		return fmt.Errorf("host %s is not on %s: %s", u.Host, name, why)
	}
	return fmt.Errorf("host %s is not on %s", u.Host, name)
}

// parse accepts only URLs that Go's net/url (RFC 3986) and the WHATWG
// URL Standard read the same way, and returns Go's reading with the host
// and the port as written (port "" when absent). reason is empty when the
// URL passes and otherwise says what to change.
func parse(raw string) (u *url.URL, host, port, reason string) {
	if raw == "" {
		return nil, "", "", "the URL is empty"
	}
	if len(raw) > MaxBytes {
		return nil, "", "", fmt.Sprintf("the URL is longer than %d bytes", MaxBytes)
	}
	if r := checkChars(raw); r != "" {
		return nil, "", "", r
	}
	colon := strings.IndexByte(raw, ':')
	if colon < 0 {
		return nil, "", "", "the URL has no scheme: write http:// or https:// before the host"
	}
	scheme := strings.ToLower(raw[:colon])
	if scheme != "http" && scheme != "https" {
		if !quotable(raw[:colon]) {
			return nil, "", "", fmt.Sprintf(`the text before the first ":" (%d characters) is not a scheme toolgate allows: only http and https`, utf8.RuneCountInString(raw[:colon]))
		}
		return nil, "", "", fmt.Sprintf("the scheme %q is not allowed: only http and https", excerpt.Runes(raw[:colon], 40, "…"))
	}
	rest, ok := strings.CutPrefix(raw[colon+1:], "//")
	if !ok {
		return nil, "", "", fmt.Sprintf("%s: must be followed by //host (without //, RFC 3986 reads no host where the WHATWG URL Standard reads one)", scheme)
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	host, port, reason = checkAuthority(authority)
	if reason != "" {
		return nil, "", "", reason
	}
	if reason = checkTail(tail); reason != "" {
		return nil, "", "", reason
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "", "", "the URL does not parse under RFC 3986"
	}
	path, _, _ := strings.Cut(tail, "#")
	path, _, _ = strings.Cut(path, "?")
	if u.Scheme != scheme || u.Opaque != "" || u.User != nil || u.Host != authority ||
		u.Hostname() != host || u.Port() != port || u.EscapedPath() != path {
		return nil, "", "", "the URL reads differently under RFC 3986 and the WHATWG URL Standard"
	}
	return u, host, port, ""
}

// checkChars refuses what the WHATWG URL Standard strips or rewrites and
// RFC 3986 does not: blanks and control characters anywhere (CPython
// CVE-2023-24329), Unicode format characters (ignored by IDNA mapping), and
// backslashes (read as "/" by WHATWG in http and https URLs).
func checkChars(s string) string {
	if !utf8.ValidString(s) {
		return "the URL is not valid UTF-8"
	}
	for i, r := range s {
		switch {
		case r == ' ' || unicode.IsSpace(r):
			return fmt.Sprintf("the URL contains a blank (%U) at byte %d: remove it, or write %%20 in the path", r, i)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			return fmt.Sprintf("the URL contains the control or format character %U at byte %d", r, i)
		case r == '\\':
			return fmt.Sprintf(`the URL contains a backslash at byte %d: the WHATWG URL Standard reads it as "/" and RFC 3986 does not; write "/" or %%5C`, i)
		}
	}
	return ""
}

// checkAuthority splits host[:port] and refuses userinfo, percent-encoding,
// zone identifiers, brackets around anything but an IPv6 literal, and host
// characters other than letters, digits, "-" and "." (non-ASCII is left to
// hostlist.NormalizeHost, which accepts only names IDNA leaves unchanged).
func checkAuthority(a string) (host, port, reason string) {
	switch {
	case a == "":
		return "", "", "the URL has no host"
	case strings.Contains(a, "@"):
		return "", "", "the URL contains userinfo (user:password@ before the host): credentials in URLs are not allowed and can hide the real host"
	case strings.HasPrefix(a, "[") && strings.Contains(a, "%"):
		return "", "", "IPv6 zone identifiers (%) are not allowed (RFC 6874)"
	case strings.Contains(a, "%"):
		return "", "", "percent-encoding is not allowed in the host"
	}
	var after string
	if rest, ok := strings.CutPrefix(a, "["); ok {
		var closed bool
		host, after, closed = strings.Cut(rest, "]")
		if !closed {
			return "", "", `"[" without "]" in the host`
		}
		if host == "" || strings.Trim(host, "0123456789abcdefABCDEF:.") != "" {
			return "", "", "only an IPv6 address may stand in brackets"
		}
		if after != "" && after[0] != ':' {
			return "", "", `only ":port" may follow "]"`
		}
	} else {
		if strings.ContainsAny(a, "[]") {
			return "", "", `"[" and "]" may only enclose an IPv6 address`
		}
		i := strings.IndexByte(a, ':')
		if i < 0 {
			i = len(a)
		}
		host, after = a[:i], a[i:]
		if host == "" {
			return "", "", "the URL has no host"
		}
		for _, r := range host {
			if r < utf8.RuneSelf && !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '.') {
				return "", "", fmt.Sprintf("the character %q is not allowed in a host name (letters, digits, - and . only)", r)
			}
		}
	}
	if after == "" {
		return host, "", ""
	}
	port = after[1:]
	if port == "" {
		return "", "", `the port after ":" is empty`
	}
	if strings.Trim(port, "0123456789") != "" {
		return "", "", fmt.Sprintf(`the port (the %d characters after the host's ":") is not a decimal number`, utf8.RuneCountInString(port))
	}
	if len(port) > 5 {
		return "", "", fmt.Sprintf("the port (%d digits) must be 1-65535 without leading zeros", len(port))
	}
	if port[0] == '0' || atoi(port) > 65535 {
		return "", "", fmt.Sprintf("the port %s must be 1-65535 without leading zeros", port)
	}
	return host, port, ""
}

// checkTail checks path, query and fragment: printable ASCII that both
// readings pass through unchanged, "%" only before two hex digits, and no
// dot segments in the path (WHATWG removes "." and ".." and their %2e
// forms, RFC 3986 parsers keep them).
func checkTail(t string) string {
	rest, fragment, hasFragment := strings.Cut(t, "#")
	path, query, _ := strings.Cut(rest, "?")
	if hasFragment && strings.Contains(fragment, "#") {
		return `a second "#" is not allowed`
	}
	for _, part := range []struct{ s, name, extra string }{
		{path, "path", ""}, {query, "query", "?"}, {fragment, "fragment", "?#"},
	} {
		if r := checkPart(part.s, part.name, part.extra); r != "" {
			return r
		}
	}
	for seg := range strings.SplitSeq(path, "/") {
		switch strings.ToLower(seg) {
		case ".", "..", "%2e", "%2e%2e", ".%2e", "%2e.":
			return `the path contains a dot segment ("." or ".."): write the path without it`
		}
	}
	return ""
}

// checkPart checks one part of the tail. In the query, "'" is refused:
// WHATWG sends it as %27 in http and https URLs, RFC 3986 clients as it is.
func checkPart(s, name, extra string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= utf8.RuneSelf:
			return fmt.Sprintf("the %s contains a non-ASCII character: percent-encode it as UTF-8", name)
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return fmt.Sprintf(`"%%" in the %s must start a %%XX escape`, name)
			}
		case c == '\'' && name == "query":
			return `"'" in the query: the WHATWG URL Standard sends it as %27 and RFC 3986 clients do not; write %27`
		case !strings.ContainsRune(tailChars, rune(c)) && !strings.ContainsRune(extra, rune(c)):
			return fmt.Sprintf("the character %q is not allowed in the %s: percent-encode it", c, name)
		}
	}
	return ""
}

// tailChars are RFC 3986's unreserved and sub-delims characters and ":@/",
// which WHATWG leaves as they are in a path, query and fragment.
const tailChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/"

// ResolveLocation turns a redirect's Location into the absolute URL to
// check next (with Parse). The Location passes the same character checks as
// a URL, and a relative one is resolved against base (RFC 3986 §5, which
// WHATWG agrees with for the references the checks leave). reason is empty
// when the Location passes, and otherwise says why it is refused.
func ResolveLocation(base *url.URL, loc string) (abs, reason string) {
	if loc == "" {
		return "", "the redirect has no Location"
	}
	if len(loc) > MaxBytes {
		return "", fmt.Sprintf("the redirect's Location is longer than %d bytes", MaxBytes)
	}
	if r := checkChars(loc); r != "" {
		return "", "the redirect's Location: " + r
	}
	if hasScheme(loc) {
		return loc, ""
	}
	if strings.HasPrefix(loc, "//") {
		return base.Scheme + ":" + loc, ""
	}
	if r := checkTail(loc); r != "" {
		return "", "the redirect's Location: " + r
	}
	ref, err := url.Parse(loc)
	if err != nil {
		return "", "the redirect's Location does not parse under RFC 3986"
	}
	return base.ResolveReference(ref).String(), ""
}

// hasScheme reports whether s starts with an RFC 3986 §3.1 scheme and ":".
func hasScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return true
		default:
			return false
		}
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// atoi converts at most 5 decimal digits.
func atoi(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

// maxQuotedRun is the longest run of ASCII letters, digits, "_" and "-" a
// piece of a URL may hold for a reason to quote it. A longer run may be a
// key or a token (an MCP server's URL is refused with one in its path,
// shared/toolset's ParseMCPURL, and messages show such a URL with its
// secret-looking runs hidden), and a reason must not carry it into a
// message or a log: the reason names the piece's length instead.
const maxQuotedRun = 19

// quotable reports whether s, a piece of a URL, may be quoted in a
// reason: it holds no run of ASCII letters, digits, "_" and "-" longer
// than maxQuotedRun.
func quotable(s string) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-' {
			if run++; run > maxQuotedRun {
				return false
			}
			continue
		}
		run = 0
	}
	return true
}

// hostRefusal is the reason for a host that hostlist.NormalizeHost
// refused with err: hostlist's, which quotes the host, when the host is
// quotable, and otherwise the host's length and a reason that quotes none
// of its labels.
func hostRefusal(host string, err error) string {
	if quotable(host) {
		return strings.TrimPrefix(err.Error(), "hostlist: ")
	}
	why := "not a valid host name"
	var de *dnsname.Error
	switch {
	case errors.As(err, &de):
		why = dnsRule(de)
	case errors.Unwrap(err) != nil:
		// hostlist's own reasons quote no part of the host.
		why = errors.Unwrap(err).Error()
	}
	return fmt.Sprintf("the host (%d characters) is not valid: %s", utf8.RuneCountInString(host), why)
}

// dnsRule is e's rule in words that quote no label (dnsname.Error quotes
// the offending label of some rules, and IDNA errors quote a label).
func dnsRule(e *dnsname.Error) string {
	switch e.Rule {
	case dnsname.LabelTooLong:
		return fmt.Sprintf("a label is longer than %d octets (RFC 1035)", dnsname.MaxLabel)
	case dnsname.HyphenAtEdge:
		return "a label starts or ends with a hyphen (RFC 1123)"
	case dnsname.NotRegistrable:
		return "not a valid internationalized name in lower-case nfc form (RFC 5891)"
	case dnsname.InvalidALabel:
		return "an invalid label (RFC 5890, RFC 5891)"
	}
	return e.Error()
}
