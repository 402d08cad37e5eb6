package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/shared/addrrule"
	"github.com/toolgate/toolgate/shared/fetchurl"
	"github.com/toolgate/toolgate/shared/hostlist"
)

// AllowName names the platform's webhook host allow-list in refusals.
const AllowName = "the webhook allow-list (TOOLGATE_WEBHOOK_ALLOW)"

// EndpointRules decide a subscription's URL, at subscribe time and before
// every attempt (docs/webhooks.md, "Endpoints"). The zero value allows
// nothing.
type EndpointRules struct {
	// Allow is the platform's allow-list of webhook hosts, in package
	// hostlist's syntax (the http tool's): an entry without a port allows
	// 443 for https only. Empty: no webhook.
	Allow hostlist.List
	// AllowAddresses exempts addresses from addrrule.Check, cloud metadata
	// excepted, and is the only place plain http may go (an IP literal in
	// it, or a name whose every answer is in it): the local stack's
	// 127.0.0.1/32. Empty when deployed, so https only.
	AllowAddresses []netip.Prefix
	// OwnHosts are this deployment's Function URL hosts
	// ("<url-id>.lambda-url.<region>.on.aws"), refused so that an inbound
	// receiver never turns events into runs into events; an entry
	// "*.<suffix>" refuses every host under suffix. An entry with a port
	// ("127.0.0.1:8081", "[::1]:8081", ParseOwnHost's forms) refuses that
	// origin only, the URL's port or its scheme's default compared: the
	// local stack's functions, all on 127.0.0.1, each on a port of its
	// own. An entry without one refuses the host on every port.
	OwnHosts []string
	// Resolver looks a host name up, once per attempt; nil: addrrule.System.
	Resolver addrrule.Resolver
}

// ParseEndpointRules builds EndpointRules from the platform's allow-list
// (hostlist entries), exempted addresses (addrrule.ParseExemption) and own
// Function URL hosts (host names, or "*." and a name). Errors name the
// list and the entry.
func ParseEndpointRules(allow, allowAddresses, ownHosts []string) (EndpointRules, error) {
	var r EndpointRules
	var err error
	if r.Allow, err = hostlist.ParseList(allow); err != nil {
		return r, fmt.Errorf("webhook allow-list: %w", err)
	}
	for i, s := range allowAddresses {
		p, err := addrrule.ParseExemption(s)
		if err != nil {
			return r, fmt.Errorf("webhook allow-address %d %q: %w", i, s, err)
		}
		r.AllowAddresses = append(r.AllowAddresses, p)
	}
	for i, s := range ownHosts {
		h, err := ParseOwnHost(s)
		if err != nil {
			return r, fmt.Errorf("webhook own host %d: %w", i, err)
		}
		r.OwnHosts = append(r.OwnHosts, h)
	}
	return r, nil
}

// OwnHostsName names the rule of EndpointRules.OwnHosts in refusals.
const OwnHostsName = "this deployment's own Function URLs (TOOLGATE_WEBHOOK_OWN_HOSTS)"

// ParseOwnHost parses one EndpointRules.OwnHosts entry and returns its
// canonical form: a host name or IP address (hostlist.NormalizeHost's
// form), or "*." and a host name, each with an optional ":port" (1 to
// 65535, decimal without a leading zero, RFC 3986 section 3.2.3; an IPv6
// address with a port in brackets, section 3.2.2). The error names the
// entry and the rule it breaks.
func ParseOwnHost(s string) (string, error) {
	rest, wild := strings.CutPrefix(s, "*.")
	host, port, err := splitOwnHost(rest)
	if err != nil {
		return "", fmt.Errorf("own host %q: %w", s, err)
	}
	h, err := hostlist.NormalizeHost(host)
	if err != nil {
		return "", fmt.Errorf("own host %q: %w", s, err)
	}
	if _, err := netip.ParseAddr(h); err == nil && wild {
		return "", fmt.Errorf("own host %q: a wildcard cannot apply to an IP address", s)
	}
	if port != "" || strings.HasSuffix(rest, ":") {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return "", fmt.Errorf("own host %q: port %q is not a decimal number from 1 to 65535 without a leading zero", s, port)
		}
		h = net.JoinHostPort(h, port)
	}
	if wild {
		h = "*." + h
	}
	return h, nil
}

