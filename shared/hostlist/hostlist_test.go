package hostlist

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

func TestParseEntry(t *testing.T) {
	long63 := strings.Repeat("a", 63)
	name253 := strings.Repeat(long63+".", 3) + strings.Repeat("b", 61) // 3*(63+1) + 61 = 253
	tests := []struct {
		name, in, want string // want is the canonical String()
		wildcard       bool
		ip             bool
		port           int
	}{
		{name: "exact host", in: "api.example.com", want: "api.example.com"},
		{name: "upper case folded", in: "EXAMPLE.COM", want: "example.com"},
		{name: "mixed case", in: "Api.Example.Com", want: "api.example.com"},
		{name: "single label", in: "localhost", want: "localhost"},
		{name: "one trailing dot dropped", in: "example.com.", want: "example.com"},
		{name: "digit labels", in: "1.2.example.com", want: "1.2.example.com"},
		{name: "hex-looking inner label", in: "0x7f.example.com", want: "0x7f.example.com"},
		{name: "inner hyphen", in: "my-api.example.com", want: "my-api.example.com"},
		{name: "unicode to a-label", in: "bücher.example", want: "xn--bcher-kva.example"},
		{name: "unicode with ascii capitals", in: "Bücher.Example", want: "xn--bcher-kva.example"},
		{name: "a-label kept", in: "xn--bcher-kva.example", want: "xn--bcher-kva.example"},
		{name: "a-label upper case", in: "XN--BCHER-KVA.example", want: "xn--bcher-kva.example"},
		{name: "sharp s is not mapped", in: "straße.de", want: "xn--strae-oqa.de"},
		{name: "63-octet label", in: long63 + ".com", want: long63 + ".com"},
		{name: "253-octet name", in: name253, want: name253},
		{name: "port", in: "api.example.com:8443", want: "api.example.com:8443", port: 8443},
		{name: "port 1", in: "example.com:1", want: "example.com:1", port: 1},
		{name: "port 65535", in: "example.com:65535", want: "example.com:65535", port: 65535},
		{name: "port 443 kept", in: "example.com:443", want: "example.com:443", port: 443},
		{name: "wildcard", in: "*.example.com", want: "*.example.com", wildcard: true},
		{name: "wildcard upper case", in: "*.EXAMPLE.com", want: "*.example.com", wildcard: true},
		{name: "wildcard under a public suffix", in: "*.example.co.uk", want: "*.example.co.uk", wildcard: true},
		{name: "wildcard over a domain holding public suffixes", in: "*.amazonaws.com", want: "*.amazonaws.com", wildcard: true},
		{name: "wildcard under a private-section suffix", in: "*.bucket.s3.amazonaws.com", want: "*.bucket.s3.amazonaws.com", wildcard: true},
		{name: "wildcard under github.io", in: "*.octocat.github.io", want: "*.octocat.github.io", wildcard: true},
		{name: "wildcard on an exception rule", in: "*.www.ck", want: "*.www.ck", wildcard: true},
		{name: "wildcard on an unlisted top-level domain", in: "*.corp.internal", want: "*.corp.internal", wildcard: true},
		{name: "wildcard under an idn public suffix", in: "*.example.xn--p1ai", want: "*.example.xn--p1ai", wildcard: true},
		{name: "exact public suffix", in: "co.uk", want: "co.uk"},
		{name: "exact private-section suffix", in: "github.io", want: "github.io"},
		{name: "exact host that is a public suffix", in: "s3.amazonaws.com", want: "s3.amazonaws.com"},
		{name: "exact host under a public suffix", in: "bucket.s3.amazonaws.com", want: "bucket.s3.amazonaws.com"},
		{name: "wildcard with port", in: "*.example.com:8080", want: "*.example.com:8080", wildcard: true, port: 8080},
		{name: "wildcard unicode", in: "*.bücher.example", want: "*.xn--bcher-kva.example", wildcard: true},
		{name: "wildcard trailing dot", in: "*.example.com.", want: "*.example.com", wildcard: true},
		{name: "ipv4", in: "8.8.8.8", want: "8.8.8.8", ip: true},
		{name: "ipv4 port", in: "8.8.8.8:8080", want: "8.8.8.8:8080", ip: true, port: 8080},
		{name: "ipv4 zero", in: "0.0.0.0", want: "0.0.0.0", ip: true},
		{name: "ipv6", in: "2001:db8::1", want: "2001:db8::1", ip: true},
		{name: "ipv6 upper case long form", in: "2001:DB8:0:0:0:0:0:1", want: "2001:db8::1", ip: true},
		{name: "ipv6 brackets no port", in: "[2001:db8::1]", want: "2001:db8::1", ip: true},
		{name: "ipv6 brackets port", in: "[2001:db8::1]:8443", want: "[2001:db8::1]:8443", ip: true, port: 8443},
		{name: "ipv6 loopback", in: "::1", want: "::1", ip: true},
		{name: "ipv4-mapped ipv6 stays ipv6", in: "::ffff:8.8.8.8", want: "::ffff:8.8.8.8", ip: true},
		{name: "ipv4-mapped ipv6 port", in: "[::ffff:8.8.8.8]:80", want: "[::ffff:8.8.8.8]:80", ip: true, port: 80},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := ParseEntry(tt.in)
			if err != nil {
				t.Fatalf("ParseEntry(%q): %v", tt.in, err)
			}
			if got := e.String(); got != tt.want {
				t.Errorf("ParseEntry(%q).String() = %q, want %q", tt.in, got, tt.want)
			}
			if e.Wildcard != tt.wildcard || e.Addr.IsValid() != tt.ip || e.Port != tt.port {
				t.Errorf("ParseEntry(%q) = %+v, want wildcard=%v ip=%v port=%d", tt.in, e, tt.wildcard, tt.ip, tt.port)
			}
			if e.Addr.IsValid() && e.Host != e.Addr.String() {
				t.Errorf("ParseEntry(%q): Host %q is not Addr %q", tt.in, e.Host, e.Addr)
			}
		})
	}
}

