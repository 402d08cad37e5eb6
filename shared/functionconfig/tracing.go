package functionconfig

import (
	"fmt"
	"net/url"
	"strings"
)

// EnvTracing is where every function reads whether and where it exports
// its spans (docs/tracing.md, "Export"): the CDK prop tracing, written by
// the CDK app and by the local stack.
const EnvTracing = "TOOLGATE_TRACING"

// TracingOff is the value that exports nothing, and the default.
const TracingOff = "off"

// ParseTracing reads a tracing setting: "" or "off" (nothing is
// exported: calls still carry trace context), or "otlp:" and the base
// URL of an OTLP/HTTP receiver (OpenTelemetry protocol specification,
// "OTLP/HTTP"), http or https with a host and no query, fragment or user
// information; spans are POSTed to its path "/v1/traces". It returns that
// base URL without a trailing "/", or "" when off. The error names the
// rule the value breaks, never quoting more than its scheme.
func ParseTracing(v string) (endpoint string, err error) {
	if v == "" || v == TracingOff {
		return "", nil
	}
	rest, ok := strings.CutPrefix(v, "otlp:")
	if !ok {
		return "", fmt.Errorf("%s: must be %q or \"otlp:\" and an OTLP/HTTP receiver's URL", EnvTracing, TracingOff)
	}
	u, err := url.Parse(rest)
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		return "", fmt.Errorf("%s: the OTLP/HTTP receiver's URL does not parse as http(s)://host[:port][/path]", EnvTracing)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%s: the OTLP/HTTP receiver's URL must be http or https", EnvTracing)
	case u.User != nil || strings.ContainsAny(rest, "?#"):
		return "", fmt.Errorf("%s: the OTLP/HTTP receiver's URL must have no user information, query or fragment", EnvTracing)
	}
	return strings.TrimSuffix(rest, "/"), nil
}
