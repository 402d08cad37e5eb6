package recipient

import (
	"errors"
	"strings"
	"testing"
)

var (
	local64  = strings.Repeat("a", 64)
	label63  = strings.Repeat("b", 63)
	domain24 = label63 + "." + label63 + "." + label63 + "." + strings.Repeat("c", 61) // 3*64 + 61 = 253 octets
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, in    string
		local, want string // want is the Domain
	}{
		{"plain", "alice@example.com", "alice", "example.com"},
		{"atext specials", "user+mailbox/department=shipping@example.tld", "user+mailbox/department=shipping", "example.tld"},
		{"every atext character", "!#$%&'*+-/=?^_`{|}~@example.com", "!#$%&'*+-/=?^_`{|}~", "example.com"},
		{"dotted local part", "first.last@example.com", "first.last", "example.com"},
		{"local part case kept", "Alice@example.com", "Alice", "example.com"},
		{"domain case folded", "alice@EXAMPLE.Com", "alice", "example.com"},
		{"64-octet local part", local64 + "@example.com", local64, "example.com"},
		{"253-octet domain", "a@" + domain24, "a", domain24},
		{"63-octet label", "a@" + label63 + ".com", "a", label63 + ".com"},
		{"subdomain", "a@mail.eu.example.com", "a", "mail.eu.example.com"},
		{"digits and hyphens", "a@1-2.x-y.example", "a", "1-2.x-y.example"},
		{"numeric inner label", "a@127.0.0.example", "a", "127.0.0.example"},
		{"example TLD", "a@x.example", "a", "x.example"},
		{"example.com", "a@example.com", "a", "example.com"},
		{"example.net", "a@example.net", "a", "example.net"},
		{"test inside a label", "a@test.example.com", "a", "test.example.com"},
		{"localhost as a subdomain", "a@localhost.example.com", "a", "localhost.example.com"},
		{"testing TLD is not test", "a@x.testing", "a", "x.testing"},
		{"u-label to a-label", "a@bücher.example", "a", "xn--bcher-kva.example"},
		{"u-label with ascii capitals", "a@Bücher.EXAMPLE", "a", "xn--bcher-kva.example"},
		{"a-label kept", "a@xn--bcher-kva.example", "a", "xn--bcher-kva.example"},
		{"a-label upper case", "a@XN--BCHER-KVA.example", "a", "xn--bcher-kva.example"},
		{"greek test domain", "test@xn--hxajbheg2az3al.xn--jxalpdlp", "test", "xn--hxajbheg2az3al.xn--jxalpdlp"},
		{"greek u-labels", "test@παράδειγμα.δοκιμή", "test", "xn--hxajbheg2az3al.xn--jxalpdlp"},
		{"sharp s is not mapped to ss", "a@straße.de", "a", "xn--strae-oqa.de"},
		{"lone equals sign", "a=b@example.com", "a=b", "example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if a.Local != tt.local || a.Domain != tt.want {
				t.Fatalf("Parse(%q) = %+v, want %s@%s", tt.in, a, tt.local, tt.want)
			}
			back, err := Parse(a.String())
			if err != nil || back != a {
				t.Fatalf("Parse(%q.String()) = %+v, %v", tt.in, back, err)
			}
		})
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		name, in string
		rule     string // a part of the rule the error must give
	}{
		// One bare addr-spec only (RFC 5322 §3.4).
		{"empty", "", "empty"},
		{"display name", "Alice <alice@example.com>", "display name"},
		{"quoted display name", `"Joe Q. Public" <john.q.public@example.com>`, "display name"},
		{"angle-addr alone", "<alice@example.com>", "angle brackets"},
		{"address list", "alice@example.com,bob@example.com", "more than one address"},
		{"semicolon list", "alice@example.com;bob@example.com", "group"},
		{"group", "Team:alice@example.com;", "group"},
		{"empty group", "undisclosed-recipients:;", "group"},
		{"leading comment", "(comment)test@iana.org", "comment"},
		{"trailing comment", "test@iana.org(comment)", "comment"},
		{"comment in domain", "test@(c)iana.org", "comment"},
		{"quoted local part", `"quoted local part"@example.org`, "quoted"},
		{"quoted at sign", `"a@b"@example.org`, "quoted"},
		{"quoted-pair", `a\@b@example.org`, "backslash"},
		{"domain literal", "me@[127.0.0.1]", "domain literal"},
		{"ipv6 domain literal", "me@[IPv6:::1]", "domain literal"},
		{"bare ipv4", "me@127.0.0.1", "numeric top-level label"},
		// CR, LF, whitespace, invisible characters.
		{"crlf injection", "alice@example.com\r\nBcc: attacker@evil.test", "CR or LF"},
		{"trailing crlf", "test@iana.org\r\n", "CR or LF"},
		{"lone lf", "alice@example.com\nbcc@x.com", "CR or LF"},
		{"lone cr", "alice@example.com\r", "CR or LF"},
		{"nul", "alice@example.com\x00", "control character"},
		{"tab", "alice\t@example.com", "control character"},
		{"space", "alice @example.com", "whitespace"},
		{"leading space", " alice@example.com", "whitespace"},
		{"no-break space", "alice\u00a0@example.com", "whitespace"},
		{"ideographic space", "alice@example.com\u3000", "whitespace"},
		{"zero-width space", "\u200balice@example.com", "invisible"},
		{"zero-width space in domain", "alice@exa\u200bmple.com", "invisible"},
		{"soft hyphen in domain", "alice@exam\u00adple.com", "invisible"},
		{"byte order mark", "\ufeffalice@example.com", "invisible"},
		{"bidi override", "alice@\u202eexample.com", "invisible"},
		{"invalid utf-8", "alice@exa\xffmple.com", "UTF-8"},
		// Exactly one "@".
		{"no at sign", "alice.example.com", `0 "@" signs`},
		{"two at signs", "alice@evil.test@example.com", `2 "@" signs`},
		// Local part (RFC 5322 §3.2.3, §3.4.1; RFC 5321 §4.5.3.1.1).
		{"empty local part", "@example.com", "empty local part"},
		{"65-octet local part", local64 + "a@example.com", "over the 64"},
		{"leading dot", ".alice@example.com", "dot"},
		{"trailing dot in local part", "alice.@example.com", "dot"},
		{"double dot", "twodots..here@domain.com", "two dots"},
		{"non-ascii local part", "josé@example.com", "non-ASCII local part"},
		{"dotless i", "admın@example.com", "non-ASCII local part"},
		{"cyrillic a", "\u0430dmin@example.com", "non-ASCII local part"},
		{"full-width local part", "ａdmin@example.com", "non-ASCII local part"},
		{"encoded-word", "=?utf-8?q?alice=40evil.test?=@example.com", "encoded-word"},
		{"encoded-word base64", "=?x?b?YWJj?=x@example.com", "encoded-word"},
		// Domain.
		{"empty domain", "alice@", "empty domain"},
		{"trailing dot", "my@trailingdot.com.", "trailing dot"},
		{"two trailing dots", "my@trailingdot.com..", "trailing dot"},
		{"leading dot in domain", "a@.example.com", "empty domain label"},
		{"double dot in domain", "a@example..com", "empty domain label"},
		{"254-octet domain", "a@d" + domain24, "over the 253"},
		{"64-octet label", "a@" + label63 + "b.com", "over the 63"},
		{"idn over 253 octets as a-label", "a@" + strings.Repeat("ü.", 50) + "example", "over the 253"},
		{"underscore", "a@exa_mple.com", "letters, digits and hyphens"},
		{"leading hyphen", "a@-example.com", "hyphen"},
		{"trailing hyphen", "a@example-.com", "hyphen"},
		{"reserved hyphens", "a@ab--cd.example", "RFC 589"},
		{"bad punycode", "a@xn--zz.example", "RFC 589"},
		{"a-label of ascii", "a@xn--abc-.example", "hyphen"},
		{"percent", "a@exa%mple.com", "letters, digits and hyphens"},
		{"slash in domain", "a@example.com/x", "letters, digits and hyphens"},
		{"one label", "alice@example", "one label"},
		{"one label com", "alice@com", "one label"},
		{"numeric tld", "alice@example.123", "numeric top-level label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tt.in, a)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Input != tt.in {
				t.Fatalf("Parse(%q) error %T %v", tt.in, err, err)
			}
			if !strings.Contains(pe.Rule, tt.rule) {
				t.Fatalf("Parse(%q) rule %q, want it to mention %q", tt.in, pe.Rule, tt.rule)
			}
			if a != (Address{}) {
				t.Fatalf("Parse(%q) returned %+v with its error", tt.in, a)
			}
		})
	}
}

