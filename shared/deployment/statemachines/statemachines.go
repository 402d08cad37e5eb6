// Package statemachines finds a deployment's state machines on Step
// Functions by name (shared/deployment.StateMachineName), for the publish
// function, which updates a Solution's state machine when it exists, and
// for `toolgate run`, which starts it. Step Functions has no lookup by
// name: Find lists every page (ListStateMachines, which the Publisher
// policy and the publish role may call, docs/infra.md).
package statemachines

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

// Find returns the ARN of the state machine named name in the client's
// account and region, or "" when there is none. It lists every page with
// the SDK's paginator; an error names the call that failed
// ("list state machines: …").
func Find(ctx context.Context, client sfn.ListStateMachinesAPIClient, name string) (string, error) {
	pages := sfn.NewListStateMachinesPaginator(client, &sfn.ListStateMachinesInput{})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return "", fmt.Errorf("list state machines: %w", err)
		}
		for _, m := range out.StateMachines {
			if aws.ToString(m.Name) == name {
				return aws.ToString(m.StateMachineArn), nil
			}
		}
	}
	return "", nil
}
