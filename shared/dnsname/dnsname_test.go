package dnsname

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/net/idna"
)

// The two kinds of profile the callers use: idna.Registration, which also
// verifies DNS lengths (hostlist), and the same without that check, leaving
// lengths to the LDH rules (recipient).
var profiles = []struct {
	name    string
	profile *idna.Profile
}{
	{"registration", idna.Registration},
	{"registration without dns length", idna.New(idna.ValidateForRegistration(), idna.VerifyDNSLength(false))},
}

var (
	label63 = strings.Repeat("a", 63)
	name253 = strings.Repeat(label63+".", 3) + strings.Repeat("b", 61) // 3*(63+1) + 61 = 253
)

func TestParse(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"lower case", "api.example.com", "api.example.com"},
		{"upper case folded", "API.Example.COM", "api.example.com"},
		{"single label", "localhost", "localhost"},
		{"digits and inner hyphens", "1-2.x--y.example", "1-2.x--y.example"},
		{"numeric labels are the caller's business", "example.123", "example.123"},
		{"u-label to a-label", "bücher.example", "xn--bcher-kva.example"},
		{"u-label with ascii capitals", "Bücher.EXAMPLE", "xn--bcher-kva.example"},
		{"a-label kept", "xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"a-label upper case", "XN--BCHER-KVA.example", "xn--bcher-kva.example"},
		{"greek u-labels", "παράδειγμα.δοκιμή", "xn--hxajbheg2az3al.xn--jxalpdlp"},
		{"sharp s is not mapped to ss", "straße.de", "xn--strae-oqa.de"},
		{"63-octet label", label63 + ".com", label63 + ".com"},
		{"253-octet name", name253, name253},
	}
	for _, p := range profiles {
		for _, tt := range tests {
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				got, err := Parse(p.profile, tt.in)
				if err != nil || got != tt.want {
					t.Fatalf("Parse(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
				}
				if again, err := Parse(p.profile, got); err != nil || again != got {
					t.Fatalf("Parse(%q) = %q, %v; want it unchanged", got, again, err)
				}
			})
		}
	}
}

