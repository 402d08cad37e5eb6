package functionconfig

// Environment variables of the http tool's function (functions/http); the
// publish function reads EnvHTTPAllow too, to check that a toolset's
// http_hosts fall within it (docs/tools.md, "The http tool").
const (
	// EnvHTTPAllow is the platform's host allow-list for the http
	// function: hostlist entries separated by commas or blanks, as
	// EnvFetchAllow's. Empty or unset means no http at all.
	EnvHTTPAllow = "TOOLGATE_HTTP_ALLOW"
	// EnvHTTPAllowAddresses lists exempted addresses (CIDR prefixes or
	// single addresses) separated by commas or blanks; unset in production.
	EnvHTTPAllowAddresses = "TOOLGATE_HTTP_ALLOW_ADDRESSES"
	// EnvHTTPTimeoutSeconds bounds one request in whole seconds, 1..30, as
	// EnvFetchTimeoutSeconds bounds a fetch.
	EnvHTTPTimeoutSeconds = "TOOLGATE_HTTP_TIMEOUT_SECONDS"
	// EnvHTTPMaxRequestBytes bounds a request body's encoded bytes: 64 KiB
	// by default, at most 192 KiB (a Task's input is at most 256 KiB, the
	// Step Functions payload quota).
	EnvHTTPMaxRequestBytes = "TOOLGATE_HTTP_MAX_REQUEST_BYTES"
)
