// Package coldstart is what every function's main does before it serves
// (STYLE: configuration is parsed and validated at cold start; a bad value
// stops the function with one clear log line): a JSON logger on stdout, the
// standard AWS configuration (so AWS_ENDPOINT_URL_<SERVICE> points a client
// at a local stand-in), and exit status 1 with one log line for anything it
// cannot run with.
package coldstart

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
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

// AWSConfig loads the standard AWS configuration, or stops the function.
func AWSConfig(log *slog.Logger) aws.Config {
	cfg, err := config.LoadDefaultConfig(context.Background())
	return Must(log, "load AWS configuration", cfg, err)
}