// splitOwnHost splits an own host entry (without its "*.") into host and
// port, "" when it names none: "[v6]" or "[v6]:port", "host:port", or a
// bare host or IPv6 address (more than one colon, no brackets).
func splitOwnHost(s string) (host, port string, err error) {
	if inner, ok := strings.CutPrefix(s, "["); ok {
		if h, ok := strings.CutSuffix(inner, "]"); ok {
			return h, "", nil
		}
		return net.SplitHostPort(s)
	}
	if strings.Count(s, ":") == 1 {
		return net.SplitHostPort(s)
	}
	return s, "", nil
}

// Refusal is the error of Check and Resolve: why an endpoint may not be
// called. Class is the attempt's ErrorClass: "refused-url" for the URL's
// syntax, scheme or host, "refused-address" for an address, "lookup" for
// a look-up that failed. Reason may name the host and its addresses,
// never the URL's path or query.
type Refusal struct {
	Class  string
	Reason string
}

func (r *Refusal) Error() string { return "webhook endpoint refused: " + r.Reason }

func refused(format string, a ...any) error {
	return &Refusal{Class: "refused-url", Reason: fmt.Sprintf(format, a...)}
}

// Check decides a subscription's URL without any look-up, in this order:
// the syntax of fetchurl.Parse (the http tool's: no userinfo, no blanks, a
// host in hostlist's form); no fragment; https, or http only to an IP
// literal inside AllowAddresses or, when AllowAddresses is not empty, to
// a name (Resolve then requires every answer inside it); not one of OwnHosts, nor the same
// Function URL id in any region; a host and port on Allow; an IP literal
// allowed by addrrule.Check. It returns the URL to POST to: the host in
// its canonical form, a default port left out. The error is a *Refusal.
func (r EndpointRules) Check(raw string) (*url.URL, error) {
	u, err := fetchurl.Parse(raw)
	if err != nil {
		return nil, refused("%s", err)
	}
	if u.Parsed.Fragment != "" || strings.Contains(raw, "#") {
		return nil, refused("the URL has a fragment, which is never sent: remove it")
	}
	addr, literal := u.Addr()
	if u.Scheme == "http" && (literal && !r.exempt(addr) || !literal && len(r.AllowAddresses) == 0) {
		return nil, refused("plain http is allowed only to an exempted address (the local stack's 127.0.0.1): use https")
	}
	if why := r.own(u.Host, u.EffectivePort()); why != "" {
		shown := u.Host
		if u.Port != "" {
			shown = net.JoinHostPort(u.Host, u.Port)
		}
		return nil, refused("%s is %s: a webhook never calls %s", shown, why, OwnHostsName)
	}
	if len(r.Allow) == 0 {
		return nil, refused("no webhook can be delivered: %s is empty", AllowName)
	}
	if err := fetchurl.Listed(r.Allow, AllowName, u); err != nil {
		return nil, refused("%s", err)
	}
	if literal {
		if ok, why := addrrule.Check(addr, r.AllowAddresses); !ok {
			return nil, &Refusal{Class: "refused-address", Reason: "the address " + why}
		}
	}
	out := *u.Parsed
	out.User, out.Fragment, out.RawFragment = nil, "", ""
	out.Host = u.Host
	if literal && addr.Is6() {
		out.Host = "[" + u.Host + "]"
	}
	if def := map[string]string{"http": "80", "https": "443"}[u.Scheme]; u.Port != "" && u.Port != def {
		out.Host += ":" + u.Port
	}
	return &out, nil
}