func TestSpecialUseTLDs(t *testing.T) {
	refused := []string{
		"a@a.test", "a@x.y.test", "a@A.TEST", "a@foo.localhost", "a@host.invalid", "a@printer.local",
		"a@duckduckgogg42xjoc72x3sjasowoarfbgcmvfimaftt6twagswzczad.onion", "a@x.alt", "a@router.home.arpa",
		"a@1.0.0.127.in-addr.arpa", "a@localhost", "a@test", "a@xn--bcher-kva.test",
	}
	for _, s := range refused {
		t.Run(s, func(t *testing.T) {
			d := mustList(t, "@example.com").Decide(s)
			if d.Verdict != Invalid {
				t.Fatalf("Decide(%q) = %+v, want invalid", s, d)
			}
			if !strings.Contains(d.Reason, "special-use") && !strings.Contains(d.Reason, "one label") {
				t.Fatalf("reason %q names neither rule", d.Reason)
			}
		})
	}
	allowed := map[string]string{ // recipient -> entry
		"a@example.com": "@example.com", "a@example.net": "@example.net", "a@example.org": "@example.org",
		"a@x.example": "@x.example", "a@mail.test.example.com": "@mail.test.example.com",
		"a@test.example": "@test.example", "a@local.example.com": "@local.example.com",
	}
	for s, e := range allowed {
		t.Run(s, func(t *testing.T) {
			if d := mustList(t, e).Decide(s); d.Verdict != Allow {
				t.Fatalf("Decide(%q) on %q = %+v, want allow", s, e, d)
			}
		})
	}
}

