package toolset

import (
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"math"
	"strings"
	"testing"
)

// fakeToken is a random-looking stand-in for a hosted MCP server's secret,
// the same on every run: the first n (at most 86) characters of the
// base64url form of the SHA-512 of label. It is fake.
func fakeToken(label string, n int) string {
	sum := sha512.Sum512([]byte(label))
	return base64.RawURLEncoding.EncodeToString(sum[:])[:n]
}

// fakeHex is fakeToken in lower-case hex: the first n (at most 128) hex
// digits of the SHA-512 of label.
func fakeHex(label string, n int) string {
	sum := sha512.Sum512([]byte(label))
	return hex.EncodeToString(sum[:])[:n]
}

// fakeUUID is a UUID-shaped stand-in made of fakeHex(label, 32).
func fakeUUID(label string) string {
	h := fakeHex(label, 32)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// A hosted MCP server's URL often holds a secret in its path; ParseMCPURL
// refuses a UUID-shaped segment and a long random-looking one, naming the
// host and the segment's position and length but never its text, and
// MCPURLShown hides it. Ordinary endpoints, and long segments that are
// readable (low entropy) or hold a character outside A-Z, a-z, 0-9, "_"
// and "-", are accepted.
func TestParseMCPURLRefusesASecretInThePath(t *testing.T) {
	zapier := fakeToken("zapier", 40) // 4.65 bits per character
	hex32 := fakeHex("hex", 32)       // 3.63: 32 hex digits can fall under 3.5 (fakeHex("hex-2", 32) does)
	last := fakeToken("last", 24)     // 4.25
	long := fakeToken("long", 86)     // the whole SHA-512
	uuid := fakeUUID("uuid")
	upper := strings.ToUpper(fakeUUID("uuid-upper"))
	lowUUID := "550e8400-e29b-41d4-a716-446655440000" // 3.39: only the UUID rule refuses it
	encoded := "%41" + fakeToken("encoded", 39)       // "A" percent-encoded

	for _, c := range []struct {
		name, url string
		// secret is the segment no message may show ("" for an
		// accepted URL); says, what the refusal says.
		secret, says string
	}{
		{name: "a plain endpoint", url: "https://mcp.example.com/mcp"},
		{name: "a trailing slash", url: "https://api.githubcopilot.com/mcp/"},
		{name: "an SSE endpoint", url: "https://mcp.linear.app/sse"},
		{name: "no path", url: "https://mcp.example.com"},
		{name: "the local test server", url: "http://127.0.0.1:40647/mcp"},
		{name: "a short tenant name", url: "https://example.com/v1/mcp/servers/customer-tickets"},
		{name: "a short hex id", url: "https://mcp.example.com/t/0f3a9c2e/mcp"},
		{name: "a scoped server name", url: "https://server.smithery.ai/@acme/crm-tools/mcp"},
		{name: "a long readable name at 3.26 bits", url: "https://mcp.example.com/tools/list_repository_issues"},
		{name: "a long repeated name at 3.34 bits", url: "https://mcp.example.com/customer_tickets_customer_tickets/mcp"},
		{name: "exactly 3.5 bits is not over", url: "https://mcp.example.com/aaaabbbbccccddddeeffgghhiijjkkll/mcp"},
		{name: "19 random characters are too short to judge", url: "https://mcp.example.com/s/" + fakeToken("zapier", 19) + "/mcp"},
		{name: "a long name with a dot", url: "https://mcp.example.com/workspaces/acme.customer-support.tickets/mcp"},
		{name: "a segment with a character outside the class is not judged", url: "https://mcp.example.com/s/" + fakeToken("zapier", 20) + ".json"},

		{name: "a Zapier-style key", url: "https://mcp.zapier.com/api/mcp/s/" + zapier + "/mcp", secret: zapier,
			says: "the URL to mcp.zapier.com has a secret-looking path segment (segment 4, 40 characters, entropy 4.65 bits per character)"},
		{name: "a UUID before /mcp", url: "https://mcp.example.com/" + uuid + "/mcp", secret: uuid,
			says: "(segment 1, 36 characters, shaped like a UUID)"},
		{name: "an upper-case UUID", url: "https://mcp.example.com/servers/" + upper + "/sse", secret: upper,
			says: "(segment 2, 36 characters, shaped like a UUID)"},
		{name: "a UUID under 3.5 bits", url: "https://mcp.example.com/" + lowUUID + "/mcp", secret: lowUUID,
			says: "shaped like a UUID"},
		{name: "32 hex digits after /s/", url: "https://mcp.example.com/s/" + hex32 + "/", secret: hex32,
			says: "(segment 2, 32 characters, entropy 3.63 bits"},
		{name: "a token as the last segment", url: "https://mcp.example.com:8443/mcp/" + last, secret: last,
			says: "the URL to mcp.example.com has a secret-looking path segment (segment 2, 24 characters"},
		{name: "a long token", url: "https://tenant.mcp.example.com/v1/" + long + "/mcp", secret: long,
			says: "(segment 2, 86 characters"},
		{name: "a percent-encoded token", url: "https://mcp.example.com/s/" + encoded + "/mcp", secret: encoded[3:],
			says: "(segment 2, 40 characters"},
		{name: "a readable name over the bound", url: "https://mcp.example.com/tools/create_customer_ticket_v2", secret: "create_customer_ticket_v2",
			says: "entropy 3.54 bits"},
		{name: "a key in the query", url: "https://server.smithery.ai/@acme/crm-tools/mcp?api_key=" + zapier, secret: zapier,
			says: "has a query string"},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkMCPURL(t, c.url)
			_, err := ParseMCPURL(c.url)
			shown := MCPURLShown(c.url)
			if c.says == "" {
				if err != nil {
					t.Fatalf("%s: %v", c.url, err)
				}
				if shown != c.url {
					t.Errorf("MCPURLShown(%q) = %q, want it unchanged", c.url, shown)
				}
				return
			}
			if err == nil {
				t.Fatalf("%s: accepted", c.url)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.says) {
				t.Errorf("%s: %q does not say %q", c.url, msg, c.says)
			}
			if strings.Contains(msg, c.secret) || strings.Contains(strings.ToLower(msg), strings.ToLower(c.secret)) {
				t.Errorf("%s: the refusal shows the secret: %q", c.url, msg)
			}
			if strings.Contains(shown, c.secret) {
				t.Errorf("MCPURLShown(%q) = %q shows the secret", c.url, shown)
			}
			if strings.Contains(msg, "path segment") {
				for _, want := range []string{"a secret does not belong in it", "until toolgate stores credentials", "such as a header"} {
					if !strings.Contains(msg, want) {
						t.Errorf("%s: %q does not say %q", c.url, msg, want)
					}
				}
				if msg != strings.ToLower(msg[:1])+msg[1:] || strings.HasSuffix(msg, ".") {
					t.Errorf("%q is not a lower-case message without a full stop", msg)
				}
			}
		})
	}
}

