package lane

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// No direct-lane namespace is the prefix of another's, even where one
// caller's ARN is a prefix of another's (IAM paths hold "/"), and none
// holds an execution's run id.
func TestDirectRunPrefixesNeverNest(t *testing.T) {
	arns := []string{
		"arn:aws:iam::123456789012:user/ops",
		"arn:aws:iam::123456789012:user/ops/alice",
		"arn:aws:iam::123456789012:user/ops%2Falice",
		"arn:aws:sts::123456789012:assumed-role/editors/alice",
		"arn:aws:sts::123456789012:assumed-role/editors",
	}
	for _, a := range arns {
		for _, b := range arns {
			if a != b && strings.HasPrefix(DirectRunPrefix(b), DirectRunPrefix(a)) {
				t.Errorf("%s's namespace %q holds %s's %q", a, DirectRunPrefix(a), b, DirectRunPrefix(b))
			}
		}
		if !IsDirectRunID(DirectRunPrefix(a)+"x") || IsDirectRunID("arn:aws:states:us-east-1:123456789012:execution:m:"+DirectRunPrefix(a)) {
			t.Errorf("%s: the direct namespace is not told from executions' run ids", a)
		}
	}
}

func TestOfTakesTheLaneFromTheAliasOnly(t *testing.T) {
	for arn, want := range map[string]Lane{
		"arn:aws:lambda:us-east-1:123456789012:function:toolgate-prod-send-email:sfn":     SFN,
		"arn:aws:lambda:us-east-1:123456789012:function:toolgate-prod-send-email:direct":  Direct,
		"arn:aws:lambda:us-east-1:123456789012:function:toolgate-prod-send-email":         "",
		"arn:aws:lambda:us-east-1:123456789012:function:toolgate-prod-send-email:$LATEST": "",
		"arn:aws:lambda:us-east-1:123456789012:function:toolgate-prod-send-email:7":       "",
		"arn:aws:lambda:us-east-1:123456789012:function:toolgate-prod-send-email:SFN":     "",
	} {
		ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{InvokedFunctionArn: arn})
		got, err := Of(ctx, "")
		if got != want || (want == "") != (err != nil) {
			t.Errorf("%s: %q %v, want %q", arn, got, err, want)
		}
	}
	if _, err := Of(context.Background(), ""); err == nil {
		t.Error("no Lambda context: a lane")
	}
	if got, err := Of(context.Background(), Direct); got != Direct || err != nil {
		t.Errorf("a fixed lane: %q %v", got, err)
	}
	if _, err := FromEnv(func(string) string { return "both" }); err == nil {
		t.Error("TOOLGATE_LANE=both accepted")
	}
}

// The start alias is a lane only of the function that names it (review-
// request): a tool function invoked through an alias "start", or told
// TOOLGATE_LANE=start, refuses the invocation.
func TestStartIsALaneOnlyWhereNamed(t *testing.T) {
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{
		InvokedFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:toolgate-prod-review-request:start"})
	if got, err := Of(ctx, ""); err == nil {
		t.Errorf("a function without the start lane took %q", got)
	}
	if got, err := Of(ctx, "", Start); got != Start || err != nil {
		t.Errorf("review-request's start alias: %q %v", got, err)
	}
	env := func(string) string { return "start" }
	if _, err := FromEnv(env); err == nil {
		t.Error("TOOLGATE_LANE=start accepted by a function without the start lane")
	}
	if got, err := FromEnv(env, Start); got != Start || err != nil {
		t.Errorf("TOOLGATE_LANE=start: %q %v", got, err)
	}
}
