package recipient

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/toolgate/toolgate/shared/dnsname"
	"github.com/toolgate/toolgate/shared/excerpt"
)

// Limits of an addr-spec, with their sources.
const (
	// MaxLocal is the longest local part in octets (RFC 5321 §4.5.3.1.1).
	MaxLocal = 64
	// MaxDomain is the longest domain in octets, measured on its A-label
	// form without a trailing dot (RFC 1035 §2.3.4: 255 octets on the wire).
	MaxDomain = dnsname.MaxName
	// MaxLabel is the longest domain label in octets, measured on its
	// A-label form (RFC 1035 §2.3.4).
	MaxLabel = dnsname.MaxLabel
)

// specialUse holds the top-level domains whose mail is never delivered on
// the public Internet: the special-use names of RFC 6761 §6 (localhost,
// invalid, test), RFC 6762 (local), RFC 7686 (onion) and RFC 9476 (alt),
// and the infrastructure domain arpa (RFC 3172; home.arpa is special-use by
// RFC 8375). The example TLD (RFC 6761 §6.5) is deliberately absent.
var specialUse = map[string]string{
	"localhost": "RFC 6761 §6.3",
	"invalid":   "RFC 6761 §6.4",
	"test":      "RFC 6761 §6.2",
	"local":     "RFC 6762",
	"onion":     "RFC 7686",
	"alt":       "RFC 9476",
	"arpa":      "RFC 3172, RFC 8375",
}

// idnaProfile converts internationalized domains. It is idna.Registration
// (RFC 5891 §4: non-transitional, STD3 rules, hyphen, joiner and Bidi checks)
// without its DNS length check, which dnsname.Parse then makes on the
// A-label form, so that a long IDN domain gets the length rule
// (domainRule) rather than an IDNA error. It applies no mapping: input that
// UTS #46 would map, remove or normalise is an error rather than a silent
// change. Only ASCII letters are case-folded, by dnsname.Parse.
var idnaProfile = idna.New(idna.ValidateForRegistration(), idna.VerifyDNSLength(false))

// Address is one valid recipient.
type Address struct {
	// Local is the local part as written: 1–64 octets of ASCII atext in
	// dot-atom form. It compares case-insensitively (see Equal).
	Local string
	// Domain is the domain as a lower-case A-label name without trailing
	// dot, at least two labels, at most 253 octets.
	Domain string
}

// String returns Local + "@" + Domain: the local part as written, the domain
// in its A-label form (SES needs 7-bit ASCII addresses). Parse returns the
// same Address for it. send-email gives SES its sender in this form and its
// recipients in the canonical one (Canonical).
func (a Address) String() string { return a.Local + "@" + a.Domain }

// Canonical returns the address in its canonical form: the local part
// lower-cased, the domain as its lower-case A-label (already so in Domain).
// It is the form addresses compare in, the form of List.Entries' address
// entries, and the form send-email gives SES as a recipient, so that the
// ses:Recipients condition of send-email's role, which IAM compares
// case-sensitively, admits it (List.IAMPatterns).
func (a Address) Canonical() string { return strings.ToLower(a.Local) + "@" + a.Domain }

// Equal reports whether a and b are the same mailbox: the same domain and
// local parts equal up to ASCII case.
func (a Address) Equal(b Address) bool { return a.Canonical() == b.Canonical() }

// ParseError is the error of Parse: the input and the rule it breaks.
// detail separates a rule from the part of it that repeats or derives
// from the input (a mapped domain, an IDNA error naming a label): Safe
// leaves that part out.
const detail = " — "

type ParseError struct {
	// Input is the text that was parsed.
	Input string
	// Rule says what is wrong and names the RFC behind the rule, in
	// lower case without a full stop, such as
	// "a domain of one label (RFC 5321 §2.3.5: ...)".
	Rule string
}

// Safe is the rule without anything taken from the input (the text
// after detail), for messages that must not repeat a recipient.
func (e *ParseError) Safe() string {
	rule, _, _ := strings.Cut(e.Rule, detail)
	return rule
}

// Error returns `recipient "<input>": <rule>`, the input quoted with Go
// escapes (so CR, LF and invisible characters show) and cut after 256 bytes.
func (e *ParseError) Error() string {
	return "recipient " + quote(e.Input) + ": " + e.Rule
}

// Parse parses s as one bare addr-spec under the rules of the package
// documentation and returns it with its domain as a lower-case A-label.
// The error is a *ParseError naming the rule s breaks. Parse does no
// trimming: leading or trailing whitespace is an error.
func Parse(s string) (Address, error) {
	local, domain, rule := parse(s)
	if rule != "" {
		return Address{}, &ParseError{Input: s, Rule: rule}
	}
	return Address{Local: local, Domain: domain}, nil
}

