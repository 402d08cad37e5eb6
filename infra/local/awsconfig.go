package local

import (
	"context"
	"errors"
	"maps"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
)

// AWSConfigLoader returns a loader with config.LoadDefaultConfig's
// signature that takes the standard AWS variables from env instead of the
// process's environment, so that a test can give the CLI (cli.Env) the
// local stack's configuration (Stack.Environ) without t.Setenv, and run in
// parallel with others. It reads:
//
//   - AWS_REGION: the region (config.WithRegion);
//   - AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN: static
//     credentials; without AWS_ACCESS_KEY_ID, retrieving credentials fails
//     (the process's own are never used);
//   - AWS_ENDPOINT_URL_<SERVICE> (the service id upper-cased, spaces as
//     underscores: AWS_ENDPOINT_URL_DYNAMODB, _SFN, _STS, _LAMBDA) and
//     AWS_ENDPOINT_URL: the service endpoints, as the SDK reads them from
//     the environment ("Service-specific endpoints" in the AWS SDKs and
//     Tools Reference Guide). The process's own AWS_ENDPOINT_URL_* are
//     ignored; but a process-wide AWS_ENDPOINT_URL without the service's
//     AWS_ENDPOINT_URL_<SERVICE> still stops a service client from asking
//     for its own endpoint (the SDK's clients read that one themselves).
//
// The shared config and credentials files are not read (os.DevNull stands
// for both) and the EC2 instance metadata service is never asked. Options
// the caller passes are applied after these. env is copied: later changes
// to the map do not reach the loader.
func AWSConfigLoader(env map[string]string) func(ctx context.Context, optFns ...func(*config.LoadOptions) error) (aws.Config, error) {
	vars := maps.Clone(env)
	return func(ctx context.Context, optFns ...func(*config.LoadOptions) error) (aws.Config, error) {
		var creds aws.CredentialsProvider = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{}, errors.New("no AWS_ACCESS_KEY_ID in the test's environment")
		})
		if id := vars["AWS_ACCESS_KEY_ID"]; id != "" {
			creds = credentials.NewStaticCredentialsProvider(id, vars["AWS_SECRET_ACCESS_KEY"], vars["AWS_SESSION_TOKEN"])
		}
		opts := []func(*config.LoadOptions) error{
			config.WithSharedConfigFiles([]string{os.DevNull}),
			config.WithSharedCredentialsFiles([]string{os.DevNull}),
			config.WithEC2IMDSClientEnableState(imds.ClientDisabled),
			config.WithCredentialsProvider(creds),
		}
		if r := vars["AWS_REGION"]; r != "" {
			opts = append(opts, config.WithRegion(r))
		}
		if u := vars["AWS_ENDPOINT_URL"]; u != "" {
			opts = append(opts, config.WithBaseEndpoint(u))
		}
		cfg, err := config.LoadDefaultConfig(ctx, append(opts, optFns...)...)
		if err != nil {
			return aws.Config{}, err
		}
		// The service clients look their endpoint up in the sources, in
		// order: env's endpoints first, and no process environment.
		sources := []any{endpoints(vars)}
		for _, s := range cfg.ConfigSources {
			if _, isEnv := s.(config.EnvConfig); !isEnv {
				sources = append(sources, s)
			}
		}
		cfg.ConfigSources = sources
		return cfg, nil
	}
}

// endpoints are the AWS_ENDPOINT_URL_<SERVICE> variables of an
// environment, as a configuration source the service clients ask for
// their endpoint.
type endpoints map[string]string

// GetServiceBaseEndpoint returns the endpoint of service sdkID ("DynamoDB",
// "SFN", "Lambda"), and whether one is set.
func (e endpoints) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	v := e["AWS_ENDPOINT_URL_"+strings.ReplaceAll(strings.ToUpper(sdkID), " ", "_")]
	return v, v != "", nil
}
