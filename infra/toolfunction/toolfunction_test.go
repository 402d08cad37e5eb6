package toolfunction

import (
	"fmt"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/shared/toolfloor"
)

func TestPlaceholderKey(t *testing.T) {
	for tool, want := range map[string]string{"create-ticket": "FunctionCreateTicket", "x": "FunctionX", "a1-b2": "FunctionA1B2"} {
		if got := PlaceholderKey(tool); got != want {
			t.Errorf("%s: %s, want %s", tool, got, want)
		}
	}
}

// A team's tool function: tagged toolgate:tool=<stage> and with the
// strictest floor when its props give none, invokable by the proxy's role
// only, its ARN in /toolgate/<stage>/tool-function/<key>/arn; and the
// proxy's statements invoke, and read the floor of, only functions with
// that tag.
func TestToolFunction(t *testing.T) {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Team"), nil)
	role := "arn:aws:iam::123456789012:role/toolgate-test-lambda-tool"
	New(stack, "CreateTicket", &Props{Stage: "test", Tool: "create-ticket", ProxyRoleARN: jsii.String(role),
		Function: &awslambda.FunctionProps{Runtime: awslambda.Runtime_PROVIDED_AL2023(), Handler: jsii.String("bootstrap"),
			Code: awslambda.Code_FromAsset(jsii.String("testdata/function"), nil)}})
	proxy := awsiam.NewRole(stack, jsii.String("Proxy"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	proxy.AddToPolicy(InvokeStatement("test"))
	proxy.AddToPolicy(FloorsStatement("test"))
	var tpl assertions.Template
	if err := try(func() { tpl = assertions.Template_FromStack(stack, nil) }); err != nil {
		t.Fatal(err)
	}
	for name, check := range map[string]func(){
		"tags": func() {
			tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
				"Tags": []any{
					map[string]any{"Key": "toolgate:duplicates", "Value": "refuse"},
					map[string]any{"Key": "toolgate:idempotent", "Value": "false"},
					map[string]any{"Key": "toolgate:policy", "Value": "at_most_once"},
					map[string]any{"Key": "toolgate:review", "Value": "required"},
					map[string]any{"Key": "toolgate:tool", "Value": "test"},
				},
			})
		},
		"resource policy": func() {
			tpl.ResourceCountIs(jsii.String("AWS::Lambda::Permission"), jsii.Number(1))
			tpl.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), map[string]any{
				"Action": "lambda:InvokeFunction", "Principal": role,
			})
		},
		"parameter": func() {
			tpl.HasResourceProperties(jsii.String("AWS::SSM::Parameter"), map[string]any{
				"Name": "/toolgate/test/tool-function/FunctionCreateTicket/arn",
				"Type": "String",
			})
		},
		"proxy statements": func() {
			tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
				"PolicyDocument": map[string]any{"Statement": []any{
					map[string]any{
						"Sid": "InvokeTaggedToolFunctions", "Effect": "Allow", "Action": "lambda:InvokeFunction",
						"Resource":  map[string]any{"Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:*"},
						"Condition": map[string]any{"StringEquals": map[string]any{"aws:ResourceTag/toolgate:tool": "test"}},
					},
					map[string]any{
						"Sid": "ReadToolFunctionFloors", "Effect": "Allow", "Action": "lambda:ListTags",
						"Resource":  map[string]any{"Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:*"},
						"Condition": map[string]any{"StringEquals": map[string]any{"aws:ResourceTag/toolgate:tool": "test"}},
					},
				}},
			})
		},
	} {
		if err := try(check); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Stages share an account, and a resource policy cannot deny: a stage's
// proxy role may invoke whatever its identity policy allows. So the tag
// names the stage whose proxy may invoke the function, and each stage's
// proxy statement names its own stage: a Publisher of stage dev, who pins
// any Lambda ARN in a toolset, cannot have dev's proxy invoke prod's tool
// functions.
func TestProxyInvokesOnlyItsStagesToolFunctions(t *testing.T) {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Team"), nil)
	New(stack, "CreateTicket", &Props{Stage: "prod", Tool: "create-ticket",
		ProxyRoleARN: jsii.String("arn:aws:iam::123456789012:role/toolgate-prod-lambda-tool"),
		Function: &awslambda.FunctionProps{Runtime: awslambda.Runtime_PROVIDED_AL2023(), Handler: jsii.String("bootstrap"),
			Code: awslambda.Code_FromAsset(jsii.String("testdata/function"), nil)}})
	proxy := awsiam.NewRole(stack, jsii.String("DevProxy"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	proxy.AddToPolicy(InvokeStatement("dev"))
	var tpl assertions.Template
	if err := try(func() { tpl = assertions.Template_FromStack(stack, nil) }); err != nil {
		t.Fatal(err)
	}
	var tag string
	for _, r := range *tpl.FindResources(jsii.String("AWS::Lambda::Function"), nil) {
		for _, kv := range (*r)["Properties"].(map[string]any)["Tags"].([]any) {
			if kv.(map[string]any)["Key"] == TagKey {
				tag = kv.(map[string]any)["Value"].(string)
			}
		}
	}
	var allowed string
	for _, r := range *tpl.FindResources(jsii.String("AWS::IAM::Policy"), nil) {
		for _, s := range (*r)["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			if c, ok := s.(map[string]any)["Condition"].(map[string]any); ok {
				allowed, _ = c["StringEquals"].(map[string]any)["aws:ResourceTag/"+TagKey].(string)
			}
		}
	}
	if tag != "prod" || allowed != "dev" {
		t.Fatalf("prod's tool function is tagged %s=%q and dev's proxy may invoke functions tagged %q: want prod and dev", TagKey, tag, allowed)
	}
}

// TestToolFunctionFloor: New writes props.Floor as the
// function's four floor tags, every key, besides toolgate:tool; the tags
// read back from the template (as the proxy reads ListTags' answer) are
// props.Floor; and the function's role carries no floor tag.
func TestToolFunctionFloor(t *testing.T) {
	for _, c := range []struct {
		name  string
		floor toolfloor.Floor
		want  map[string]string
	}{
		{"zero value: the strictest", toolfloor.Floor{}, map[string]string{
			"toolgate:review": "required", "toolgate:policy": "at_most_once", "toolgate:idempotent": "false", "toolgate:duplicates": "refuse"}},
		// The demo's create-ticket: it honours the idempotency key, so it
		// may run again; a review is the toolset's choice.
		{"create-ticket", toolfloor.Floor{ReviewOptional: true, AtLeastOnce: true, Idempotent: true}, map[string]string{
			"toolgate:review": "optional", "toolgate:policy": "at_least_once", "toolgate:idempotent": "true", "toolgate:duplicates": "refuse"}},
		{"all relaxed", toolfloor.Floor{ReviewOptional: true, AtLeastOnce: true, Idempotent: true, TolerateDuplicates: true}, map[string]string{
			"toolgate:review": "optional", "toolgate:policy": "at_least_once", "toolgate:idempotent": "true", "toolgate:duplicates": "tolerate"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			app := awscdk.NewApp(nil)
			stack := awscdk.NewStack(app, jsii.String("Team"), nil)
			New(stack, "CreateTicket", &Props{Stage: "test", Tool: "create-ticket", Floor: c.floor,
				ProxyRoleARN: jsii.String("arn:aws:iam::123456789012:role/toolgate-test-lambda-tool"),
				Function: &awslambda.FunctionProps{Runtime: awslambda.Runtime_PROVIDED_AL2023(), Handler: jsii.String("bootstrap"),
					Code: awslambda.Code_FromAsset(jsii.String("testdata/function"), nil)}})
			var tpl assertions.Template
			if err := try(func() { tpl = assertions.Template_FromStack(stack, nil) }); err != nil {
				t.Fatal(err)
			}
			tagsOf := func(typ string) map[string]string {
				out := map[string]string{}
				for _, r := range *tpl.FindResources(jsii.String(typ), nil) {
					l, _ := (*r)["Properties"].(map[string]any)["Tags"].([]any)
					for _, kv := range l {
						out[kv.(map[string]any)["Key"].(string)] = kv.(map[string]any)["Value"].(string)
					}
				}
				return out
			}
			want := map[string]string{TagKey: "test"}
			for k, v := range c.want {
				want[k] = v
			}
			got := tagsOf("AWS::Lambda::Function")
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("the function's tags (-want +got):\n%s", d)
			}
			if f, err := toolfloor.FromTags(got); err != nil || f != c.floor {
				t.Fatalf("FloorFromTags of the function's tags = %+v, %v; want %+v", f, err, c.floor)
			}
			if d := cmp.Diff(map[string]string{TagKey: "test"}, tagsOf("AWS::IAM::Role")); d != "" {
				t.Fatalf("the function role's tags (-want +got):\n%s", d)
			}
		})
	}
}

// try runs f and returns what it panicked with as an error: a failed
// assertions.Template assertion is a panic.
func try(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}
