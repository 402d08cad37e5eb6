// Package addrrule decides which IP addresses a toolgate client may connect
// to: the rules the http tools (package fetch, package httptool), the MCP
// tools' client and webhook deliveries (package webhook) share, so that
// none of them keeps its own table of special-purpose ranges. It is pure
// except for System, the one look-up a caller makes before checking the
// answers.
//
// Check allows IPv4 outside the IANA IPv4 special-purpose registry and
// multicast, and IPv6 only inside global unicast 2000::/3 outside the IANA
// IPv6 special-purpose registry (both from code.dny.dev/ssrf, plus
// 5f00::/16 of RFC 9602, which it lacks); IPv4-mapped, IPv4-compatible,
// NAT64, 6to4 and Teredo forms are refused whatever they embed; cloud
// metadata addresses are refused even when an exemption would cover them,
// and ParseExemption refuses an exemption that covers one.
package addrrule

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"

	"code.dny.dev/ssrf"
)

// guardian holds code.dny.dev/ssrf's ranges: the IANA IPv4 special-purpose
// registry and multicast, and for IPv6 everything outside global unicast
// 2000::/3 plus the IANA IPv6 special-purpose prefixes inside it. Ports and
// networks are checked elsewhere.
var guardian = ssrf.New(ssrf.WithAnyPort(), ssrf.WithAnyNetwork())

type namedPrefix struct {
	prefix netip.Prefix
	name   string
}

func named(p, name string) namedPrefix { return namedPrefix{netip.MustParsePrefix(p), name} }

// metadata lists cloud instance-metadata and platform endpoints. They are
// refused even when an exemption covers them, and ParseExemption refuses
// an exemption that contains one.
var metadata = []namedPrefix{
	named("169.254.169.254/32", "the instance metadata service of AWS, GCP, Azure, OpenStack and others"),
	named("fd00:ec2::254/128", "the AWS instance metadata service over IPv6"),
	named("100.100.100.200/32", "the Alibaba Cloud metadata service"),
	named("192.0.0.192/32", "the Oracle Cloud metadata service"),
	named("168.63.129.16/32", "the Azure WireServer platform endpoint"),
}

// extraDenied is what code.dny.dev/ssrf v0.3.0 lacks besides the metadata
// addresses (168.63.129.16 is public address space): a registry entry
// inside 2000::/3.
var extraDenied = []namedPrefix{
	named("5f00::/16", "segment routing SIDs (RFC 9602, IANA IPv6 special-purpose registry)"),
}

// rangeNames explain a refusal; the first prefix containing the address
// names it. They do not decide anything: guardian and extraDenied do.
var rangeNames = []namedPrefix{
	named("255.255.255.255/32", "the limited broadcast address (RFC 919)"),
	named("0.0.0.0/8", `"this network" (RFC 791; 0.0.0.0 reaches local services on Linux)`),
	named("10.0.0.0/8", "private-use (RFC 1918)"),
	named("100.64.0.0/10", "shared address space, carrier-grade NAT (RFC 6598)"),
	named("127.0.0.0/8", "loopback (RFC 1122)"),
	named("169.254.0.0/16", "link-local (RFC 3927)"),
	named("172.16.0.0/12", "private-use (RFC 1918)"),
	named("192.0.0.0/24", "IETF protocol assignments (RFC 6890)"),
	named("192.0.2.0/24", "documentation (RFC 5737)"),
	named("192.88.99.0/24", "6to4 relay anycast (RFC 7526)"),
	named("192.168.0.0/16", "private-use (RFC 1918)"),
	named("198.18.0.0/15", "benchmarking (RFC 2544)"),
	named("198.51.100.0/24", "documentation (RFC 5737)"),
	named("203.0.113.0/24", "documentation (RFC 5737)"),
	named("224.0.0.0/4", "multicast (RFC 5771)"),
	named("240.0.0.0/4", "reserved (RFC 1112)"),
	named("::/128", "the unspecified address (RFC 4291)"),
	named("::1/128", "loopback (RFC 4291)"),
	named("100::/64", "discard-only (RFC 6666)"),
	named("2001::/32", "Teredo (RFC 4380)"),
	named("2001:db8::/32", "documentation (RFC 3849)"),
	named("2001::/23", "IETF protocol assignments (RFC 2928)"),
	named("2002::/16", "6to4 (RFC 3056)"),
	named("2620:4f:8000::/48", "AS112 direct delegation (RFC 7534)"),
	named("3fff::/20", "documentation (RFC 9637)"),
	named("fc00::/7", "unique local (RFC 4193)"),
	named("fe80::/10", "link-local (RFC 4291)"),
	named("fec0::/10", "site-local, deprecated (RFC 3879)"),
	named("ff00::/8", "multicast (RFC 4291)"),
}