func TestMCPURLShownHidesASecretInThePath(t *testing.T) {
	tok := fakeToken("zapier", 40)
	uuid := fakeUUID("uuid")
	for raw, want := range map[string]string{
		"https://mcp.zapier.com/api/mcp/s/" + tok + "/mcp":        "https://mcp.zapier.com/api/mcp/s/…/mcp",
		"https://u:p@mcp.example.com/" + uuid + "/mcp?k=" + tok:   "https://…@mcp.example.com/…/mcp?…",
		"https://mcp.example.com/" + uuid + "/" + tok:             "https://mcp.example.com/…/…",
		"mcp.example.com/" + tok + "/mcp":                         "mcp.example.com/…/mcp",
		"https://mcp.example.com/tools/list_repository_issues":    "https://mcp.example.com/tools/list_repository_issues",
		"https://" + strings.ToLower(tok[:30]) + ".example.com/x": "https://" + strings.ToLower(tok[:30]) + ".example.com/x",
	} {
		if got := MCPURLShown(raw); got != want {
			t.Errorf("MCPURLShown(%q) = %q, want %q", raw, got, want)
		}
	}
}

// The entropy is in bits per character over the string's own characters.
func TestShannonEntropy(t *testing.T) {
	for s, want := range map[string]float64{
		"":                                 0,
		"aaaaaaaaaaaaaaaaaaaaaaaa":         0,
		"abababab":                         1,
		"abcd":                             2,
		"0123456789abcdef":                 4,
		"aaaabbbbccccddddeeffgghhiijjkkll": 3.5,
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_": 6,
	} {
		if got := shannonEntropy(s); math.Abs(got-want) > 1e-12 {
			t.Errorf("shannonEntropy(%q) = %v, want %v", s, got, want)
		}
	}
	for _, c := range []struct {
		seg  string
		want bool
	}{
		{fakeToken("zapier", 19), false},            // too short
		{fakeToken("zapier", 20), true},             // 20 characters over 3.5
		{"aaaabbbbccccddddeeffgghhiijjkkll", false}, // exactly 3.5
		{"aaaabbbbccccddddeeffgghhiijjkklm", true},  // just over
		{fakeToken("zapier", 20)[:19] + ".", false}, // a character outside the class
		{strings.Repeat("ab", 20), false},           // long, 1 bit
		{"list_repository_issues", false},           // readable
		{fakeHex("hex", 32), true},                  // 3.63
		{fakeHex("hex-2", 32), false},               // 3.35: the entropy rule does not see every hex token
	} {
		if got, h := looksRandom(c.seg); got != c.want {
			t.Errorf("looksRandom(%q) = %v (%.3f bits), want %v", c.seg, got, h, c.want)
		}
	}
}