func TestParseEntryFields(t *testing.T) {
	e, err := ParseEntry("*.Example.COM:8443")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Entry{Host: "example.com", Wildcard: true, Port: 8443}); e != want {
		t.Errorf("got %+v, want %+v", e, want)
	}
	e, err = ParseEntry("[2001:db8::1]:8443")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Entry{Host: "2001:db8::1", Addr: netip.MustParseAddr("2001:db8::1"), Port: 8443}); e != want {
		t.Errorf("got %+v, want %+v", e, want)
	}
}

func TestParseEntryInvalid(t *testing.T) {
	tests := []struct{ name, in, wantErr string }{
		{"empty", "", "empty"},
		{"two trailing dots", "example.com..", "empty label"},
		{"only a dot", ".", "empty label"},
		{"leading dot", ".example.com", "empty label"},
		{"inner empty label", "example..com", "empty label"},
		{"scheme", "https://example.com", "scheme"},
		{"path", "example.com/api", "path"},
		{"backslash", `example.com\api`, "path"},
		{"query", "example.com?x", "query"},
		{"fragment", "example.com#x", "fragment"},
		{"userinfo", "user@example.com", "userinfo"},
		{"userinfo with password", "user:pw@example.com", "userinfo"},
		{"percent-encoding", "ex%61mple.com", "percent"},
		{"zone id", "fe80::1%eth0", "zone"},
		{"zone id bracketed", "[fe80::1%25eth0]:443", "zone"},
		{"leading space", " example.com", "whitespace"},
		{"trailing newline", "example.com\n", "whitespace"},
		{"inner tab", "exa\tmple.com", "whitespace"},
		{"nul", "example.com\x00", "control"},
		{"no-break space", "example.com\u00a0", "whitespace"},
		{"invalid utf-8", "ex\xffample.com", "utf-8"},
		{"bare wildcard", "*", "whole first label"},
		{"wildcard in label", "a*.example.com", "whole first label"},
		{"wildcard glued", "*example.com", "whole first label"},
		{"wildcard last", "example.*", "whole first label"},
		{"wildcard inner", "api.*.example.com", "whole first label"},
		{"double wildcard", "*.*.example.com", "whole first label"},
		{"wildcard dot only", "*.", "empty label"},
		{"wildcard on tld", "*.com", "at least two labels"},
		{"wildcard on tld trailing dot", "*.com.", "at least two labels"},
		{"wildcard on two-letter tld", "*.uk", "at least two labels"},
		{"wildcard on idn tld", "*.xn--p1ai", "at least two labels"},
		{"wildcard on unlisted tld", "*.internal", "at least two labels"},
		{"wildcard on icann public suffix", "*.co.uk", "a wildcard over the public suffix co.uk would allow every site under it (Public Suffix List, ICANN section)"},
		{"wildcard on public suffix any case", "*.CO.UK.", "public suffix co.uk"},
		{"wildcard on public suffix with port", "*.co.uk:8443", "public suffix co.uk"},
		{"wildcard on private public suffix", "*.github.io", "a wildcard over the public suffix github.io would allow every site under it (Public Suffix List, private section)"},
		{"wildcard on s3", "*.s3.amazonaws.com", "public suffix s3.amazonaws.com"},
		{"wildcard on regional s3", "*.s3.us-east-1.amazonaws.com", "public suffix s3.us-east-1.amazonaws.com"},
		{"wildcard on blogspot", "*.blogspot.com", "public suffix blogspot.com"},
		{"wildcard on cloudfront", "*.cloudfront.net", "public suffix cloudfront.net"},
		{"wildcard on herokuapp", "*.herokuapp.com", "public suffix herokuapp.com"},
		{"wildcard on idn public suffix a-label", "*.xn--55qx5d.cn", "public suffix xn--55qx5d.cn"},
		{"wildcard on idn public suffix u-label", "*.公司.cn", "public suffix xn--55qx5d.cn"},
		{"wildcard over a private wildcard rule", "*.compute.amazonaws.com", `a wildcard over compute.amazonaws.com would allow every site under it: the names directly under it are public suffixes (rule "*.compute.amazonaws.com", Public Suffix List, private section)`},
		{"wildcard over an icann wildcard rule", "*.kawasaki.jp", `public suffixes (rule "*.kawasaki.jp", Public Suffix List, ICANN section)`},
		{"wildcard on ipv4", "*.8.8.8", "ip address"},
		{"wildcard on full ipv4", "*.1.2.3.4", "ip address"},
		{"wildcard on ipv6", "*.2001:db8::1", "ip address"},
		{"wildcard too long to match", "*." + strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("b", 61), "fits in 253"},
		{"hex ipv4", "0x7f.1", "ipv4"},
		{"integer ipv4", "2130706433", "ipv4"},
		{"octal ipv4", "0177.0.0.1", "ipv4"},
		{"leading zero ipv4", "8.8.8.08", "ipv4"},
		{"three-part ipv4", "127.0.1", "ipv4"},
		{"five-part ipv4", "1.2.3.4.5", "ipv4"},
		{"octet out of range", "256.1.1.1", "ipv4"},
		{"hex last label", "example.0x1f", "ipv4"},
		{"numeric tld", "example.123", "ipv4"},
		{"ipv4 trailing dot", "8.8.8.8.", "end in a dot"},
		{"bracketed ipv4", "[8.8.8.8]", "ipv6 addresses only"},
		{"bracketed name", "[example.com]:443", "ipv6"},
		{"unclosed bracket", "[2001:db8::1", `without "]"`},
		{"junk after bracket", "[2001:db8::1]x", `":port"`},
		{"ipv6 port without brackets is an address", "2001:db8:0:0:0:0:0:1:8443", "ipv6"},
		{"two ports", "example.com:80:90", "ipv6"},
		{"empty port", "example.com:", "empty port"},
		{"empty bracket port", "[::1]:", "empty port"},
		{"port zero", "example.com:0", "out of range"},
		{"port too big", "example.com:65536", "out of range"},
		{"port huge", "example.com:99999999999999999999", "out of range"},
		{"port plus", "example.com:+443", "decimal"},
		{"port minus", "example.com:-1", "decimal"},
		{"port space", "example.com: 443", "whitespace"},
		{"port leading zero", "example.com:0443", "leading zero"},
		{"port hex", "example.com:0x50", "decimal"},
		{"empty host with port", ":443", "empty label"},
		{"underscore", "my_host.example.com", "not allowed in a host name"},
		{"leading hyphen", "-api.example.com", "hyphen"},
		{"trailing hyphen", "api-.example.com", "hyphen"},
		{"reserved ldh label", "ab--cd.example.com", "invalid label"},
		{"bogus a-label", "xn--zz.example.com", "invalid label"},
		{"ascii-only a-label", "xn--example-.com", "label"},
		{"label too long", strings.Repeat("a", 64) + ".com", "longer than 63"},
		{"name too long", strings.Repeat(strings.Repeat("a", 63)+".", 4) + "com", "longer than 253"},
		{"unicode upper case", "BÜCHER.example", "nfc"},
		{"full-width letters", "ｅｘａｍｐｌｅ.com", "nfc"},
		{"ideographic full stop", "example。com", "nfc"},
		{"non-nfc", "bu\u0308cher.example", "nfc"},
		{"zero-width space", "exa\u200bmple.com", "nfc"},
		{"kelvin sign", "\u212aey.com", "nfc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := ParseEntry(tt.in)
			if err == nil {
				t.Fatalf("ParseEntry(%q) = %v, want error", tt.in, e)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.wantErr) {
				t.Errorf("ParseEntry(%q) error %q does not mention %q", tt.in, msg, tt.wantErr)
			}
			if want := "hostlist: entry "; !strings.HasPrefix(msg, want) || strings.HasSuffix(msg, ".") {
				t.Errorf("ParseEntry(%q) error %q: want prefix %q and no full stop", tt.in, msg, want)
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	for _, s := range []string{
		"api.example.com", "EXAMPLE.COM.", "*.example.com", "*.Bücher.example:8443",
		"8.8.8.8", "8.8.8.8:8080", "2001:db8::1", "[2001:DB8::1]", "[2001:db8::1]:8443",
		"::ffff:8.8.8.8", "[::ffff:8.8.8.8]:443", "xn--bcher-kva.example:1",
	} {
		e, err := ParseEntry(s)
		if err != nil {
			t.Fatalf("ParseEntry(%q): %v", s, err)
		}
		back, err := ParseEntry(e.String())
		if err != nil || back != e {
			t.Errorf("ParseEntry(%q).String() = %q re-parses to %+v, %v; want %+v", s, e.String(), back, err, e)
		}
	}
}

func TestParseList(t *testing.T) {
	l, err := ParseList([]string{"b.example.com", "*.a.example", "B.EXAMPLE.COM", "8.8.8.8", "b.example.com.", "[::1]:8443"})
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 6 {
		t.Errorf("len = %d, want 6 (duplicates kept in the list)", len(l))
	}
	want := []string{"*.a.example", "8.8.8.8", "[::1]:8443", "b.example.com"}
	if got := l.Strings(); !slices.Equal(got, want) {
		t.Errorf("Strings() = %q, want %q", got, want)
	}

	l, err = ParseList([]string{"ok.example", "also.ok", "*.com", "a b"})
	if err == nil || l != nil {
		t.Fatalf("ParseList with bad entries = %v, %v; want nil, error", l, err)
	}
	if want := `hostlist: entry 2 "*.com": a wildcard needs at least two labels`; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want prefix %q", err, want)
	}

	if l, err := ParseList(nil); err != nil || len(l) != 0 {
		t.Errorf("ParseList(nil) = %v, %v", l, err)
	}
}

func TestNormalizeHost(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"lower case", "api.example.com", "api.example.com"},
		{"upper case", "API.Example.COM", "api.example.com"},
		{"one trailing dot", "example.com.", "example.com"},
		{"unicode", "bücher.example", "xn--bcher-kva.example"},
		{"a-label", "XN--BCHER-KVA.example", "xn--bcher-kva.example"},
		{"ipv4", "8.8.8.8", "8.8.8.8"},
		{"ipv6", "2001:DB8:0::1", "2001:db8::1"},
		{"ipv4-mapped", "::FFFF:8.8.8.8", "::ffff:8.8.8.8"},
		{"single label", "localhost", "localhost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeHost(tt.in)
			if err != nil || got != tt.want {
				t.Errorf("NormalizeHost(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}

	bad := []struct{ name, in string }{
		{"empty", ""},
		{"two trailing dots", "example.com.."},
		{"dot", "."},
		{"hex ipv4", "0x7f.1"},
		{"hex ipv4 full", "0x7f.0x0.0x0.0x1"},
		{"integer ipv4", "2130706433"},
		{"octal ipv4", "0177.0.0.1"},
		{"short ipv4", "127.1"},
		{"ipv4 trailing dot", "127.0.0.1."},
		{"zone id", "fe80::1%eth0"},
		{"brackets", "[::1]"},
		{"port", "example.com:443"},
		{"wildcard", "*.example.com"},
		{"underscore", "a_b.example.com"},
		{"space", "example.com "},
		{"percent", "ex%61mple.com"},
		{"userinfo", "u@example.com"},
		{"full-width", "ｅｘａｍｐｌｅ.com"},
		{"ideographic full stop", "example。com"},
		{"capital sharp s", "\u1e9e.example"},
		{"bogus a-label", "xn--zz.example"},
		{"label too long", strings.Repeat("a", 64) + ".com"},
	}
	for _, tt := range bad {
		t.Run("invalid/"+tt.name, func(t *testing.T) {
			got, err := NormalizeHost(tt.in)
			if err == nil {
				t.Fatalf("NormalizeHost(%q) = %q, want error", tt.in, got)
			}
			if want := "hostlist: host "; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %q, want prefix %q", err, want)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		name               string
		list               []string
		scheme, host, port string
		want               string // canonical entry matched, "" for refused
	}{
		// Real-world cases.
		{"wildcard subdomain", []string{"*.example.com"}, "https", "api.example.com", "", "*.example.com"},
		{"wildcard never apex", []string{"*.example.com"}, "https", "example.com", "", ""},
		{"upper-case entry", []string{"EXAMPLE.COM"}, "https", "example.com", "", "example.com"},
		{"no suffix match", []string{"example.com"}, "https", "attackerexample.com", "", ""},
		{"two trailing dots", []string{"example.com"}, "https", "example.com..", "", ""},
		{"look-alike a-label", []string{"example.com"}, "https", "xn--exmple-4nf.com", "", ""},
		{"ipv4 default http", []string{"8.8.8.8"}, "http", "8.8.8.8", "", "8.8.8.8"},
		{"ipv4 other port", []string{"8.8.8.8"}, "http", "8.8.8.8", "8080", ""},
		{"entry port", []string{"api.example.com:8443"}, "https", "api.example.com", "8443", "api.example.com:8443"},
		{"entry port refuses 443", []string{"api.example.com:8443"}, "https", "api.example.com", "443", ""},
		{"entry port refuses default", []string{"api.example.com:8443"}, "https", "api.example.com", "", ""},
		{"ipv6 with port", []string{"[2001:db8::1]:8443"}, "https", "2001:db8::1", "8443", "[2001:db8::1]:8443"},
		{"hex ipv4 host", []string{"127.0.0.1"}, "http", "0x7f.1", "", ""},
		{"integer ipv4 host", []string{"127.0.0.1"}, "http", "2130706433", "", ""},
		{"octal ipv4 host", []string{"127.0.0.1"}, "http", "0177.0.0.1", "", ""},
		{"one trailing dot", []string{"example.com"}, "https", "example.com.", "", "example.com"},
		{"unicode entry", []string{"bücher.example"}, "https", "xn--bcher-kva.example", "", "xn--bcher-kva.example"},

		// Wildcards.
		{"wildcard deep", []string{"*.example.com"}, "https", "a.b.example.com", "", "*.example.com"},
		{"wildcard apex trailing dot", []string{"*.example.com"}, "https", "example.com.", "", ""},
		{"wildcard suffix glued", []string{"*.example.com"}, "https", "aexample.com", "", ""},
		{"wildcard other domain", []string{"*.example.com"}, "https", "example.com.evil.net", "", ""},
		{"wildcard upper-case host", []string{"*.example.com"}, "https", "API.EXAMPLE.COM", "", "*.example.com"},
		{"wildcard unicode host", []string{"*.example.org"}, "https", "bücher.example.org", "", "*.example.org"},
		{"exact entry no subdomain", []string{"example.com"}, "https", "api.example.com", "", ""},

		// Wildcards stop at registrable domains (Public Suffix List).
		{"s3 bucket not under amazonaws.com", []string{"*.amazonaws.com"}, "https", "bucket.s3.amazonaws.com", "", ""},
		{"regional s3 bucket not under amazonaws.com", []string{"*.amazonaws.com"}, "https", "bucket.s3.us-east-1.amazonaws.com", "", ""},
		{"s3 path-style endpoint is a public suffix", []string{"*.amazonaws.com"}, "https", "s3.amazonaws.com", "", ""},
		{"deep name under s3", []string{"*.amazonaws.com"}, "https", "a.bucket.s3.amazonaws.com", "", ""},
		{"compute name not under amazonaws.com", []string{"*.amazonaws.com"}, "https", "ec2-1-2-3-4.compute-1.amazonaws.com", "", ""},
		{"ec2 endpoint in amazonaws.com", []string{"*.amazonaws.com"}, "https", "ec2.amazonaws.com", "", "*.amazonaws.com"},
		{"global endpoint in amazonaws.com", []string{"*.amazonaws.com"}, "https", "sts.amazonaws.com", "", "*.amazonaws.com"},
		{"regional endpoint under the suffix us-east-1.amazonaws.com", []string{"*.amazonaws.com"}, "https", "sts.us-east-1.amazonaws.com", "", ""},
		{"regional endpoint exact", []string{"sts.us-east-1.amazonaws.com"}, "https", "sts.us-east-1.amazonaws.com", "", "sts.us-east-1.amazonaws.com"},
		{"wildcard under one bucket", []string{"*.bucket.s3.amazonaws.com"}, "https", "a.bucket.s3.amazonaws.com", "", "*.bucket.s3.amazonaws.com"},
		{"wildcard under one pages site", []string{"*.octocat.github.io"}, "https", "a.b.octocat.github.io", "", "*.octocat.github.io"},
		{"wildcard under a public suffix", []string{"*.example.co.uk"}, "https", "a.b.example.co.uk", "", "*.example.co.uk"},
		{"wildcard on an exception rule", []string{"*.www.ck"}, "https", "a.www.ck", "", "*.www.ck"},
		{"wildcard on an unlisted top-level domain", []string{"*.corp.internal"}, "https", "a.b.corp.internal", "", "*.corp.internal"},
		{"wildcard under an idn suffix", []string{"*.example.xn--p1ai"}, "https", "a.example.рф", "", "*.example.xn--p1ai"},
		{"wildcard refusal with port", []string{"*.amazonaws.com:8443"}, "https", "bucket.s3.amazonaws.com", "8443", ""},
		{"exact public suffix host", []string{"co.uk"}, "https", "co.uk", "", "co.uk"},
		{"exact public suffix no subdomain", []string{"co.uk"}, "https", "example.co.uk", "", ""},
		{"exact s3 endpoint", []string{"s3.amazonaws.com"}, "https", "s3.amazonaws.com", "", "s3.amazonaws.com"},
		{"exact bucket", []string{"bucket.s3.amazonaws.com"}, "https", "bucket.s3.amazonaws.com", "", "bucket.s3.amazonaws.com"},
		{"exact entry after refused wildcard", []string{"*.amazonaws.com", "bucket.s3.amazonaws.com"}, "https", "bucket.s3.amazonaws.com", "", "bucket.s3.amazonaws.com"},

		// Ports and schemes.
		{"default https", []string{"example.com"}, "https", "example.com", "", "example.com"},
		{"explicit 443 https", []string{"example.com"}, "https", "example.com", "443", "example.com"},
		{"explicit 80 http", []string{"example.com"}, "http", "example.com", "80", "example.com"},
		{"443 on http", []string{"example.com"}, "http", "example.com", "443", ""},
		{"80 on https", []string{"example.com"}, "https", "example.com", "80", ""},
		{"entry 443 https default", []string{"example.com:443"}, "https", "example.com", "", "example.com:443"},
		{"entry 443 http default", []string{"example.com:443"}, "http", "example.com", "", ""},
		{"entry port either scheme", []string{"example.com:8080"}, "http", "example.com", "8080", "example.com:8080"},
		{"port leading zero", []string{"example.com:8443"}, "https", "example.com", "08443", ""},
		{"port not a number", []string{"example.com"}, "https", "example.com", "https", ""},
		{"port zero", []string{"example.com"}, "https", "example.com", "0", ""},
		{"unknown scheme", []string{"example.com"}, "ftp", "example.com", "", ""},
		{"upper-case scheme", []string{"example.com"}, "HTTPS", "example.com", "", ""},
		{"empty scheme", []string{"example.com"}, "", "example.com", "", ""},

		// IP literals.
		{"ipv6 default", []string{"2001:db8::1"}, "https", "2001:DB8:0:0::1", "", "2001:db8::1"},
		{"ipv6 entry port refuses default", []string{"[2001:db8::1]:8443"}, "https", "2001:db8::1", "", ""},
		{"mapped host not ipv4 entry", []string{"8.8.8.8"}, "http", "::ffff:8.8.8.8", "", ""},
		{"ipv4 host not mapped entry", []string{"::ffff:8.8.8.8"}, "http", "8.8.8.8", "", ""},
		{"mapped matches mapped", []string{"::ffff:8.8.8.8"}, "http", "::ffff:8.8.8.8", "", "::ffff:8.8.8.8"},
		{"zone id host", []string{"fe80::1"}, "http", "fe80::1%eth0", "", ""},
		{"ipv4 trailing dot host", []string{"8.8.8.8"}, "http", "8.8.8.8.", "", ""},
		{"short ipv4 host", []string{"127.0.0.1"}, "http", "127.1", "", ""},

		// Hosts that are not valid.
		{"empty host", []string{"example.com"}, "https", "", "", ""},
		{"underscore host", []string{"*.example.com"}, "https", "a_b.example.com", "", ""},
		{"full-width host", []string{"example.com"}, "https", "ｅｘａｍｐｌｅ.com", "", ""},
		{"ideographic dot host", []string{"example.com"}, "https", "example。com", "", ""},

		// Order.
		{"first match wins", []string{"*.example.com", "api.example.com"}, "https", "api.example.com", "", "*.example.com"},
		{"later entry", []string{"other.example", "api.example.com"}, "https", "api.example.com", "", "api.example.com"},
		{"empty list", nil, "https", "example.com", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ParseList(tt.list)
			if err != nil {
				t.Fatal(err)
			}
			e, ok := l.Match(tt.scheme, tt.host, tt.port)
			got := ""
			if ok {
				got = e.String()
			} else if e != (Entry{}) {
				t.Errorf("no match but entry %+v returned", e)
			}
			if got != tt.want {
				t.Errorf("%q.Match(%q, %q, %q) = %q, %v; want %q", tt.list, tt.scheme, tt.host, tt.port, got, ok, tt.want)
			}
		})
	}
}

// TestAcceptedNamesAreLookupFixedPoints checks, for every rune in three
// positions, that a host NormalizeHost accepts is the name net/http dials
// after its own idna.Lookup mapping (up to ASCII case).
func TestAcceptedNamesAreLookupFixedPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("scans all of Unicode")
	}
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		for _, host := range []string{"a" + string(r) + "b.example", string(r) + ".example", "x." + string(r)} {
			h, err := NormalizeHost(host)
			if err != nil {
				continue
			}
			if d, err := idna.Lookup.ToASCII(host); err != nil || strings.ToLower(d) != h {
				t.Errorf("NormalizeHost(%q) = %q, but idna.Lookup gives %q, %v", host, h, d, err)
			}
		}
	}
}

// TestWildcardRefusal checks the reason given for a host that a wildcard
// covers by name but not by registrable domain (Public Suffix List).
func TestWildcardRefusal(t *testing.T) {
	tests := []struct {
		name string
		list []string
		host string
		want string // "" when no wildcard is refused that way
	}{
		{"s3 bucket", []string{"*.amazonaws.com"}, "bucket.s3.amazonaws.com",
			"*.amazonaws.com does not cover bucket.s3.amazonaws.com: its registrable domain is bucket.s3.amazonaws.com, not amazonaws.com (s3.amazonaws.com is a public suffix, Public Suffix List, private section)"},
		{"host is a public suffix", []string{"*.amazonaws.com"}, "S3.AMAZONAWS.COM.",
			"*.amazonaws.com does not cover s3.amazonaws.com: s3.amazonaws.com is itself a public suffix (Public Suffix List, private section), not a host of the registrable domain amazonaws.com"},
		{"suffix-looking labels inside a domain", []string{"*.kawasaki.jp.example.com"}, "a.kawasaki.jp.example.com", ""},
		{"entry with port named", []string{"*.amazonaws.com:8443"}, "bucket.s3.amazonaws.com",
			"*.amazonaws.com:8443 does not cover bucket.s3.amazonaws.com: its registrable domain is bucket.s3.amazonaws.com, not amazonaws.com (s3.amazonaws.com is a public suffix, Public Suffix List, private section)"},
		{"covered host", []string{"*.amazonaws.com"}, "ec2.amazonaws.com", ""},
		{"not under the wildcard", []string{"*.amazonaws.com"}, "example.com", ""},
		{"apex", []string{"*.amazonaws.com"}, "amazonaws.com", ""},
		{"exact entries only", []string{"bucket.s3.amazonaws.com"}, "other.s3.amazonaws.com", ""},
		{"ip host", []string{"*.amazonaws.com"}, "8.8.8.8", ""},
		{"invalid host", []string{"*.amazonaws.com"}, "a_b.s3.amazonaws.com", ""},
		{"empty list", nil, "bucket.s3.amazonaws.com", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ParseList(tt.list)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.WildcardRefusal(tt.host); got != tt.want {
				t.Errorf("%q.WildcardRefusal(%q) = %q, want %q", tt.list, tt.host, got, tt.want)
			}
			if _, ok := l.Match("https", tt.host, ""); ok && tt.want != "" {
				t.Errorf("%q matches %q, which WildcardRefusal refuses", tt.list, tt.host)
			}
		})
	}
}
