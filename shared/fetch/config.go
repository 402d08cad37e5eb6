package fetch

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/shared/addrrule"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/hostlist"
)

// Bounds of the http tool (docs/design.md, "The http tool").
const (
	DefaultMaxBytes     = 5 << 20          // 5 MiB response body, after content decoding
	DefaultTimeout      = 30 * time.Second // the whole fetch: lookups, redirects and body
	DefaultMaxRedirects = 5                // redirects followed; one more is refused
)

// Environment variables ConfigFromEnv reads at cold start
// (functionconfig's, which the CDK app checks its configuration with).
const (
	EnvAllow          = functionconfig.EnvFetchAllow
	EnvAllowAddresses = functionconfig.EnvFetchAllowAddresses
	EnvTimeoutSeconds = functionconfig.EnvFetchTimeoutSeconds
)

// Resolver looks up a host name's addresses. *net.Resolver satisfies it,
// but its pure-Go form returns IPv4 answers as IPv4-mapped IPv6 addresses,
// which CheckAddr refuses; leave Config.Resolver nil for the system
// resolver, adapted so that A answers come back as IPv4.
type Resolver interface {
	// LookupNetIP is called once per URL checked, with network "ip".
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config is the platform's side of the tool: parsed and validated at cold
// start, then shared by all calls (it is not modified by them). Zero fields
// take the defaults in their comments.
type Config struct {
	// Allow is the platform's allow-list (function configuration). A URL's
	// host must match it and the run's pinned fetch_hosts. Empty: no fetch.
	Allow hostlist.List
	// AllowAddresses exempts addresses from CheckAddr, cloud metadata
	// excepted. Empty by default; the local stack uses 127.0.0.1/32.
	AllowAddresses []netip.Prefix
	// MaxBytes bounds the response body in bytes; default DefaultMaxBytes.
	MaxBytes int64
	// Timeout bounds the whole fetch; default DefaultTimeout.
	Timeout time.Duration
	// MaxRedirects is how many redirects are followed; default
	// DefaultMaxRedirects, and a negative value follows none.
	MaxRedirects int
	// Resolver answers look-ups; nil: the system resolver.
	Resolver Resolver
	// Dial connects to a checked address, given as "ip:port" with network
	// "tcp"; nil: a net.Dialer whose Control runs CheckAddr once more on
	// the socket's address.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// RootCAs verifies servers' certificates; nil: the system roots.
	RootCAs *x509.CertPool
	// AllowName names Allow in refusals; default "the platform allow-list".
	// Another client of these rules (Transport) names its own list.
	AllowName string
}

// ParseConfig builds a Config from the platform's allow-list (hostlist
// entries) and exempted addresses ("127.0.0.1/32", or a single address),
// with the default bounds. Errors name the bad entry: a hostlist error, a
// prefix that does not parse, has a zone or host bits set, or covers a cloud
// metadata address (which no exemption may reach).
func ParseConfig(allow []string, allowAddresses []string) (Config, error) {
	l, err := functionconfig.ParseFetchAllow(allow)
	if err != nil {
		return Config{}, err
	}
	c := Config{Allow: l}
	for i, s := range allowAddresses {
		p, err := parseExemption(s)
		if err != nil {
			return Config{}, fmt.Errorf("fetch allow-address %d %q: %w", i, s, err)
		}
		c.AllowAddresses = append(c.AllowAddresses, p)
	}
	return c, nil
}

// ParseExemption parses one exempted address of Config.AllowAddresses
// (addrrule.ParseExemption): a CIDR prefix without host bits
// ("127.0.0.1/32") or a single address without zone. It refuses a prefix
// that covers a cloud metadata address or lies in IPv4-mapped IPv6 space;
// the error says which rule it breaks.
func ParseExemption(s string) (netip.Prefix, error) { return parseExemption(s) }

func parseExemption(s string) (netip.Prefix, error) { return addrrule.ParseExemption(s) }

// ConfigFromEnv reads EnvAllow and EnvAllowAddresses through ParseConfig,
// and EnvTimeoutSeconds.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	split := functionconfig.SplitList
	c, err := ParseConfig(split(getenv(EnvAllow)), split(getenv(EnvAllowAddresses)))
	if err != nil {
		return c, fmt.Errorf("%s/%s: %w", EnvAllow, EnvAllowAddresses, err)
	}
	if v := getenv(EnvTimeoutSeconds); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > int(DefaultTimeout/time.Second) {
			return c, fmt.Errorf("%s=%q is not a whole number of seconds in 1..%d", EnvTimeoutSeconds, v, int(DefaultTimeout/time.Second))
		}
		c.Timeout = time.Duration(n) * time.Second
	}
	return c, nil
}

func (c *Config) allowName() string {
	if c.AllowName != "" {
		return c.AllowName
	}
	return "the platform allow-list"
}

func (c *Config) maxBytes() int64 {
	if c.MaxBytes > 0 {
		return c.MaxBytes
	}
	return DefaultMaxBytes
}

// EffectiveTimeout is Config.Timeout, or DefaultTimeout when it is zero.
func (c *Config) EffectiveTimeout() time.Duration { return c.timeout() }

// EffectiveMaxRedirects is how many redirects Config.MaxRedirects lets a
// client follow: DefaultMaxRedirects when zero, none when negative.
func (c *Config) EffectiveMaxRedirects() int { return c.maxRedirects() }

func (c *Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c *Config) maxRedirects() int {
	switch {
	case c.MaxRedirects < 0:
		return 0
	case c.MaxRedirects == 0:
		return DefaultMaxRedirects
	}
	return c.MaxRedirects
}

func (c *Config) resolver() Resolver {
	if c.Resolver != nil {
		return c.Resolver
	}
	return addrrule.System
}

// FixedResolver answers look-ups from a table, for dry runs: host names
// (normalised as hostlist.NormalizeHost does) to their answers. A name
// missing from the table is not found. It makes no network traffic.
type FixedResolver map[string][]netip.Addr

// LookupNetIP returns the table's answers for host, filtered by network
// ("ip", "ip4" or "ip6").
func (f FixedResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	h, err := hostlist.NormalizeHost(host)
	if err != nil {
		return nil, &net.DNSError{Err: "not a valid host name", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range f[h] {
		if network == "ip" || network == "ip4" && a.Is4() || network == "ip6" && a.Is6() {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no --resolve answer for this host", Name: host, IsNotFound: true}
	}
	return out, nil
}

// ParseResolve builds a FixedResolver from "HOST=IP[,IP]..." specs (the
// check-url --resolve flag). Hosts are normalised as hostlist.NormalizeHost
// does; a host given twice gets the answers of both. Errors name the spec.
func ParseResolve(specs []string) (FixedResolver, error) {
	f := FixedResolver{}
	for _, s := range specs {
		host, ips, ok := strings.Cut(s, "=")
		if !ok || ips == "" {
			return nil, fmt.Errorf("resolve %q: want HOST=IP[,IP]", s)
		}
		h, err := hostlist.NormalizeHost(host)
		if err != nil {
			return nil, fmt.Errorf("resolve %q: %w", s, err)
		}
		for ip := range strings.SplitSeq(ips, ",") {
			a, err := netip.ParseAddr(ip)
			if err != nil || a.Zone() != "" {
				return nil, fmt.Errorf("resolve %q: %q is not an IP address without zone", s, ip)
			}
			f[h] = append(f[h], a)
		}
	}
	return f, nil
}