// IDNA: a domain that UTS #46 would change in any way but ASCII case is
// refused, never silently normalised into something on the list.
func TestIDNAChangesRefused(t *testing.T) {
	tests := []struct{ name, in string }{
		{"full-width letters", "a@ｅｘａｍｐｌｅ.com"},
		{"full-width tld", "a@example.ｃｏｍ"},
		{"upper-case non-ascii", "a@BÜCHER.example"},
		{"one upper-case non-ascii letter", "a@bÜcher.example"},
		{"upper-case greek", "a@ΠΑΡΆΔΕΙΓΜΑ.δοκιμή"},
		{"ideographic full stop", "a@example。com"},
		{"full-width full stop", "a@example．com"},
		{"decomposed (non-NFC)", "a@bu\u0308cher.example"},
		{"ligature", "a@\ufb01le.example"},
		{"circled letters", "a@ⓔxample.com"},
		{"mathematical letters", "a@𝐞xample.com"},
		{"combining grapheme joiner", "a@exa\u034fmple.com"},
		{"variation selector", "a@exa\ufe0fmple.com"},
		{"kelvin sign", "a@\u212a.example.com"},
		{"superscript digit", "a@x\u00b2.example.com"},
		{"symbol not allowed", "a@☃\u200d.example"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := mustList(t, "@example.com", "@xn--bcher-kva.example", "@file.example", "@xn--hxajbheg2az3al.xn--jxalpdlp")
			d := l.Decide(tt.in)
			if d.Verdict != Invalid {
				t.Fatalf("Decide(%q) = %+v, want invalid", tt.in, d)
			}
			t.Log(d.Reason)
		})
	}
}

