package deployment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Parameter names the platform's infrastructure writes to SSM Parameter
// Store (and the local stack to its parameters file), under
// /toolgate/<stage>/.
func FunctionARNParam(stage, function string) string {
	return fmt.Sprintf("/toolgate/%s/function/%s/arn", stage, function)
}

// ExecutionRoleParam names the Solution execution role's ARN.
func ExecutionRoleParam(stage string) string {
	return fmt.Sprintf("/toolgate/%s/role/solution-execution/arn", stage)
}

// TableParam names the ledger table.
func TableParam(stage string) string { return fmt.Sprintf("/toolgate/%s/table/name", stage) }

// PublishURLParam names the publish function's URL.
func PublishURLParam(stage string) string { return fmt.Sprintf("/toolgate/%s/publish/url", stage) }

// ReviewDecisionURLParam names the review-decision function's URL.
func ReviewDecisionURLParam(stage string) string {
	return fmt.Sprintf("/toolgate/%s/review-decision/url", stage)
}

// StartFunctionParam names what toolgate run invokes to record a run's
// start (review.StartRequest): the ARN of review-request's start alias
// (infra), or, on the local stack, the base URL of review-request's start
// instance under the Lambda RIE (docs/identity.md, "Lanes").
func StartFunctionParam(stage string) string {
	return fmt.Sprintf("/toolgate/%s/run-start/function", stage)
}

// ErrParamNotFound is returned for a parameter that does not exist.
var ErrParamNotFound = errors.New("parameter not found")

// Params reads the platform's parameters: SSM Parameter Store on AWS
// (shared/deployment/ssmparams), the local stack's file (FileParams). Get
// returns an error wrapping ErrParamNotFound for a parameter that does not
// exist.
type Params interface {
	Get(ctx context.Context, name string) (string, error)
}

// FileParams is the local stack's parameters file: one JSON object of
// parameter name to value, with the same names as SSM.
type FileParams map[string]string

// ReadFileParams reads a parameters file.
func ReadFileParams(path string) (FileParams, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p FileParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("parameters file %s: %w", path, err)
	}
	return p, nil
}

// Get returns one parameter.
func (p FileParams) Get(_ context.Context, name string) (string, error) {
	v, ok := p[name]
	if !ok {
		return "", fmt.Errorf("%s: %w", name, ErrParamNotFound)
	}
	return v, nil
}
