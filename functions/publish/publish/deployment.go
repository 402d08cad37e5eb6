package publish

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/fetch"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/httptool"
	"github.com/toolgate/toolgate/shared/recipient"
	"github.com/toolgate/toolgate/shared/reviewer"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Environment of the publish function that describes the deployment's
// tools: the same variables, with the same values, as the tools read
// (infra/functions.go sets both from one configuration).
const (
	// EnvFetchAllow is structured-data-fetch's platform host allow-list
	// (fetch.EnvAllow). Empty: no literal URL can be published, as no fetch
	// is possible.
	EnvFetchAllow = functionconfig.EnvFetchAllow
	// EnvFetchAllowAddresses is structured-data-fetch's address exemption
	// (fetch.EnvAllowAddresses): the local stack's only. Unset on AWS.
	EnvFetchAllowAddresses = functionconfig.EnvFetchAllowAddresses
	// EnvHTTPAllow is the http function's platform host allow-list
	// (functionconfig.EnvHTTPAllow): hostlist entries separated by commas
	// or blanks. Empty: the deployment has no http tool, so no toolset
	// with http_hosts and no literal http URL can be published.
	EnvHTTPAllow = functionconfig.EnvHTTPAllow
	// EnvHTTPAllowAddresses is the http function's address exemption
	// (functionconfig.EnvHTTPAllowAddresses): the local stack's only.
	EnvHTTPAllowAddresses = functionconfig.EnvHTTPAllowAddresses
	// EnvRecipientAllow is send-email's recipient allow-list
	// (sendemail.EnvRecipientAllow). Required, as send-email requires it.
	EnvRecipientAllow = "TOOLGATE_RECIPIENT_ALLOW"
)

// Deployment is the part of the deployment's configuration that decides on
// a Solution's literal values at run time, and that `toolgate check`
// cannot know: the allow-lists the tools read at cold start, parsed with
// the tools' own functions. Check applies it at publish, so that a
// Solution whose literal URLs or recipients its tools would refuse is never
// published. The zero Deployment refuses every literal (default deny).
type Deployment struct {
	// Fetch is structured-data-fetch's configuration as fetch.ConfigFromEnv
	// reads it: the platform's host allow-list (Allow) and the address
	// exemptions (AllowAddresses).
	Fetch fetch.Config
	// HTTP is the http function's platform host allow-list (Allow) and
	// address exemptions (AllowAddresses), read with the fetch rules'
	// parser as the http function reads them; the http tool applies the
	// same five address rules (docs/tools.md, "http").
	HTTP fetch.Config
	// Recipients is send-email's recipient allow-list, as
	// recipient.ParseCommaList reads TOOLGATE_RECIPIENT_ALLOW.
	Recipients recipient.List
	// Accounts are the AWS accounts a reviewer pattern may name: the
	// deployment's own (caller.EnvAccount) and the organisation's reviewer
	// accounts (caller.EnvReviewerAccounts), whose principals alone
	// review-decision's verifier admits. FunctionConfigFromEnv sets them.
	Accounts []string
}

