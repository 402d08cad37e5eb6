package recipient

import (
	"slices"
	"strings"
	"testing"
)

// stringLike is IAM's StringLike on one value (IAM User Guide, "IAM JSON
// policy elements: Condition operators"): case-sensitive, "*" any run of
// characters, "?" one character, and the policy variables ${*}, ${?} and
// ${$} the literal characters ("IAM policy elements: Variables and tags").
// Any other "${" is a policy variable, which no pattern here may hold.
func stringLike(pattern, s string) (match, ok bool) {
	type token struct {
		lit  rune
		kind byte // 'l' literal, '*' any run, '?' one character
	}
	var toks []token
	for p := pattern; p != ""; {
		switch {
		case strings.HasPrefix(p, "${*}"), strings.HasPrefix(p, "${?}"), strings.HasPrefix(p, "${$}"):
			toks = append(toks, token{lit: rune(p[2]), kind: 'l'})
			p = p[4:]
			continue
		case strings.HasPrefix(p, "${"):
			return false, false
		case p[0] == '*' || p[0] == '?':
			toks = append(toks, token{kind: p[0]})
		default:
			toks = append(toks, token{lit: rune(p[0]), kind: 'l'})
		}
		p = p[1:]
	}
	var at func(t []token, s string) bool
	at = func(t []token, s string) bool {
		if len(t) == 0 {
			return s == ""
		}
		switch t[0].kind {
		case '*':
			for i := 0; i <= len(s); i++ {
				if at(t[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			return s != "" && at(t[1:], s[1:])
		}
		return s != "" && rune(s[0]) == t[0].lit && at(t[1:], s[1:])
	}
	return at(toks, s), true
}

// iamAllows is the ses:Recipients condition for one recipient: some pattern
// matches it.
func iamAllows(t testing.TB, patterns []string, s string) bool {
	t.Helper()
	for _, p := range patterns {
		m, ok := stringLike(p, s)
		if !ok {
			t.Fatalf("pattern %q holds a policy variable", p)
		}
		if m {
			return true
		}
	}
	return false
}

func TestStringLike(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"*@example.com", "a@example.com", true},
		{"*@example.com", "a@sub.example.com", false},
		{"*@example.com", "a@evilexample.com", false},
		{"bob@example.org", "Bob@example.org", false}, // case-sensitive
		{"a?c@x.example", "abc@x.example", true},
		{"a${?}c@x.example", "abc@x.example", false},
		{"a${?}c@x.example", "a?c@x.example", true},
		{"a${*}@x.example", "ab@x.example", false},
		{"a${*}@x.example", "a*@x.example", true},
		{"a${$}{b}@x.example", "a${b}@x.example", true},
	} {
		if got, ok := stringLike(c.pattern, c.s); !ok || got != c.want {
			t.Errorf("stringLike(%q, %q) = %v, %v; want %v", c.pattern, c.s, got, ok, c.want)
		}
	}
}

func TestIAMPatterns(t *testing.T) {
	tests := []struct {
		name    string
		entries []string
		want    []string
	}{
		{"domain entry", []string{"@example.com"}, []string{"*@example.com"}},
		{"address lower-cased", []string{"Bob@Example.org"}, []string{"bob@example.org"}},
		{"IDN domain as its A-label", []string{"@bücher.example", "Anna@Bücher.example"},
			[]string{"*@xn--bcher-kva.example", "anna@xn--bcher-kva.example"}},
		{"written either way, listed once", []string{"@xn--bcher-kva.example", "@bücher.example"}, []string{"*@xn--bcher-kva.example"}},
		{"StringLike's characters as policy variables", []string{"a*b?c$d{e}@example.com"}, []string{"a${*}b${?}c${$}d{e}@example.com"}},
		{"none", nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ParseList(tt.entries)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.IAMPatterns(); !slices.Equal(got, tt.want) {
				t.Fatalf("IAMPatterns() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestIAMAgreesWithDecide: for every valid recipient of the cases, and
// each in other letter cases, IAM's condition admits its canonical form
// exactly when Decide allows it, and never the form as written when that
// differs in case (send-email must send the canonical form).
func TestIAMAgreesWithDecide(t *testing.T) {
	for _, c := range loadCases(t) {
		t.Run(c.Why, func(t *testing.T) {
			l := caseList(t, c)
			patterns := l.IAMPatterns()
			for _, s := range []string{c.Recipient, strings.ToUpper(c.Recipient), strings.ToLower(c.Recipient)} {
				d := l.Decide(s)
				if d.Verdict == Invalid {
					continue
				}
				if got := iamAllows(t, patterns, d.Address.Canonical()); got != (d.Verdict == Allow) {
					t.Errorf("%q (%s): IAM patterns %q admit its canonical form %q: %v", s, d.Verdict, patterns, d.Address.Canonical(), got)
				}
			}
		})
	}
}

// FuzzIAMPatterns: for any one-entry list and any valid recipient, the
// entry's IAM pattern matches the recipient's canonical form exactly when
// Decide allows it.
func FuzzIAMPatterns(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s[0], s[1])
	}
	f.Add("a*b?c$d@example.com", "A*B?C$D@example.com")
	f.Add("a*b@example.com", "axxb@example.com")
	f.Add("a?b@example.com", "axb@example.com")
	f.Add("a${*}@example.com", "a${*}@example.com")
	f.Fuzz(func(t *testing.T, entry, s string) {
		l, err := ParseList([]string{entry})
		if err != nil {
			return
		}
		d := l.Decide(s)
		if d.Verdict == Invalid {
			return
		}
		if got := iamAllows(t, l.IAMPatterns(), d.Address.Canonical()); got != (d.Verdict == Allow) {
			t.Fatalf("entry %q, recipient %q (%s): IAM patterns %q admit %q: %v", entry, s, d.Verdict, l.IAMPatterns(), d.Address.Canonical(), got)
		}
	})
}
