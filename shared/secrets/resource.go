package secrets

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/cfn"

	"github.com/toolgate/toolgate/shared/functionconfig"
)

// The custom resource's properties (functionconfig.PropSecrets and
// PropSince, which infra/platform writes).
const (
	PropSecrets = functionconfig.PropSecrets
	PropSince   = functionconfig.PropSince
)

// CustomResource is the provisioning function's CloudFormation custom
// resource (functions/ledger-secrets): on Create and Update it runs
// Ensure on the event's properties (PropSecrets, a list of parameter
// names; PropSince, a name; either may be absent, not both), each under
// one "/toolgate/<stage>/secret/" prefix, with now() as the since time;
// on Delete it does nothing. A resource naming only PropSince writes the
// since time and nothing else. The parameters are kept when the resource
// goes: records and bindings sealed under a secret must stay verifiable
// for the ledger's retention, and a stack deployed again must find the
// same secrets and since time (docs/ledger.md, "Records are sealed by the
// function that writes them"). The physical id is given on Create (the
// since parameter's name when the resource names one, else the prefix)
// and kept on every Update, so an Update never replaces the resource. Its
// data holds no value, only the count created.
func CustomResource(api PutAPI, now func() time.Time) cfn.CustomResourceFunction {
	return func(ctx context.Context, e cfn.Event) (string, map[string]any, error) {
		p, id, err := provisionOf(e.ResourceProperties)
		if e.RequestType != cfn.RequestCreate && e.PhysicalResourceID != "" {
			id = e.PhysicalResourceID
		}
		if e.RequestType == cfn.RequestDelete {
			// Never fails: a resource CloudFormation cannot delete would
			// hold the stack; the parameters stay.
			return id, nil, nil
		}
		if err != nil {
			return id, nil, err
		}
		p.Now = now()
		created, err := Ensure(ctx, api, p)
		if err != nil {
			return id, nil, err
		}
		return id, map[string]any{"Created": len(created)}, nil
	}
}

// provisionOf reads and checks the custom resource's properties: the
// Provision and the physical id a Create gives (the since parameter's
// name, else the prefix).
func provisionOf(props map[string]any) (Provision, string, error) {
	since, hasSince := props[PropSince].(string)
	list, _ := props[PropSecrets].([]any)
	if !hasSince && len(list) == 0 {
		return Provision{}, "", errors.New("ledger secrets: name the Secrets to create, or the Since parameter")
	}
	var names []string
	for i, v := range list {
		n, _ := v.(string)
		if !paramName.MatchString(n) || !strings.Contains(n, "/secret/") {
			return Provision{}, "", fmt.Errorf("ledger secrets: Secrets[%d] is not a parameter under /toolgate/<stage>/secret/", i)
		}
		names = append(names, n)
	}
	if hasSince && (!paramName.MatchString(since) || !strings.Contains(since, "/secret/")) {
		return Provision{}, "", errors.New("ledger secrets: Since must name a parameter under /toolgate/<stage>/secret/")
	}
	first := since
	if !hasSince {
		first = names[0]
	}
	prefix := first[:strings.Index(first, "/secret/")+len("/secret/")]
	for i, n := range names {
		if !strings.HasPrefix(n, prefix) {
			return Provision{}, "", fmt.Errorf("ledger secrets: Secrets[%d] is not a parameter under %s", i, prefix)
		}
	}
	p := Provision{Secrets: names}
	id := prefix
	if hasSince {
		p.Since, id = since, since
	}
	return p, id, nil
}
