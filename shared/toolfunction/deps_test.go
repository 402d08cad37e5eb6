package toolfunction_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/functionconfig"
)

// The tool functions record webhook events (shared/webhook/outbox) without
// linking the SQS client, which none of them calls: the relay sends what
// they record (docs/webhooks.md), and no tool function links a service
// client it does not call (docs/performance.md). Only the two whose tools
// present credentials (http, mcp-call) link the KMS client.
func TestToolFunctionsLinkNoQueueClient(t *testing.T) {
	for _, name := range functionconfig.ToolFunctions {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "../../functions/"+name).CombinedOutput()
			if err != nil {
				t.Fatalf("go list -deps: %v\n%s", err, out)
			}
			deps := strings.Fields(string(out))
			if !slices.Contains(deps, "github.com/toolgate/toolgate/shared/webhook/outbox") {
				t.Errorf("functions/%s does not link shared/webhook/outbox: its dispatcher records no webhook event", name)
			}
			for _, dep := range deps {
				switch {
				case strings.HasPrefix(dep, "github.com/aws/aws-sdk-go-v2/service/sqs"):
					t.Errorf("functions/%s links %s", name, dep)
				case strings.HasPrefix(dep, "github.com/aws/aws-sdk-go-v2/service/kms") && name != "http" && name != "mcp-call":
					t.Errorf("functions/%s links %s", name, dep)
				case dep == "github.com/toolgate/toolgate/shared/webhook/store":
					t.Errorf("functions/%s links shared/webhook/store (and with it the SQS and KMS clients)", name)
				}
			}
		})
	}
}
