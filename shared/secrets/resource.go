package secrets

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
)

// The custom resource's properties (infra: Custom::LedgerSecrets).
const (
	// PropSecrets lists the SecureString parameters to create.
	PropSecrets = "Secrets"
	// PropSince names the since parameter.
	PropSince = "Since"
)

// CustomResource is the provisioning function's CloudFormation custom
// resource (functions/ledger-secrets): on Create and Update it runs
// Ensure on the event's properties (PropSecrets, a list of parameter
// names; PropSince, a name), each under one "/toolgate/<stage>/secret/"
// prefix, with now() as the since time; on Delete it does nothing. The
// parameters are kept when the resource goes: records and bindings sealed
// under a secret must stay verifiable for the ledger's retention, and a
// stack deployed again must find the same secrets and since time
// (docs/ledger.md, "Records are sealed by the function that writes
// them"). The physical id is the since parameter's name, so an Update
// never replaces the resource. Its data holds no value, only the count
// created.
func CustomResource(api PutAPI, now func() time.Time) cfn.CustomResourceFunction {
	return func(ctx context.Context, e cfn.Event) (string, map[string]any, error) {
		p, err := provisionOf(e.ResourceProperties)
		if err != nil {
			return e.PhysicalResourceID, nil, err
		}
		if e.RequestType == cfn.RequestDelete {
			return p.Since, nil, nil
		}
		p.Now = now()
		created, err := Ensure(ctx, api, p)
		if err != nil {
			return p.Since, nil, err
		}
		return p.Since, map[string]any{"Created": len(created)}, nil
	}
}

// provisionOf reads and checks the custom resource's properties.
func provisionOf(props map[string]any) (Provision, error) {
	since, _ := props[PropSince].(string)
	if !paramName.MatchString(since) || !strings.Contains(since, "/secret/") {
		return Provision{}, errors.New("ledger secrets: Since must name a parameter under /toolgate/<stage>/secret/")
	}
	prefix := since[:strings.Index(since, "/secret/")+len("/secret/")]
	list, _ := props[PropSecrets].([]any)
	if len(list) == 0 {
		return Provision{}, errors.New("ledger secrets: Secrets must list parameter names")
	}
	p := Provision{Since: since}
	for i, v := range list {
		n, _ := v.(string)
		if !paramName.MatchString(n) || !strings.HasPrefix(n, prefix) {
			return Provision{}, fmt.Errorf("ledger secrets: Secrets[%d] is not a parameter under %s", i, prefix)
		}
		p.Secrets = append(p.Secrets, n)
	}
	return p, nil
}