// DeploymentFromEnv reads EnvFetchAllow and EnvFetchAllowAddresses (with
// fetch.ConfigFromEnv), EnvHTTPAllow and EnvHTTPAllowAddresses (with
// fetch.ParseConfig) and EnvRecipientAllow (with recipient.ParseCommaList)
// as structured-data-fetch, http and send-email read them. Every problem
// comes back in one error.
func DeploymentFromEnv(getenv func(string) string) (Deployment, error) {
	var d Deployment
	var problems []string
	cfg, err := fetch.ConfigFromEnv(func(k string) string {
		if k == EnvFetchAllow || k == EnvFetchAllowAddresses {
			return getenv(k)
		}
		return "" // the fetch timeout is the tool's, not the deployment's lists
	})
	if err != nil {
		problems = append(problems, err.Error())
	}
	d.Fetch = fetch.Config{Allow: cfg.Allow, AllowAddresses: cfg.AllowAddresses}
	httpCfg, err := httptool.ParseConfig(functionconfig.SplitList(getenv(EnvHTTPAllow)), functionconfig.SplitList(getenv(EnvHTTPAllowAddresses)))
	if err != nil {
		problems = append(problems, fmt.Sprintf("%s/%s: %v", EnvHTTPAllow, EnvHTTPAllowAddresses, err))
	}
	d.HTTP = fetch.Config{Allow: httpCfg.Allow, AllowAddresses: httpCfg.AllowAddresses, AllowName: httpAllowName}
	if v := getenv(EnvRecipientAllow); strings.TrimSpace(v) == "" {
		problems = append(problems, EnvRecipientAllow+" is not set: give send-email's recipient allow-list, which literal recipients are checked against")
	} else if d.Recipients, err = recipient.ParseCommaList(v); err != nil {
		problems = append(problems, fmt.Sprintf("%s: %v", EnvRecipientAllow, err))
	}
	if len(problems) > 0 {
		return Deployment{}, errors.New(strings.Join(problems, "; "))
	}
	return d, nil
}

// httpAllowName names the http function's allow-list in refusals.
const httpAllowName = "the http function's platform allow-list (" + EnvHTTPAllow + ")"

// RuleDeployment is the rule id of Check's diagnostics.
const RuleDeployment = "deployment"

// CheckHTTPHosts returns one problem for each entry of hosts (a toolset's
// http_hosts) that the http function's platform allow-list does not
// cover (Covers): the tool would refuse every call to its hosts, so a
// toolset pinning it promises what the deployment never allows
// (docs/toolsets.md, "The http tool's hosts"). The problems name the
// entry, never the allow-list's entries.
func (d Deployment) CheckHTTPHosts(hosts []toolset.HTTPHost) []string {
	var out []string
	for _, h := range hosts {
		e, err := hostlist.ParseEntry(h.Host)
		if err != nil || !Covers(d.HTTP.Allow, e) {
			out = append(out, fmt.Sprintf("http host %s is not within %s: the http tool would refuse every call to it", h.Host, httpAllowName))
		}
	}
	return out
}

// Covers reports whether allow-list l allows every host and port entry e
// allows: an IP literal or a host name that some entry matches on e's
// port (hostlist.List.Match; an entry without a port stands for 80 and
// 443), or a wildcard whose every host a wildcard entry of l with the same
// port matches (its suffix is that entry's, or under it, in the same
// registrable domain).
func Covers(l hostlist.List, e hostlist.Entry) bool {
	port := ""
	if e.Port != 0 {
		port = strconv.Itoa(e.Port)
	}
	if !e.Wildcard {
		host := e.Host
		if e.Addr.IsValid() {
			host = e.Addr.String()
		}
		_, https := l.Match("https", host, port)
		_, http := l.Match("http", host, port)
		return https && http
	}
	for _, a := range l {
		if a.Wildcard && a.Port == e.Port {
			if _, ok := (hostlist.List{a}).Match("https", "x."+e.Host, port); ok {
				return true
			}
		}
	}
	return false
}

