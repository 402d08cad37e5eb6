package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"

	"github.com/toolgate/toolgate/shared/fetchurl"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/tool"
)

// Decision is the outcome of Decide for one URL.
type Decision struct {
	// Allow reports that the URL may be fetched from Addrs.
	Allow bool
	// Code is "" when allowed; tool.PermissionDenied when refused; when the
	// look-up failed, tool.Timeout, tool.UpstreamUnavailable, or
	// tool.PermanentFailure for a name that does not exist.
	Code tool.Code
	// Reason says why, in words a person can act on; empty when allowed.
	Reason string
	// Host is the URL's host in hostlist's comparison form (lower-case
	// A-label, or canonical IP text); empty when the URL did not parse.
	Host string
	// Port is the port to connect to, in decimal ("443" when none is written).
	Port string
	// Addrs are the look-up's answers (or the IP literal), de-duplicated, in
	// the resolver's order: every one was checked, and only these are dialled.
	Addrs []netip.Addr

	url *url.URL // the URL to request: scheme, canonical host, no fragment
}

// Decide runs the checks of the package comment on rawURL: Precheck
// (syntax, Allow and pinned, the address of an IP literal), then for a host
// name a single look-up through Config.Resolver and CheckAddr on every
// answer. It makes no connection.
func (c *Config) Decide(ctx context.Context, rawURL string, pinned hostlist.List) Decision {
	return c.decide(ctx, rawURL, pinned, fetchHostsName)
}

// fetchHostsName names the pinned list of Fetch in refusals.
const fetchHostsName = "this run's toolset (fetch_hosts)"

// DecideFor is Decide for another client of these rules, with the pinned
// list named pinnedName in refusals (the http tool's http_hosts, an MCP
// server's host).
func (c *Config) DecideFor(ctx context.Context, rawURL string, pinned hostlist.List, pinnedName string) Decision {
	return c.decide(ctx, rawURL, pinned, pinnedName)
}

// URL returns the URL to request for an allowed decision: the scheme, the
// host in its canonical form, a default port left out, no userinfo and no
// fragment. It is a copy, nil when the decision refused.
func (d Decision) URL() *url.URL {
	if d.url == nil {
		return nil
	}
	u := *d.url
	return &u
}

// decide is Decide with the pinned list named pinnedName in refusals.
func (c *Config) decide(ctx context.Context, rawURL string, pinned hostlist.List, pinnedName string) Decision {
	d := c.precheck(rawURL, pinned, pinnedName)
	if !d.Allow || d.Addrs != nil {
		return d
	}
	answers, err := c.resolver().LookupNetIP(ctx, "ip", d.Host)
	if err != nil || len(answers) == 0 {
		return lookupFailed(ctx, d, err)
	}
	for _, a := range answers {
		if !containsAddr(d.Addrs, a) {
			d.Addrs = append(d.Addrs, a)
		}
	}
	for _, a := range d.Addrs {
		if ok, why := CheckAddr(a, c.AllowAddresses); !ok {
			return refuse(d, fmt.Sprintf("%s resolves to %s: %s; a host with any refused address among its answers is refused", d.Host, a, why))
		}
	}
	return d
}

// Precheck runs every check of Decide that needs no look-up, in Decide's
// order: the URL's syntax (fetchurl.Parse), its host and port on the
// platform's list (Config.Allow) and on pinned (fetchurl.Listed), and for
// an IP-literal host CheckAddr with Config.AllowAddresses. A refusal has
// Allow false, Code tool.PermissionDenied and the Reason. Otherwise Allow
// is true and Addrs holds the literal's address, or is nil for a host name:
// only Decide's look-up and the check of its answers can then refuse it.
// The publish function calls Precheck on a Solution's literal URLs with the
// deployment's Config, so that it refuses what this function would.
func (c *Config) Precheck(rawURL string, pinned hostlist.List) Decision {
	return c.precheck(rawURL, pinned, fetchHostsName)
}

func (c *Config) precheck(rawURL string, pinned hostlist.List, pinnedName string) Decision {
	u, err := fetchurl.Parse(rawURL)
	if err != nil {
		return refuse(Decision{}, err.Error())
	}
	d := Decision{Host: u.Host, Port: u.EffectivePort()}
	if err := fetchurl.Listed(c.Allow, c.allowName(), u); err != nil {
		return refuse(d, err.Error())
	}
	if err := fetchurl.Listed(pinned, pinnedName, u); err != nil {
		return refuse(d, err.Error())
	}
	next := *u.Parsed
	next.User, next.Fragment, next.RawFragment = nil, "", ""
	next.Host = u.Host
	a, literal := u.Addr()
	if literal && a.Is6() {
		next.Host = "[" + u.Host + "]"
	}
	if def := map[string]string{"http": "80", "https": "443"}[u.Scheme]; u.Port != "" && u.Port != def {
		next.Host += ":" + u.Port // a default port written out is left out
	}
	d.url = &next
	if literal {
		d.Addrs = []netip.Addr{a}
		if ok, why := CheckAddr(a, c.AllowAddresses); !ok {
			return refuse(d, "the address "+why)
		}
	}
	d.Allow = true
	return d
}

func refuse(d Decision, reason string) Decision {
	d.Allow, d.Code, d.Reason, d.url = false, tool.PermissionDenied, reason, nil
	return d
}

func lookupFailed(ctx context.Context, d Decision, err error) Decision {
	d.Allow, d.url = false, nil
	var dnsErr *net.DNSError
	switch {
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		d.Code, d.Reason = tool.Timeout, fmt.Sprintf("looking up %s did not finish in time", d.Host)
	case err == nil || errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		d.Code, d.Reason = tool.PermanentFailure, fmt.Sprintf("%s has no address (no such host)", d.Host)
	case errors.As(err, &dnsErr) && dnsErr.IsTimeout:
		d.Code, d.Reason = tool.UpstreamUnavailable, fmt.Sprintf("looking up %s timed out", d.Host)
	default:
		d.Code, d.Reason = tool.UpstreamUnavailable, fmt.Sprintf("looking up %s failed", d.Host)
	}
	return d
}

func containsAddr(l []netip.Addr, a netip.Addr) bool {
	for _, b := range l {
		if a == b {
			return true
		}
	}
	return false
}
