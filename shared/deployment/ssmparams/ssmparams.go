// Package ssmparams reads the platform's parameters (deployment.Params)
// from SSM Parameter Store: the adapter, apart from shared/deployment so
// that what only names parameters (infra, the compiler) links no AWS
// service SDK.
package ssmparams

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/toolgate/toolgate/shared/deployment"
)

// API is the part of the SSM client Params uses.
type API interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// Params reads parameters from SSM Parameter Store.
type Params struct{ Client API }

// Get returns one parameter: an error wrapping
// deployment.ErrParamNotFound when SSM answers ParameterNotFound, another
// naming the parameter when the call fails.
func (p Params) Get(ctx context.Context, name string) (string, error) {
	out, err := p.Client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	var nf *ssmtypes.ParameterNotFound
	if errors.As(err, &nf) {
		return "", fmt.Errorf("%s: %w", name, deployment.ErrParamNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("get parameter %s: %w", name, err)
	}
	return aws.ToString(out.Parameter.Value), nil
}
