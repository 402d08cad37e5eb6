package review

import (
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/shared/reviewer"
)

// Authorization is the outcome of Authorize.
type Authorization struct {
	Allowed bool
	Reason  string
}

// Authorize decides whether caller may read and decide a review with the
// given reviewer patterns: anyone who reached the decision function when
// the review names none, else only a caller whose principal matches one.
// A caller without a principal is never allowed.
func Authorize(reviewers []string, caller Caller) Authorization {
	if caller.Principal == "" {
		return Authorization{Reason: "the caller has no principal"}
	}
	if len(reviewers) == 0 {
		return Authorization{Allowed: true, Reason: "the review names no reviewers"}
	}
	for _, p := range reviewers {
		if reviewer.Match(p, caller.Principal) {
			return Authorization{Allowed: true, Reason: "matches reviewer " + p}
		}
	}
	return Authorization{Reason: fmt.Sprintf("%s matches none of the review's reviewers (%s)", caller.Principal, strings.Join(reviewers, ", "))}
}
