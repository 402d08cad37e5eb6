package fetchurl

import (
	"net/url"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/hostlist"
)

func TestCheckURL(t *testing.T) {
	tests := []struct {
		name, url  string
		host, port string // when allowed
		refused    string // a piece of the reason
	}{
		{"plain", "https://api.example.com/v1?q=1#top", "api.example.com", "", ""},
		{"upper-case scheme and host", "HTTPS://API.Example.COM/", "API.Example.COM", "", ""},
		{"port", "http://api.example.com:8080", "api.example.com", "8080", ""},
		{"ipv6", "http://[2606:4700::1]:80/", "2606:4700::1", "80", ""},
		{"query with slash and colon", "https://a.example/p?u=http://x/y", "a.example", "", ""},
		{"escapes", "https://a.example/%41%2F?x=%20", "a.example", "", ""},
		{"idn host", "https://bücher.example/", "bücher.example", "", ""},
		{"empty", "", "", "", "empty"},
		{"no scheme", "api.example.com/x", "", "", "no scheme"},
		{"scheme only", "http:", "", "", "//host"},
		{"opaque", "http:127.0.0.1/", "", "", "//host"},
		{"one slash", "http:/127.0.0.1/", "", "", "//host"},
		{"three slashes", "http:///127.0.0.1/", "", "", "no host"},
		{"javascript", "javascript:alert(1)", "", "", "scheme"},
		{"gopher", "gopher://a.example/", "", "", "scheme"},
		{"userinfo", "http://u:p@a.example/", "", "", "userinfo"},
		{"empty userinfo", "http://@a.example/", "", "", "userinfo"},
		{"backslash", `http://a.example\@b.example/`, "", "", "backslash"},
		{"backslash in path", `http://a.example/x\y`, "", "", "backslash"},
		{"tab", "http://a.ex\tample/", "", "", "blank"},
		{"newline", "http://a.example/\n", "", "", "blank"},
		{"nul", "http://a.example/\x00", "", "", "control"},
		{"del", "http://a.example/\x7f", "", "", "control"},
		{"nbsp", "http://a.example\u00a0/", "", "", "blank"},
		{"soft hyphen", "http://a.exa\u00adple/", "", "", "format"},
		{"zero width", "http://a.exa\u200bmple/", "", "", "format"},
		{"invalid utf-8", "http://a.example/\xff", "", "", "UTF-8"},
		{"bracket in host", "http://api.example.com[@attacker.test/", "", "", "userinfo"},
		{"bracket no at", "http://a.example[/", "", "", `"["`},
		{"ipv4 in brackets", "http://[127.0.0.1]/", "", "", "does not parse"},
		{"zone", "http://[fe80::1%25eth0]/", "", "", "zone"},
		{"percent host", "http://%61.example/", "", "", "percent"},
		{"underscore", "http://a_b.example/", "", "", "not allowed in a host"},
		{"empty port", "http://a.example:/", "", "", "port"},
		{"port leading zero", "http://a.example:080/", "", "", "leading zeros"},
		{"port too big", "http://a.example:65536/", "", "", "1-65535"},
		{"port zero", "http://a.example:0/", "", "", "1-65535"},
		{"port sign", "http://a.example:+80/", "", "", "decimal"},
		{"two colons", "http://a.example:80:80/", "", "", "decimal"},
		{"fragment at", "http://attacker.test#@api.example.com/", "attacker.test", "", ""},
		{"dot segment", "http://a.example/x/../y", "", "", "dot segment"},
		{"encoded dot segment", "http://a.example/x/%2E%2e/y", "", "", "dot segment"},
		{"single dot", "http://a.example/./y", "", "", "dot segment"},
		{"dots in a name are fine", "http://a.example/.well-known/x..y", "a.example", "", ""},
		{"quote in query", "http://a.example/?q='x'", "", "", "%27"},
		{"quote in path", "http://a.example/it's", "a.example", "", ""},
		{"double quote", `http://a.example/"x"`, "", "", "percent-encode"},
		{"angle bracket", "http://a.example/<x>", "", "", "percent-encode"},
		{"curly brace", "http://a.example/{x}", "", "", "percent-encode"},
		{"pipe", "http://a.example/a|b", "", "", "percent-encode"},
		{"caret", "http://a.example/a^b", "", "", "percent-encode"},
		{"backtick", "http://a.example/a`b", "", "", "percent-encode"},
		{"bad escape", "http://a.example/%zz", "", "", "%XX"},
		{"short escape", "http://a.example/%4", "", "", "%XX"},
		{"non-ascii path", "http://a.example/ü", "", "", "non-ASCII"},
		{"second hash", "http://a.example/#a#b", "", "", "second"},
		{"long", "http://a.example/" + strings.Repeat("a", MaxBytes), "", "", "longer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, host, port, reason := parse(tt.url)
			if tt.refused != "" {
				if reason == "" || !strings.Contains(reason, tt.refused) {
					t.Fatalf("parse(%q) = %v, %q; want a refusal with %q", tt.url, u, reason, tt.refused)
				}
				return
			}
			if reason != "" || host != tt.host || port != tt.port {
				t.Fatalf("parse(%q) = %q %q %q; want %q %q", tt.url, host, port, reason, tt.host, tt.port)
			}
		})
	}
}

