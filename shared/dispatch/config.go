package dispatch

import (
	"fmt"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/tool"
)

// Environment variables a tool function reads at cold start (docs/ledger.md, "Configuration of a tool function").
const (
	EnvTable          = "TOOLGATE_TABLE"                    // the ledger table (required)
	EnvLeaseSeconds   = "TOOLGATE_LEASE_SECONDS"            // claim lease; default timeout + 30 s
	EnvTimeoutSeconds = "TOOLGATE_FUNCTION_TIMEOUT_SECONDS" // the function's timeout, set by the infrastructure; default 30
	EnvInlineLimit    = "TOOLGATE_INLINE_LIMIT_BYTES"       // result limit; default 65536, at most 204800
	EnvLambdaMemory   = "AWS_LAMBDA_FUNCTION_MEMORY_SIZE"   // set by Lambda
)

// ConfigFromEnv reads a tool function's dispatcher configuration for
// mode (OneTool, PlatformTools or MCPTools) and returns it with the
// ledger table's name; an error names the variable at fault, or the mode
// (Config.Validate). No secret is read from the environment:
// LedgerSince and ExternalKeySecret stay unset, and the function's main
// loads them from SSM (shared/secrets, shared/toolfunction) before New
// checks them.
func ConfigFromEnv(mode Mode, getenv func(string) string) (Config, string, error) {
	cfg := Config{Mode: mode}
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
