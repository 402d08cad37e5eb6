package main

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

func TestToolFunctionKey(t *testing.T) {
	for tool, want := range map[string]string{"create-ticket": "FunctionCreateTicket", "x": "FunctionX", "a1-b2": "FunctionA1B2"} {
		if got := ToolFunctionKey(tool); got != want {
			t.Errorf("%s: %s, want %s", tool, got, want)
		}
	}
}

// A team's tool function: tagged toolgate:tool=<stage>, invokable by the
// proxy's role only, its ARN in /toolgate/<stage>/tool-function/<key>/arn;
// and the proxy's statement invokes only functions with that tag.
func TestToolFunction(t *testing.T) {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Team"), nil)
	role := "arn:aws:iam::123456789012:role/toolgate-test-lambda-tool"
	NewToolFunction(stack, "CreateTicket", &ToolFunctionProps{Stage: "test", Tool: "create-ticket", ProxyRoleARN: jsii.String(role),
		Function: &awslambda.FunctionProps{Runtime: awslambda.Runtime_PROVIDED_AL2023(), Handler: jsii.String("bootstrap"),
			Code: awslambda.Code_FromAsset(jsii.String("testdata/assets/workflow-validator"), nil)}})
	proxy := awsiam.NewRole(stack, jsii.String("Proxy"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	proxy.AddToPolicy(toolFunctionInvoke("test"))
	var tpl assertions.Template
	if err := try(func() { tpl = assertions.Template_FromStack(stack, nil) }); err != nil {
		t.Fatal(err)
	}
	for name, check := range map[string]func(){
		"tag": func() {
			tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
				"Tags": assertions.Match_ArrayWith(&[]any{map[string]any{"Key": "toolgate:tool", "Value": "test"}}),
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
		"proxy statement": func() {
			tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
				"PolicyDocument": map[string]any{"Statement": []any{map[string]any{
					"Sid": "InvokeTaggedToolFunctions", "Effect": "Allow", "Action": "lambda:InvokeFunction",
					"Resource":  map[string]any{"Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:*"},
					"Condition": map[string]any{"StringEquals": map[string]any{"aws:ResourceTag/toolgate:tool": "test"}},
				}}},
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
	NewToolFunction(stack, "CreateTicket", &ToolFunctionProps{Stage: "prod", Tool: "create-ticket",
		ProxyRoleARN: jsii.String("arn:aws:iam::123456789012:role/toolgate-prod-lambda-tool"),
		Function: &awslambda.FunctionProps{Runtime: awslambda.Runtime_PROVIDED_AL2023(), Handler: jsii.String("bootstrap"),
			Code: awslambda.Code_FromAsset(jsii.String("testdata/assets/workflow-validator"), nil)}})
	proxy := awsiam.NewRole(stack, jsii.String("DevProxy"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	proxy.AddToPolicy(toolFunctionInvoke("dev"))
	var tpl assertions.Template
	if err := try(func() { tpl = assertions.Template_FromStack(stack, nil) }); err != nil {
		t.Fatal(err)
	}
	var tag string
	for _, r := range *tpl.FindResources(jsii.String("AWS::Lambda::Function"), nil) {
		for _, kv := range (*r)["Properties"].(map[string]any)["Tags"].([]any) {
			if kv.(map[string]any)["Key"] == ToolTagKey {
				tag = kv.(map[string]any)["Value"].(string)
			}
		}
	}
	var allowed string
	for _, r := range *tpl.FindResources(jsii.String("AWS::IAM::Policy"), nil) {
		for _, s := range (*r)["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			if c, ok := s.(map[string]any)["Condition"].(map[string]any); ok {
				allowed, _ = c["StringEquals"].(map[string]any)["aws:ResourceTag/"+ToolTagKey].(string)
			}
		}
	}
	if tag != "prod" || allowed != "dev" {
		t.Fatalf("prod's tool function is tagged %s=%q and dev's proxy may invoke functions tagged %q: want prod and dev", ToolTagKey, tag, allowed)
	}
}