// A reason quotes a piece of the URL only when it holds no run of 20 or
// more letters, digits, "_" and "-" (which may be a key: an MCP server's
// URL is shown with such runs hidden), and never the port: it names their
// length instead.
func TestParseQuotesNoLongRun(t *testing.T) {
	key := "123e4567-e89b-12d3-a456-426614174000"
	label := strings.Repeat("k3y", 22) // 66 characters: longer than a label may be
	for _, c := range []struct{ name, raw, secret, says string }{
		{"a key as the port", "https://api.example.com:" + key + "/x", key, `the port (the 36 characters after the host's ":") is not a decimal number`},
		{"a short port that is not a number", "https://api.example.com:x8/x", "", `the port (the 2 characters after the host's ":") is not a decimal number`},
		{"a long number as the port", "https://api.example.com:" + strings.Repeat("9", 40) + "/x", strings.Repeat("9", 20), "the port (40 digits) must be 1-65535"},
		{"a short port out of range", "https://api.example.com:65536/x", "", "the port 65536 must be 1-65535"},
		{"a key as the scheme", key + "://api.example.com/x", key, `the text before the first ":" (36 characters) is not a scheme toolgate allows: only http and https`},
		{"a short scheme", "ftp://api.example.com/x", "", `the scheme "ftp" is not allowed`},
		{"a label too long", "https://" + label + ".example.com/x", label, "the host (78 characters) is not valid: a label is longer than 63 octets (RFC 1035)"},
		{"a key label with a hyphen at its edge", "https://" + key + "-.example.com/x", key, "the host (49 characters) is not valid: a label starts or ends with a hyphen (RFC 1123)"},
		{"a short host", "http://8.8.2056/", "", `host "8.8.2056": an ipv4 address must be four decimal octets`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.raw)
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("Parse(%q): %v, want an error saying %q", c.raw, err, c.says)
			}
			if c.secret != "" && strings.Contains(err.Error(), c.secret) {
				t.Errorf("Parse(%q): %v quotes %q", c.raw, err, c.secret)
			}
		})
	}
}

func TestResolveLocation(t *testing.T) {
	base, _ := url.Parse("https://api.example.com/a/b?x=1")
	tests := []struct{ loc, want, refused string }{
		{"/c", "https://api.example.com/c", ""},
		{"c", "https://api.example.com/a/c", ""},
		{"?y=2", "https://api.example.com/a/b?y=2", ""},
		{"//other.example/z", "https://other.example/z", ""},
		{"http://other.example/", "http://other.example/", ""},
		{"HTTP://other.example/", "HTTP://other.example/", ""},
		{"", "", "no Location"},
		{`\\evil.test`, "", "backslash"},
		{`/\evil.test`, "", "backslash"},
		{" /c", "", "blank"},
		{"../c", "", "dot segment"},
		{"%2e%2e/c", "", "dot segment"},
		{"/ü", "", "non-ASCII"},
	}
	for _, tt := range tests {
		got, reason := ResolveLocation(base, tt.loc)
		if tt.refused != "" {
			if !strings.Contains(reason, tt.refused) {
				t.Errorf("ResolveLocation(%q) = %q, %q; want refusal %q", tt.loc, got, reason, tt.refused)
			}
			continue
		}
		if got != tt.want || reason != "" {
			t.Errorf("ResolveLocation(%q) = %q, %q; want %q", tt.loc, got, reason, tt.want)
		}
	}
}

