package publish

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/deployment/statemachines"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/toolset"
)

// SFNAPI is the part of the Step Functions client publishing uses
// (toolgate run's is resolver/cli/runner's).
type SFNAPI interface {
	CreateStateMachine(ctx context.Context, in *sfn.CreateStateMachineInput, opts ...func(*sfn.Options)) (*sfn.CreateStateMachineOutput, error)
	UpdateStateMachine(ctx context.Context, in *sfn.UpdateStateMachineInput, opts ...func(*sfn.Options)) (*sfn.UpdateStateMachineOutput, error)
	PublishStateMachineVersion(ctx context.Context, in *sfn.PublishStateMachineVersionInput, opts ...func(*sfn.Options)) (*sfn.PublishStateMachineVersionOutput, error)
	ListStateMachines(ctx context.Context, in *sfn.ListStateMachinesInput, opts ...func(*sfn.Options)) (*sfn.ListStateMachinesOutput, error)
}

// Published is what Publish did.
type Published struct {
	StateMachineARN string
	VersionARN      string
	Created         bool // the state machine was created, not updated
}

// Substitute replaces every "${Placeholder}" of the manifest with the
// function's ARN from params, and each child Solution's with its published
// version ARN from children (placeholder key -> ARN; CheckChildren):
// CreateStateMachine has no DefinitionSubstitutions, so toolgate does what
// CloudFormation would.
func Substitute(ctx context.Context, res *resolver.Result, params deployment.Params, stage string, children map[string]string) (string, error) {
	def := string(res.Definition)
	keys := make([]string, 0, len(res.Manifest.Placeholders))
	for k := range res.Manifest.Placeholders {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		function := res.Manifest.Placeholders[key]
		arn, err := params.Get(ctx, deployment.FunctionARNParam(stage, function))
		if err != nil {
			return "", fmt.Errorf("function %s: %w", function, err)
		}
		if !strings.HasPrefix(arn, "arn:") {
			return "", fmt.Errorf("function %s: %q is not an ARN", function, arn)
		}
		def = strings.ReplaceAll(def, "${"+key+"}", arn)
	}
	// Platform tools' functions, from their own namespace: a team's
	// placeholder never resolves to one of toolgate's functions.
	keys = slices.Sorted(maps.Keys(res.Manifest.ToolFunctions))
	for _, key := range keys {
		arn, err := params.Get(ctx, toolset.ToolFunctionParam(stage, key))
		if err != nil {
			return "", fmt.Errorf("tool %s's function: %w", res.Manifest.ToolFunctions[key], err)
		}
		if !toolset.LambdaARNPattern.MatchString(arn) {
			return "", fmt.Errorf("tool %s's function: %q is not a Lambda function ARN", res.Manifest.ToolFunctions[key], arn)
		}
		def = strings.ReplaceAll(def, "${"+key+"}", arn)
	}
	for _, key := range slices.Sorted(maps.Keys(res.Manifest.Workflows)) {
		arn, ok := children[key]
		if !ok {
			return "", fmt.Errorf("workflow %s: its published version is not known", res.Manifest.Workflows[key].Solution)
		}
		def = strings.ReplaceAll(def, "${"+key+"}", arn)
	}
	return def, nil
}