// Check reports whether a client may connect to a, and if not, why (a
// sentence naming the range and its RFC). It is pure. In order:
//
//   - an invalid address or one with an IPv6 zone is refused;
//   - a cloud metadata address (169.254.169.254, fd00:ec2::254,
//     100.100.100.200, 192.0.0.192, 168.63.129.16) is refused, exempt or not;
//   - an address inside a prefix of exempt is allowed (a deployment's
//     exempted addresses, ParseExemption; netip.Prefix.Contains, so an IPv4 prefix never covers an IPv6 form);
//   - IPv4-mapped (::ffff:0:0/96, RFC 4291 §2.5.5.2), IPv4-compatible
//     (::/96, RFC 4291 §2.5.5.1), NAT64 (64:ff9b::/96 RFC 6052,
//     64:ff9b:1::/48 RFC 8215), 6to4 (2002::/16, RFC 3056) and Teredo
//     (2001::/32, RFC 4380) addresses are refused whatever they embed; the
//     reason names the embedded IPv4 address and what it is;
//   - IPv4: refused inside the IANA IPv4 special-purpose registry,
//     multicast 224.0.0.0/4 or 168.63.129.16;
//   - IPv6: allowed only inside global unicast 2000::/3 and outside the IANA
//     IPv6 special-purpose registry (so fec0::/10, fc00::/7 and fe80::/10
//     are refused).
func Check(a netip.Addr, exempt []netip.Prefix) (ok bool, reason string) {
	if !a.IsValid() {
		return false, "not an IP address"
	}
	if a.Zone() != "" {
		return false, fmt.Sprintf("%s has an IPv6 zone identifier (RFC 6874)", a)
	}
	if name, ok := lookupName(metadata, a); ok {
		return false, fmt.Sprintf("%s is %s", a, name)
	}
	// Forms that embed another address are refused before any exemption
	// is looked at: an exemption never reaches, say, ::ffff:169.254.169.254.
	if form, v4, ok := embedded(a); ok {
		r := fmt.Sprintf("%s is %s", a, form)
		if v4.IsValid() {
			r += " embedding " + v4.String()
			if ok, why := checkPlain(v4); !ok {
				r += ", which " + why
			}
		}
		return false, r + "; such addresses are refused whatever they embed"
	}
	for _, p := range exempt {
		if p.Contains(a) {
			return true, fmt.Sprintf("%s is exempted by AllowAddresses entry %s", a, p)
		}
	}
	ok, why := checkPlain(a)
	if !ok {
		return false, fmt.Sprintf("%s %s", a, why)
	}
	return true, ""
}

// checkPlain checks an address that embeds no other: metadata, then
// extraDenied, then guardian's ranges. why completes the sentence "<address> ...".
func checkPlain(a netip.Addr) (bool, string) {
	if name, ok := lookupName(metadata, a); ok {
		return false, "is " + name
	}
	if name, ok := lookupName(extraDenied, a); ok {
		return false, "is " + name
	}
	if err := guardian.SafeAddr(a); err != nil {
		if name, ok := lookupName(rangeNames, a); ok {
			return false, "is " + name
		}
		if a.Is6() && !ssrf.IPv6GlobalUnicast.Contains(a) {
			return false, "is outside IPv6 global unicast 2000::/3 (RFC 4291 §2.4)"
		}
		return false, "is in an IANA special-purpose address range"
	}
	return true, ""
}

func lookupName(l []namedPrefix, a netip.Addr) (string, bool) {
	for _, n := range l {
		if n.prefix.Contains(a) {
			return n.name, true
		}
	}
	return "", false
}

var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
	compatible = netip.MustParsePrefix("::/96")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	teredo     = netip.MustParsePrefix("2001::/32")
)

