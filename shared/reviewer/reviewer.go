// Package reviewer is who may decide a review: IAM principal ARN patterns,
// their validation and their matching (docs/reviews.md). It links no AWS
// SDK, so that the resolver checks a Solution's reviewers at compile time
// with the very rules review-decision applies at run time.
package reviewer

import (
	"fmt"
	"strings"
)

// MaxReviewers bounds a review's reviewer patterns, and MaxPatternLength
// one pattern (an IAM ARN is at most 2048 characters).
const (
	MaxReviewers     = 100
	MaxPatternLength = 2048
)

// CheckPattern validates one reviewer pattern as the resolver does
// (resolver/solution.go): an IAM principal ARN pattern that starts with
// "arn:" and holds no whitespace; "*" matches any run of characters
// (including none, "/" and ":") and "?" exactly one, as in IAM policies.
func CheckPattern(p string) error {
	switch {
	case !strings.HasPrefix(p, "arn:"):
		return fmt.Errorf("reviewer %q must be an IAM principal ARN pattern (arn:aws:...; * and ? match)", cut(p, 80))
	case strings.ContainsAny(p, " \t\r\n\v\f"):
		return fmt.Errorf("reviewer %q holds whitespace", cut(p, 80))
	case len(p) > MaxPatternLength:
		return fmt.Errorf("reviewer pattern is %d characters, over %d", len(p), MaxPatternLength)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("reviewer %q holds a control character", cut(p, 80))
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

// cut keeps a pattern short enough to quote in a message.
func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
