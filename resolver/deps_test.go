package resolver

import (
	"os/exec"
	"strings"
	"testing"
)

// The compiler packages (the resolver, Gate A and the workflow-validator
// tool that runs them) link no AWS service SDK: compiling a Solution needs
// none, and the workflow-validator function stays small (the
// review patterns it checks live in the SDK-free shared/reviewer). Nor do
// they link the tools themselves: the tools' rules that check applies to
// literals are SDK-free packages both call (shared/recipient,
// shared/mailheader, shared/fetchurl), not the fetch tool's HTTP client or
// send-email's SES client.
func TestCompilerLinksNoAWSServiceSDK(t *testing.T) {
	tools := map[string]bool{
		"github.com/toolgate/toolgate/shared/fetch":     true,
		"github.com/toolgate/toolgate/shared/sendemail": true,
	}
	for _, pkg := range []string{".", "./gate", "../functions/workflow-validator/validator"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.Contains(dep, "github.com/aws/aws-sdk-go-v2/service/") || tools[dep] {
				t.Errorf("%s links %s", pkg, dep)
			}
		}
	}
}