// Publish creates or updates the state machine of a compiled Solution
// whose toolset is registered (Service.Publish registers it first) and
// publishes a version. children are the published version ARNs of the
// Solutions its workflow steps start (Service.children). It writes nothing when the Solution has errors, the
// stage is not one (deployment.CheckStage), or the substitution fails.
//
// Executions log to the platform's log group for Solution executions,
// /aws/vendedlogs/states/toolgate-<stage> (the infrastructure's alarm on
// failed executions reads it), and are traced with X-Ray. region is the
// Step Functions region.
func Publish(ctx context.Context, res *resolver.Result, params deployment.Params, stage, region string, sf SFNAPI, publisher string, children map[string]string) (*Published, error) {
	if !res.OK() {
		return nil, errors.New("the Solution has errors: nothing was published")
	}
	def, err := Substitute(ctx, res, params, stage, children)
	if err != nil {
		return nil, err
	}
	role, err := params.Get(ctx, deployment.ExecutionRoleParam(stage))
	if err != nil {
		return nil, fmt.Errorf("the Solution execution role: %w", err)
	}
	logging, err := executionLogging(role, region, stage)
	if err != nil {
		return nil, err
	}
	tracing := &sfntypes.TracingConfiguration{Enabled: true}
	out := &Published{}
	if err := deployment.CheckStage(stage); err != nil {
		return nil, err
	}
	name := deployment.StateMachineName(stage, res.Solution.Name)
	arn, err := statemachines.Find(ctx, sf, name)
	if err != nil {
		return nil, err
	}
	if arn == "" {
		// Create and publish in one call: a version published in a second
		// call could be another publisher's update of the new state
		// machine, labelled with this Solution's version and toolset (no
		// revision id names the created definition).
		created, err := sf.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{
			Name: aws.String(name), Definition: aws.String(def), RoleArn: aws.String(role),
			Type: sfntypes.StateMachineTypeStandard, LoggingConfiguration: logging, TracingConfiguration: tracing,
			Publish: true, VersionDescription: aws.String(VersionDescription(res, publisher)),
		})
		if err != nil {
			return nil, fmt.Errorf("create state machine %s: %w", name, err)
		}
		if aws.ToString(created.StateMachineVersionArn) == "" {
			return nil, fmt.Errorf("create state machine %s: no version was published", name)
		}
		out.StateMachineARN, out.VersionARN, out.Created = aws.ToString(created.StateMachineArn), aws.ToString(created.StateMachineVersionArn), true
		return out, nil
	}
	up, err := sf.UpdateStateMachine(ctx, &sfn.UpdateStateMachineInput{
		StateMachineArn: aws.String(arn), Definition: aws.String(def), RoleArn: aws.String(role),
		LoggingConfiguration: logging, TracingConfiguration: tracing,
	})
	if err != nil {
		return nil, fmt.Errorf("update state machine %s: %w", name, err)
	}
	// Publish exactly the revision written here: a concurrent publish
	// makes this one fail (ConflictException) instead of labelling the
	// other's definition with this Solution's version and toolset.
	revision := up.RevisionId
	out.StateMachineARN = arn
	v, err := sf.PublishStateMachineVersion(ctx, &sfn.PublishStateMachineVersionInput{
		StateMachineArn: aws.String(arn),
		Description:     aws.String(VersionDescription(res, publisher)),
		RevisionId:      revision,
	})
	if err != nil {
		return nil, fmt.Errorf("publish a version of %s: %w", name, err)
	}
	out.VersionARN = aws.ToString(v.StateMachineVersionArn)
	return out, nil
}

// MaxVersionDescription is Step Functions' limit on a version's
// description, in characters.
const MaxVersionDescription = 256

// VersionDescription records the Solution's version, toolset id, source
// digest and publisher on the state machine version. The publisher's
// principal is cut at a character boundary (ending "...") where the whole
// would pass MaxVersionDescription; the publish function's log has it
// whole.
func VersionDescription(res *resolver.Result, publisher string) string {
	d := fmt.Sprintf("solution %s version %d toolset %s source %s by ", res.Solution.Name, res.Solution.Version, res.Toolset.ID, res.Manifest.SourceDigest)
	return d + excerpt.BytesWithin(publisher, MaxVersionDescription-len(d), "...")
}

// executionLogging logs execution events (not their data: inputs may hold
// message bodies) at level ERROR, enough for ExecutionFailed and
// ExecutionTimedOut. The log group's ARN takes its partition and account
// from the execution role's ARN.
func executionLogging(roleARN, region, stage string) (*sfntypes.LoggingConfiguration, error) {
	parts := strings.SplitN(roleARN, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[4] == "" || region == "" {
		return nil, fmt.Errorf("execution role %q (region %q): cannot name the execution log group", roleARN, region)
	}
	group := fmt.Sprintf("arn:%s:logs:%s:%s:log-group:%s:*", parts[1], region, parts[4], deployment.ExecutionLogGroup(stage))
	return &sfntypes.LoggingConfiguration{
		Level:                sfntypes.LogLevelError,
		IncludeExecutionData: false,
		Destinations:         []sfntypes.LogDestination{{CloudWatchLogsLogGroup: &sfntypes.CloudWatchLogsLogGroup{LogGroupArn: aws.String(group)}}},
	}, nil
}