func (r EndpointRules) exempt(a netip.Addr) bool {
	for _, p := range r.AllowAddresses {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// own says why host (normalised) on port (the port a connection goes
// to) is one of the deployment's own hosts, "" when it is not. A
// Function URL host is "<url-id>.lambda-url.<region>.on.aws"; the same
// url-id under another lambda-url domain is the same function. An entry
// with a port refuses that port only.
func (r EndpointRules) own(host, port string) string {
	p, _ := strconv.Atoi(port)
	for _, entry := range r.OwnHosts {
		rest, wild := strings.CutPrefix(strings.ToLower(entry), "*.")
		o, oport, err := splitOwnHost(rest)
		if err != nil {
			continue
		}
		if n, _ := strconv.Atoi(oport); oport != "" && n != p {
			continue
		}
		o = strings.TrimSuffix(o, ".")
		origin := ""
		if oport != "" {
			origin = " origin (host and port)"
		}
		if wild {
			if strings.HasSuffix(host, "."+o) {
				return "under " + entry + ", one of this deployment's own Function URLs"
			}
			continue
		}
		if host == o {
			return "this deployment's own Function URL" + origin
		}
		if id, ok := functionURLID(o); ok {
			if hid, ok := functionURLID(host); ok && hid == id {
				return "the Function URL id of this deployment's " + o
			}
		}
	}
	return ""
}

// functionURLID returns the url-id of a Function URL host,
// "<url-id>.lambda-url.<...>".
func functionURLID(host string) (string, bool) {
	labels := strings.Split(host, ".")
	if len(labels) < 3 || labels[1] != "lambda-url" || labels[0] == "" {
		return "", false
	}
	return labels[0], true
}

// Resolve returns the addresses a checked URL (Check's) may be connected
// to: an IP literal's address, or the answers of one look-up of the host
// name through Resolver, de-duplicated, every one allowed by
// addrrule.Check with AllowAddresses and, for plain http, inside
// AllowAddresses. A host with any refused answer is refused: the error is
// a *Refusal of class "refused-address", or "lookup" when the look-up
// failed or found nothing.
func (r EndpointRules) Resolve(ctx context.Context, u *url.URL) ([]netip.Addr, error) {
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		if ok, why := addrrule.Check(a, r.AllowAddresses); !ok {
			return nil, &Refusal{Class: "refused-address", Reason: "the address " + why}
		}
		return []netip.Addr{a}, nil
	}
	res := r.Resolver
	if res == nil {
		res = addrrule.System
	}
	answers, err := res.LookupNetIP(ctx, "ip", host)
	if err != nil || len(answers) == 0 {
		var dnsErr *net.DNSError
		reason := "looking up " + host + " failed"
		switch {
		case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
			reason = "looking up " + host + " did not finish in time"
		case err == nil || errors.As(err, &dnsErr) && dnsErr.IsNotFound:
			reason = host + " has no address (no such host)"
		}
		return nil, &Refusal{Class: "lookup", Reason: reason}
	}
	var out []netip.Addr
	for _, a := range answers {
		if !containsAddr(out, a) {
			out = append(out, a)
		}
	}
	for _, a := range out {
		if ok, why := addrrule.Check(a, r.AllowAddresses); !ok {
			return nil, &Refusal{Class: "refused-address", Reason: fmt.Sprintf("%s resolves to %s: %s; a host with any refused address among its answers is refused", host, a, why)}
		}
	}
	if u.Scheme == "http" {
		for _, a := range out {
			if !r.exempt(a) {
				return nil, &Refusal{Class: "refused-address", Reason: fmt.Sprintf("%s resolves to %s, which is not an exempted address: plain http is allowed only to exempted addresses (the local stack's 127.0.0.1); use https", host, a)}
			}
		}
	}
	return out, nil
}

// CheckResolved is Check and then Resolve: what the admin function runs
// at subscribe time, so that a URL whose name resolves to a refused
// address is refused before it is stored.
func (r EndpointRules) CheckResolved(ctx context.Context, raw string) (*url.URL, []netip.Addr, error) {
	u, err := r.Check(raw)
	if err != nil {
		return nil, nil, err
	}
	addrs, err := r.Resolve(ctx, u)
	if err != nil {
		return nil, nil, err
	}
	return u, addrs, nil
}

func containsAddr(l []netip.Addr, a netip.Addr) bool {
	for _, b := range l {
		if a == b {
			return true
		}
	}
	return false
}
