// Package coldstart is what every function's main does before it serves
// (STYLE: configuration is parsed and validated at cold start; a bad value
// stops the function with one clear log line): a JSON logger on stdout, the
// AWS configuration from the environment the Lambda runtime sets (and
// AWS_ENDPOINT_URL_<SERVICE>, which points a client at a local stand-in),
// and exit status 1 with one log line for anything it cannot run with.
package coldstart

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Logger returns the JSON logger functions write to stdout (CloudWatch Logs
// on AWS; the infrastructure's metric filters read its fields).
func Logger() *slog.Logger { return slog.New(slog.NewJSONHandler(os.Stdout, nil)) }

// Must returns v, or logs "<what>: <err>" as one error line and exits 1.
func Must[T any](log *slog.Logger, what string, v T, err error) T {
	if err != nil {
		log.Error(what, "error", err.Error())
		os.Exit(1)
	}
	return v
}

// Environment variables AWSConfig reads: the ones the Lambda runtime sets
// for every function (AWS Lambda Developer Guide, "Defined runtime
// environment variables"), and the SDKs' endpoint variables (AWS SDKs and
// Tools Reference Guide, "Service-specific endpoints").
const (
	EnvRegion          = "AWS_REGION"
	EnvAccessKeyID     = "AWS_ACCESS_KEY_ID"
	EnvSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	EnvSessionToken    = "AWS_SESSION_TOKEN"
	// EnvEndpointURL is every service's endpoint; EnvEndpointURL + "_" +
	// the service's SDK id (upper case, spaces as underscores: DYNAMODB,
	// SESV2, SFN, SSM) is one service's, and comes first.
	EnvEndpointURL = "AWS_ENDPOINT_URL"
)

// AWSConfig returns the function's AWS configuration (LambdaConfig of
// os.Getenv), or stops the function.
func AWSConfig(log *slog.Logger) aws.Config {
	cfg, err := LambdaConfig(os.Getenv)
	return Must(log, "load AWS configuration", cfg, err)
}

// LambdaConfig is the AWS configuration of a Lambda function, read from
// nothing but the environment: the region (EnvRegion), the execution
// role's temporary credentials (EnvAccessKeyID, EnvSecretAccessKey,
// EnvSessionToken) and the endpoint variables (EnvEndpointURL and its
// per-service forms, EnvIgnoreEndpointURLs, EnvUseFIPSEndpoint,
// EnvUseDualStack). The SDK's service clients also read EnvEndpointURL
// and its per-service forms from the process environment itself, to tell
// which of the two applies; getenv is os.Getenv outside tests. A function never reads shared config files, SSO,
// IMDS or assume-role providers; config.LoadDefaultConfig would link them
// all into every bootstrap (about 1.6 MB each, docs/performance.md). It
// returns an error naming the variable when the region or a key is
// missing.
func LambdaConfig(getenv func(string) string) (aws.Config, error) {
	for _, name := range []string{EnvRegion, EnvAccessKeyID, EnvSecretAccessKey} {
		if getenv(name) == "" {
			return aws.Config{}, fmt.Errorf("%s is not set (the Lambda runtime sets it)", name)
		}
	}
	cfg := aws.Config{
		Region: getenv(EnvRegion),
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(
			getenv(EnvAccessKeyID), getenv(EnvSecretAccessKey), getenv(EnvSessionToken))),
		ConfigSources: []any{envSource(getenv)},
	}
	if v := getenv(EnvEndpointURL); v != "" && !envTrue(getenv(EnvIgnoreEndpointURLs)) {
		cfg.BaseEndpoint = aws.String(v)
	}
	return cfg, nil
}

// The SDKs' other endpoint variables a function honours (AWS SDKs and
// Tools Reference Guide, "Service-specific endpoints", "FIPS endpoints",
// "Dual-stack endpoints"): each is "true" or "false".
const (
	EnvIgnoreEndpointURLs = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"
	EnvUseFIPSEndpoint    = "AWS_USE_FIPS_ENDPOINT"
	EnvUseDualStack       = "AWS_USE_DUALSTACK_ENDPOINT"
)

func envTrue(v string) bool { return strings.EqualFold(v, "true") }

// envSource is a configuration source each service client asks, as it
// asks the SDK's shared configuration: per-service endpoints
// (GetServiceBaseEndpoint, with the service's SDK id) before BaseEndpoint,
// whether configured endpoints are ignored, and the FIPS and dual-stack
// settings.
type envSource func(string) string

// GetServiceBaseEndpoint returns EnvEndpointURL_<SDK id> when it is set.
func (getenv envSource) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	v := getenv(EnvEndpointURL + "_" + strings.ToUpper(strings.ReplaceAll(sdkID, " ", "_")))
	return v, v != "", nil
}

// GetIgnoreConfiguredEndpoints reports EnvIgnoreEndpointURLs.
func (getenv envSource) GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error) {
	v := getenv(EnvIgnoreEndpointURLs)
	return envTrue(v), v != "", nil
}

// GetUseFIPSEndpoint reports EnvUseFIPSEndpoint.
func (getenv envSource) GetUseFIPSEndpoint(context.Context) (aws.FIPSEndpointState, bool, error) {
	switch v := getenv(EnvUseFIPSEndpoint); {
	case envTrue(v):
		return aws.FIPSEndpointStateEnabled, true, nil
	case strings.EqualFold(v, "false"):
		return aws.FIPSEndpointStateDisabled, true, nil
	}
	return aws.FIPSEndpointStateUnset, false, nil
}

// GetUseDualStackEndpoint reports EnvUseDualStack.
func (getenv envSource) GetUseDualStackEndpoint(context.Context) (aws.DualStackEndpointState, bool, error) {
	switch v := getenv(EnvUseDualStack); {
	case envTrue(v):
		return aws.DualStackEndpointStateEnabled, true, nil
	case strings.EqualFold(v, "false"):
		return aws.DualStackEndpointStateDisabled, true, nil
	}
	return aws.DualStackEndpointStateUnset, false, nil
}
