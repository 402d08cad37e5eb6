package mcpmeta

import (
	"regexp"
	"strings"
	"testing"
)

// metaKey is the _meta key name format of the MCP specification (basic
// protocol, "_meta"): an optional prefix of dot-separated labels and a
// slash, then a name.
var metaKey = regexp.MustCompile(`^(?:[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*/)?(?:[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)?$`)

// reserved matches a prefix whose second label is "modelcontextprotocol" or
// "mcp", which the 2025-11-25 revision reserves for MCP.
var reserved = regexp.MustCompile(`^[^./]+\.(?:modelcontextprotocol|mcp)[./]`)

func TestKeysFollowTheMetaNamingRules(t *testing.T) {
	for _, key := range []string{IdempotencyKey} {
		if !metaKey.MatchString(key) {
			t.Errorf("%q is not a valid _meta key name", key)
		}
		if reserved.MatchString(key) {
			t.Errorf("%q uses a prefix reserved for MCP", key)
		}
		if len(key) <= len(Prefix) || key[:len(Prefix)] != Prefix {
			t.Errorf("%q does not start with %q", key, Prefix)
		}
	}
	// The trace context keys are the bare ones the specification reserves
	// (SEP-414), valid names without a prefix.
	for _, key := range []string{Traceparent, Tracestate} {
		if !metaKey.MatchString(key) || strings.Contains(key, "/") {
			t.Errorf("%q is not a bare _meta key name", key)
		}
	}
	// The patterns themselves, on the spec's examples.
	for key, want := range map[string]bool{
		"io.modelcontextprotocol/protocolVersion": true,
		"com.example.mcp/x":                       false,
		"dev.mcp/x":                               true,
	} {
		if !metaKey.MatchString(key) || reserved.MatchString(key) != want {
			t.Errorf("%q: valid %v, reserved %v; want valid, reserved %v", key, metaKey.MatchString(key), reserved.MatchString(key), want)
		}
	}
}
