package toolset

import (
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
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

// fakeBase64 is fakeToken in the standard base64 alphabet, with its "="
// padding: the first n bytes of the SHA-512 of label, encoded.
func fakeBase64(label string, n int) string {
	sum := sha512.Sum512([]byte(label))
	return base64.StdEncoding.EncodeToString(sum[:n])
}

// fakeJWT is a JWT-shaped stand-in: a real header and payload, and a fake
// signature.
func fakeJWT() string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc([]byte(`{"sub":"fake-user","iat":1700000000}`)) + "." + fakeToken("jwt", 43)
}

// A hosted MCP server's URL often holds a secret in its path; ParseMCPURL
// refuses a segment holding a UUID, 32 or more hex digits in a row, a JWT,
// or a long random-looking run or piece of base64, judged as written and
// percent-decoded, whatever surrounds it; it names the host and the
// segment's position and length but never its text, and MCPURLShown
// hides it. Ordinary endpoints, and long segments that are readable (low
// entropy) or whose runs are short, are accepted.
func TestParseMCPURLRefusesASecretInThePath(t *testing.T) {
	zapier := fakeToken("zapier", 40) // 4.65 bits per character
	hex32 := fakeHex("hex", 32)       // 3.63
	lowHex := fakeHex("hex-2", 32)    // 3.35: only the hex rule refuses it
	hex40 := fakeHex("hex-40", 40)
	last := fakeToken("last", 24) // 4.25
	long := fakeToken("long", 86) // the whole SHA-512
	uuid := fakeUUID("uuid")
	upper := strings.ToUpper(fakeUUID("uuid-upper"))
	lowUUID := "550e8400-e29b-41d4-a716-446655440000" // 3.39: only the UUID rule refuses it
	encoded := "%41" + fakeToken("encoded", 39)       // "A" percent-encoded
	padded := fakeBase64("b64-1", 28)                 // 38 characters and "==", no "+" or "/"
	plus := fakeBase64("b64-20", 16)                  // Tu+…==: no run of 20
	slash := fakeBase64("b64-37", 16)                 // Vbs/…+…==: no run of 20, and a "/"
	jwt := fakeJWT()
	twice := fakeToken("twice-a", 10) + "%252D" + fakeToken("twice-b", 10) // "-" encoded twice

	for _, c := range []struct {
		name, url string
		// secret is the text no message may show ("" for an accepted
		// URL); says, what the refusal says; shown, what MCPURLShown
		// shows ("" to leave it unchecked).
		secret, says, shown string
	}{
		{name: "a plain endpoint", url: "https://mcp.example.com/mcp"},
		{name: "a trailing slash", url: "https://api.githubcopilot.com/mcp/"},
		{name: "an SSE endpoint", url: "https://mcp.linear.app/sse"},
		{name: "no path", url: "https://mcp.example.com"},
		{name: "the local test server", url: "http://127.0.0.1:40647/mcp"},
		{name: "the local stack's server", url: "http://mcp.internal.test:35573/mcp"},
		{name: "the documented example", url: "https://mcp.crm.example.com/mcp"},
		{name: "a short tenant name", url: "https://example.com/v1/mcp/servers/customer-tickets"},
		{name: "a short hex id", url: "https://mcp.example.com/t/0f3a9c2e/mcp"},
		{name: "31 hex digits of low entropy are not a hex run", url: "https://mcp.example.com/t/aaaabbbbccccddddeeeeffff0000111/mcp"},
		{name: "a scoped server name", url: "https://server.smithery.ai/@acme/crm-tools/mcp"},
		{name: "a long readable name at 3.26 bits", url: "https://mcp.example.com/tools/list_repository_issues"},
		{name: "a long repeated name at 3.34 bits", url: "https://mcp.example.com/customer_tickets_customer_tickets/mcp"},
		{name: "exactly 3.5 bits is not over", url: "https://mcp.example.com/aaaabbbbccccddddeeffgghhiijjkkll/mcp"},
		{name: "19 random characters are too short to judge", url: "https://mcp.example.com/s/" + fakeToken("zapier", 19) + "/mcp"},
		{name: "a long name with dots, its runs short", url: "https://mcp.example.com/workspaces/acme.customer-support.tickets/mcp"},
		{name: "a short path parameter", url: "https://mcp.example.com/mcp;v=2"},
		{name: "a version with dots", url: "https://mcp.example.com/v1.2.3/mcp"},
		{name: "a plus in a word", url: "https://mcp.example.com/c++/tools/mcp"},
		{name: "a short padded word", url: "https://mcp.example.com/tools==/mcp"},
		{name: "short pieces under a padded word", url: "https://mcp.example.com/api/V2/Tools/list==/mcp"},

		{name: "a Zapier-style key", url: "https://mcp.zapier.com/api/mcp/s/" + zapier + "/mcp", secret: zapier,
			says:  "the URL to mcp.zapier.com has a secret-looking path segment (segment 4, 40 characters, entropy 4.65 bits per character)",
			shown: "https://mcp.zapier.com/api/mcp/s/…/mcp"},
		{name: "a UUID before /mcp", url: "https://mcp.example.com/" + uuid + "/mcp", secret: uuid,
			says: "(segment 1, 36 characters, holding a UUID)", shown: "https://mcp.example.com/…/mcp"},
		{name: "an upper-case UUID", url: "https://mcp.example.com/servers/" + upper + "/sse", secret: upper,
			says: "(segment 2, 36 characters, holding a UUID)"},
		{name: "a UUID under 3.5 bits", url: "https://mcp.example.com/" + lowUUID + "/mcp", secret: lowUUID,
			says: "holding a UUID"},
		{name: "32 hex digits after /s/", url: "https://mcp.example.com/s/" + hex32 + "/", secret: hex32,
			says: "(segment 2, 32 characters, holding 32 or more hex digits in a row)", shown: "https://mcp.example.com/s/…/"},
		{name: "32 hex digits under 3.5 bits", url: "https://mcp.example.com/s/" + lowHex + "/mcp", secret: lowHex,
			says: "holding 32 or more hex digits in a row"},
		{name: "32 hex digits of low entropy", url: "https://mcp.example.com/s/aaaabbbbccccddddeeeeffff00001111/mcp", secret: "aaaabbbbccccddddeeeeffff00001111",
			says: "holding 32 or more hex digits in a row"},
		{name: "a token as the last segment", url: "https://mcp.example.com:8443/mcp/" + last, secret: last,
			says: "the URL to mcp.example.com has a secret-looking path segment (segment 2, 24 characters", shown: "https://mcp.example.com:8443/mcp/…"},
		{name: "a long token", url: "https://tenant.mcp.example.com/v1/" + long + "/mcp", secret: long,
			says: "(segment 2, 86 characters"},
		{name: "a percent-encoded token", url: "https://mcp.example.com/s/" + encoded + "/mcp", secret: encoded[3:],
			says: "(segment 2, 40 characters"},
		{name: "a token percent-encoded twice", url: "https://mcp.example.com/s/" + twice + "/mcp", secret: twice,
			says: "(segment 2, 21 characters", shown: "https://mcp.example.com/s/…/mcp"},
		{name: "a readable name over the bound", url: "https://mcp.example.com/tools/create_customer_ticket_v2", secret: "create_customer_ticket_v2",
			says: "entropy 3.54 bits"},
		{name: "a token before a suffix", url: "https://mcp.example.com/s/" + fakeToken("zapier", 20) + ".json", secret: fakeToken("zapier", 20),
			says: "(segment 2, 25 characters, entropy"},

		{name: "base64 with padding", url: "https://mcp.zapier.com/api/mcp/s/" + padded + "/mcp", secret: padded,
			says: "(segment 4, 40 characters, entropy", shown: "https://mcp.zapier.com/api/mcp/s/…/mcp"},
		{name: "base64 with encoded padding", url: "https://mcp.zapier.com/api/mcp/s/" + strings.TrimSuffix(padded, "==") + "%3D%3D/mcp", secret: strings.TrimSuffix(padded, "=="),
			says: "(segment 4, 40 characters, entropy"},
		{name: "base64 with a plus", url: "https://mcp.example.com/s/" + plus + "/mcp", secret: plus,
			says: "(segment 2, 24 characters, entropy"},
		{name: "base64 with an encoded slash", url: "https://mcp.example.com/s/" + strings.ReplaceAll(slash, "/", "%2F") + "/mcp", secret: strings.ReplaceAll(slash, "/", "%2F"),
			says: "(segment 2, 24 characters, entropy"},
		{name: "base64 with a slash", url: "https://mcp.example.com/s/" + slash + "/mcp", secret: slash,
			says: "(segments 2 to 3, 24 characters, base64 across 2 segments, entropy", shown: "https://mcp.example.com/s/…/…/mcp"},
		{name: "a JWT", url: "https://mcp.example.com/" + jwt + "/mcp", secret: jwt,
			says: "shaped like a JWT", shown: "https://mcp.example.com/…/mcp"},
		{name: "a key as a parameter", url: "https://mcp.example.com/key=" + hex40 + "/mcp", secret: hex40,
			says: "(segment 1, 44 characters, holding 32 or more hex digits in a row)"},
		{name: "a key as a path parameter", url: "https://mcp.example.com/s;key=" + hex40 + "/mcp", secret: hex40,
			says: "(segment 1, 46 characters, holding 32 or more hex digits in a row)", shown: "https://mcp.example.com/…/mcp"},
		{name: "a UUID and a dot", url: "https://mcp.example.com/" + uuid + "./mcp", secret: uuid, says: "(segment 1, 37 characters, holding a UUID)"},
		{name: "a UUID and an encoded dot", url: "https://mcp.example.com/" + uuid + "%2e/mcp", secret: uuid, says: "(segment 1, 37 characters, holding a UUID)"},
		{name: "a UUID and a path parameter", url: "https://mcp.example.com/" + uuid + ";x/mcp", secret: uuid, says: "holding a UUID"},
		{name: "a UUID with a suffix", url: "https://mcp.example.com/" + uuid + ".mcp", secret: uuid, says: "holding a UUID", shown: "https://mcp.example.com/…"},
		{name: "a UUID in encoded braces", url: "https://mcp.example.com/%7B" + uuid + "%7D/mcp", secret: uuid, says: "(segment 1, 38 characters, holding a UUID)"},
		{name: "a UUID before an encoded slash", url: "https://mcp.example.com/" + uuid + "%2Fx", secret: uuid, says: "(segment 1, 38 characters, holding a UUID)"},
		{name: "hex after a dot", url: "https://mcp.example.com/tok." + hex32 + "/mcp", secret: hex32, says: "holding 32 or more hex digits in a row"},
		{name: "a key in the query", url: "https://server.smithery.ai/@acme/crm-tools/mcp?api_key=" + zapier, secret: zapier,
			says: "has a query string", shown: "https://server.smithery.ai/@acme/crm-tools/mcp?…"},
		{name: "a key in the path and the query", url: "https://mcp.example.com/" + uuid + "/mcp?api_key=" + zapier, secret: uuid,
			says: "has a query string", shown: "https://mcp.example.com/…/mcp?…"},
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
			if c.shown != "" && shown != c.shown {
				t.Errorf("MCPURLShown(%q) = %q, want %q", c.url, shown, c.shown)
			}
			checkHides(t, c.url, c.secret, msg, shown)
			if strings.Contains(msg, "path segment") {
				for _, want := range []string{"a secret does not belong in it", "use auth {header: …}"} {
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

// checkHides fails unless none of texts (a refusal, a URL as shown)
// holds secret, in any letter case, or any of its runs of 10 or more
// characters (a part of a JWT, the piece of base64 between "+" and "/").
func checkHides(t *testing.T, raw, secret string, texts ...string) {
	t.Helper()
	for _, text := range texts {
		low := strings.ToLower(text)
		for _, s := range append(runs(secret), secret) {
			if (s == secret || len(s) >= 10) && strings.Contains(low, strings.ToLower(s)) {
				t.Errorf("%q: %q shows the secret (%q)", raw, text, s)
			}
		}
	}
}

// A URL refused for another reason than a secret in its path (a blank, a
// bad escape, a backslash, a host or port that is not one) shows no
// secret either, wherever it stands: the refusal quotes no long run, a
// port by its length, and MCPURLShown shows only the scheme and a valid
// host.
func TestAMalformedMCPURLShowsNoSecret(t *testing.T) {
	for _, c := range mcpURLLeaks(t) {
		t.Run(c.Name, func(t *testing.T) {
			checkMCPURL(t, c.URL)
			_, err := ParseMCPURL(c.URL)
			if err == nil {
				t.Fatalf("%q: accepted", c.URL)
			}
			if !strings.Contains(err.Error(), c.Says) {
				t.Errorf("%q: %q does not say %q", c.URL, err, c.Says)
			}
			shown := MCPURLShown(c.URL)
			if shown != c.Shown {
				t.Errorf("MCPURLShown(%q) = %q, want %q", c.URL, shown, c.Shown)
			}
			checkHides(t, c.URL, c.Secret, err.Error(), shown)
		})
	}
}

// mcpURLLeak is an MCP server URL refused for another reason than its
// path, with a secret elsewhere, whose refusal or text in a message once
// showed the secret: what the refusal says, and how MCPURLShown shows
// it. The resolver's and the publish function's tests read the same
// file, testdata/toolsets/mcp-url-leaks.json.
type mcpURLLeak struct {
	Name   string `json:"name"`
	URL    string `json:"url"`
	Secret string `json:"secret"`
	Says   string `json:"says"`
	Shown  string `json:"shown"`
}

func mcpURLLeaks(tb testing.TB) []mcpURLLeak {
	tb.Helper()
	data, err := os.ReadFile("../../testdata/toolsets/mcp-url-leaks.json")
	if err != nil {
		tb.Fatal(err)
	}
	var leaks []mcpURLLeak
	if err := json.Unmarshal(data, &leaks); err != nil {
		tb.Fatal(err)
	}
	return leaks
}

func TestMCPURLShownHidesASecretInThePath(t *testing.T) {
	tok := fakeToken("zapier", 40)
	uuid := fakeUUID("uuid")
	lambda := strings.ToLower(fakeHex("lambda", 32))
	for raw, want := range map[string]string{
		"https://mcp.zapier.com/api/mcp/s/" + tok + "/mcp":      "https://mcp.zapier.com/api/mcp/s/…/mcp",
		"https://mcp.example.com/" + uuid + "/mcp?k=" + tok:     "https://mcp.example.com/…/mcp?…",
		"https://mcp.example.com/" + uuid + "/" + tok:           "https://mcp.example.com/…/…",
		"https://mcp.example.com/tools/list_repository_issues":  "https://mcp.example.com/tools/list_repository_issues",
		"https://" + uuid + ".mcp.example.com/mcp":              "https://….mcp.example.com/mcp",
		"https://" + lambda + ".lambda-url.eu-west-1.on.aws/":   "https://….lambda-url.eu-west-1.on.aws/",
		"https://" + lambda + ".lambda-url.eu-west-1.on.aws/ ":  "https://…/…",
		"https://MCP.Example.com:8443/" + uuid + "#" + tok:      "https://MCP.Example.com:8443/…#…",
		"HTTPS://[2001:db8::1]:8443/mcp/" + tok + "%zz":         "HTTPS://[2001:db8::1]/…",
		"https://mcp.example.com:99999/mcp":                     "https://mcp.example.com/…",
		"https://" + strings.ToLower(tok[:30]) + ".example.com": "https://…/…",
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
		{fakeToken("zapier", 20)[:19] + ".", false}, // a character outside the alphabet
		{fakeBase64("b64-20", 16)[:22], true},       // "+" is in the alphabet
		{strings.Repeat("ab", 20), false},           // long, 1 bit
		{"list_repository_issues", false},           // readable
		{fakeHex("hex", 32), true},                  // 3.63
		{fakeHex("hex-2", 32), false},               // 3.35: the entropy rule does not see every hex token (hexRunPattern does)
	} {
		if got, h := looksRandom(c.seg); got != c.want {
			t.Errorf("looksRandom(%q) = %v (%.3f bits), want %v", c.seg, got, h, c.want)
		}
	}
}

// checkMCPURL holds ParseMCPURL and MCPURLShown to their promise on raw,
// whatever it is: ParseMCPURL refuses a URL with a path segment that
// looks like a secret, and neither its error nor MCPURLShown shows a
// secret-looking run of raw (secretRuns), as written or percent-decoded:
// none of their runs holds one, unless that run is itself a run of raw
// that does not look like a secret (a long readable run may hold a
// random-looking one that raw also holds elsewhere).
func checkMCPURL(t *testing.T, raw string) {
	t.Helper()
	_, err := ParseMCPURL(raw)
	_, segs := pathSegments(raw)
	for _, seg := range segs {
		if _, secret := findSecretSegment("/" + seg); secret && err == nil {
			t.Fatalf("ParseMCPURL(%q) accepted a secret-looking segment", raw)
		}
	}
	shown := MCPURLShown(raw)
	for _, seg := range pathSegmentsOf(shown) {
		if _, secret := findSecretSegment("/" + seg); secret {
			t.Fatalf("MCPURLShown(%q) = %q shows a secret-looking segment", raw, shown)
		}
	}
	texts := map[string]string{"MCPURLShown": shown}
	if err != nil {
		texts["ParseMCPURL's error"] = err.Error()
	}
	secrets, plain := secretRuns(raw)
	for what, text := range texts {
		for _, r := range runs(text) {
			if plain[r] {
				continue
			}
			for _, s := range secrets {
				if strings.Contains(r, s) {
					t.Fatalf("ParseMCPURL(%q): %s %q shows the secret-looking run %q", raw, what, text, s)
				}
			}
		}
	}
}

// secretRuns returns the runs of raw, as written and percent-decoded
// (decodings), that look like a secret (secretIn: a UUID, 32 hex digits,
// 20 or more random-looking characters), and the set of those that do
// not.
func secretRuns(raw string) (secrets []string, plain map[string]bool) {
	plain = map[string]bool{}
	for _, d := range decodings(raw) {
		for _, r := range runs(d) {
			if _, secret := secretIn(r); secret {
				secrets = append(secrets, r)
			} else {
				plain[r] = true
			}
		}
	}
	return secrets, plain
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
