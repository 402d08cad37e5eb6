package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

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

// Decide runs the checks of the package comment on rawURL: syntax, then
// Allow and pinned (the run's fetch_hosts), then a single look-up through
// Config.Resolver (none for an IP literal, none when an earlier step
// refuses), then CheckAddr on every answer. It makes no connection.
func (c *Config) Decide(ctx context.Context, rawURL string, pinned hostlist.List) Decision {
	u, rawHost, rawPort, reason := checkURL(rawURL)
	if reason != "" {
		return refuse(Decision{}, reason)
	}
	host, err := hostlist.NormalizeHost(rawHost)
	if err != nil {
		return refuse(Decision{}, strings.TrimPrefix(err.Error(), "hostlist: "))
	}
	d := Decision{Host: host, Port: rawPort}
	def := "80"
	if u.Scheme == "https" {
		def = "443"
	}
	if d.Port == "" {
		d.Port = def
	}
	if r := listed(c.Allow, "the platform allow-list", u.Scheme, host, rawPort); r != "" {
		return refuse(d, r)
	}
	if r := listed(pinned, "this run's toolset (fetch_hosts)", u.Scheme, host, rawPort); r != "" {
		return refuse(d, r)
	}
	next := *u
	next.User, next.Fragment, next.RawFragment = nil, "", ""
	next.Host = host
	if a, err := netip.ParseAddr(host); err == nil {
		d.Addrs = []netip.Addr{a}
		if a.Is6() {
			next.Host = "[" + host + "]"
		}
	}
	if rawPort != "" && rawPort != def {
		next.Host += ":" + rawPort
	}
	d.url = &next
	literal := d.Addrs != nil
	if !literal {
		answers, err := c.resolver().LookupNetIP(ctx, "ip", host)
		if err != nil || len(answers) == 0 {
			return lookupFailed(ctx, d, err)
		}
		for _, a := range answers {
			if !containsAddr(d.Addrs, a) {
				d.Addrs = append(d.Addrs, a)
			}
		}
	}
	for _, a := range d.Addrs {
		if ok, why := CheckAddr(a, c.AllowAddresses); !ok {
			if literal {
				return refuse(d, "the address "+why)
			}
			return refuse(d, fmt.Sprintf("%s resolves to %s: %s; a host with any refused address among its answers is refused", host, a, why))
		}
	}
	d.Allow = true
	return d
}

func refuse(d Decision, reason string) Decision {
	d.Allow, d.Code, d.Reason, d.url = false, tool.PermissionDenied, reason, nil
	return d
}

// listed explains why host:port is not on l, or returns "".
func listed(l hostlist.List, name, scheme, host, port string) string {
	if len(l) == 0 {
		return fmt.Sprintf("no fetch is possible: %s is empty", name)
	}
	if _, ok := l.Match(scheme, host, port); ok {
		return ""
	}
	// Say whether another port of this host is listed.
	for _, e := range l {
		p := ""
		if e.Port != 0 {
			p = strconv.Itoa(e.Port)
		}
		if _, ok := (hostlist.List{e}).Match(scheme, host, p); ok {
			shown := port
			if shown == "" {
				shown = map[string]string{"http": "80", "https": "443"}[scheme]
			}
			return fmt.Sprintf("port %s of %s is not on %s: an entry without a port allows only 80 for http and 443 for https, and an entry with a port allows that port only", shown, host, name)
		}
	}
	if why := l.WildcardRefusal(host); why != "" {
		return fmt.Sprintf("host %s is not on %s: %s", host, name, why)
	}
	return fmt.Sprintf("host %s is not on %s", host, name)
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
