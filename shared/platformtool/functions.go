package platformtool

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

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
