package toolset

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strings"
)

// A secret in an MCP server URL's path. Hosted MCP servers commonly give
// each customer a URL with an API key or an id in its path
// (https://host/s/<secret>/mcp, https://host/<uuid>/mcp); a pinned URL is
// stored in locks and in the table, shown and logged, so ParseMCPURL
// refuses a path segment that looks like one (docs/toolsets.md, "MCP
// servers"), and MCPURLShown hides it.

const (
	// minSecretLen is the length, in characters, from which a path
	// segment may be taken for a random token.
	minSecretLen = 20
	// maxSegmentEntropy is the Shannon entropy, in bits per character,
	// above which a long segment (minSecretLen or more characters, all
	// inSecretAlphabet) is taken for a random token.
	maxSegmentEntropy = 3.5
)

// uuidPattern is a UUID's text form: 8-4-4-4-12 hex digits, any case.
var uuidPattern = regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)

// inSecretAlphabet reports whether every byte of s is one of A-Z, a-z,
// 0-9, "_" and "-": the base64url alphabet, which holds hex and most
// generated tokens, and the characters of a readable identifier.
func inSecretAlphabet(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
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

// looksRandom reports whether seg, one path segment of an MCP server URL
// (percent-decoded), looks like a random token such as an API key: at
// least minSecretLen (20) characters, all of A-Z, a-z, 0-9, "_" and "-",
// whose Shannon entropy (shannonEntropy, bits per character) is over
// maxSegmentEntropy (3.5). It also returns that entropy.
//
// Why: a hosted MCP server's URL often holds the customer's secret in its
// path (https://host/s/<secret>/mcp), and an MCP server's URL is pinned,
// stored in locks and the table, shown and logged, so it must hold none
// (docs/toolsets.md, "MCP servers"). Random tokens spread over many
// characters: 40 characters of base64url are near 4.8 bits per
// character, 32 hex digits near 3.6 (hex can reach 4 at most, so one in
// five such tokens stays at or under 3.5; a UUID has its own rule, see
// secretSegment). Words repeat letters, and a readable identifier
// usually stays at or under the bound (list_repository_issues: 3.26),
// though not always (create_customer_ticket_v2: 3.54, refused). Segments
// under 20 characters are not judged: too short to tell a word from a
// token, and common path parts (mcp, sse, v1, a tenant name) are short.
func looksRandom(seg string) (bool, float64) {
	if len(seg) < minSecretLen || !inSecretAlphabet(seg) {
		return false, 0
	}
	h := shannonEntropy(seg)
	return h > maxSegmentEntropy, h
}

// secretSegment is a path segment that looks like a secret: its position
// among the path's segments (1 for the first, after the leading "/"), its
// length in characters (percent-decoded) and why it is taken for one. It
// never holds the segment's text.
type secretSegment struct {
	index, length int
	why           string
}

// findSecretSegment returns the first segment of path, a URL's path as
// written (percent-encoded, starting with "/" unless empty), that is a
// UUID or looksRandom; ok is false when none is. A segment is judged
// percent-decoded, so that an encoded character does not hide a token;
// one that does not decode is judged as written.
func findSecretSegment(path string) (s secretSegment, ok bool) {
	for i, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if dec, err := url.PathUnescape(seg); err == nil {
			seg = dec
		}
		if uuidPattern.MatchString(seg) {
			return secretSegment{index: i + 1, length: len(seg), why: "shaped like a UUID"}, true
		}
		if random, h := looksRandom(seg); random {
			return secretSegment{index: i + 1, length: len(seg),
				why: fmt.Sprintf("entropy %.2f bits per character", h)}, true
		}
	}
	return secretSegment{}, false
}

// secretSegmentError is ParseMCPURL's refusal of a URL to host whose path
// holds s: it names the host and the segment's position and length, never
// its text. It is short enough for a resolver diagnostic (400 runes with
// the server's key and URL) to keep its advice.
func secretSegmentError(host string, s secretSegment) error {
	return fmt.Errorf("the URL to %s has a secret-looking path segment (segment %d, %d characters, %s): a pinned URL is stored, shown and logged, so a secret does not belong in it; until toolgate stores credentials, the server must take it another way, such as a header", host, s.index, s.length, s.why)
}

// hideSecretSegments is path, a URL's path as written, with every segment
// findSecretSegment would refuse shown as "…".
func hideSecretSegments(path string) string {
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		if _, ok := findSecretSegment("/" + seg); ok {
			segs[i] = "…"
		}
	}
	return strings.Join(segs, "/")
}