// parse returns the address parts, or the rule s breaks.
func parse(s string) (local, domain, rule string) {
	if rule := checkText(s); rule != "" {
		return "", "", rule
	}
	if n := strings.Count(s, "@"); n != 1 {
		return "", "", fmt.Sprintf("%d \"@\" signs: an addr-spec has exactly one (RFC 5322 §3.4.1)", n)
	}
	local, domain, _ = strings.Cut(s, "@")
	if rule := checkLocal(local); rule != "" {
		return "", "", rule
	}
	domain, rule = parseDomain(domain)
	if rule != "" {
		return "", "", rule
	}
	return local, domain, ""
}

// checkText refuses what cannot appear in a bare dot-atom addr-spec, with a
// message for each kind of mail syntax that can hide a second recipient.
func checkText(s string) string {
	switch {
	case s == "":
		return "empty: write one bare addr-spec such as alice@example.com"
	case !utf8.ValidString(s):
		return "not valid UTF-8"
	case strings.ContainsAny(s, "\r\n"):
		return "CR or LF: a line break can inject header fields (RFC 5322 §2.2)"
	case strings.ContainsAny(s, "[]"):
		return "a domain literal (RFC 5322 §3.4.1, RFC 5321 §4.1.3): write a domain name"
	case strings.ContainsAny(s, ":;"):
		return "group syntax or an address list (RFC 5322 §3.4 group): give one bare addr-spec per list item"
	case strings.ContainsAny(s, "<>"):
		return "a display name or angle brackets (RFC 5322 §3.4 name-addr): give the bare addr-spec only"
	case strings.Contains(s, ","):
		return "more than one address (RFC 5322 §3.4 address-list): give each recipient as its own list item"
	case strings.Contains(s, `"`):
		return "a quoted string: quoted local parts and display names are not accepted (RFC 5322 §3.2.4, §3.4.1)"
	case strings.ContainsAny(s, "()"):
		return "a comment (RFC 5322 §3.2.2 CFWS)"
	case strings.Contains(s, `\`):
		return `a backslash (quoted-pair, RFC 5322 §3.2.1) is not atext`
	}
	for _, r := range s {
		switch {
		case unicode.IsControl(r):
			return fmt.Sprintf("control character %U", r)
		case unicode.IsSpace(r) || unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp):
			return fmt.Sprintf("whitespace %U: an addr-spec is a dot-atom without folding white space (RFC 5322 §3.2.3)", r)
		case unicode.Is(unicode.Cf, r):
			return fmt.Sprintf("invisible format character %U", r)
		}
	}
	return ""
}

// checkLocal checks a local part: a dot-atom of ASCII atext, 1–64 octets.
func checkLocal(l string) string {
	switch {
	case l == "":
		return "empty local part (RFC 5322 §3.4.1)"
	case !isASCII(l):
		return "non-ASCII local part: SMTPUTF8 (RFC 6531) is not supported, SES needs 7-bit ASCII addresses, and Unicode case folding would let look-alikes collide"
	case len(l) > MaxLocal:
		return fmt.Sprintf("local part is %d octets, over the %d of RFC 5321 §4.5.3.1.1", len(l), MaxLocal)
	case strings.HasPrefix(l, ".") || strings.HasSuffix(l, ".") || strings.Contains(l, ".."):
		return "local part starts or ends with a dot or has two dots in a row (RFC 5322 §3.2.3 dot-atom)"
	}
	for i := 0; i < len(l); i++ {
		if c := l[i]; c != '.' && !isAtext(c) {
			return fmt.Sprintf("%q is not atext (RFC 5322 §3.2.3)", c)
		}
	}
	if i := strings.Index(l, "=?"); i >= 0 && strings.Contains(l[i+2:], "?=") {
		return "an encoded-word in the local part (RFC 2047 §5: never inside an addr-spec)"
	}
	return ""
}

// isAtext reports whether c is atext (RFC 5322 §3.2.3): ALPHA, DIGIT or one
// of !#$%&'*+-/=?^_`{|}~.
func isAtext(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-/=?^_`{|}~", c) >= 0
}

// parseDomain turns the domain of an addr-spec into a lower-case A-label
// name, or returns the rule it breaks.
func parseDomain(d string) (string, string) {
	switch {
	case d == "":
		return "", "empty domain (RFC 5322 §3.4.1)"
	case strings.HasSuffix(d, "."):
		return "", "a trailing dot: the domain of an addr-spec is a dot-atom (RFC 5322 §3.2.3, §3.4.1), and SES refuses it"
	case strings.HasPrefix(d, ".") || strings.Contains(d, ".."):
		return "", "an empty domain label: a leading dot or two dots in a row (RFC 5322 §3.2.3, RFC 1035 §2.3.1)"
	}
	a, err := dnsname.Parse(idnaProfile, d)
	if err != nil {
		return "", domainRule(d, err)
	}
	dot := strings.LastIndexByte(a, '.')
	if dot < 0 {
		return "", "a domain of one label: mail domains are fully qualified (RFC 5321 §2.3.5; dotless domains, ICANN SAC053)"
	}
	tld := a[dot+1:]
	if strings.Trim(tld, "0123456789") == "" {
		return "", "a numeric top-level label: an IP address is not a domain name (RFC 3696 §2); domain literals are not accepted either"
	}
	if src, ok := specialUse[tld]; ok {
		return "", fmt.Sprintf("a special-use top-level domain, whose mail is never delivered (%s)", src) + detail + "." + tld
	}
	return a, ""
}

// domainRule words an error of dnsname.Parse on the domain d as the rule
// the domain breaks, naming the RFC behind it.
func domainRule(d string, err error) string {
	var e *dnsname.Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	switch e.Rule {
	case dnsname.EmptyLabel:
		return "an empty domain label (RFC 1035 §2.3.1)"
	case dnsname.NotRegistrable:
		if mapped, lerr := idna.Lookup.ToUnicode(d); lerr == nil && mapped != dnsname.LowerASCII(d) {
			return "IDNA mapping (UTS #46) would change the domain: only ASCII case is folded, write the domain as it is registered (RFC 5891 §4)" + detail + "it would give " + quote(mapped)
		}
		return "not a valid internationalized domain name (RFC 5890, RFC 5891)" + detail + e.Err.Error()
	case dnsname.NameTooLong:
		return fmt.Sprintf("domain is %d octets, over the %d of RFC 1035 §2.3.4", len(e.Name), MaxDomain)
	case dnsname.LabelTooLong:
		return fmt.Sprintf("domain label of %d octets, over the %d of RFC 1035 §2.3.4", len(e.Label), MaxLabel)
	case dnsname.HyphenAtEdge:
		return fmt.Sprintf("domain label %s starts or ends with a hyphen (RFC 1123 §2.1, RFC 5891 §4.2.3.1)", quote(e.Label))
	case dnsname.NotLDH:
		return fmt.Sprintf("%q in a domain label: only letters, digits and hyphens (RFC 1123 §2.1)", e.Char)
	case dnsname.InvalidALabel:
		return "an invalid label (RFC 5890, RFC 5891)" + detail + e.Err.Error()
	case dnsname.NoRoundTrip:
		return "an A-label that does not round-trip through its U-label (RFC 5891 §5.4)"
	}
	return e.Error()
}

// isASCII reports whether s is 7-bit ASCII, as SES needs a local part to be.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// maxQuoted bounds the input shown in errors and reasons.
const maxQuoted = 256

// quote returns s in double quotes with Go escapes, cut after maxQuoted
// bytes. Beyond what strconv.Quote escapes, it also escapes the characters
// that render as nothing or merge into their neighbour (format characters,
// combining and enclosing marks, non-ASCII spaces, private-use code points),
// so that a reason shows what was really written.
func quote(s string) string {
	more := ""
	if kept := excerpt.Bytes(s, maxQuoted, ""); len(kept) < len(s) {
		s, more = kept, "…"
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < utf8.RuneSelf:
			q := strconv.Quote(string(r))
			b.WriteString(q[1 : len(q)-1])
		case !unicode.IsPrint(r) || unicode.In(r, unicode.Cf, unicode.Mn, unicode.Me, unicode.Zs, unicode.Co):
			if r > 0xFFFF {
				fmt.Fprintf(&b, `\U%08x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
		i += n
	}
	b.WriteByte('"')
	return b.String() + more
}

// MaxPerMessage is the most recipients one message may have in to, cc and
// bcc together: the Amazon SES quota ("a message can include up to 50
// recipients", SES service quotas).
const MaxPerMessage = 50

// CheckCount returns nil when n recipients in to, cc and bcc together fit
// one message (MaxPerMessage), and otherwise an error saying so.
func CheckCount(n int) error {
	if n > MaxPerMessage {
		return fmt.Errorf("%d recipients in to, cc and bcc together, over the SES quota of %d per message", n, MaxPerMessage)
	}
	return nil
}
