package platform

import (
	"testing"

	"github.com/toolgate/toolgate/infra/toolfunction"
)

// TestProxyReadsOnlyItsStagesFloors: in the platform template, the proxy's
// role reads the floor of, and invokes, the functions tagged for its stage
// and no other, and tags none (the publish role: TestPublishRequestsAllowed).
func TestProxyReadsOnlyItsStagesFloors(t *testing.T) {
	role := principalStatements(platformJSON)[fnLambdaTool]
	tagged := map[string]string{"aws:ResourceTag/" + toolfunction.TagKey: "test"}
	for _, c := range []struct {
		req     apiRequest
		allowed bool
	}{
		{apiRequest{What: "read a tool function's floor", Action: "lambda:ListTags", Resource: teamFnARN, Context: tagged}, true},
		{apiRequest{What: "invoke it", Action: "lambda:InvokeFunction", Resource: teamFnARN, Context: tagged}, true},
		{apiRequest{What: "read the floor of another stage's tool function", Action: "lambda:ListTags", Resource: teamFnARN,
			Context: map[string]string{"aws:ResourceTag/" + toolfunction.TagKey: "test-2"}}, false},
		{apiRequest{What: "read the tags of an untagged function", Action: "lambda:ListTags", Resource: teamFnARN}, false},
		{apiRequest{What: "relax a tool function's floor", Action: "lambda:TagResource", Resource: teamFnARN, Context: tagged}, false},
		{apiRequest{What: "remove a tool function's floor", Action: "lambda:UntagResource", Resource: teamFnARN, Context: tagged}, false},
		{apiRequest{What: "read the function's configuration", Action: "lambda:GetFunction", Resource: teamFnARN, Context: tagged}, false},
	} {
		if by := apiAllowedBy(role, c.req); (len(by) > 0) != c.allowed {
			t.Errorf("%s: allowed %v, want %v", c.req, len(by) > 0, c.allowed)
		}
	}
}
