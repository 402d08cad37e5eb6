package recipient

import (
	"errors"
	"fmt"
	"strings"
)

// List is a parsed allow-list. The zero List allows nothing (default deny).
// A List is immutable and safe for concurrent use.
type List struct {
	// addrs maps an address entry's compare form (local part lower-cased,
	// domain a lower-case A-label) to itself; domains holds the A-label of
	// each "@domain" entry.
	addrs   map[string]bool
	domains map[string]bool
	entries []string // canonical forms, in the order written, without duplicates
}

// ParseList parses allow-list entries, each either a full address
// ("alice@example.com": that mailbox only) or "@domain" ("@example.com":
// every mailbox at exactly that domain, no subdomains). Both follow Parse's
// rules; IDN domains may be written as U-labels or A-labels. It is
// all-or-nothing: the error names the first bad entry, its index from 0,
// and the rule it breaks. No entries give a List that refuses everything.
func ParseList(entries []string) (List, error) {
	l := List{addrs: map[string]bool{}, domains: map[string]bool{}}
	for i, s := range entries {
		canon, isDomain, err := parseEntry(s)
		if err != nil {
			return List{}, fmt.Errorf("recipient allow-list entry %d %s: %s", i, quote(s), err)
		}
		set := l.addrs
		if isDomain {
			set = l.domains
		}
		key := strings.TrimPrefix(canon, "@")
		if !set[key] {
			set[key] = true
			l.entries = append(l.entries, canon)
		}
	}
	return l, nil
}

// ParseCommaList parses an allow-list written as one text, the form a
// deployment gives it in (the TOOLGATE_RECIPIENT_ALLOW variable of the
// send-email and publish functions): entries separated by commas, blanks
// around each ignored. A text with no entry, or with an empty entry (a
// stray comma), is an error, as is any entry ParseList refuses; the error
// names the entry by its index from 0.
func ParseCommaList(text string) (List, error) {
	if strings.TrimSpace(text) == "" {
		return List{}, errors.New("no entries: list the recipients send-email may write to, comma-separated addresses or @domain entries (nothing could be sent otherwise)")
	}
	parts := strings.Split(text, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
		if parts[i] == "" {
			return List{}, fmt.Errorf("entry %d is empty (a stray comma)", i)
		}
	}
	return ParseList(parts)
}

// parseEntry returns an entry's canonical form ("alice@example.com" with the
// local part lower-cased, or "@example.com") and whether it is a domain
// entry; the error is the rule it breaks.
func parseEntry(s string) (string, bool, error) {
	if d, ok := strings.CutPrefix(s, "@"); ok {
		if rule := checkText(s); rule != "" {
			return "", false, ruleError(rule)
		}
		switch {
		case strings.Contains(d, "@"):
			return "", false, ruleError(`an entry is "@domain" or one address`)
		case strings.HasPrefix(d, "*") || strings.HasPrefix(d, "."):
			return "", false, ruleError(`"@domain" matches that exact domain only: subdomains are not matched, list each domain`)
		}
		domain, rule := parseDomain(d)
		if rule != "" {
			return "", false, ruleError(rule)
		}
		return "@" + domain, true, nil
	}
	if strings.HasPrefix(s, "*@") {
		return "", false, ruleError(`write "@domain" to allow every mailbox of a domain`)
	}
	local, domain, rule := parse(s)
	if rule != "" {
		return "", false, ruleError(rule)
	}
	return Address{Local: local, Domain: domain}.Canonical(), false, nil
}

type ruleError string

func (e ruleError) Error() string { return string(e) }

// Entries returns the canonical forms of l's entries in the order written,
// without duplicates: "alice@example.com" (local part lower-cased) and
// "@xn--bcher-kva.example" (domains as lower-case A-labels).
func (l List) Entries() []string { return append([]string(nil), l.entries...) }

// Len returns the number of distinct entries.
func (l List) Len() int { return len(l.entries) }

// Verdict is the outcome of Decide.
type Verdict string

// The three verdicts.
const (
	// Allow: a valid recipient that an entry admits; it may be sent to.
	Allow Verdict = "allow"
	// Refuse: a valid recipient that no entry admits (default deny). The
	// send-email tool reports TOOL_PERMISSION_DENIED.
	Refuse Verdict = "refuse"
	// Invalid: not one bare addr-spec under this package's rules. The
	// send-email tool reports TOOL_INPUT_INVALID.
	Invalid Verdict = "invalid"
)

// Decision is the outcome of Decide for one recipient.
type Decision struct {
	Verdict Verdict
	// Address is the parsed recipient (zero when Invalid); send to
	// Address.Canonical(), the form IAMPatterns match.
	Address Address
	// Entry is the canonical form of the entry that admitted the recipient
	// (Allow only): "alice@example.com" or "@example.com".
	Entry string
	// Reason names the recipient (quoted, with Go escapes) and the rule
	// behind the verdict, safe to show to a caller, for example
	// `recipient "bob@example.com" is not on the allow-list: no entry "bob@example.com" or "@example.com" (default deny)`.
	Reason string
	// Rule is the rule behind the verdict without the recipient or any
	// entry derived from it, for messages that name the recipient by its
	// position only (send-email's refusals: an address in a refusal would
	// reach the Step Functions execution history and the caller's logs).
	Rule string
}

// Decide checks one recipient against l. A recipient that Parse refuses is
// Invalid; a valid one is allowed when an address entry names the same
// mailbox (local part and domain compared case-insensitively, the domain as
// an A-label) or a "@domain" entry names its exact domain, and refused
// otherwise. Decide never fails and never does I/O.
func (l List) Decide(s string) Decision {
	a, err := Parse(s)
	if err != nil {
		return Decision{Verdict: Invalid, Reason: "recipient " + quote(s) + " is not one bare addr-spec: " + err.(*ParseError).Rule,
			Rule: "is not one bare addr-spec: " + err.(*ParseError).Safe()}
	}
	if k := a.Canonical(); l.addrs[k] {
		return Decision{Verdict: Allow, Address: a, Entry: k,
			Reason: fmt.Sprintf("recipient %s is allowed by the address entry %s", quote(s), quote(k)), Rule: "is allowed by an address entry"}
	}
	if l.domains[a.Domain] {
		e := "@" + a.Domain
		return Decision{Verdict: Allow, Address: a, Entry: e,
			Reason: fmt.Sprintf("recipient %s is allowed by the domain entry %s", quote(s), quote(e)), Rule: "is allowed by a domain entry"}
	}
	return Decision{Verdict: Refuse, Address: a,
		Reason: fmt.Sprintf("recipient %s is not on the allow-list: no entry %s or %s (default deny; \"@domain\" entries match that exact domain only)",
			quote(s), quote(a.Canonical()), quote("@"+a.Domain)),
		Rule: "is not on the allow-list (default deny; \"@domain\" entries match that exact domain only)"}
}
