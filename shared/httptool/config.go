package httptool

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/shared/fetch"
	"github.com/toolgate/toolgate/shared/functionconfig"
)

// Bounds of the http tool (docs/tools.md, "http").
const (
	// DefaultMaxRequestBody bounds a request body, in bytes as sent: 64 KiB.
	DefaultMaxRequestBody = 64 << 10
	// MaxRequestBody is the largest bound a function may configure
	// (EnvMaxRequestBytes): 192 KiB, which with the rest of the call
	// stays inside Step Functions' 256 KiB payload quota.
	MaxRequestBody = 192 << 10
	// MaxRetryAfterWait is the longest Retry-After the tool waits out
	// itself before sending a request once more: 30 s.
	MaxRetryAfterWait = 30 * time.Second
	// retryAfterMargin is left before the call's deadline for the request
	// sent after a Retry-After wait.
	retryAfterMargin = time.Second
)

// Environment variables ConfigFromEnv reads at cold start
// (functionconfig's, which the CDK app checks its configuration with).
const (
	EnvAllow           = functionconfig.EnvHTTPAllow
	EnvAllowAddresses  = functionconfig.EnvHTTPAllowAddresses
	EnvTimeoutSeconds  = functionconfig.EnvHTTPTimeoutSeconds
	EnvMaxRequestBytes = functionconfig.EnvHTTPMaxRequestBytes
)

// Config is the platform's side of the http tool: parsed and validated at
// cold start, then shared by all calls (it is not modified by them). Zero
// fields take the defaults in their comments.
type Config struct {
	// Config holds the connection rules shared with structured-data-fetch
	// (package fetch): Allow is the http function's own allow-list
	// (EnvAllow; empty: no request at all), AllowAddresses its exempted
	// addresses, MaxBytes the response body bound (5 MiB), Timeout the
	// bound of each sending (30 s: look-ups, redirects and the body; a
	// Retry-After wait is bounded by the caller's deadline), MaxRedirects the redirects a read follows (5), and the
	// Resolver, Dial and RootCAs every request goes through.
	fetch.Config
	// MaxRequestBytes bounds a request body in bytes as sent; default
	// DefaultMaxRequestBody, at most MaxRequestBody.
	MaxRequestBytes int
	// Now tells the time Retry-After is read against; nil: time.Now.
	Now func() time.Time
	// Sleep waits out a Retry-After, or returns ctx's error when ctx ends
	// first; nil: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// ParseConfig builds a Config from the http function's allow-list
// (hostlist entries) and exempted addresses (as fetch.ParseExemption
// reads them), with the default bounds. Errors name the bad entry.
func ParseConfig(allow, allowAddresses []string) (Config, error) {
	l, err := functionconfig.ParseHTTPAllow(allow)
	if err != nil {
		return Config{}, err
	}
	c := Config{Config: fetch.Config{Allow: l}}
	for i, s := range allowAddresses {
		p, err := fetch.ParseExemption(s)
		if err != nil {
			return Config{}, fmt.Errorf("http allow-address %d %q: %w", i, s, err)
		}
		c.AllowAddresses = append(c.AllowAddresses, p)
	}
	return c, nil
}

// ConfigFromEnv reads EnvAllow and EnvAllowAddresses through ParseConfig,
// EnvTimeoutSeconds (whole seconds, 1..30) and EnvMaxRequestBytes (bytes,
// 1..MaxRequestBody). An error names the variable and the rule.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	split := functionconfig.SplitList
	c, err := ParseConfig(split(getenv(EnvAllow)), split(getenv(EnvAllowAddresses)))
	if err != nil {
		return c, fmt.Errorf("%s/%s: %w", EnvAllow, EnvAllowAddresses, err)
	}
	maxSeconds := int(fetch.DefaultTimeout / time.Second)
	if v := getenv(EnvTimeoutSeconds); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxSeconds {
			return c, fmt.Errorf("%s=%q is not a whole number of seconds in 1..%d", EnvTimeoutSeconds, v, maxSeconds)
		}
		c.Timeout = time.Duration(n) * time.Second
	}
	if v := getenv(EnvMaxRequestBytes); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxRequestBody {
			return c, fmt.Errorf("%s=%q is not a whole number of bytes in 1..%d", EnvMaxRequestBytes, v, MaxRequestBody)
		}
		c.MaxRequestBytes = n
	}
	return c, nil
}

func (c *Config) maxRequestBytes() int {
	if c.MaxRequestBytes > 0 {
		return min(c.MaxRequestBytes, MaxRequestBody)
	}
	return DefaultMaxRequestBody
}

func (c *Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Config) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
