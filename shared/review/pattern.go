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
// given reviewer patterns: when the review names none, any principal of
// home, the deployment's own account, who reached the decision function
// (never one of the organisation's other reviewer accounts, which only
// patterns naming them admit: docs/reviews.md); else only a caller whose
// principal matches one; a pattern that does not name one account
// (reviewer.CheckPattern: recorded by an execution compiled before the rule)
// matches principals of home only. A caller without a principal is never allowed,
// nor, for an empty list, one without an account or with an empty home.
func Authorize(reviewers []string, caller Caller, home string) Authorization {
	if caller.Principal == "" {
		return Authorization{Reason: "the caller has no principal"}
	}
	if len(reviewers) == 0 {
		if home == "" || caller.Account != home {
			return Authorization{Reason: fmt.Sprintf("the review names no reviewers, which admits principals of the deployment's own account only, and %s is not one", caller.Principal)}
		}
		return Authorization{Allowed: true, Reason: "the review names no reviewers, and the caller belongs to the deployment's account"}
	}
	for _, p := range reviewers {
		// A pattern that does not name one account (recorded before
		// reviewer.CheckPattern required it) admits principals of home only:
		// adding a reviewer account must not let its roles of the same name
		// decide reviews of Solutions compiled before.
		if reviewer.CheckPattern(p) != nil && (home == "" || caller.Account != home) {
			continue
		}
		if reviewer.Match(p, caller.Principal) {
			return Authorization{Allowed: true, Reason: "matches reviewer " + p}
		}
	}
	return Authorization{Reason: fmt.Sprintf("%s matches none of the review's reviewers (%s)", caller.Principal, strings.Join(reviewers, ", "))}
}