// TestParse: the host comes back in hostlist's comparison form, the port
// as written, and Addr tells IP literals from names.
func TestParse(t *testing.T) {
	tests := []struct {
		raw, scheme, host, port, effective string
		literal                            bool
		refused                            string
	}{
		{"https://api.example.com/x", "https", "api.example.com", "", "443", false, ""},
		{"HTTP://API.Example.COM./x", "http", "api.example.com", "", "80", false, ""},
		{"http://api.example.com:8080", "http", "api.example.com", "8080", "8080", false, ""},
		{"https://bücher.example/", "https", "xn--bcher-kva.example", "", "443", false, ""},
		{"http://8.8.8.8/", "http", "8.8.8.8", "", "80", true, ""},
		{"https://[2001:DB8::1]:8443/", "https", "2001:db8::1", "8443", "8443", true, ""},
		{"https://BÜCHER.example/", "", "", "", "", false, "nfc"},
		{"http://127.1/", "", "", "", "", false, "four decimal octets"},
		{"http://a..example/", "", "", "", "", false, "host"},
		{"https://api.example.com/items ", "", "", "", "", false, "blank (U+0020) at byte 29"},
	}
	for _, tt := range tests {
		u, err := Parse(tt.raw)
		if tt.refused != "" {
			if err == nil || !strings.Contains(err.Error(), tt.refused) || strings.HasPrefix(err.Error(), "hostlist:") {
				t.Errorf("Parse(%q) = %+v, %v; want a refusal with %q", tt.raw, u, err, tt.refused)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.raw, err)
			continue
		}
		_, literal := u.Addr()
		if u.Scheme != tt.scheme || u.Host != tt.host || u.Port != tt.port || u.EffectivePort() != tt.effective || literal != tt.literal {
			t.Errorf("Parse(%q) = %s %s %q (%s, literal %v); want %s %s %q (%s, literal %v)", tt.raw,
				u.Scheme, u.Host, u.Port, u.EffectivePort(), literal, tt.scheme, tt.host, tt.port, tt.effective, tt.literal)
		}
	}
}

// TestListed: the reasons name the list, and say when only another port
// of the host, or a wildcard's registrable domain, is the problem.
func TestListed(t *testing.T) {
	l, err := hostlist.ParseList([]string{"api.example.com:8443", "*.amazonaws.com", "8.8.8.8"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ raw, reason string }{
		{"https://api.example.com:8443/", ""},
		{"https://ec2.amazonaws.com/", ""},
		{"http://8.8.8.8/", ""},
		{"https://api.example.com/", "port 443 of api.example.com is not on the list: an entry without a port"},
		{"https://bucket.s3.amazonaws.com/", "host bucket.s3.amazonaws.com is not on the list: *.amazonaws.com does not cover"},
		{"https://evil.example.net/", "host evil.example.net is not on the list"},
	} {
		u, err := Parse(tt.raw)
		if err != nil {
			t.Fatal(err)
		}
		err = Listed(l, "the list", u)
		if tt.reason == "" && err != nil || tt.reason != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.reason)) {
			t.Errorf("Listed(%q) = %v; want %q", tt.raw, err, tt.reason)
		}
	}
	u, _ := Parse("https://api.example.com/")
	if err := Listed(nil, "the list", u); err == nil || err.Error() != "no fetch is possible: the list is empty" {
		t.Errorf("empty list: %v", err)
	}
}

// TestCheckText: CheckText refuses a part exactly when it holds a
// character Parse refuses anywhere in a URL.
func TestCheckText(t *testing.T) {
	for _, s := range []string{" ", "\t", "x\n", "\r", "\u00a0", "\u200b", "\u0085", `\`, "\x7f", "\xff"} {
		if CheckText(s) == nil {
			t.Errorf("CheckText(%q) accepted", s)
		}
		if _, err := Parse("https://api.example.com/a" + s); err == nil {
			t.Errorf("Parse accepted a URL with %q", s)
		}
	}
	for _, s := range []string{"", "/items?q=1", "${input.path}", "$${", "'\"<>{}|^`"} {
		if err := CheckText(s); err != nil {
			t.Errorf("CheckText(%q): %v", s, err)
		}
	}
}