// checkMCPURL holds ParseMCPURL and MCPURLShown to their promise on raw,
// whatever it is: ParseMCPURL refuses a URL with a path segment that
// looks like a secret, and neither its error nor MCPURLShown shows such a
// segment (unless the same text is also before the path, in the scheme
// or the authority, which a message may show).
func checkMCPURL(t *testing.T, raw string) {
	t.Helper()
	_, err := ParseMCPURL(raw)
	before, segs := pathSegments(raw)
	for _, seg := range segs {
		if _, secret := findSecretSegment("/" + seg); !secret {
			continue
		}
		if err == nil {
			t.Fatalf("ParseMCPURL(%q) accepted a secret-looking segment", raw)
		}
		if strings.Contains(err.Error(), seg) && !strings.Contains(strings.ToLower(before), strings.ToLower(seg)) {
			t.Fatalf("ParseMCPURL(%q) shows a secret-looking segment: %v", raw, err)
		}
	}
	shown := MCPURLShown(raw)
	for _, seg := range pathSegmentsOf(shown) {
		if _, secret := findSecretSegment("/" + seg); secret {
			t.Fatalf("MCPURLShown(%q) = %q shows a secret-looking segment", raw, shown)
		}
	}
}

// pathSegments splits raw, a URL with "//" before its authority, cut
// before any "?" or "#", into the text before its path and the path's
// segments as written (none when it has no "//" or no path).
func pathSegments(raw string) (before string, segs []string) {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	i := strings.Index(raw, "//")
	if i < 0 {
		return raw, nil
	}
	j := strings.IndexByte(raw[i+2:], '/')
	if j < 0 {
		return raw, nil
	}
	before, path := raw[:i+2+j], raw[i+2+j+1:]
	return before, strings.Split(path, "/")
}

func pathSegmentsOf(raw string) []string {
	_, segs := pathSegments(raw)
	return segs
}

// A URL that fetchurl refuses is refused without showing a secret in its
// path either, even where fetchurl would quote part of it (as a scheme,
// the text before the first ":").
func TestParseMCPURLShowsNoSecretOfAMalformedURL(t *testing.T) {
	tok := fakeToken("zapier", 40)
	for _, raw := range []string{
		"mcp.zapier.com/api/mcp/s/" + tok + "/mcp:x",
		"//mcp.zapier.com/s/" + tok + ":443",
		"https://mcp.zapier.com/s/" + tok + "/m cp",
		"https://mcp.zapier.com/s/" + tok + "/%zz",
		"https://mcp.zapier.com:x/s/" + tok,
		"ftp://mcp.zapier.com/s/" + tok,
		"https://mcp.zapier.com/s/" + tok + "/../mcp",
	} {
		_, err := ParseMCPURL(raw)
		if err == nil || strings.Contains(err.Error(), tok[:10]) {
			t.Errorf("ParseMCPURL(%q): %v", raw, err)
		}
		checkMCPURL(t, raw)
	}
}
