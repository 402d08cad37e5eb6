package toolfunction

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

	"github.com/toolgate/toolgate/shared/toolfloor"
	"github.com/toolgate/toolgate/shared/toolset"
)

// TagKey marks a Lambda function as a toolgate platform tool of a
// stage: the tag's value is the stage whose platform tools' proxy
// (functions/lambda-tool) may invoke it, the proxy invokes only functions
// tagged with its own stage (aws:ResourceTag/toolgate:tool), and
// New sets it (docs/infra.md, "Platform tools"). Stages share
// an account and a resource policy cannot deny, so a value shared by every
// stage would let one stage's proxy invoke another stage's functions.
const TagKey = toolfloor.TagTool

// InvokeStatement is the proxy role's one Lambda statement (Sid
// InvokeTaggedToolFunctions): lambda:InvokeFunction on this account's and
// region's functions (and their aliases and versions) that are tagged
// TagKey=stage.
func InvokeStatement(stage string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:     jsii.String("InvokeTaggedToolFunctions"),
		Actions: jsii.Strings("lambda:InvokeFunction"),
		Resources: &[]*string{
			sub("arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:*"),
		},
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"aws:ResourceTag/" + TagKey: stage},
		},
	})
}

// FloorsStatement is the statement that reads a platform tool function's
// floor (toolfloor.FromTags; Sid ReadToolFunctionFloors):
// lambda:ListTags on this account's and region's functions that are
// tagged TagKey=stage, the
// functions the stage's proxy may invoke. The proxy reads the floor before
// it invokes a function, and the publish function when it registers a
// toolset that pins one. The Service Authorization Reference lists
// aws:ResourceTag/${TagKey} for lambda:ListTags on the function resource
// type (docs/infra.md, "Platform tools").
func FloorsStatement(stage string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:     jsii.String("ReadToolFunctionFloors"),
		Actions: jsii.Strings("lambda:ListTags"),
		Resources: &[]*string{
			sub("arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:*"),
		},
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"aws:ResourceTag/" + TagKey: stage},
		},
	})
}

// ParametersStatement is the statement that reads the stage's platform
// tool function parameters, /toolgate/<stage>/tool-function/*
// (toolset.ToolFunctionParam; Sid ToolFunctionParameters): the proxy
// resolves a pinned placeholder from them, and the publish function
// substitutes it at publish.
func ParametersStatement(stage string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ToolFunctionParameters"),
		Actions:   jsii.Strings("ssm:GetParameter"),
		Resources: &[]*string{parameterARN(ParamPrefix(stage) + "*")},
	})
}

// ParamPrefix starts every toolset.ToolFunctionParam of stage:
// /toolgate/<stage>/tool-function/.
func ParamPrefix(stage string) string {
	return strings.TrimSuffix(toolset.ToolFunctionParam(stage, ""), "/arn")
}

// sub is Fn::Sub of s (pseudo parameters such as ${AWS::Region} only).
func sub(s string) *string { return awscdk.Fn_Sub(jsii.String(s), nil) }

// parameterARN is the ARN of the SSM parameter name, which starts with "/".
func parameterARN(name string) *string {
	return sub("arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter" + name)
}

// Props configure New.
type Props struct {
	// Stage is the toolgate stage whose proxy invokes the function: the
	// value of its TagKey tag.
	Stage string
	// Tool is the tool's name in toolset files (catalog.NamePattern).
	Tool string
	// ProxyRoleARN is the ARN of the stage's lambda-tool function role, the
	// only principal the function's resource policy allows.
	ProxyRoleARN *string
	// Floor is how loosely a toolset may pin the tool: New writes it as the function's four floor tags (Floor.Tags:
	// toolfloor.TagReview, TagPolicy, TagIdempotent, TagDuplicates),
	// which the proxy and toolset registration read, and refuse a pinned
	// contract looser than it. The zero value is the strictest: review
	// required, at most once, not idempotent, duplicates refused. Relax
	// only what the function itself guarantees (Idempotent: it honours
	// the idempotency key).
	Floor toolfloor.Floor
	// Function is the team's function, as awslambda.NewFunction takes it;
	// New adds the tags.
	Function *awslambda.FunctionProps
}

// ToolFunction is a team's platform tool function as New deployed it.
type ToolFunction struct {
	constructs.Construct
	// Function is the deployed function.
	Function awslambda.Function
	// Parameter holds the function's ARN under
	// toolset.ToolFunctionParam(Stage, PlaceholderKey(Tool)).
	Parameter awsssm.StringParameter
}

// PlaceholderKey is the placeholder key a toolset file names a tool's
// function by: "Function" and the tool's name in CamelCase
// (create-ticket: FunctionCreateTicket, ${FunctionCreateTicket}).
func PlaceholderKey(tool string) string {
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

// New deploys a team's platform tool function: the function tagged
// TagKey=Stage (so the stage's proxy role may invoke it) and
// with its floor (Floor.Tags, every key written), a resource policy that
// allows lambda:InvokeFunction to the proxy's role only, and the SSM
// parameter toolset.ToolFunctionParam that a toolset file's
// ${Function<Tool>} placeholder resolves from at publish.
func New(scope constructs.Construct, id string, props *Props) *ToolFunction {
	c := constructs.NewConstruct(scope, jsii.String(id))
	fn := awslambda.NewFunction(c, jsii.String("Function"), props.Function)
	awscdk.Tags_Of(fn).Add(jsii.String(TagKey), jsii.String(props.Stage), nil)
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
	key := PlaceholderKey(props.Tool)
	param := awsssm.NewStringParameter(c, jsii.String("ArnParameter"), &awsssm.StringParameterProps{
		ParameterName: jsii.String(toolset.ToolFunctionParam(props.Stage, key)),
		StringValue:   fn.FunctionArn(),
		Description:   jsii.String("ARN of the platform tool " + props.Tool + "'s function (${" + key + "} in toolset files)"),
	})
	return &ToolFunction{Construct: c, Function: fn, Parameter: param}
}
