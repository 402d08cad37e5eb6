package fetchurl

import (
	"net/url"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/hostlist"
)

// FuzzParse: whatever Parse accepts, net/url reads the same way, holds no
// character CheckText refuses, and has a host already in hostlist's form;
// Parse never accepts what CheckText refuses; and its reason quotes no run
// of more than maxQuotedRun letters, digits, "_" and "-" of the URL.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"https://api.example.com/items", "https://api.example.com/items ", " https://api.example.com/",
		"https://user@api.example.com/", `https://api.example.com\@evil.example.net/`, "HTTPS://API.Example.COM./x#top",
		"http://[2001:db8::1]:8443/", "http://[fe80::1%25eth0]/", "http://8.8.2056/", "https://bücher.example/a?b=c",
		"https://api.example.com/a/../b", "https:api.example.com", "ftp://api.example.com/", "https://api.example.com:08443/",
		"https://api.example.com:123e4567-e89b-12d3-a456-426614174000/", "123e4567-e89b-12d3-a456-426614174000://api.example.com/",
		"https://" + strings.Repeat("k3y", 22) + ".example.com/", "https://-123e4567-e89b-12d3-a456-426614174000.example.com/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := Parse(raw)
		if CheckText(raw) != nil && err == nil {
			t.Fatalf("Parse(%q) accepted what CheckText refuses", raw)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("Parse(%q): an empty reason", raw)
			}
			for _, run := range longRuns(raw) {
				if strings.Contains(err.Error(), run) {
					t.Fatalf("Parse(%q): %q quotes %q", raw, err, run)
				}
			}
			return
		}
		g, gerr := url.Parse(raw)
		if gerr != nil || !strings.EqualFold(g.Scheme, u.Scheme) || g.User != nil || g.Port() != u.Port {
			t.Fatalf("Parse(%q) = %+v, net/url reads %#v, %v", raw, u, g, gerr)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			t.Fatalf("Parse(%q): scheme %q", raw, u.Scheme)
		}
		if h, err := hostlist.NormalizeHost(u.Host); err != nil || h != u.Host {
			t.Fatalf("Parse(%q): host %q is not in normal form (%q, %v)", raw, u.Host, h, err)
		}
		if h, err := hostlist.NormalizeHost(g.Hostname()); err != nil || h != u.Host {
			t.Fatalf("Parse(%q): host %q, net/url's %q normalises to %q, %v", raw, u.Host, g.Hostname(), h, err)
		}
	})
}

// longRuns are the runs of s of more than maxQuotedRun letters, digits,
// "_" and "-".
func longRuns(s string) []string {
	var out []string
	isRun := func(r rune) bool {
		return 'A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '_' || r == '-'
	}
	for _, r := range strings.FieldsFunc(s, func(r rune) bool { return !isRun(r) }) {
		if len(r) > maxQuotedRun {
			out = append(out, r)
		}
	}
	return out
}