func TestParseRefused(t *testing.T) {
	long := strings.Repeat("ü.", 50) + "example" // 50 labels "xn--tda": 400 octets as A-labels
	tests := []struct {
		name, in string
		rule     Rule
		label    string // Error.Label, for the label rules
		char     byte   // Error.Char, for NotLDH
		// ruleNoLength is the rule under the profile without DNS length
		// checks, where it differs.
		ruleNoLength Rule
	}{
		{name: "empty", in: "", rule: EmptyLabel},
		{name: "dot", in: ".", rule: EmptyLabel},
		{name: "leading dot", in: ".example.com", rule: EmptyLabel},
		{name: "two dots", in: "example..com", rule: EmptyLabel},
		{name: "trailing dot", in: "example.com.", rule: EmptyLabel},
		{name: "empty label before idna", in: "bücher..example", rule: EmptyLabel},
		{name: "upper-case non-ascii", in: "BÜCHER.example", rule: NotRegistrable},
		{name: "full-width letters", in: "ｅｘａｍｐｌｅ.com", rule: NotRegistrable},
		{name: "ideographic full stop", in: "example。com", rule: NotRegistrable},
		{name: "non-nfc", in: "bu\u0308cher.example", rule: NotRegistrable},
		{name: "zero-width space", in: "exa\u200bmple.com", rule: NotRegistrable},
		{name: "kelvin sign", in: "\u212aey.com", rule: NotRegistrable},
		{name: "capital sharp s", in: "\u1e9e.example", rule: NotRegistrable},
		{name: "invalid utf-8", in: "b\xfccher.example", rule: NotRegistrable},
		{name: "name too long", in: "a" + name253, rule: NameTooLong},
		{name: "idn too long as a-labels", in: long, rule: NotRegistrable, ruleNoLength: NameTooLong},
		{name: "label too long", in: label63 + "a.com", rule: LabelTooLong, label: label63 + "a"},
		{name: "leading hyphen", in: "-api.example.com", rule: HyphenAtEdge, label: "-api"},
		{name: "trailing hyphen", in: "API-.example.com", rule: HyphenAtEdge, label: "api-"},
		{name: "a-label ending in a hyphen", in: "xn--abc-.example", rule: HyphenAtEdge, label: "xn--abc-"},
		{name: "underscore", in: "my_host.example.com", rule: NotLDH, char: '_'},
		{name: "percent", in: "ex%61mple.com", rule: NotLDH, char: '%'},
		{name: "space", in: "example.com ", rule: NotLDH, char: ' '},
		{name: "star", in: "*.example.com", rule: NotLDH, char: '*'},
		{name: "nul", in: "a\x00.example", rule: NotLDH, char: 0},
		{name: "reserved hyphens", in: "ab--cd.example", rule: InvalidALabel},
		{name: "bad punycode", in: "xn--zz.example", rule: InvalidALabel},
		{name: "a-label of a control character", in: "xn--a.example", rule: InvalidALabel},
		{name: "bare ace prefix", in: "xn--.example", rule: HyphenAtEdge, label: "xn--"},
	}
	for _, p := range profiles {
		for _, tt := range tests {
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				got, err := Parse(p.profile, tt.in)
				if err == nil {
					t.Fatalf("Parse(%q) = %q, want an error", tt.in, got)
				}
				var e *Error
				if !errors.As(err, &e) || got != "" {
					t.Fatalf("Parse(%q) = %q, %T %v", tt.in, got, err, err)
				}
				want := tt.rule
				if p.profile != idna.Registration && tt.ruleNoLength != 0 {
					want = tt.ruleNoLength
				}
				if e.Rule != want || e.Label != tt.label || e.Char != tt.char {
					t.Fatalf("Parse(%q) = %+v, want rule %d label %q char %q", tt.in, e, want, tt.label, tt.char)
				}
				if (e.Rule == NotRegistrable || e.Rule == InvalidALabel) && e.Err == nil {
					t.Fatalf("Parse(%q) rule %d without the idna error", tt.in, e.Rule)
				}
			})
		}
	}
}

// The messages are those hostlist has always given; its users see them.
func TestErrorMessages(t *testing.T) {
	idnaErr := errors.New("idna: disallowed rune U+FF45")
	tests := []struct {
		err  Error
		want string
	}{
		{Error{Rule: EmptyLabel}, "empty label"},
		{Error{Rule: NotRegistrable, Err: idnaErr}, "not a valid internationalized name in lower-case nfc form (RFC 5891): idna: disallowed rune U+FF45"},
		{Error{Rule: NameTooLong, Name: "a" + name253}, "name is longer than 253 octets (RFC 1035)"},
		{Error{Rule: LabelTooLong, Label: "aaa"}, `label "aaa" is longer than 63 octets (RFC 1035)`},
		{Error{Rule: HyphenAtEdge, Label: "-a"}, `label "-a" starts or ends with a hyphen (RFC 1123)`},
		{Error{Rule: NotLDH, Char: '_'}, `character '_' is not allowed in a host name (letters, digits and hyphens only, RFC 1123)`},
		{Error{Rule: InvalidALabel, Err: idnaErr}, "invalid label (RFC 5890, RFC 5891): idna: disallowed rune U+FF45"},
		{Error{Rule: NoRoundTrip}, "a-label does not round-trip through its u-label (RFC 5891 §5.4)"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("rule %d: Error() = %q, want %q", tt.err.Rule, got, tt.want)
		}
	}
	if e := (&Error{Rule: InvalidALabel, Err: idnaErr}); !errors.Is(e, idnaErr) {
		t.Errorf("%v does not unwrap to the idna error", e)
	}
}

func TestLowerASCII(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "", ""},
		{"nothing to fold", "example.com", "example.com"},
		{"ascii letters", "API.Example.COM", "api.example.com"},
		{"non-ascii case kept", "BÜCHER", "bÜcher"},
		{"kelvin sign kept", "\u212aEY", "\u212aey"},
		{"invalid utf-8 kept", "A\xffB", "a\xffb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LowerASCII(tt.in); got != tt.want {
				t.Errorf("LowerASCII(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
