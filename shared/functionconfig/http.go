package functionconfig

import (
	"fmt"

	"github.com/toolgate/toolgate/shared/hostlist"
)

// Environment variables of the http tool's function (shared/httptool
// ConfigFromEnv; the publish function reads EnvHTTPAllow too, to check
// that a toolset's http_hosts fall within it). docs/tools.md, "http",
// lists them.
const (
	// EnvHTTPAllow is the platform's host allow-list for the http tool:
	// hostlist entries separated by commas or blanks. Empty or unset means
	// no http request at all. It is the http function's own, apart from
	// EnvFetchAllow: a tool that can change things elsewhere has another
	// blast radius than a read tool.
	EnvHTTPAllow = "TOOLGATE_HTTP_ALLOW"
	// EnvHTTPAllowAddresses lists exempted addresses (CIDR prefixes or
	// single addresses) separated by commas or blanks; unset in
	// production, 127.0.0.1/32 on the local stack.
	EnvHTTPAllowAddresses = "TOOLGATE_HTTP_ALLOW_ADDRESSES"
	// EnvHTTPTimeoutSeconds bounds one sending of the http tool
	// (look-ups, redirects and the body) in whole seconds, 1..30 (default
	// 30, as structured-data-fetch).
	EnvHTTPTimeoutSeconds = "TOOLGATE_HTTP_TIMEOUT_SECONDS"
	// EnvHTTPMaxRequestBytes bounds a request body in bytes, 1..196608
	// (192 KiB; default 65536, 64 KiB; httptool.MaxRequestBody).
	EnvHTTPMaxRequestBytes = "TOOLGATE_HTTP_MAX_REQUEST_BYTES"
)

// ParseHTTPAllow parses the http tool's host allow-list, one hostlist
// entry each (hostlist.ParseList); an error, prefixed "http allow-list: ",
// names the bad entry. Empty allows no request.
func ParseHTTPAllow(allow []string) (hostlist.List, error) {
	l, err := hostlist.ParseList(allow)
	if err != nil {
		return hostlist.List{}, fmt.Errorf("http allow-list: %w", err)
	}
	return l, nil
}
