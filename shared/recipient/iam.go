package recipient

import "strings"

// iamLiteral writes the characters IAM's StringLike reads specially as IAM's
// policy variables for the literal characters: "*" and "?" are wildcards,
// and "$" may start a policy variable (IAM User Guide, "IAM policy elements:
// Variables and tags", special characters ${*}, ${?}, ${$}). All three are
// atext (RFC 5322 §3.2.3), so a local part may hold them; a domain never
// does.
var iamLiteral = strings.NewReplacer("$", "${$}", "*", "${*}", "?", "${?}")

// IAMPatterns returns l's entries as the values of the condition
// ForAllValues:StringLike on ses:Recipients that send-email's role carries:
// an address entry as its canonical form ("bob@example.org"), a "@domain"
// entry as "*@domain" ("*@xn--bcher-kva.example"), in the order of Entries.
// IAM compares case-sensitively, so the patterns match exactly the
// canonical forms (Address.Canonical) of the recipients Decide allows:
// send-email gives SES its recipients in that form. The characters StringLike
// reads specially are written as the policy variables that stand for them,
// so an entry "a*b@example.com" admits that one mailbox and no other.
// The zero List gives no patterns.
func (l List) IAMPatterns() []string {
	out := make([]string, 0, len(l.entries))
	for _, e := range l.entries {
		if d, ok := strings.CutPrefix(e, "@"); ok {
			out = append(out, "*@"+d)
		} else {
			out = append(out, iamLiteral.Replace(e))
		}
	}
	return out
}
