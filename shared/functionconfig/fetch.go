package functionconfig

import (
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/shared/hostlist"
)

// Environment variables of structured-data-fetch (shared/fetch
// ConfigFromEnv; the publish function reads EnvFetchAllow too).
const (
	// EnvFetchAllow is the platform's host allow-list: hostlist entries
	// separated by commas or blanks. Empty or unset means no fetch at all.
	EnvFetchAllow = "TOOLGATE_FETCH_ALLOW"
	// EnvFetchAllowAddresses lists exempted addresses (CIDR prefixes or
	// single addresses) separated by commas or blanks; unset in production.
	EnvFetchAllowAddresses = "TOOLGATE_FETCH_ALLOW_ADDRESSES"
	// EnvFetchTimeoutSeconds bounds one fetch in whole seconds, 1..30
	// (default 30, docs/design.md, "The http tool").
	EnvFetchTimeoutSeconds = "TOOLGATE_FETCH_TIMEOUT_SECONDS"
)

// ParseFetchAllow parses the fetch tool's host allow-list, one hostlist
// entry each (hostlist.ParseList); an error, prefixed "fetch allow-list: ",
// names the bad entry. Empty allows no fetch.
func ParseFetchAllow(allow []string) (hostlist.List, error) {
	l, err := hostlist.ParseList(allow)
	if err != nil {
		return hostlist.List{}, fmt.Errorf("fetch allow-list: %w", err)
	}
	return l, nil
}

// SplitList splits a list-valued environment variable (an allow-list of
// hosts, addresses or recipients as the CDK app writes it) at commas and
// blanks (space, tab, newline); empty fields are dropped, so "" is no
// entry. Every function reads its lists through it, so that a list means
// the same to the tool and to the publish function.
func SplitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
}
