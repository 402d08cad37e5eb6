package fetch

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxURLBytes bounds a URL, as the catalog's input schema does (maxLength 8192).
const MaxURLBytes = 8192

// checkURL accepts only URLs that Go's net/url (RFC 3986) and the WHATWG
// URL Standard read the same way, and returns Go's reading with the host
// and the port as written (port "" when absent). reason is empty when the
// URL passes and otherwise says what to change.
func checkURL(raw string) (u *url.URL, host, port, reason string) {
	if raw == "" {
		return nil, "", "", "the URL is empty"
	}
	if len(raw) > MaxURLBytes {
		return nil, "", "", fmt.Sprintf("the URL is longer than %d bytes", MaxURLBytes)
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
		return nil, "", "", fmt.Sprintf("the scheme %q is not allowed: only http and https", clip(raw[:colon]))
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
	if port == "" || strings.Trim(port, "0123456789") != "" {
		return "", "", fmt.Sprintf("the port %q is not a decimal number", clip(port))
	}
	if port[0] == '0' || len(port) > 5 || atoi(port) > 65535 {
		return "", "", fmt.Sprintf("the port %s must be 1-65535 without leading zeros", clip(port))
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

// resolveLocation turns a redirect's Location into the absolute URL to
// check next. The Location passes the same character checks as a URL, and a
// relative one is resolved against base (RFC 3986 §5, which WHATWG agrees
// with for the references the checks leave).
func resolveLocation(base *url.URL, loc string) (string, string) {
	if loc == "" {
		return "", "the redirect has no Location"
	}
	if len(loc) > MaxURLBytes {
		return "", fmt.Sprintf("the redirect's Location is longer than %d bytes", MaxURLBytes)
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

// clip keeps a quoted piece of input short in a reason.
func clip(s string) string {
	n := 0
	for i := range s {
		if n == 40 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}
