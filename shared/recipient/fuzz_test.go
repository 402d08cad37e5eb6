package recipient

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

var fuzzSeeds = [][2]string{ // entry, recipient
	{"@example.com", "alice@example.com"},
	{"alice@example.com", "ALICE@EXAMPLE.COM"},
	{"@example.com", "bob@evilexample.com"},
	{"@example.com", "alice@example.com, attacker@evil.test"},
	{"@example.com", "\"Joe Q. Public\" <john.q.public@example.com>"},
	{"@example.com", "alice@example.com\r\nBcc: attacker@evil.test"},
	{"@example.com", "alice@example.com."},
	{"@example.com", "\u200balice@example.com"},
	{"@bücher.example", "a@xn--bcher-kva.example"},
	{"@xn--bcher-kva.example", "a@BÜCHER.example"},
	{"@example.com", "a@ｅｘａｍｐｌｅ.com"},
	{"@example.com", "a@example。com"},
	{"@παράδειγμα.δοκιμή", "test@xn--hxajbheg2az3al.xn--jxalpdlp"},
	{"@xn--strae-oqa.de", "a@straße.de"},
	{"admin@example.com", "admın@example.com"},
	{"@a.test", "x@a.test"},
	{"@[127.0.0.1]", "me@[127.0.0.1]"},
	{"@example.com", "=?utf-8?q?a=40evil.test?=@example.com"},
	{"@example.com", "a@xn--zz.example"},
	{"@example.com", strings.Repeat("a", 64) + "@example.com"},
}

// FuzzDecide checks that Decide never panics, that its verdict agrees with
// Parse, and that anything it allows is a bare addr-spec whose domain is a
// lower-case A-label that an entry of the list names.
func FuzzDecide(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, entry, s string) {
		l, err := ParseList([]string{entry})
		if err != nil {
			l = List{}
		}
		d := l.Decide(s)
		a, perr := Parse(s)
		switch d.Verdict {
		case Invalid:
			if perr == nil || d.Address != (Address{}) || d.Entry != "" {
				t.Fatalf("Decide(%q) = %+v but Parse gives %+v, %v", s, d, a, perr)
			}
			return
		case Refuse:
			if perr != nil || d.Address != a || d.Entry != "" || slices.Contains(l.Entries(), "@"+a.Domain) {
				t.Fatalf("Decide(%q) on %q = %+v; Parse %+v, %v", s, entry, d, a, perr)
			}
			return
		case Allow:
		default:
			t.Fatalf("Decide(%q) verdict %q", s, d.Verdict)
		}
		if perr != nil || d.Address != a {
			t.Fatalf("allowed %q but Parse gives %+v, %v", s, a, perr)
		}
		// A bare addr-spec: one "@", nothing around it, local part ASCII atext.
		if strings.Count(s, "@") != 1 || strings.ContainsAny(s, " \t\r\n\"<>(),:;[]\\") || !utf8.ValidString(s) {
			t.Fatalf("allowed %q, which is not a bare addr-spec", s)
		}
		if !strings.EqualFold(s[:strings.IndexByte(s, '@')], a.Local) || len(a.Local) == 0 || len(a.Local) > MaxLocal {
			t.Fatalf("allowed %q with local part %q", s, a.Local)
		}
		for i := 0; i < len(a.Local); i++ {
			if c := a.Local[i]; c != '.' && !isAtext(c) {
				t.Fatalf("allowed %q: %q is not atext", s, c)
			}
		}
		// The domain is a lower-case A-label name that round-trips.
		if a.Domain != strings.ToLower(a.Domain) || !isASCII(a.Domain) || len(a.Domain) > MaxDomain || !strings.Contains(a.Domain, ".") {
			t.Fatalf("allowed %q with domain %q", s, a.Domain)
		}
		if u, err := idna.Registration.ToUnicode(a.Domain); err != nil {
			t.Fatalf("allowed %q: domain %q is not a valid A-label name: %v", s, a.Domain, err)
		} else if back, err := idna.Registration.ToASCII(u); err != nil || back != a.Domain {
			t.Fatalf("allowed %q: domain %q does not round-trip (%q, %v)", s, a.Domain, back, err)
		}
		// ... that UTS #46 lookup gives too, up to ASCII case: what we
		// compare is what a mail server resolves.
		if looked, err := idna.Lookup.ToASCII(s[strings.IndexByte(s, '@')+1:]); err != nil || looked != a.Domain {
			t.Fatalf("allowed %q with domain %q but idna.Lookup gives %q, %v", s, a.Domain, looked, err)
		}
		// ... and an entry names it.
		if d.Entry != "@"+a.Domain && d.Entry != strings.ToLower(a.Local)+"@"+a.Domain {
			t.Fatalf("allowed %q by entry %q", s, d.Entry)
		}
		if !slices.Contains(l.Entries(), d.Entry) {
			t.Fatalf("allowed %q by %q, not an entry of %q", s, d.Entry, l.Entries())
		}
		if back, err := Parse(a.String()); err != nil || back != a {
			t.Fatalf("Parse(%q) = %+v, %v", a.String(), back, err)
		}
	})
}

// FuzzParseList checks that an entry's canonical form loads back to itself
// and admits what the entry names.
func FuzzParseList(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s[0])
	}
	f.Fuzz(func(t *testing.T, entry string) {
		l, err := ParseList([]string{entry})
		if err != nil {
			if l.Len() != 0 || !strings.Contains(err.Error(), "entry 0 ") {
				t.Fatalf("ParseList(%q) = %v, %v", entry, l.Entries(), err)
			}
			return
		}
		c := l.Entries()
		if len(c) != 1 {
			t.Fatalf("ParseList(%q) entries %q", entry, c)
		}
		back, err := ParseList(c)
		if err != nil || !slices.Equal(back.Entries(), c) {
			t.Fatalf("canonical %q of %q loads as %q, %v", c[0], entry, back.Entries(), err)
		}
		probe := c[0]
		if strings.HasPrefix(probe, "@") {
			probe = "postmaster" + probe
		}
		if d := l.Decide(probe); d.Verdict != Allow || d.Entry != c[0] {
			t.Fatalf("entry %q (%q) does not admit %q: %+v", entry, c[0], probe, d)
		}
	})
}

// FuzzParseCommaList: a text either fails, or gives a list whose entries,
// joined with commas, read back as the same list; and it never accepts a
// text that ParseList refuses once split.
func FuzzParseCommaList(f *testing.F) {
	for _, s := range []string{"@example.com", " @example.com , ops@example.org", "@example.com,", "a@b.example,Alice <a@example.com>", "@bücher.example,@xn--bcher-kva.example"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		l, err := ParseCommaList(text)
		if err != nil {
			return
		}
		if l.Len() == 0 {
			t.Fatalf("ParseCommaList(%q) accepted no entries", text)
		}
		again, err := ParseCommaList(strings.Join(l.Entries(), ","))
		if err != nil || !slices.Equal(again.Entries(), l.Entries()) {
			t.Fatalf("ParseCommaList(%q) = %q; read back: %q, %v", text, l.Entries(), again.Entries(), err)
		}
		parts := strings.Split(text, ",")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		if _, err := ParseList(parts); err != nil {
			t.Fatalf("ParseCommaList(%q) accepted what ParseList refuses: %v", text, err)
		}
	})
}
