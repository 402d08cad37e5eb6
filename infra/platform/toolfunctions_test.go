package platform

import (
	"slices"
	"testing"

	"github.com/toolgate/toolgate/shared/functionconfig"
)

// The functions the deploy gives a ledger MAC key (functionSpecs marked
// Tool) are the ones the local stack and make size provision one for
// (functionconfig.ToolFunctions): a tool function added to one list and not the
// other would stop at cold start on one of them.
func TestToolFunctionsAreTheSecretsList(t *testing.T) {
	var tools []string
	for _, spec := range functionSpecs {
		if spec.Tool {
			tools = append(tools, spec.Name)
		}
	}
	want := slices.Sorted(slices.Values(functionconfig.ToolFunctions))
	if slices.Sort(tools); !slices.Equal(tools, want) {
		t.Fatalf("functionSpecs marked Tool %v, functionconfig.ToolFunctions %v", tools, want)
	}
}
