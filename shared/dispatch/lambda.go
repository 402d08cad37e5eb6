package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/coldstart"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/secrets"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// Environment variables a tool function reads at cold start (docs/ledger.md, "Configuration of a tool function").
const (
	EnvTable          = "TOOLGATE_TABLE"                    // the ledger table (required)
	EnvLeaseSeconds   = "TOOLGATE_LEASE_SECONDS"            // claim lease; default timeout + 30 s
	EnvTimeoutSeconds = "TOOLGATE_FUNCTION_TIMEOUT_SECONDS" // the function's timeout, set by the infrastructure; default 30
	EnvInlineLimit    = "TOOLGATE_INLINE_LIMIT_BYTES"       // result limit; default 65536, at most 204800
	EnvLambdaMemory   = "AWS_LAMBDA_FUNCTION_MEMORY_SIZE"   // set by Lambda
)

// ConfigFromEnv reads a tool function's dispatcher configuration. An
// empty name is the platform tools' proxy's (Config.Platform). No secret
// is read from the environment: LedgerMAC, LedgerSince and
// ExternalKeySecret stay unset, and serve loads them from SSM
// (shared/secrets) before New checks them.
func ConfigFromEnv(name string, getenv func(string) string) (Config, string, error) {
	return configFromEnv(Config{Tool: name, Platform: name == ""}, getenv)
}

// configFromEnv reads the configuration into cfg, which names what the
// function serves (Tool, Platform or MCP).
func configFromEnv(cfg Config, getenv func(string) string) (Config, string, error) {
	table := getenv(EnvTable)
	if table == "" {
		return cfg, "", fmt.Errorf("%s is not set", EnvTable)
	}
	seconds := func(name string, dst *time.Duration) error {
		v := getenv(name)
		if v == "" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("%s=%q is not a positive whole number of seconds", name, v)
		}
		*dst = time.Duration(n) * time.Second
		return nil
	}
	if err := seconds(EnvTimeoutSeconds, &cfg.FunctionTimeout); err != nil {
		return cfg, "", err
	}
	if err := seconds(EnvLeaseSeconds, &cfg.Lease); err != nil {
		return cfg, "", err
	}
	if v := getenv(EnvInlineLimit); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > tool.MaxInlineLimit {
			return cfg, "", fmt.Errorf("%s=%q is not a whole number of bytes in 1..%d", EnvInlineLimit, v, tool.MaxInlineLimit)
		}
		cfg.InlineLimit = n
	}
	if v := getenv(EnvLambdaMemory); v != "" {
		cfg.MemoryMB, _ = strconv.Atoi(v)
	}
	var err error
	if cfg.Lane, err = lane.FromEnv(getenv); err != nil {
		return cfg, "", err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, "", err
	}
	return cfg, table, nil
}

// Main is a tool function's whole main: it reads the configuration and the
// function's secrets (SSM, shared/secrets), builds the caller verifier
// (shared/caller) and the DynamoDB and SSM clients from the standard AWS
// configuration (so AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL_SSM
// point them at local stand-ins), and starts the Lambda runtime with the
// dispatcher. A bad configuration or an unreadable secret stops the
// function with one log line.
func Main(name string, run toolcall.Func) {
	serve(coldstart.Logger(), Config{Tool: name}, run)
}

// PlatformMain is the platform tools' proxy's main (functions/lambda-tool):
// Main with Config.Platform, so that the dispatcher serves every platform
// tool of the run's pinned toolset; check runs before each call is claimed
// (Config.Check: the pin against its function's floor), and run invokes
// the function. log is the logger main built both with.
func PlatformMain(log *slog.Logger, check toolcall.Check, run toolcall.Func) {
	serve(log, Config{Platform: true, Check: check}, run)
}

// MCPMain is the MCP tools' function's main (functions/mcp-call): Main
// with Config.MCP, so that the dispatcher serves every MCP tool of the
// run's pinned toolset; check runs before each call is claimed
// (Config.Check: the tool's definition on its server against the pin),
// and run sends the call. log is the logger main built both with.
func MCPMain(log *slog.Logger, check toolcall.Check, run toolcall.Func) {
	serve(log, Config{MCP: true, Check: check}, run)
}

// secretsTimeout bounds the cold start's read of the ledger secrets (one
// GetParameters), well inside Lambda's 10 s init phase.
const secretsTimeout = 5 * time.Second

// serve is the functions' main for base, which names what the function
// serves: the environment's configuration, then the function's secrets
// from SSM (secrets.Load, one GetParameters: its own MAC key, the stage's
// external key secret and since time), then New, which checks them.
func serve(log *slog.Logger, base Config, run toolcall.Func) {
	cfg, table, err := configFromEnv(base, os.Getenv)
	cfg = coldstart.Must(log, "bad configuration", cfg, err)
	awsCfg := coldstart.AWSConfig(log)
	names, err := secrets.NamesFromEnv(os.Getenv)
	names = coldstart.Must(log, "bad configuration", names, err)
	ctx, cancel := context.WithTimeout(context.Background(), secretsTimeout)
	sec, err := secrets.Load(ctx, ssm.NewFromConfig(awsCfg), names)
	cancel()
	sec = coldstart.Must(log, "the function's ledger secrets cannot be read", sec, err)
	if sec.SinceAbsent {
		log.Warn("ledger since time not written yet (the deploy writes it once every tool function runs its new code): this cold start's time stands for it", "param", names.Since, "since", sec.Since)
	}
	cfg.LedgerMAC, cfg.LedgerSince, cfg.ExternalKeySecret = sec.MAC, sec.Since, sec.ExternalKey
	db := dynamodb.NewFromConfig(awsCfg)
	d, err := New(cfg, ledger.New(db, table), run, log)
	d = coldstart.Must(log, "bad configuration", d, err)
	d.SetReviews(dynamo.NewStore(db, table))
	callerCfg, err := caller.ConfigFromEnv(os.Getenv)
	callerCfg = coldstart.Must(log, "bad configuration", callerCfg, err)
	callerCfg.Log = log
	callers, err := caller.NewVerifier(callerCfg, ledger.ProofTable{DB: db, Table: table})
	d.SetCallers(coldstart.Must(log, "bad configuration", callers, err))
	lambda.Start(d.Handle)
}