func TestDecide(t *testing.T) {
	l := mustList(t, "alice@example.com", "@example.org", "Bob@Bücher.example", "@παράδειγμα.δοκιμή", "@xn--strae-oqa.de")
	tests := []struct {
		name, in string
		want     Verdict
		entry    string
	}{
		{"address entry", "alice@example.com", Allow, "alice@example.com"},
		{"address entry, local part upper case", "ALICE@example.com", Allow, "alice@example.com"},
		{"address entry, domain upper case", "alice@EXAMPLE.COM", Allow, "alice@example.com"},
		{"other mailbox of an address entry's domain", "bob@example.com", Refuse, ""},
		{"plus address is another mailbox", "alice+x@example.com", Refuse, ""},
		{"domain entry", "anyone@example.org", Allow, "@example.org"},
		{"domain entry, upper case", "AnyOne@Example.ORG", Allow, "@example.org"},
		{"subdomain of a domain entry", "a@mail.example.org", Refuse, ""},
		{"suffix without dot boundary", "a@evilexample.org", Refuse, ""},
		{"domain entry as a prefix", "a@example.org.evil.com", Refuse, ""},
		{"idn address entry by a-label", "bob@xn--bcher-kva.example", Allow, "bob@xn--bcher-kva.example"},
		{"idn address entry by u-label, any ascii case", "BOB@bücher.EXAMPLE", Allow, "bob@xn--bcher-kva.example"},
		{"idn domain entry by a-label", "x@xn--hxajbheg2az3al.xn--jxalpdlp", Allow, "@xn--hxajbheg2az3al.xn--jxalpdlp"},
		{"idn domain entry by u-label", "x@παράδειγμα.δοκιμή", Allow, "@xn--hxajbheg2az3al.xn--jxalpdlp"},
		{"sharp s", "x@straße.de", Allow, "@xn--strae-oqa.de"},
		{"sharp s is not ss", "x@strasse.de", Refuse, ""},
		{"look-alike domain", "alice@ex\u0430mple.com", Refuse, ""},
		{"not on the list", "carol@example.net", Refuse, ""},
		{"invalid beats listed", "alice@example.com.", Invalid, ""},
		{"display name around a listed address", "Alice <alice@example.com>", Invalid, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := l.Decide(tt.in)
			if d.Verdict != tt.want || d.Entry != tt.entry {
				t.Fatalf("Decide(%q) = %+v, want %s by %q", tt.in, d, tt.want, tt.entry)
			}
			if !strings.Contains(d.Reason, quote(tt.in)) {
				t.Fatalf("reason %q does not name %q", d.Reason, tt.in)
			}
			switch d.Verdict {
			case Refuse:
				if !strings.Contains(d.Reason, "not on the allow-list") || !strings.Contains(d.Reason, "default deny") {
					t.Fatalf("refusal reason %q does not name the rule", d.Reason)
				}
			case Invalid:
				if d.Address != (Address{}) {
					t.Fatalf("invalid with address %+v", d.Address)
				}
			}
		})
	}
}

func TestZeroListRefuses(t *testing.T) {
	var l List
	if d := l.Decide("alice@example.com"); d.Verdict != Refuse {
		t.Fatalf("zero List: %+v", d)
	}
	l = mustList(t)
	if d := l.Decide("alice@example.com"); d.Verdict != Refuse || l.Len() != 0 {
		t.Fatalf("empty List: %+v", d)
	}
}