// Check returns one error diagnostic, at the value's position, for every
// literal of res (resolver.Result.Literals) that the deployment's tools
// would refuse at run time whatever the run, or that no one could decide: a fetch URL that
// structured-data-fetch's Precheck refuses (its host and port not on the
// platform's allow-list, or an IP-literal host whose address is refused
// with the deployment's exemptions), an http URL the same rules refuse
// with the http function's allow-list, an http host entry that list
// does not cover (CheckHTTPHosts), and a recipient that send-email's
// recipient allow-list does not admit (recipient.List.Decide), and a
// reviewer pattern naming an account that is not one of Accounts (rule
// reviewer-pattern). Each names
// the step and field and says which list refused it; none lists the
// deployment's entries. res must have compiled without error.
func (d Deployment) Check(res *resolver.Result) []resolver.Diagnostic {
	var out []resolver.Diagnostic
	add := func(l resolver.Literal, format string, args ...any) {
		msg := fmt.Sprintf("step %q with.%s: ", l.Step, l.Field) + fmt.Sprintf(format, args...)
		out = append(out, resolver.Diagnostic{File: res.File, Line: l.Pos.Line, Column: l.Pos.Column,
			Severity: resolver.SeverityError, Rule: RuleDeployment, Message: resolver.DiagnosticText(msg)})
	}
	var pinned, pinnedHTTP hostlist.List
	if res.Toolset != nil {
		var err error
		if pinned, err = hostlist.ParseList(res.Toolset.FetchHosts); err != nil {
			pinned = nil // never: the resolver wrote them; nil refuses every URL
		}
		for _, h := range res.Toolset.HTTPHosts {
			if e, err := hostlist.ParseEntry(h.Host); err == nil {
				pinnedHTTP = append(pinnedHTTP, e)
			}
		}
		if len(res.Toolset.HTTPHosts) > 0 && res.Solution != nil {
			// In the order they are written (they are held sorted by host).
			entries := slices.SortedFunc(slices.Values(res.Solution.HTTPHosts), func(a, b resolver.HTTPHostEntry) int {
				return cmp.Or(cmp.Compare(a.Pos.Line, b.Pos.Line), cmp.Compare(a.Pos.Column, b.Pos.Column))
			})
			for _, e := range entries {
				for _, p := range d.CheckHTTPHosts([]toolset.HTTPHost{e.HTTPHost}) {
					what := "policy.http_hosts"
					if res.Solution.Toolset.Set {
						what = "toolset " + res.Toolset.ID
					}
					out = append(out, resolver.Diagnostic{File: res.File, Line: e.Pos.Line, Column: e.Pos.Column,
						Severity: resolver.SeverityError, Rule: RuleDeployment, Message: resolver.DiagnosticText(what + ": " + p)})
				}
			}
		}
	}
	for _, l := range res.Literals {
		switch l.Kind {
		case resolver.LiteralFetchURL:
			if dec := d.Fetch.Precheck(l.Value, pinned); !dec.Allow {
				add(l, "%s; structured-data-fetch would refuse every run of this step (TOOL_PERMISSION_DENIED)", dec.Reason)
			}
		case resolver.LiteralHTTPURL:
			// The resolver matched the URL to an entry of the pinned
			// http_hosts; the platform's list and the address rules are
			// this deployment's.
			if dec := d.HTTP.Precheck(l.Value, pinnedHTTP); !dec.Allow {
				add(l, "%s; the http tool would refuse every run of this step (TOOL_PERMISSION_DENIED)", dec.Reason)
			}
		case resolver.LiteralReviewer:
			if a := reviewer.Account(l.Value); !slices.Contains(d.Accounts, a) {
				out = append(out, resolver.Diagnostic{File: res.File, Line: l.Pos.Line, Column: l.Pos.Column, Severity: resolver.SeverityError,
					Rule: resolver.RuleReviewerPattern, Message: resolver.DiagnosticText(fmt.Sprintf("step %q %s: reviewer %q names AWS account %s, which this deployment does not admit (its own account and %s); review-decision would refuse every principal it matches, so the review could never be decided", l.Step, l.Field, l.Value, a, caller.EnvReviewerAccounts))})
			}
		case resolver.LiteralRecipient:
			switch dec := d.Recipients.Decide(l.Value); dec.Verdict {
			case recipient.Allow:
			case recipient.Refuse:
				add(l, "recipient %q is not on this deployment's recipient allow-list (%s; default deny, and an \"@domain\" entry matches that exact domain only); send-email would refuse every run of this step (TOOL_PERMISSION_DENIED)", l.Value, EnvRecipientAllow)
			default: // the resolver refuses these already
				add(l, "%s", dec.Reason)
			}
		default:
			add(l, "a literal of kind %q that publish does not know how to check", l.Kind)
		}
	}
	return out
}
