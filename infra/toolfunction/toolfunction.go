package main

import (
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsssm"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/toolgate/toolgate/shared/platformtool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// ToolTagKey marks a Lambda function as a toolgate platform tool of a
// stage: the tag's value is the stage whose platform tools' proxy
// (functions/lambda-tool) may invoke it, the proxy invokes only functions
// tagged with its own stage (aws:ResourceTag/toolgate:tool), and
// NewToolFunction sets it (docs/infra.md, "Platform tools"). Stages share
// an account and a resource policy cannot deny, so a value shared by every
// stage would let one stage's proxy invoke another stage's functions.
const ToolTagKey = platformtool.TagTool

// toolFunctionInvoke is the proxy role's one Lambda statement:
// lambda:InvokeFunction on this account's and region's functions (and
// their aliases and versions) that are tagged ToolTagKey=stage.
func toolFunctionInvoke(stage string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:     jsii.String("InvokeTaggedToolFunctions"),
		Actions: jsii.Strings("lambda:InvokeFunction"),
		Resources: &[]*string{
			sub("arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:*"),
		},
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"aws:ResourceTag/" + ToolTagKey: stage},
		},
	})
}

// toolFunctionFloors is the statement that reads a platform tool
// function's floor (platformtool.FloorFromTags): lambda:ListTags on this
// account's and region's functions that are tagged ToolTagKey=stage, the
// functions the stage's proxy may invoke. The proxy reads the floor before
// it invokes a function, and the publish function when it registers a
// toolset that pins one. The Service Authorization Reference lists
// aws:ResourceTag/${TagKey} for lambda:ListTags on the function resource
// type (docs/infra.md, "Platform tools").
func toolFunctionFloors(stage string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:     jsii.String("ReadToolFunctionFloors"),
		Actions: jsii.Strings("lambda:ListTags"),
		Resources: &[]*string{
			sub("arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:*"),
		},
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"aws:ResourceTag/" + ToolTagKey: stage},
		},
	})
}

// toolFunctionParameters is the statement that reads the stage's platform
// tool function parameters, /toolgate/<stage>/tool-function/*
// (toolset.ToolFunctionParam): the proxy resolves a pinned placeholder
// from them, and the publish function substitutes it at publish.
func toolFunctionParameters(stage string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ToolFunctionParameters"),
		Actions:   jsii.Strings("ssm:GetParameter"),
		Resources: &[]*string{parameterARN(toolFunctionParamPrefix(stage) + "*")},
	})
}

// toolFunctionParamPrefix starts every toolset.ToolFunctionParam of stage.
func toolFunctionParamPrefix(stage string) string {
	return strings.TrimSuffix(toolset.ToolFunctionParam(stage, ""), "/arn")
}

// ToolFunctionProps configure NewToolFunction.
type ToolFunctionProps struct {
	// Stage is the toolgate stage whose proxy invokes the function: the
	// value of its ToolTagKey tag.
	Stage string
	// Tool is the tool's name in toolset files (toolset.ToolNamePattern).
	Tool string
	// ProxyRoleARN is the ARN of the stage's lambda-tool function role, the
	// only principal the function's resource policy allows.
	ProxyRoleARN *string
	// Floor is how loosely a toolset may pin the tool: NewToolFunction
	// writes it as the function's four floor tags (Floor.Tags:
	// platformtool.TagReview, TagPolicy, TagIdempotent, TagDuplicates),
	// which the proxy and toolset registration read, and refuse a pinned
	// contract looser than it. The zero value is the strictest: review
	// required, at most once, not idempotent, duplicates refused. Relax
	// only what the function itself guarantees (Idempotent: it honours
	// the idempotency key).
	Floor platformtool.Floor
	// Function is the team's function, as awslambda.NewFunction takes it;
	// NewToolFunction adds the tags.
	Function *awslambda.FunctionProps
}

// ToolFunction is a team's platform tool function as NewToolFunction
// deployed it.
type ToolFunction struct {
	constructs.Construct
	// Function is the deployed function.
	Function awslambda.Function
	// Parameter holds the function's ARN under
	// toolset.ToolFunctionParam(Stage, ToolFunctionKey(Tool)).
	Parameter awsssm.StringParameter
}

// ToolFunctionKey is the placeholder key a toolset file names a tool's
// function by: "Function" and the tool's name in CamelCase
// (create-ticket: FunctionCreateTicket, ${FunctionCreateTicket}).
func ToolFunctionKey(tool string) string {
	out := []byte("Function")
	upper := true
	for i := 0; i < len(tool); i++ {
		c := tool[i]
		if c == '-' {
			upper = true
			continue
		}
		if upper && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		upper = false
		out = append(out, c)
	}
	return string(out)
}

// NewToolFunction deploys a team's platform tool function: the function
// tagged ToolTagKey=Stage (so the stage's proxy role may invoke it) and
// with its floor (Floor.Tags, every key written), a resource policy that
// allows lambda:InvokeFunction to the proxy's role only, and the SSM
// parameter toolset.ToolFunctionParam that a toolset file's
// ${Function<Tool>} placeholder resolves from at publish.
func NewToolFunction(scope constructs.Construct, id string, props *ToolFunctionProps) *ToolFunction {
	c := constructs.NewConstruct(scope, jsii.String(id))
	fn := awslambda.NewFunction(c, jsii.String("Function"), props.Function)
	awscdk.Tags_Of(fn).Add(jsii.String(ToolTagKey), jsii.String(props.Stage), nil)
	// The floor is the function's own: its role and log group carry none.
	floor := props.Floor.Tags()
	for _, k := range slices.Sorted(maps.Keys(floor)) {
		awscdk.Tags_Of(fn).Add(jsii.String(k), jsii.String(floor[k]), &awscdk.TagProps{
			IncludeResourceTypes: jsii.Strings("AWS::Lambda::Function"),
		})
	}
	fn.AddPermission(jsii.String("InvokeByToolgateProxy"), &awslambda.Permission{
		Principal: awsiam.NewArnPrincipal(props.ProxyRoleARN),
		Action:    jsii.String("lambda:InvokeFunction"),
	})
	key := ToolFunctionKey(props.Tool)
	param := awsssm.NewStringParameter(c, jsii.String("ArnParameter"), &awsssm.StringParameterProps{
		ParameterName: jsii.String(toolset.ToolFunctionParam(props.Stage, key)),
		StringValue:   fn.FunctionArn(),
		Description:   jsii.String("ARN of the platform tool " + props.Tool + "'s function (${" + key + "} in toolset files)"),
	})
	return &ToolFunction{Construct: c, Function: fn, Parameter: param}
}
