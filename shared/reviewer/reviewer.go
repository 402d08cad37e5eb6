package reviewer

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/toolgate/toolgate/shared/excerpt"
)

// MaxReviewers bounds a review's reviewer patterns, and MaxPatternLength
// one pattern (an IAM ARN is at most 2048 characters).
const (
	MaxReviewers     = 100
	MaxPatternLength = 2048
)

// CheckPattern validates one reviewer pattern as the resolver does
// (resolver/solution.go), the CDK app does for directReviewers, and every
// authoring path must: CheckRecorded's shape, and anchored to one account
// (the rule "reviewer-pattern", docs/reviews.md). The pattern must start
// arn:PARTITION:iam::ACCOUNT: or arn:PARTITION:sts::ACCOUNT:, with a
// partition and a 12-digit account written out, and hold no "*" or "?"
// before its resource part: a "*" matches ":" too, so one earlier would
// match principals of any account. The resource part may hold wildcards
// (arn:aws:sts::123456789012:assumed-role/Reviewers/*).
func CheckPattern(p string) error {
	if err := CheckRecorded(p); err != nil {
		return err
	}
	if !anchored.MatchString(p) {
		return &AccountError{Pattern: p}
	}
	return nil
}

// AccountError is CheckPattern's refusal of a pattern that does not name
// one account.
type AccountError struct{ Pattern string }

// Reason is the refusal without the rule's name, for diagnostics that
// print the rule themselves.
func (e *AccountError) Reason() string {
	return fmt.Sprintf("reviewer %q must name its AWS account: start arn:aws:iam::ACCOUNT: or arn:aws:sts::ACCOUNT: with the 12-digit account written out, and no * or ? before the resource part (a * there would match principals of any account)", excerpt.Bytes(e.Pattern, 80, "..."))
}

func (e *AccountError) Error() string { return e.Reason() + " [" + RulePattern + "]" }

// RulePattern is the rule CheckPattern applies, as diagnostics name it.
const RulePattern = "reviewer-pattern"

// anchored is CheckPattern's prefix: arn, a partition (aws, aws-cn,
// aws-us-gov, aws-iso-b, ...), iam or sts, no region, a 12-digit account
// (IAM identifiers, "IAM ARNs"), then a resource part of at least one
// character.
var anchored = regexp.MustCompile(`^arn:aws(-[a-z]+)*:(iam|sts)::[0-9]{12}:.`)

// Account is the AWS account a pattern's prefix names when the prefix
// passes CheckPattern's account rule, else "".
func Account(p string) string {
	if !anchored.MatchString(p) {
		return ""
	}
	return strings.SplitN(p, ":", 6)[4]
}

// CheckRecorded validates the shape every recorded reviewer pattern has:
// an IAM principal ARN pattern that starts with "arn:" and holds no
// whitespace or control character, at most MaxPatternLength characters;
// "*" matches any run of characters (including none, "/" and ":") and "?"
// exactly one, as in IAM policies. review-request takes a review Task's
// patterns by this rule, so that an execution compiled before
// CheckPattern's account rule still runs: its callers are verified
// principals of the deployment's admitted accounts only (shared/caller),
// whatever account a pattern leaves open.
func CheckRecorded(p string) error {
	switch {
	case !strings.HasPrefix(p, "arn:"):
		return fmt.Errorf("reviewer %q must be an IAM principal ARN pattern (arn:aws:...; * and ? match)", excerpt.Bytes(p, 80, "..."))
	case strings.ContainsAny(p, " \t\r\n\v\f"):
		return fmt.Errorf("reviewer %q holds whitespace", excerpt.Bytes(p, 80, "..."))
	case len(p) > MaxPatternLength:
		return fmt.Errorf("reviewer pattern is %d characters, over %d", len(p), MaxPatternLength)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("reviewer %q holds a control character", excerpt.Bytes(p, 80, "..."))
		}
	}
	return nil
}

// Match reports whether principal matches the glob pattern: "*" any run of
// characters, "?" one character, everything else literally and
// case-sensitively (ARNs are case-sensitive). It runs in O(len(pattern) ×
// len(principal)) at worst, never exponentially.
func Match(pattern, principal string) bool {
	p, s := []rune(pattern), []rune(principal)
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			pi++
			si++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
