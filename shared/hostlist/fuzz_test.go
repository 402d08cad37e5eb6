package hostlist

import (
	"strings"
	"testing"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

var entrySeeds = []string{
	"", "api.example.com", "EXAMPLE.COM.", "example.com..", "*.example.com", "*.com", "*",
	"a*.example.com", "*.example.com:8443", "bücher.example", "*.Bücher.example",
	"xn--bcher-kva.example", "xn--zz.example", "8.8.8.8", "8.8.8.8:8080", "0x7f.1",
	"2130706433", "0177.0.0.1", "2001:db8::1", "[2001:db8::1]", "[2001:db8::1]:8443",
	"::ffff:8.8.8.8", "fe80::1%eth0", "https://x", "x/y", "u@x", "example.com:+1",
	"example.com:65536", "[8.8.8.8]", "ｅｘａｍｐｌｅ.com", "example。com", "straße.de",
	"*.co.uk", "*.github.io", "*.amazonaws.com", "*.s3.amazonaws.com", "*.compute.amazonaws.com",
	"*.kawasaki.jp", "*.www.ck", "*.xn--55qx5d.cn", "*.公司.cn", "*.example.co.uk", "co.uk",
	"bucket.s3.amazonaws.com",
}

func FuzzParseEntry(f *testing.F) {
	for _, s := range entrySeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEntry(s)
		if err != nil {
			if e != (Entry{}) {
				t.Fatalf("ParseEntry(%q) returned %+v with error", s, e)
			}
			return
		}
		c := e.String()
		back, err := ParseEntry(c)
		if err != nil {
			t.Fatalf("ParseEntry(%q).String() = %q does not re-parse: %v", s, c, err)
		}
		if back != e {
			t.Fatalf("ParseEntry(%q) = %+v, but its String %q re-parses to %+v", s, e, c, back)
		}
		if back.String() != c {
			t.Fatalf("String not stable: %q then %q", c, back.String())
		}
		// The entry's host is already in comparison form.
		if !e.Wildcard {
			if h, err := NormalizeHost(e.Host); err != nil || h != e.Host {
				t.Fatalf("NormalizeHost(%q) = %q, %v; want it unchanged", e.Host, h, err)
			}
		}
		if e.Port < 0 || e.Port > 65535 || e.Host != strings.ToLower(e.Host) {
			t.Fatalf("ParseEntry(%q) = %+v", s, e)
		}
		// A wildcard's base is never a public suffix, nor a name whose
		// children all are.
		if e.Wildcard {
			if _, err := publicsuffix.EffectiveTLDPlusOne(e.Host); err != nil {
				t.Fatalf("ParseEntry(%q) = %+v, a wildcard over a public suffix", s, e)
			}
			if p := probeLabel + "." + e.Host; publicSuffix(p) == p {
				t.Fatalf("ParseEntry(%q) = %+v, a wildcard over a wildcard rule of the list", s, e)
			}
		}
	})
}

func FuzzMatch(f *testing.F) {
	for _, s := range entrySeeds {
		f.Add(s, "https", s, "")
		f.Add(s, "http", "a."+s, "8080")
	}
	f.Add("*.amazonaws.com", "https", "bucket.s3.amazonaws.com", "")
	f.Add("*.amazonaws.com", "https", "s3.amazonaws.com", "")
	f.Add("*.amazonaws.com", "https", "ec2.amazonaws.com", "")
	f.Add("*.example.co.uk", "https", "a.b.example.co.uk", "")
	f.Fuzz(func(t *testing.T, entry, scheme, host, port string) {
		l, err := ParseList([]string{entry})
		if err != nil {
			l = nil
		}
		e, ok := l.Match(scheme, host, port)
		if ok != (len(l) == 1 && e == l[0]) {
			t.Fatalf("Match(%q, %q, %q) on %q = %+v, %v", scheme, host, port, entry, e, ok)
		}
		h, err := NormalizeHost(host)
		if err != nil {
			if ok {
				t.Fatalf("host %q matched %q but does not normalise: %v", host, entry, err)
			}
			return
		}
		if ok && e.Wildcard && !strings.HasSuffix(h, "."+e.Host) {
			t.Fatalf("host %q matched wildcard %q", h, e)
		}
		// A wildcard covers only hosts of its base's registrable domain,
		// and WildcardRefusal explains exactly the other subdomains.
		if e.Wildcard {
			got, err1 := publicsuffix.EffectiveTLDPlusOne(h)
			want, err2 := publicsuffix.EffectiveTLDPlusOne(e.Host)
			if ok && (err1 != nil || err2 != nil || got != want) {
				t.Fatalf("host %q (registrable domain %q, %v) matched wildcard %q (%q, %v)", h, got, err1, e, want, err2)
			}
		}
		why := l.WildcardRefusal(host)
		if ok && why != "" {
			t.Fatalf("host %q matched %q, but WildcardRefusal says %q", host, entry, why)
		}
		if len(l) == 1 && l[0].Wildcard && strings.HasSuffix(h, "."+l[0].Host) {
			got, err1 := publicsuffix.EffectiveTLDPlusOne(h)
			want, _ := publicsuffix.EffectiveTLDPlusOne(l[0].Host)
			if same := err1 == nil && got == want; same == (why != "") {
				t.Fatalf("host %q under %q: registrable domains %q and %q, but WildcardRefusal says %q", h, entry, got, want, why)
			}
		}
		if ok && !e.Wildcard && h != e.Host {
			t.Fatalf("host %q matched %q", h, e)
		}
		// Whatever we accept is what net/http dials after its own
		// idna.Lookup mapping, up to ASCII case and one trailing dot.
		name := strings.TrimSuffix(host, ".")
		if !strings.Contains(name, ":") {
			dialled, err := idna.Lookup.ToASCII(name)
			if err != nil || strings.ToLower(dialled) != h {
				t.Fatalf("NormalizeHost(%q) = %q but idna.Lookup gives %q, %v", host, h, dialled, err)
			}
		}
	})
}

func publicSuffix(name string) string {
	ps, _ := publicsuffix.PublicSuffix(name)
	return ps
}
