package mcptool

import (
	"fmt"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/shared/fetch"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/hostlist"
)

// Environment variables ConfigFromEnv reads at cold start (docs/tools.md,
// "MCP tools").
const (
	// EnvAllow is the platform's allow-list of MCP hosts: hostlist entries
	// separated by commas or blanks, as TOOLGATE_FETCH_ALLOW. Empty or
	// unset: no MCP server can be listed or called.
	EnvAllow = "TOOLGATE_MCP_ALLOW"
	// EnvAllowAddresses exempts addresses (CIDR prefixes or single
	// addresses, separated by commas or blanks) from the address refusal,
	// as TOOLGATE_FETCH_ALLOW_ADDRESSES: unset in production; the local
	// stack sets 127.0.0.1/32. Cloud metadata addresses are never exempt.
	EnvAllowAddresses = "TOOLGATE_MCP_ALLOW_ADDRESSES"
	// EnvSchemaTTLSeconds is how long, in whole seconds, a warm container
	// reuses a server's tools/list for Check: 0..60, default 5; 0 lists
	// before every call.
	EnvSchemaTTLSeconds = "TOOLGATE_MCP_SCHEMA_TTL_SECONDS"
	// EnvTimeoutSeconds bounds, in whole seconds, each exchange with a
	// server that is not a tools/call: a whole listing (the handshake and
	// every page), and the handshake before a call. 1..60, default 10. A
	// tools/call is bounded by the dispatcher's deadline instead.
	EnvTimeoutSeconds = "TOOLGATE_MCP_TIMEOUT_SECONDS"
	// EnvResolveFile, on the local stack only, names a file of host
	// names and their addresses ("HOST=IP[,IP]" a line) that the address
	// rules take as the DNS answer for those names, read again at every
	// request (fetch.FileResolver): a test changes a name's answer between
	// a server's registration and a call. Unset: the system resolver. The
	// CDK app never sets it, and its tests assert so.
	EnvResolveFile = "TOOLGATE_MCP_RESOLVE_FILE"
)

// Bounds and defaults.
const (
	DefaultSchemaTTL = 5 * time.Second
	MaxSchemaTTL     = 60 * time.Second
	DefaultTimeout   = 10 * time.Second
	MaxTimeout       = 60 * time.Second
	// DefaultMaxBytes bounds each HTTP response body read from a server
	// (a tools/list page, a tools/call answer): 5 MiB, as the http tool's.
	DefaultMaxBytes = fetch.DefaultMaxBytes
)

// allowName names the platform's list in refusals.
const allowName = "the platform's MCP allow-list (" + EnvAllow + ")"

// Config is the platform's side of the MCP client: parsed and validated at
// cold start, then shared by every listing and call (which do not modify
// it).
type Config struct {
	// Net holds the address rules and the connection of the http tool
	// (package fetch), applied to every HTTP request: Allow is the
	// platform's MCP allow-list, AllowAddresses the exemptions; Resolver,
	// Dial and RootCAs as there (tests set them). Its MaxBytes, Timeout
	// and MaxRedirects are not used; AllowName is set by New.
	Net fetch.Config
	// SchemaTTL is how long Check reuses a server's listing; 0: no reuse,
	// a listing before every call. ConfigFromEnv's default is
	// DefaultSchemaTTL.
	SchemaTTL time.Duration
	// Timeout bounds a listing, and a call's handshake; 0: DefaultTimeout.
	Timeout time.Duration
	// MaxBytes bounds each response body; 0: DefaultMaxBytes.
	MaxBytes int64
}

// ConfigFromEnv reads EnvAllow, EnvAllowAddresses, EnvSchemaTTLSeconds,
// EnvTimeoutSeconds and EnvResolveFile (whose file must exist and parse).
// An error names the variable and the bad value.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	split := functionconfig.SplitList
	allow, err := hostlist.ParseList(split(getenv(EnvAllow)))
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", EnvAllow, err)
	}
	nc, err := fetch.ParseConfig(nil, split(getenv(EnvAllowAddresses)))
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", EnvAllowAddresses, err)
	}
	nc.Allow, nc.AllowName = allow, allowName
	c := Config{Net: nc, SchemaTTL: DefaultSchemaTTL, Timeout: DefaultTimeout}
	if path := getenv(EnvResolveFile); path != "" {
		r := fetch.FileResolver{Path: path}
		if _, err := r.Load(); err != nil {
			return Config{}, fmt.Errorf("%s: %w", EnvResolveFile, err)
		}
		c.Net.Resolver = r
	}
	if c.SchemaTTL, err = seconds(getenv, EnvSchemaTTLSeconds, 0, MaxSchemaTTL, DefaultSchemaTTL); err != nil {
		return Config{}, err
	}
	if c.Timeout, err = seconds(getenv, EnvTimeoutSeconds, 1, MaxTimeout, DefaultTimeout); err != nil {
		return Config{}, err
	}
	return c, nil
}

// seconds reads a variable of whole seconds in lo..hi; unset is def.
func seconds(getenv func(string) string, name string, lo int, hi, def time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > int(hi/time.Second) {
		return 0, fmt.Errorf("%s=%q is not a whole number of seconds in %d..%d", name, v, lo, int(hi/time.Second))
	}
	return time.Duration(n) * time.Second, nil
}

func (c *Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c *Config) maxBytes() int64 {
	if c.MaxBytes > 0 {
		return c.MaxBytes
	}
	return DefaultMaxBytes
}
