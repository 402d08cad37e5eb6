package request

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/excerpt"
	inboundpkg "github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/review"
)

// EnvInboundRole is the inbound-start role's ARN (inboundapi.EnvRole),
// from which the start lane admits inbound and scheduled starts. Unset,
// it admits none.
const EnvInboundRole = inboundapi.EnvRole

// ReasonStartOrigin: a start request's origin is not admitted. Only a
// session of the inbound-start role may give one, and only the origin
// its session name names; that role's sessions must give one; an
// execution named as an inbound or scheduled run (in-, sc-) must give one;
// and an origin never comes with forked_from (docs/identity.md, "Four
// eyes").
const ReasonStartOrigin = "start-origin"

// InboundRole is the inbound-start role, the verified starter of inbound
// and scheduled runs (docs/identity.md, "Four eyes"): its account and its
// name. STS answers its sessions as
// arn:aws:sts::ACCOUNT:assumed-role/NAME/SESSION, without the role's path.
// The zero InboundRole is none: every origin is refused.
type InboundRole struct {
	Account, Name string
}

// roleARN is an IAM role ARN, with an optional path (IAM identifiers,
// "IAM ARNs"; a role name is 1 to 64 of [\w+=,.@-]).
var roleARN = regexp.MustCompile(`^arn:aws[a-z-]*:iam::([0-9]{12}):role/(?:[\w+=,.@-]+/)*([\w+=,.@-]{1,64})$`)

// ParseInboundRole reads EnvInboundRole's value: "" is no role (the zero
// InboundRole); otherwise an IAM role ARN of account (the deployment's,
// caller.EnvAccount), whose name is one of sessionRoles
// (caller.EnvSessionRoles): its session names identify the source or
// schedule, so that each is a starter of its own. The error names the
// variable and the rule.
func ParseInboundRole(v, account string, sessionRoles []string) (InboundRole, error) {
	if v == "" {
		return InboundRole{}, nil
	}
	m := roleARN.FindStringSubmatch(v)
	switch {
	case m == nil:
		return InboundRole{}, fmt.Errorf("%s=%q is not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)", EnvInboundRole, excerpt.Bytes(v, 200, "..."))
	case m[1] != account:
		return InboundRole{}, fmt.Errorf("%s names a role of account %s, not of the deployment's account %s", EnvInboundRole, m[1], account)
	case !slices.Contains(sessionRoles, m[2]):
		return InboundRole{}, fmt.Errorf("%s names role %s, which %s does not list: its session names must count, so that each source and schedule is a starter of its own",
			EnvInboundRole, m[2], caller.EnvSessionRoles)
	}
	return InboundRole{Account: m[1], Name: m[2]}, nil
}

// session returns the session name of id when id is a session of r
// (STS's ARN arn:PARTITION:sts::ACCOUNT:assumed-role/NAME/SESSION), and
// whether it is.
func (r InboundRole) session(id caller.Identity) (string, bool) {
	if r.Name == "" {
		return "", false
	}
	parts := strings.SplitN(id.ARN, ":", 6)
	if len(parts) != 6 || parts[2] != "sts" || parts[4] != r.Account {
		return "", false
	}
	rest, ok := strings.CutPrefix(parts[5], "assumed-role/"+r.Name+"/")
	return rest, ok && rest != ""
}

// inboundName reports whether executionARN's name has the prefix of an
// inbound or scheduled run's (inbound.PrefixInbound,
// inbound.PrefixSchedule: inbound.ExecutionName), which only the
// inbound-start role's sessions record (docs/identity.md, "Four eyes").
func inboundName(executionARN string) bool {
	e, ok := review.ParseExecutionARN(executionARN)
	return ok && (strings.HasPrefix(e.Name, inboundpkg.PrefixInbound) || strings.HasPrefix(e.Name, inboundpkg.PrefixSchedule))
}

// checkOrigin admits req's origin for the verified caller id: an origin
// only from a session of the inbound-start role whose session name is
// the origin's (review.StartOrigin.SessionName) and whose principal is
// that session (the role is a session role), never with forked_from,
// its holders each of the role's account (the deployment's); and a
// session of that role only with an origin; an execution name of an
// inbound or scheduled run (inboundName) only with an origin. Any refusal is
// REVIEW_FORBIDDEN [start-origin], and nothing is recorded.
func (h *Handler) checkOrigin(ctx context.Context, req *review.StartRequest, id caller.Identity) error {
	refuse := func(format string, a ...any) error {
		h.log.WarnContext(ctx, "run start refused: its origin is not admitted", "reason", ReasonStartOrigin, "execution_arn", req.ExecutionARN, "starter", id.Principal)
		return review.Errorf(review.CodeForbidden, format+" [%s]", append(a, ReasonStartOrigin)...)
	}
	session, inbound := h.inbound.session(id)
	switch {
	case req.Origin == nil && !inbound && inboundName(req.ExecutionARN):
		return refuse("execution names starting with %q or %q are inbound and scheduled runs' only (a source's event, a schedule's firing): start the run under another name",
			inboundpkg.PrefixInbound, inboundpkg.PrefixSchedule)
	case req.Origin == nil && !inbound:
		return nil
	case req.Origin == nil:
		return refuse("a session of the inbound-start role starts runs only with an origin (a source's event or a schedule's firing)")
	case !inbound:
		return refuse("only the inbound-start role's sessions start runs with an origin; %s is not one", id.Principal)
	case req.ForkedFrom != "":
		return refuse("an inbound or scheduled run is no fork: origin and forked_from exclude each other")
	case session != req.Origin.SessionName():
		return refuse("the session %s may start runs of %s %s only", excerpt.Bytes(session, 80, "..."), req.Origin.Kind, req.Origin.Name)
	case id.Principal != id.ARN:
		return refuse("the inbound-start role is not a session role (%s): its sessions would share one starter", caller.EnvSessionRoles)
	}
	// The holders are whom four eyes refuse as the run's approvers: each
	// must be a principal of the deployment's account, which alone may
	// hold a source's secret or add a schedule (the sources function
	// verifies its callers against that account).
	for i, holder := range req.Origin.Holders {
		if caller.AccountOf(holder) != h.inbound.Account {
			return refuse("origin holders[%d] is not a principal of the deployment's account", i)
		}
	}
	return nil
}
