package caller

import (
	"fmt"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/shared/excerpt"
)

// Identity is a verified caller.
type Identity struct {
	// ARN is the caller as STS answered: for a role session
	// arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION (STS leaves out the
	// role's path).
	ARN string
	// Principal is who the caller is for toolgate: what reviewer patterns
	// match, what is recorded as requester and approver, and what direct
	// run ids are named after. For a role session it is the role,
	// arn:aws:iam::ACCOUNT:role/ROLE, unless the role is one of the
	// configured session roles, whose session names identify a person;
	// then it is the session ARN. IAM users are their ARN. Federated users
	// and the root user are refused.
	Principal string
	Account   string
}

// identity maps STS's ARN to an Identity.
func (v *Verifier) identity(arn string) (Identity, error) {
	return IdentityOf(arn, v.sessionRoles)
}

// IdentityOf maps an ARN GetCallerIdentity answered to an Identity, given
// the role names whose session names count. ARNs are
// arn:PARTITION:SERVICE::ACCOUNT:RESOURCE (IAM identifiers, "IAM ARNs").
func IdentityOf(arn string, sessionRoles []string) (Identity, error) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[1] == "" || parts[3] != "" || parts[4] == "" ||
		len(arn) > 2048 || strings.ContainsFunc(arn, func(r rune) bool { return r <= 0x20 || r == 0x7f }) {
		return Identity{}, refuse(Unsupported, "STS answered %q, which is not an IAM ARN", excerpt.Bytes(arn, 100, "..."))
	}
	partition, service, account, resource := parts[1], parts[2], parts[4], parts[5]
	id := Identity{ARN: arn, Account: account, Principal: arn}
	switch {
	case service == "sts" && strings.HasPrefix(resource, "assumed-role/"):
		rest := strings.TrimPrefix(resource, "assumed-role/")
		role, session, ok := strings.Cut(rest, "/")
		if !ok || role == "" || session == "" {
			return Identity{}, refuse(Unsupported, "STS answered %q, an assumed role without a session", excerpt.Bytes(arn, 100, "..."))
		}
		if !slices.Contains(sessionRoles, role) {
			id.Principal = fmt.Sprintf("arn:%s:iam::%s:role/%s", partition, account, role)
		}
	case service == "sts" && strings.HasPrefix(resource, "federated-user/"):
		// The IAM user who calls GetFederationToken chooses the name, as a
		// session name is chosen: it identifies nobody.
		return Identity{}, refuse(Unsupported, "federated users (GetFederationToken) may not call toolgate's functions: their names are chosen by whoever federates them; use an IAM role")
	case service == "iam" && strings.HasPrefix(resource, "user/"):
	case service == "iam" && resource == "root":
		return Identity{}, refuse(Unsupported, "the account's root user may not call toolgate's functions: use an IAM role")
	default:
		return Identity{}, refuse(Unsupported, "STS answered %q, an identity toolgate does not accept", excerpt.Bytes(arn, 100, "..."))
	}
	return id, nil
}