// embedded recognises the IPv6 forms that carry an IPv4 address. v4 is
// invalid when the form carries none that can be read back.
func embedded(a netip.Addr) (form string, v4 netip.Addr, ok bool) {
	if !a.Is6() {
		return "", netip.Addr{}, false
	}
	b := a.As16()
	v4at := func(i ...int) netip.Addr {
		return netip.AddrFrom4([4]byte{b[i[0]], b[i[1]], b[i[2]], b[i[3]]})
	}
	switch {
	case a.Is4In6():
		return "an IPv4-mapped IPv6 address (::ffff:0:0/96, RFC 4291 §2.5.5.2)", a.Unmap(), true
	case nat64.Contains(a):
		return "a NAT64 address (64:ff9b::/96, RFC 6052)", v4at(12, 13, 14, 15), true
	case nat64Local.Contains(a):
		// RFC 6052 §2.2: with a /48 prefix, bits 64–71 are zero.
		return "a local-use NAT64 address (64:ff9b:1::/48, RFC 8215)", v4at(6, 7, 9, 10), true
	case compatible.Contains(a) && a != netip.IPv6Unspecified() && a != netip.IPv6Loopback():
		return "an IPv4-compatible IPv6 address (::/96, deprecated by RFC 4291 §2.5.5.1)", v4at(12, 13, 14, 15), true
	case sixToFour.Contains(a):
		return "a 6to4 address (2002::/16, RFC 3056)", v4at(2, 3, 4, 5), true
	case teredo.Contains(a):
		// RFC 4380 §4: the client's address is the last 32 bits inverted.
		c := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		return "a Teredo address (2001::/32, RFC 4380)", c, true
	}
	return "", netip.Addr{}, false
}

// ParseExemption parses one exempted address: a CIDR prefix without host
// bits ("127.0.0.1/32") or a single address without zone. It refuses a
// prefix that covers a cloud metadata address or lies in IPv4-mapped IPv6
// space; the error says which rule it breaks.
func ParseExemption(s string) (netip.Prefix, error) {
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return p, errors.New("not a CIDR prefix such as 127.0.0.1/32")
		}
		if p != p.Masked() {
			return p, fmt.Errorf("host bits are set: write %s", p.Masked())
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return p, errors.New("not an IP address or CIDR prefix (zones are not allowed)")
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	for _, m := range metadata {
		if p.Overlaps(m.prefix) {
			return p, fmt.Errorf("covers %s, %s, which is never exempted", m.prefix.Addr(), m.name)
		}
	}
	if p.Addr().Is6() && p.Overlaps(mappedPrefix) {
		return p, errors.New("is IPv4-mapped (::ffff:0:0/96), which is refused whatever it embeds: write the IPv4 form")
	}
	return p, nil
}

// mappedPrefix is the IPv4-mapped IPv6 range (RFC 4291 §2.5.5.2).
var mappedPrefix = netip.MustParsePrefix("::ffff:0:0/96")

// Resolver looks up a host name's addresses, once per connection decided.
// *net.Resolver satisfies it, but its pure-Go form returns IPv4 answers as
// IPv4-mapped IPv6 addresses, which Check refuses: use System.
type Resolver interface {
	// LookupNetIP is called with network "ip".
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// System is the system resolver, adapted: it asks for A and AAAA answers
// separately, so that IPv4 answers (which the pure-Go resolver returns in
// IPv4-mapped form) come back as IPv4 and only a real AAAA answer can be an
// IPv6 address. It is still one resolution of the name.
var System Resolver = systemResolver{net.DefaultResolver}

type systemResolver struct{ r *net.Resolver }

func (s systemResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	var (
		wg       sync.WaitGroup
		v4, v6   []netip.Addr
		e4, e6   error
		lookupV6 = network == "ip" || network == "ip6"
	)
	if lookupV6 {
		wg.Go(func() { v6, e6 = s.r.LookupNetIP(ctx, "ip6", host) })
	}
	if network == "ip" || network == "ip4" {
		v4, e4 = s.r.LookupNetIP(ctx, "ip4", host)
	}
	wg.Wait()
	out := make([]netip.Addr, 0, len(v4)+len(v6))
	for _, a := range v4 {
		out = append(out, a.Unmap())
	}
	out = append(out, v6...)
	if len(out) == 0 {
		if e4 != nil {
			return nil, e4
		}
		return nil, e6
	}
	return out, nil
}
