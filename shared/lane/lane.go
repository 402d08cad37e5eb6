// Package lane tells a function which lane an invocation came through:
// "sfn", a Solution's execution (its role may invoke only the sfn alias),
// or "direct", a person calling a tool or review-request themselves (only
// the direct alias); review-request has a third, "start", through which
// toolgate run records an execution's start before it starts it (the
// Publisher policy may invoke that alias only). The lane comes from the alias in the invoked function
// ARN, never from the payload; an invocation through no alias is refused.
// The Lambda Runtime Interface Emulator has no aliases, so the local stack
// runs one instance per lane and names its lane in EnvLane, which the CDK
// app never sets (docs/identity.md).
package lane

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/toolgate/toolgate/shared/excerpt"
)

// Lane is an invocation's lane, named as its alias.
type Lane string

const (
	SFN    Lane = "sfn"    // invoked by a Solution's execution
	Direct Lane = "direct" // invoked by a person (toolgate invoke)
	// Start is review-request's alias for toolgate run's start record
	// (docs/identity.md, "Lanes"): it takes run.start requests only. Only
	// a function that passes it to FromEnv and Of as an extra lane has it.
	Start Lane = "start"
)

// EnvLane fixes the lane of a function instance on the local stack only.
const EnvLane = "TOOLGATE_LANE"

// FromEnv reads EnvLane: "" (take the lane from the alias), "sfn",
// "direct", or one of the function's extra lanes (review-request: Start).
func FromEnv(getenv func(string) string, extra ...Lane) (Lane, error) {
	switch v := Lane(getenv(EnvLane)); {
	case v == "" || v == SFN || v == Direct || slices.Contains(extra, v):
		return v, nil
	default:
		return "", fmt.Errorf("%s=%q is not one of this function's lanes (%s)", EnvLane, v, names(extra))
	}
}

// names lists sfn, direct and extra, for messages.
func names(extra []Lane) string {
	out := []string{string(SFN), string(Direct)}
	for _, l := range extra {
		out = append(out, string(l))
	}
	return strings.Join(out, ", ")
}

// Of returns the invocation's lane: fixed when set (the local stack), else
// the alias of the invoked function ARN
// (arn:PARTITION:lambda:REGION:ACCOUNT:function:NAME:ALIAS): sfn, direct,
// or one of extra, the function's own further lanes (review-request:
// Start). An invocation without an alias, or through another qualifier,
// is an error.
func Of(ctx context.Context, fixed Lane, extra ...Lane) (Lane, error) {
	if fixed != "" {
		return fixed, nil
	}
	lc, ok := lambdacontext.FromContext(ctx)
	if !ok {
		return "", fmt.Errorf("no Lambda context: the lane is unknown")
	}
	parts := strings.Split(lc.InvokedFunctionArn, ":")
	if len(parts) != 8 || parts[5] != "function" {
		return "", fmt.Errorf("this function was invoked through no alias: invoke its %s alias (Solutions) or its %s alias (people)", SFN, Direct)
	}
	if l := Lane(parts[7]); l == SFN || l == Direct || slices.Contains(extra, l) {
		return l, nil
	}
	return "", fmt.Errorf("this function was invoked through qualifier %q: invoke its %s alias (Solutions) or its %s alias (people)", excerpt.Bytes(parts[7], 40, "..."), SFN, Direct)
}

// DirectRunPrefix is the namespace of a direct-lane caller's run ids:
// "direct/" + the caller's ARN as STS answers it (caller.Identity.ARN, which
// the caller can learn itself with caller.WhoAmI), path-escaped, + "/". The
// escaping keeps namespaces apart: an IAM user's path may hold "/", so
// without it user "ops" would own the prefix of user "ops/alice"'s run ids.
// With it an escaped ARN holds no "/", and no namespace is the prefix of
// another. No execution's run id (an execution ARN, "arn:...") starts with
// "direct/".
func DirectRunPrefix(arn string) string { return "direct/" + url.PathEscape(arn) + "/" }

// IsDirectRunID reports whether a run id is in the direct lane's namespace.
func IsDirectRunID(runID string) bool { return strings.HasPrefix(runID, "direct/") }