func TestParseList(t *testing.T) {
	l := mustList(t, "Alice@Example.com", "alice@example.com", "@Bücher.example", "@xn--bcher-kva.example", "@example.org")
	want := []string{"alice@example.com", "@xn--bcher-kva.example", "@example.org"}
	if got := l.Entries(); strings.Join(got, " ") != strings.Join(want, " ") || l.Len() != 3 {
		t.Fatalf("Entries() = %q, want %q", got, want)
	}

	bad := []struct {
		name, entry, rule string
	}{
		{"empty", "", "empty"},
		{"bare at", "@", "empty domain"},
		{"bare domain", "example.com", `0 "@" signs`},
		{"domain literal", "@[127.0.0.1]", "domain literal"},
		{"special-use tld", "@a.test", "special-use"},
		{"one label", "@localhost", "one label"},
		{"wildcard local part", "*@example.com", `"@domain"`},
		{"wildcard domain", "@*.example.com", "subdomains"},
		{"dot-prefixed domain", "@.example.com", "subdomains"},
		{"two at signs", "@@example.com", `"@domain" or one address`},
		{"surrounding space", " @example.com", "whitespace"},
		{"display name", "Alice <alice@example.com>", "display name"},
		{"trailing dot", "@example.com.", "trailing dot"},
		{"full-width", "@ｅｘａｍｐｌｅ.com", "IDNA"},
		{"list in one entry", "@a.com,@b.com", "more than one"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseList([]string{"@example.com", tt.entry})
			if err == nil {
				t.Fatalf("ParseList accepted %q", tt.entry)
			}
			if !strings.Contains(err.Error(), "entry 1 "+quote(tt.entry)) || !strings.Contains(err.Error(), tt.rule) {
				t.Fatalf("ParseList(%q) error %q, want it to name the entry and %q", tt.entry, err, tt.rule)
			}
		})
	}
}

func TestIDNAMessageShowsMapping(t *testing.T) {
	_, err := Parse("a@ｅｘａｍｐｌｅ.com")
	if err == nil || !strings.Contains(err.Error(), `"example.com"`) {
		t.Fatalf("error %v does not show what the mapping would give", err)
	}
}

func mustList(t testing.TB, entries ...string) List {
	t.Helper()
	l, err := ParseList(entries)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A decision's Rule never repeats the recipient or anything derived from
// it (send-email's refusals name recipients by position only), while its
// Reason, for the operator's check-recipient, shows the mapping.
func TestDecisionRuleLeavesTheAddressOut(t *testing.T) {
	l, err := ParseList([]string{"@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"ceo@ｓｅｃｒｅｔ-merger-target.com", "bob@secret-merger-target.com", "a@secret-target.local", "x@xn--zz-secret.com"} {
		d := l.Decide(s)
		if d.Verdict == Allow || strings.Contains(d.Rule, "secret") || strings.Contains(d.Rule, "merger") {
			t.Errorf("%q: verdict %v, rule %q repeats the address", s, d.Verdict, d.Rule)
		}
	}
	if d := l.Decide("ceo@ｓｅｃｒｅｔ-merger-target.com"); !strings.Contains(d.Reason, "secret-merger-target.com") {
		t.Errorf("the reason %q does not show the mapping", d.Reason)
	}
}

// TestParseCommaList: the deployment's one-text form of a list, as the
// send-email and publish functions read TOOLGATE_RECIPIENT_ALLOW.
func TestParseCommaList(t *testing.T) {
	l, err := ParseCommaList(" @example.com , Ops@Internal.example,@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.Entries(), " "); got != "@example.com ops@internal.example" {
		t.Fatalf("entries %q", got)
	}
	for text, want := range map[string]string{
		"":                      "no entries",
		" \t ":                  "no entries",
		"@example.com,":         "entry 1 is empty (a stray comma)",
		",@example.com":         "entry 0 is empty",
		"Alice <a@example.com>": "display name",
		"@a.test":               "special-use",
	} {
		if _, err := ParseCommaList(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseCommaList(%q) = %v; want %q", text, err, want)
		}
	}
}

// TestCheckCount: at most MaxPerMessage recipients in one message.
func TestCheckCount(t *testing.T) {
	for n, ok := range map[int]bool{0: true, 1: true, 50: true, 51: false, 1000: false} {
		err := CheckCount(n)
		if (err == nil) != ok || err != nil && !strings.Contains(err.Error(), "over the SES quota of 50") {
			t.Errorf("CheckCount(%d) = %v", n, err)
		}
	}
}
