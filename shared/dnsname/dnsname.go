package dnsname

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Limits of a name, in octets of its A-label form.
const (
	// MaxLabel is the longest label (RFC 1035 §2.3.4).
	MaxLabel = 63
	// MaxName is the longest name without a trailing dot (RFC 1035 §2.3.4:
	// 255 octets on the wire, 253 as text without the root dot).
	MaxName = 253
)

// Rule is a rule of a host name that Parse found broken; Error.Rule holds
// it, so that a caller can word each rule in its own terms.
type Rule int

// The rules Parse checks. It checks them in this order, the three label
// rules label by label.
const (
	// EmptyLabel: a label of no octets, from a leading dot, two dots in a
	// row, a trailing dot or an empty name (RFC 1035 §2.3.1).
	EmptyLabel Rule = iota + 1
	// NotRegistrable: a name holding non-ASCII characters that the IDNA2008
	// profile refuses to convert to A-labels (RFC 5891 §4; Error.Err says
	// why). With a profile that applies no mapping, this includes anything
	// UTS #46 would map, remove or normalise.
	NotRegistrable
	// NameTooLong: more than MaxName octets in A-label form (RFC 1035
	// §2.3.4; Error.Name is the A-label form).
	NameTooLong
	// LabelTooLong: a label of more than MaxLabel octets in A-label form
	// (RFC 1035 §2.3.4; Error.Label is the label).
	LabelTooLong
	// HyphenAtEdge: a label starting or ending with a hyphen (RFC 1123 §2.1,
	// RFC 5891 §4.2.3.1; Error.Label is the label).
	HyphenAtEdge
	// NotLDH: an octet other than an ASCII letter, digit or hyphen in the
	// A-label form (RFC 1034 §3.5, RFC 1123 §2.1; Error.Char is the octet).
	NotLDH
	// InvalidALabel: a label the IDNA2008 profile cannot turn into a valid
	// U-label, such as bad Punycode after "xn--" or a reserved "ab--" label
	// (RFC 5890 §2.3.1, RFC 5891 §5.4; Error.Err says why).
	InvalidALabel
	// NoRoundTrip: an A-label that does not come back unchanged from its
	// U-label (RFC 5891 §5.4).
	NoRoundTrip
)

// Error is the error of Parse: the rule a name breaks and what it broke it
// with. Its message names the rule and its RFC, in lower case without a
// full stop; a caller that words rules its own way switches on Rule.
type Error struct {
	// Rule is the rule broken; never 0.
	Rule Rule
	// Name is the name the rule was found in: the input for the checks made
	// before conversion (EmptyLabel, NotRegistrable), its lower-case A-label
	// form for those made after.
	Name string
	// Label is the offending label (LabelTooLong, HyphenAtEdge), in A-label
	// form; "" for the other rules.
	Label string
	// Char is the offending octet (NotLDH only).
	Char byte
	// Err is the IDNA profile's error (NotRegistrable, InvalidALabel, and
	// NoRoundTrip when re-encoding failed), nil otherwise.
	Err error
}

// Error returns the rule, for example
// `label "-a" starts or ends with a hyphen (RFC 1123)`.
func (e *Error) Error() string {
	switch e.Rule {
	case EmptyLabel:
		return "empty label"
	case NotRegistrable:
		return fmt.Sprintf("not a valid internationalized name in lower-case nfc form (RFC 5891): %v", e.Err)
	case NameTooLong:
		return fmt.Sprintf("name is longer than %d octets (RFC 1035)", MaxName)
	case LabelTooLong:
		return fmt.Sprintf("label %q is longer than %d octets (RFC 1035)", e.Label, MaxLabel)
	case HyphenAtEdge:
		return fmt.Sprintf("label %q starts or ends with a hyphen (RFC 1123)", e.Label)
	case NotLDH:
		return fmt.Sprintf("character %q is not allowed in a host name (letters, digits and hyphens only, RFC 1123)", e.Char)
	case InvalidALabel:
		return fmt.Sprintf("invalid label (RFC 5890, RFC 5891): %v", e.Err)
	case NoRoundTrip:
		return "a-label does not round-trip through its u-label (RFC 5891 §5.4)"
	}
	return fmt.Sprintf("dnsname rule %d", int(e.Rule))
}

// Unwrap returns the IDNA profile's error, if any.
func (e *Error) Unwrap() error { return e.Err }

// Parse checks name, a host name without a trailing dot, and returns it as
// lower-case A-labels: at most MaxName octets, labels of 1–MaxLabel ASCII
// letters, digits and inner hyphens, every "xn--" label a valid A-label.
// ASCII letters are folded to lower case; a name with any other character
// goes through profile's ToASCII, which should be a registration profile
// (idna.Registration, or idna.New with idna.ValidateForRegistration) so that
// it refuses what it would otherwise map. Whether profile verifies DNS
// lengths only changes which Rule a too-long internationalized name breaks
// (NotRegistrable or a length rule), not whether it is accepted.
//
// The error is an *Error naming the first rule name breaks, in the order of
// the Rule constants (the label rules label by label); the result is "" with
// it.
func Parse(profile *idna.Profile, name string) (string, error) {
	for label := range strings.SplitSeq(name, ".") {
		if label == "" {
			return "", &Error{Rule: EmptyLabel, Name: name}
		}
	}
	a := LowerASCII(name)
	if !isASCII(a) {
		reg, err := profile.ToASCII(a)
		if err != nil {
			return "", &Error{Rule: NotRegistrable, Name: name, Err: err}
		}
		a = reg
	}
	if err := checkLDH(a); err != nil {
		return "", err
	}
	// RFC 5891 §5.4: an A-label must convert to a valid U-label and back to
	// itself; this also refuses reserved "ab--" labels (RFC 5890 §2.3.1).
	u, err := profile.ToUnicode(a)
	if err != nil {
		return "", &Error{Rule: InvalidALabel, Name: a, Err: err}
	}
	if back, err := profile.ToASCII(u); err != nil || back != a {
		return "", &Error{Rule: NoRoundTrip, Name: a, Err: err}
	}
	return a, nil
}

// checkLDH checks an ASCII name against the lengths of RFC 1035 §2.3.4 and
// the LDH rule of RFC 1123 §2.1.
func checkLDH(name string) *Error {
	if len(name) > MaxName {
		return &Error{Rule: NameTooLong, Name: name}
	}
	for label := range strings.SplitSeq(name, ".") {
		switch {
		case label == "":
			return &Error{Rule: EmptyLabel, Name: name}
		case len(label) > MaxLabel:
			return &Error{Rule: LabelTooLong, Name: name, Label: label}
		case label[0] == '-' || label[len(label)-1] == '-':
			return &Error{Rule: HyphenAtEdge, Name: name, Label: label}
		}
		for i := range len(label) {
			if c := label[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return &Error{Rule: NotLDH, Name: name, Char: c}
			}
		}
	}
	return nil
}

// LowerASCII returns s with the ASCII letters A–Z lower-cased and every
// other byte, valid UTF-8 or not, unchanged: DNS names compare
// case-insensitively in ASCII only (RFC 4343); other case is the IDNA
// profile's to refuse. It returns s itself when there is nothing to fold.
func LowerASCII(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return 'A' <= r && r <= 'Z' })
	if i < 0 {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if c := b[i]; 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
