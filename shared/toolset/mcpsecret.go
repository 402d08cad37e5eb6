package toolset

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/shared/fetchurl"
	"github.com/toolgate/toolgate/shared/hostlist"
)

// A secret in an MCP server URL's path. Hosted MCP servers commonly give
// each customer a URL with an API key or an id in its path
// (https://host/s/<secret>/mcp, https://host/<uuid>/mcp); a pinned URL is
// stored in locks and in the table, shown and logged, so ParseMCPURL
// refuses a path segment that holds one (docs/toolsets.md, "MCP
// servers"), and MCPURLShown hides it.

const (
	// minSecretLen is the length, in characters, from which a run may be
	// taken for a random token.
	minSecretLen = 20
	// maxSegmentEntropy is the Shannon entropy, in bits per character,
	// above which a long run (minSecretLen or more characters) is taken
	// for a random token.
	maxSegmentEntropy = 3.5
	// maxDecodings bounds how many times a segment is percent-decoded
	// (a secret encoded twice, %2541, is judged as its text).
	maxDecodings = 3
)

var (
	// uuidPattern is a UUID's text form, 8-4-4-4-12 hex digits in any
	// case (RFC 9562 §4), found anywhere in a text: braces, a dot or a
	// suffix around it do not hide it.
	uuidPattern = regexp.MustCompile(`[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}`)
	// hexRunPattern is 32 or more hex digits in a row: the length of an
	// MD5 digest, a UUID without hyphens, a 128-bit key; in an MCP URL's
	// path such a run is a key far more often than a name, whatever its
	// entropy (aaaabbbbcccc... is as good a key as any).
	hexRunPattern = regexp.MustCompile(`[0-9A-Fa-f]{32,}`)
	// jwtPattern is a JSON Web Token's compact form (RFC 7519, RFC 7515
	// §7.1): three base64url parts joined by ".", the first an encoded
	// JSON object, so starting "eyJ" (`{"`); the signature may be empty.
	jwtPattern = regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`)
	// base64Pattern is a piece of base64 text in either alphabet (RFC
	// 4648 §4 and §5), with its "=" padding.
	base64Pattern = regexp.MustCompile(`[A-Za-z0-9+/_-]+=*`)
)

// inTokenAlphabet reports whether every byte of s is one of A-Z, a-z,
// 0-9, "_", "-", "+" and "/": the two base64 alphabets (RFC 4648), which
// hold hex and most generated tokens, and the characters of a readable
// identifier.
func inTokenAlphabet(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isRunByte(c) && c != '+' && c != '/' {
			return false
		}
	}
	return true
}

// isRunByte reports whether c is one of A-Z, a-z, 0-9, "_" and "-": the
// base64url alphabet, the characters a run is made of.
func isRunByte(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// runs splits s into its runs: its maximal pieces of A-Z, a-z, 0-9, "_"
// and "-", in order; every other character separates them.
func runs(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r >= 0x80 || !isRunByte(byte(r)) })
}

// shannonEntropy is the Shannon entropy of s in bits per character:
// -Σ p·log2(p) over the relative frequency p of each distinct byte of s
// (0 for the empty string). One character repeated gives 0; n distinct
// characters give log2(n), the most a string of n characters can have.
func shannonEntropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	h, n := 0.0, float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// looksRandom reports whether s, a run or a piece of base64 without its
// padding, looks like a random token such as an API key: at least
// minSecretLen (20) characters, all of A-Z, a-z, 0-9, "_", "-", "+" and
// "/", whose Shannon entropy (shannonEntropy, bits per character) is over
// maxSegmentEntropy (3.5). It also returns that entropy.
//
// Why: a hosted MCP server's URL often holds the customer's secret in its
// path (https://host/s/<secret>/mcp), and an MCP server's URL is pinned,
// stored in locks and the table, shown and logged, so it must hold none
// (docs/toolsets.md, "MCP servers"). Random tokens spread over many
// characters: 40 characters of base64url are near 4.8 bits per
// character, 32 hex digits near 3.6 (hex can reach 4 at most, so one in
// five such tokens stays at or under 3.5: hexRunPattern refuses them).
// Words repeat letters, and a readable identifier usually stays at or
// under the bound (list_repository_issues: 3.26), though not always
// (create_customer_ticket_v2: 3.54, refused). Runs under 20 characters
// are not judged: too short to tell a word from a token, and common path
// parts (mcp, sse, v1, a tenant name) are short.
func looksRandom(s string) (bool, float64) {
	if len(s) < minSecretLen || !inTokenAlphabet(s) {
		return false, 0
	}
	h := shannonEntropy(s)
	return h > maxSegmentEntropy, h
}

// secretIn says why s, a text of a URL (a path segment as written or
// percent-decoded, a run of the host), looks like it holds a secret, or
// ok is false. s holds one when, anywhere in it, there is a UUID
// (uuidPattern), 32 or more hex digits in a row (hexRunPattern), a JWT
// (jwtPattern), or a run or a piece of base64 (base64Pattern, judged
// without its padding) that looksRandom. So a secret is found whatever
// surrounds it: braces, a dot and a suffix (<uuid>.mcp), a path parameter
// (s;key=<hex>), padding (<base64>==), or "+" and "/".
func secretIn(s string) (why string, ok bool) {
	switch {
	case uuidPattern.MatchString(s):
		return "holding a UUID", true
	case hexRunPattern.MatchString(s):
		return "holding 32 or more hex digits in a row", true
	case jwtPattern.MatchString(s):
		return "shaped like a JWT", true
	}
	for _, piece := range base64Pattern.FindAllString(s, -1) {
		body := strings.TrimRight(piece, "=")
		for _, r := range append(runs(body), body) {
			if random, h := looksRandom(r); random {
				return fmt.Sprintf("entropy %.2f bits per character", h), true
			}
		}
	}
	return "", false
}

// decodings are s as written and percent-decoded once, twice, ... (at
// most maxDecodings times, until nothing changes). Decoding is lenient:
// a "%" that starts no %XX escape stays as it is, so that a bad escape
// beside a token does not keep the token from being judged.
func decodings(s string) []string {
	out := []string{s}
	for range maxDecodings {
		d := percentDecode(s)
		if d == s {
			break
		}
		out, s = append(out, d), d
	}
	return out
}

// percentDecode decodes every %XX escape of s (RFC 3986 §2.1).
func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHexDigit(s[i+1]) && isHexDigit(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// secretSegment is where a path holds something that looks like a
// secret: the positions of its first and last segment among the path's
// segments (1 for the first, after the leading "/"; last is index unless
// a base64 token spans segments), its length in characters
// (percent-decoded) and why it is taken for one. It never holds the
// text.
type secretSegment struct {
	index, last, length int
	why                 string
}

// findSecretSegment returns the first of secretSegments(path); ok is
// false when there is none.
func findSecretSegment(path string) (s secretSegment, ok bool) {
	found := secretSegments(path)
	if len(found) == 0 {
		return secretSegment{}, false
	}
	return found[0], true
}

// secretSegments returns every place in path, a URL's path as written
// (percent-encoded, starting with "/" unless empty), that looks like a
// secret, in the order of the path: each segment for which secretIn
// holds, as written or percent-decoded (decodings: an encoded "=", "."
// or "/" hides nothing), and each base64 token written across segments
// (base64AcrossSegments).
func secretSegments(path string) []secretSegment {
	if path == "" {
		return nil
	}
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	decoded := make([]string, len(segs))
	var found []secretSegment
	for i, seg := range segs {
		stages := decodings(seg)
		decoded[i] = stages[len(stages)-1]
		for _, s := range stages {
			if why, ok := secretIn(s); ok {
				found = append(found, secretSegment{index: i + 1, last: i + 1, length: len(decoded[i]), why: why})
				break
			}
		}
	}
	found = append(found, base64AcrossSegments(decoded)...)
	slices.SortStableFunc(found, func(a, b secretSegment) int { return a.index - b.index })
	return found
}

// base64AcrossSegments finds base64 tokens in the standard alphabet
// whose "/" split them into segments (decoded, a path's segments
// percent-decoded), so that no piece is long enough to be judged alone:
// a piece of base64 (base64Pattern) over segments that ends in "="
// padding or holds a "+", without its leading and trailing segments of
// lower-case letters only (api, mcp, s), of at least minSecretLen
// characters with a digit, an upper-case and a lower-case letter, over
// maxSegmentEntropy. A path of words (/api/v1/tools) has no padding and
// no "+".
func base64AcrossSegments(decoded []string) []secretSegment {
	starts := make([]int, len(decoded))
	joined := ""
	for i, d := range decoded {
		if i > 0 {
			joined += "/"
		}
		starts[i] = len(joined)
		joined += d
	}
	var found []secretSegment
	for _, loc := range base64Pattern.FindAllStringIndex(joined, -1) {
		m := joined[loc[0]:loc[1]]
		if !strings.HasSuffix(m, "=") && !strings.Contains(m, "+") {
			continue
		}
		first, last := -1, -1
		var pieces []string
		for i, d := range decoded {
			lo, hi := max(loc[0], starts[i]), min(loc[1], starts[i]+len(d))
			if lo >= hi {
				continue
			}
			if first < 0 {
				first = i
			}
			last = i
			pieces = append(pieces, joined[lo:hi])
		}
		for len(pieces) > 0 && onlyLowerLetters(pieces[0]) {
			pieces, first = pieces[1:], first+1
		}
		for len(pieces) > 0 && onlyLowerLetters(pieces[len(pieces)-1]) {
			pieces, last = pieces[:len(pieces)-1], last-1
		}
		if len(pieces) < 2 {
			continue // one segment: secretIn judges it
		}
		token := strings.Join(pieces, "/")
		body := strings.TrimRight(token, "=")
		if random, h := looksRandom(body); random && strings.ContainsAny(body, "0123456789") &&
			strings.ContainsAny(body, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") && strings.ContainsAny(body, "abcdefghijklmnopqrstuvwxyz") {
			found = append(found, secretSegment{index: first + 1, last: last + 1, length: len(token),
				why: fmt.Sprintf("base64 across %d segments, entropy %.2f bits per character", last-first+1, h)})
		}
	}
	return found
}

func onlyLowerLetters(s string) bool {
	return strings.Trim(s, "abcdefghijklmnopqrstuvwxyz") == ""
}

// secretSegmentError is ParseMCPURL's refusal of a URL to host (as
// written, its secret-looking runs hidden: hideSecretRuns) whose path
// holds s: it names the host and the segment's position and length,
// never its text, and says how to declare the secret instead (Auth). It
// is short enough for a resolver diagnostic (400
// runes with the server's key and URL) to keep its advice.
func secretSegmentError(host string, s secretSegment) error {
	where := fmt.Sprintf("segment %d", s.index)
	if s.last != s.index {
		where = fmt.Sprintf("segments %d to %d", s.index, s.last)
	}
	advice := "use auth {header: …}"
	if s.last == s.index {
		advice = fmt.Sprintf("put %s there with auth {path_segment: %d}, or %s", SecretSegment, s.index, advice)
	}
	return fmt.Errorf("the URL to %s has a secret-looking path segment (%s, %d characters, %s): a pinned URL is stored, shown and logged, so a secret does not belong in it; %s", hideSecretRuns(host), where, s.length, s.why, advice)
}

// hideSecretSegments is path, a URL's path as written, with every
// segment secretSegments finds shown as "…".
func hideSecretSegments(path string) string {
	found := secretSegments(path)
	if len(found) == 0 {
		return path
	}
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for _, s := range found {
		for i := s.index; i <= s.last; i++ {
			segs[i-1] = "…"
		}
	}
	return path[:len(path)-len(strings.TrimPrefix(path, "/"))] + strings.Join(segs, "/")
}

// hideSecretRuns is s, a piece of a URL before its path (a host, an
// authority), with every run (runs) for which secretIn holds shown as
// "…": a host label such as a UUID or a random token.
func hideSecretRuns(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && isRunByte(s[j]) {
			j++
		}
		if j == i {
			b.WriteByte(s[i])
			i++
			continue
		}
		if _, secret := secretIn(s[i:j]); secret {
			b.WriteString("…")
		} else {
			b.WriteString(s[i:j])
		}
		i = j
	}
	return b.String()
}

// schemeShown is a scheme MCPURLShown shows as written: an RFC 3986 §3.1
// scheme of at most 16 characters, too short to hold a secret-looking run.
var schemeShown = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]{0,15}$`)

