package httptool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/shared/fetchurl"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/httprule"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Rules a refusal of the http tool names: httprule's, which the resolver
// names too.
const (
	RuleHost   = httprule.RuleHost
	RuleMethod = httprule.RuleMethod
	RuleHeader = httprule.RuleHeader
)

// httpHostsName names the run's pinned host entries in refusals.
const httpHostsName = "this run's toolset (http_hosts)"

// Contract is the http tool's toolcall.Contract, which its function sets
// as dispatch.Config.Contract: from the validated input's method and url
// it finds the host entry (EntryFor) and returns httprule.Decide(method,
// the entry declares an idempotency key) with that entry, whose Auth
// tells the dispatcher to resolve the credential the call presents
// (docs/credentials.md). So a GET or HEAD needs no review
// and runs at least once; any other method needs an approved review, and
// runs at least once under the host's idempotency key when its entry
// declares one, else at most once, whatever the step was compiled for.
// A url that fetchurl.Parse refuses, a host with no entry and a method the
// entry does not pin are refused, TOOL_PERMISSION_DENIED naming the rule
// and the host; an input without a known method is TOOL_INPUT_INVALID.
func Contract(call *toolcall.Call) (toolcall.CallContract, error) {
	var in struct {
		Method string `json:"method"`
		URL    string `json:"url"`
	}
	if err := json.NewDecoder(bytes.NewReader(call.Input)).Decode(&in); err != nil {
		return toolcall.CallContract{}, tool.Wrap(tool.InputInvalid, err, "the input is not an http input object")
	}
	if !httprule.Known(in.Method) {
		return toolcall.CallContract{}, tool.Errorf(tool.InputInvalid, "method is not one of %s", strings.Join(httprule.Methods, ", "))
	}
	u, err := fetchurl.Parse(in.URL)
	if err != nil {
		return toolcall.CallContract{}, tool.Errorf(tool.PermissionDenied, "%v", err)
	}
	var hosts []toolset.HTTPHost
	if call.Toolset != nil {
		hosts = call.Toolset.HTTPHosts
	}
	entry, err := entryForMethod(hosts, u, in.Method)
	if err != nil {
		return toolcall.CallContract{}, err
	}
	return toolcall.CallContract{Contract: httprule.Decide(in.Method, entry.Idempotency != nil), Host: entry}, nil
}

// EntryFor returns the entry of hosts (a toolset's http_hosts) that
// governs u: of the entries whose host and port match u's (hostlist
// matching, as structured-data-fetch's fetch_hosts), the most specific
// one: a host name or address over a wildcard, a longer wildcard over a
// shorter one, an entry naming the port over one that does not. Its
// methods, headers and idempotency apply to the request. No match, or an
// entry hostlist refuses, is TOOL_PERMISSION_DENIED naming rule
// http-host and the host.
func EntryFor(hosts []toolset.HTTPHost, u *fetchurl.URL) (*toolset.HTTPHost, error) {
	list, err := parseHosts(hosts)
	if err != nil {
		return nil, err
	}
	e, ok := toolset.MatchHTTPHost(hosts, u.Scheme, u.Host, u.Port)
	if !ok {
		why := fetchurl.Listed(list, httpHostsName, u)
		if why == nil { // cannot happen: Listed agrees with Match
			why = fmt.Errorf("host %s is not on %s", u.Host, httpHostsName)
		}
		return nil, tool.Errorf(tool.PermissionDenied, "refused by rule %s: %v", RuleHost, noFetchWords(why))
	}
	return &e, nil
}

// noFetchWords rewords fetchurl.Listed's refusal of an empty list for
// the http tool.
func noFetchWords(err error) string {
	return strings.Replace(err.Error(), "no fetch is possible", "no http request is possible", 1)
}

// entryForMethod is EntryFor, and refuses a method the entry does not
// pin (rule http-method).
func entryForMethod(hosts []toolset.HTTPHost, u *fetchurl.URL, method string) (*toolset.HTTPHost, error) {
	e, err := EntryFor(hosts, u)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(e.Methods, method) {
		return nil, tool.Errorf(tool.PermissionDenied, "refused by rule %s: %s is not pinned for %s in %s, whose entry %s allows %s",
			RuleMethod, method, u.Host, httpHostsName, e.Host, strings.Join(e.Methods, ", "))
	}
	return e, nil
}

// parseHosts parses the entries' hosts; an invalid one is
// TOOL_PERMISSION_DENIED (the run's toolset cannot be trusted for it).
func parseHosts(hosts []toolset.HTTPHost) (hostlist.List, error) {
	list := make(hostlist.List, 0, len(hosts))
	for _, h := range hosts {
		e, err := hostlist.ParseEntry(h.Host)
		if err != nil {
			return nil, tool.Wrap(tool.PermissionDenied, err, "the run's toolset holds an invalid http_hosts entry: %s", err)
		}
		list = append(list, e)
	}
	return list, nil
}

// pinnedFor is the hosts of the entries that pin method: what Decide
// checks a URL, the first and every redirect's, against.
func pinnedFor(hosts []toolset.HTTPHost, method string) (hostlist.List, error) {
	var keep []toolset.HTTPHost
	for _, h := range hosts {
		if slices.Contains(h.Methods, method) {
			keep = append(keep, h)
		}
	}
	return parseHosts(keep)
}
