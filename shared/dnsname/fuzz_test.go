package dnsname

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/net/idna"
)

var fuzzSeeds = []string{
	"", ".", "example.com", "API.Example.COM", "example.com.", "example..com", "localhost",
	"bücher.example", "Bücher.EXAMPLE", "BÜCHER.example", "xn--bcher-kva.example", "XN--BCHER-KVA.example",
	"xn--zz.example", "xn--a.example", "xn--.example", "ab--cd.example", "xn--abc-.example",
	"παράδειγμα.δοκιμή", "straße.de", "\u1e9e.example", "ｅｘａｍｐｌｅ.com", "example。com",
	"bu\u0308cher.example", "exa\u200bmple.com", "\u212aey.com", "my_host.example.com", "-a.example",
	"a-.example", "a\x00.example", "b\xfccher.example", "0x7f.1", "8.8.8.8", "example.123",
	label63 + ".com", label63 + "a.com", name253, "a" + name253, strings.Repeat("ü.", 50) + "example",
}

// FuzzParse checks, under both kinds of profile the callers use, that Parse
// never panics; that its error is an *Error with a known rule, a lower-case
// message without a full stop, and no result; that what it accepts is a
// lower-case LDH name within the RFC 1035 lengths, which Parse returns
// unchanged and which the UTS #46 lookup mapping (what a resolver is asked)
// gives too; and that both profiles accept the same names.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		var got [2]string
		for i, p := range profiles {
			a, err := Parse(p.profile, name)
			got[i] = a
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || a != "" || e.Rule < EmptyLabel || e.Rule > NoRoundTrip {
					t.Fatalf("%s: Parse(%q) = %q, %T %v", p.name, name, a, err, err)
				}
				if msg := err.Error(); msg[0] < 'a' || msg[0] > 'z' || strings.HasSuffix(msg, ".") {
					t.Fatalf("%s: Parse(%q) message %q", p.name, name, msg)
				}
				continue
			}
			checkName(t, a)
			if again, err := Parse(p.profile, a); err != nil || again != a {
				t.Fatalf("%s: Parse(%q) = %q, but Parse(%q) = %q, %v", p.name, name, a, a, again, err)
			}
			if looked, err := idna.Lookup.ToASCII(name); err != nil || strings.ToLower(looked) != a {
				t.Fatalf("%s: Parse(%q) = %q, but idna.Lookup gives %q, %v", p.name, name, a, looked, err)
			}
			if l := LowerASCII(name); isASCII(l) && l != a {
				t.Fatalf("%s: Parse(%q) = %q changed more than ASCII case", p.name, name, a)
			}
		}
		if got[0] != got[1] {
			t.Fatalf("Parse(%q): %s gives %q, %s gives %q", name, profiles[0].name, got[0], profiles[1].name, got[1])
		}
	})
}

// checkName fails t unless a is a name Parse may return.
func checkName(t *testing.T, a string) {
	t.Helper()
	if a == "" || len(a) > MaxName {
		t.Fatalf("accepted %q of %d octets", a, len(a))
	}
	for label := range strings.SplitSeq(a, ".") {
		if label == "" || len(label) > MaxLabel || label[0] == '-' || label[len(label)-1] == '-' {
			t.Fatalf("accepted %q with label %q", a, label)
		}
		if strings.Trim(label, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			t.Fatalf("accepted %q with label %q", a, label)
		}
	}
}