// malformedShown is raw, an MCP server URL refused before its path could
// be judged (fetchurl refused it, or it has no scheme), as a message may
// show it: only "<scheme>://<host>/…", the scheme shown when it is one
// (schemeShown), "…@" for any userinfo, and the host shown when it is a
// valid host of ASCII letters, digits, "-" and "." or an IPv6 literal in
// brackets, with no secret-looking run; each other part is "…". Nothing
// after the host is shown: where the URL is malformed, no one can tell
// its path from its authority, nor a port from a token.
func malformedShown(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return "…"
	}
	if !schemeShown.MatchString(scheme) {
		scheme = "…"
	}
	authority := rest
	if end := strings.IndexAny(rest, `/\?#`); end >= 0 {
		authority = rest[:end]
	}
	userinfo := ""
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		userinfo, authority = "…@", authority[at+1:]
	}
	host, _, _ := strings.Cut(authority, ":")
	if strings.HasPrefix(authority, "[") {
		if end := strings.IndexByte(authority, ']'); end >= 0 {
			host = authority[:end+1]
		}
	}
	if !hostShown(host) {
		host = "…"
	}
	return scheme + "://" + userinfo + host + "/…"
}

// hostShown reports whether host, the host of a malformed URL as written,
// may be shown: letters, digits, "-" and "." (or an IPv6 literal in
// brackets) that hostlist.NormalizeHost accepts, with no secret-looking
// run (hideSecretRuns leaves it as it is).
func hostShown(host string) bool {
	literal, bracketed := strings.CutPrefix(host, "[")
	if bracketed {
		var closed bool
		if literal, closed = strings.CutSuffix(literal, "]"); !closed || strings.Trim(literal, "0123456789abcdefABCDEF:.") != "" {
			return false
		}
	} else if strings.Trim(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") != "" {
		return false
	}
	_, err := hostlist.NormalizeHost(literal)
	return host != "" && err == nil && hideSecretRuns(host) == host
}

// shownAccepted is MCPURLShown of u, a URL whose part before any "?" or
// "#" fetchurl accepts, with tail ("", "?…" or "#…") after it: the scheme
// and the authority as written, with secret-looking runs hidden
// (hideSecretRuns), and the path with secret-looking segments hidden
// (hideSecretSegments).
func shownAccepted(scheme string, u *fetchurl.URL, tail string) string {
	return scheme + "://" + hideSecretRuns(u.Parsed.Host) + hideSecretSegments(u.Parsed.EscapedPath()) + tail
}
