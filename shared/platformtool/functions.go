package platformtool

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// EnvStage is the proxy's stage, the same variable the publish function
// reads (publish.EnvStage): a placeholder resolves from the stage's
// parameter toolset.ToolFunctionParam(stage, key). Required.
const EnvStage = "TOOLGATE_STAGE"

// stagePattern is publish.StagePattern (1 to 20 lower-case letters,
// digits or '-', starting with a letter), repeated here so that the proxy
// does not link the publish package; TestStagePattern keeps them equal.
var stagePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,19}$`)

// StageFromEnv returns EnvStage, or an error naming it when it is unset or
// not a stage publishing accepts.
func StageFromEnv(getenv func(string) string) (string, error) {
	stage := getenv(EnvStage)
	if !stagePattern.MatchString(stage) {
		return "", fmt.Errorf("%s=%q must be 1 to 20 lower-case letters, digits or '-', starting with a letter", EnvStage, stage)
	}
	return stage, nil
}

// SSMAPI is the one SSM call Functions makes.
type SSMAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// Functions resolves a pinned tool's function reference to the function
// the proxy invokes, from the pinned toolset alone: a Lambda function ARN
// as written, a placeholder "${Function<Name>}" from the stage's SSM
// parameter /toolgate/<stage>/tool-function/<Name>/arn (the parameter
// publishing substitutes it from). A resolved placeholder is kept for the
// life of the container; a failure is not kept.
type Functions struct {
	stage  string
	client SSMAPI

	mu    sync.Mutex
	cache map[string]string // placeholder key -> ARN
}

// NewFunctions returns the resolver for stage's parameters, read with
// client.
func NewFunctions(stage string, client SSMAPI) *Functions {
	return &Functions{stage: stage, client: client, cache: map[string]string{}}
}

// Resolve returns the FunctionName to invoke for the pinned reference ref.
//
//   - A full Lambda function ARN (toolset.LambdaARNPattern) is returned as
//     it is; a bare function name is TOOL_PERMISSION_DENIED (FunctionName).
//   - A placeholder is the value of its parameter, which must be a Lambda
//     function ARN (TOOL_INTERNAL otherwise). A missing parameter is
//     TOOL_PERMISSION_DENIED: no function is bound to the placeholder in
//     this stage. SSM's own failure is TOOL_UPSTREAM_UNAVAILABLE; nothing
//     was invoked, so neither is maybe applied.
//   - Anything else is TOOL_INTERNAL (FunctionName).
func (f *Functions) Resolve(ctx context.Context, ref string) (string, error) {
	m := toolset.FunctionPattern.FindStringSubmatch(ref)
	if m == nil {
		return FunctionName(ref)
	}
	key := m[1]
	f.mu.Lock()
	arn, ok := f.cache[key]
	f.mu.Unlock()
	if ok {
		return arn, nil
	}
	name := toolset.ToolFunctionParam(f.stage, key)
	out, err := f.client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	var notFound *ssmtypes.ParameterNotFound
	switch {
	case errors.As(err, &notFound):
		return "", tool.Wrap(tool.PermissionDenied, err, "the pinned function %s is bound to no function in this stage (no SSM parameter %s)", ref, name)
	case err != nil:
		return "", tool.Wrap(tool.UpstreamUnavailable, err, "the SSM parameter of the pinned function %s could not be read", ref)
	case out.Parameter == nil || !toolset.LambdaARNPattern.MatchString(aws.ToString(out.Parameter.Value)):
		return "", tool.Errorf(tool.Internal, "the SSM parameter %s of the pinned function %s does not hold a Lambda function ARN", name, ref)
	}
	arn = aws.ToString(out.Parameter.Value)
	f.mu.Lock()
	f.cache[key] = arn
	f.mu.Unlock()
	return arn, nil
}
