package hostlist

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/toolgate/toolgate/shared/dnsname"
)

// idnaProfile converts and checks internationalized names. Registration
// (RFC 5891 §4: non-transitional, STD3 rules, hyphen, joiner and Bidi checks,
// DNS lengths) refuses any input that would need UTS #46 mapping—upper-case
// non-ASCII, full-width forms, U+3002 as a dot, ignorable characters, non-NFC
// text—instead of silently mapping it. Only ASCII letters are case-folded,
// by dnsname.Parse. Every name this package accepts is therefore a fixed
// point of the non-transitional idna.Lookup mapping that net/http applies
// before dialling, so the form we compare is the form the client connects
// to. idna.Lookup itself would map, and a mapping that differs from the
// client's (say strings.ToLower("ẞ") against UTS #46) would let the two
// disagree.
var idnaProfile = idna.Registration

// Entry is one parsed allow-list entry. Entries are comparable with ==; two
// entries are equal exactly when their String forms are.
type Entry struct {
	Host     string     // lower-case A-label without trailing dot, or the canonical text of the IP (netip.Addr.String()); for a wildcard, the suffix without "*."
	Wildcard bool       // "*.suffix": matches any strict subdomain of Host in Host's registrable domain (see publicsuffix.go)
	Addr     netip.Addr // valid when the entry is an IP literal
	Port     int        // 0 when the entry names no port (then 80 for http, 443 for https)
}

// ParseEntry parses one allow-list entry: a host name (RFC 1123, RFC 5890
// A-label or U-label), a "*." wildcard over a name that is not a public
// suffix (Public Suffix List), an IPv4 dotted-quad or an IPv6
// literal (RFC 4291, bracketed as in RFC 3986 §3.2.2 when a port follows),
// with an optional port 1–65535. The error names the entry and the rule it
// breaks.
func ParseEntry(s string) (Entry, error) {
	e, err := parseEntry(s)
	if err != nil {
		return Entry{}, fmt.Errorf("hostlist: entry %q: %w", s, err)
	}
	return e, nil
}

func parseEntry(s string) (Entry, error) {
	if err := checkText(s); err != nil {
		return Entry{}, err
	}
	host, port, hasPort, bracketed, err := splitHostPort(s)
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	if hasPort {
		if e.Port, err = parsePort(port); err != nil {
			return Entry{}, err
		}
	}
	rest, wildcard := strings.CutPrefix(host, "*.")
	switch {
	case bracketed:
		e.Host, e.Addr, err = parseIPv6(host)
	case strings.Contains(rest, "*"):
		err = errors.New(`a wildcard must be the whole first label, as in "*.example.com"`)
	case wildcard:
		e.Wildcard = true
		e.Host, err = parseWildcardSuffix(rest)
	default:
		e.Host, e.Addr, err = parseHost(host)
	}
	if err != nil {
		return Entry{}, err
	}
	return e, nil
}

// splitHostPort splits an entry into host and port. A port needs brackets
// around an IPv6 address (RFC 3986 §3.2.2); more than one colon without
// brackets is a bare IPv6 address.
func splitHostPort(s string) (host, port string, hasPort, bracketed bool, err error) {
	if rest, ok := strings.CutPrefix(s, "["); ok {
		host, rest, ok = strings.Cut(rest, "]")
		if !ok {
			return "", "", false, false, errors.New(`"[" without "]"`)
		}
		if rest == "" {
			return host, "", false, true, nil
		}
		port, ok = strings.CutPrefix(rest, ":")
		if !ok {
			return "", "", false, false, errors.New(`only ":port" may follow "]"`)
		}
		return host, port, true, true, nil
	}
	if strings.Count(s, ":") > 1 {
		return s, "", false, false, nil
	}
	host, port, hasPort = strings.Cut(s, ":")
	return host, port, hasPort, false, nil
}

// parseWildcardSuffix checks the part of a wildcard entry after "*.". It
// must be a host name of at least two labels ("*.com" would cover a whole
// top-level domain, listed or not) that is not a public suffix (see
// checkWildcardBase).
func parseWildcardSuffix(s string) (string, error) {
	if strings.Contains(s, ":") || endsInNumber(strings.TrimSuffix(s, ".")) {
		return "", errors.New("a wildcard cannot apply to an ip address")
	}
	name, err := parseName(strings.TrimSuffix(s, "."))
	if err != nil {
		return "", err
	}
	if !strings.Contains(name, ".") {
		return "", errors.New(`a wildcard needs at least two labels after "*.", as in "*.example.com"`)
	}
	if len(name)+2 > dnsname.MaxName {
		return "", fmt.Errorf("no subdomain of a %d-octet name fits in %d octets (RFC 1035)", len(name), dnsname.MaxName)
	}
	if err := checkWildcardBase(name); err != nil {
		return "", err
	}
	return name, nil
}

// String returns the canonical form of e, which ParseEntry parses back to e:
// "api.example.com", "*.example.com", "8.8.8.8:8080", "2001:db8::1",
// "[2001:db8::1]:8443".
func (e Entry) String() string {
	h := e.Host
	if e.Wildcard {
		h = "*." + h
	}
	if e.Port == 0 {
		return h
	}
	if e.Addr.Is6() {
		h = "[" + h + "]"
	}
	return h + ":" + strconv.Itoa(e.Port)
}

// List is a parsed allow-list, in the order written.
type List []Entry

// ParseList parses every entry with ParseEntry. It is all-or-nothing: the
// error names the first bad entry, with its index, and the rule it breaks.
func ParseList(entries []string) (List, error) {
	l := make(List, 0, len(entries))
	for i, s := range entries {
		e, err := parseEntry(s)
		if err != nil {
			return nil, fmt.Errorf("hostlist: entry %d %q: %w", i, s, err)
		}
		l = append(l, e)
	}
	return l, nil
}

// Strings returns the canonical forms of l's entries, sorted and without
// duplicates.
func (l List) Strings() []string {
	out := make([]string, len(l))
	for i, e := range l {
		out[i] = e.String()
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// NormalizeHost turns a URL host as net/url.URL.Hostname returns it
// (brackets already removed) into the form entries are compared in: a
// lower-case A-label name without trailing dot (RFC 5890, RFC 5891), or the
// canonical text of an IP address. It refuses what ParseEntry refuses in a
// host: invalid names (RFC 1035 and RFC 1123 lengths and characters), IPv4
// addresses in any form other than dotted-quad, IPv6 zone identifiers
// (RFC 6874), and so on.
func NormalizeHost(host string) (string, error) {
	h, _, err := normalizeHost(host)
	if err != nil {
		return "", fmt.Errorf("hostlist: host %q: %w", host, err)
	}
	return h, nil
}

// Match reports the first entry of l that allows host:port for scheme.
// scheme is "http" or "https" (as net/url lower-cases it); any other scheme
// never matches. host is a URL's Hostname() and port its Port(), "" meaning
// the scheme's default. An entry without a port allows only that default;
// an entry with a port allows that port only, under either scheme. A
// wildcard entry allows only hosts of its base's registrable domain (see
// WildcardRefusal). A host or port that is not valid (see NormalizeHost)
// never matches.
func (l List) Match(scheme, host, port string) (Entry, bool) {
	var def int
	switch scheme {
	case "http":
		def = 80
	case "https":
		def = 443
	default:
		return Entry{}, false
	}
	p := def
	if port != "" {
		var err error
		if p, err = parsePort(port); err != nil {
			return Entry{}, false
		}
	}
	h, addr, err := normalizeHost(host)
	if err != nil {
		return Entry{}, false
	}
	for _, e := range l {
		if e.allowsPort(p, def) && e.allowsHost(h, addr) {
			return e, true
		}
	}
	return Entry{}, false
}

func (e Entry) allowsPort(p, def int) bool {
	if e.Port == 0 {
		return p == def
	}
	return p == e.Port
}

// allowsHost reports whether e covers the normalised host h, whose address
// is addr when h is an IP literal.
func (e Entry) allowsHost(h string, addr netip.Addr) bool {
	switch {
	case e.Addr.IsValid() || addr.IsValid():
		return e.Addr.IsValid() && e.Addr == addr
	case e.Wildcard:
		return e.Host != "" && strings.HasSuffix(h, "."+e.Host) && sameRegistrable(h, e.Host) == ""
	default:
		return h == e.Host
	}
}

// checkText refuses what can never be part of a host or an entry, with a
// message for the usual mistakes.
func checkText(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	if !utf8.ValidString(s) {
		return errors.New("not valid utf-8")
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("whitespace or control character %U", r)
		}
	}
	switch {
	case strings.Contains(s, "://"):
		return errors.New("a scheme is not allowed, write the host only")
	case strings.ContainsAny(s, `/\`):
		return errors.New("a path is not allowed, write the host only")
	case strings.ContainsAny(s, "?#"):
		return errors.New("a query or fragment is not allowed, write the host only")
	case strings.Contains(s, "@"):
		return errors.New("userinfo is not allowed")
	case strings.Contains(s, "%") && strings.Contains(s, ":"):
		return errors.New("ipv6 zone identifiers are not allowed (RFC 6874)")
	case strings.Contains(s, "%"):
		return errors.New("percent-encoding is not allowed")
	}
	return nil
}

// parsePort parses a port: decimal digits, 1–65535, no sign, no leading zero
// (RFC 3986 §3.2.3 allows them, but they have no canonical form).
func parsePort(s string) (int, error) {
	if s == "" {
		return 0, errors.New(`empty port after ":"`)
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("port %q is not a decimal number", s)
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %s is out of range 1-65535", s)
	}
	if s[0] == '0' {
		return 0, fmt.Errorf("port %s has a leading zero", s)
	}
	return n, nil
}

func normalizeHost(h string) (string, netip.Addr, error) {
	if err := checkText(h); err != nil {
		return "", netip.Addr{}, err
	}
	return parseHost(h)
}

// parseHost normalises a host without port or brackets; addr is valid when
// it is an IP literal.
func parseHost(h string) (string, netip.Addr, error) {
	if strings.Contains(h, ":") {
		return parseIPv6(h)
	}
	name, dot := strings.CutSuffix(h, ".")
	if endsInNumber(name) {
		a, err := netip.ParseAddr(name)
		if err != nil || !a.Is4() {
			return "", netip.Addr{}, errors.New("an ipv4 address must be four decimal octets without leading zeros (forms such as 0x7f.1, 2130706433 or 0177.0.0.1 are refused)")
		}
		if dot {
			return "", netip.Addr{}, errors.New("an ipv4 address cannot end in a dot")
		}
		return a.String(), a, nil
	}
	name, err := parseName(name)
	return name, netip.Addr{}, err
}

func parseIPv6(s string) (string, netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	switch {
	case err == nil && a.Is4():
		return "", netip.Addr{}, errors.New("brackets are for ipv6 addresses only (RFC 3986 §3.2.2)")
	case err != nil:
		return "", netip.Addr{}, errors.New(`not a valid ipv6 address (a port after an ipv6 address needs brackets; other hosts take at most one ":port")`)
	case a.Zone() != "":
		return "", netip.Addr{}, errors.New("ipv6 zone identifiers are not allowed (RFC 6874)")
	}
	return a.String(), a, nil
}

// endsInNumber reports whether the last label of name is a number (decimal,
// or "0x" and hex digits), which the WHATWG URL Standard's host parser takes
// as an IPv4 address in one of its legacy forms.
func endsInNumber(name string) bool {
	last := name[strings.LastIndexByte(name, '.')+1:]
	if last == "" {
		return false
	}
	digits := "0123456789"
	if hex, ok := strings.CutPrefix(strings.ToLower(last), "0x"); ok {
		last, digits = hex, "0123456789abcdef"
	}
	return strings.Trim(last, digits) == ""
}

// parseName turns a host name without trailing dot into a lower-case
// A-label name: dnsname.Parse under idnaProfile (RFC 1035 lengths, RFC 1123
// characters, the IDNA2008 rules of RFC 5891), then no numeric last label,
// which would be an IPv4 address in a legacy form (see endsInNumber).
func parseName(name string) (string, error) {
	a, err := dnsname.Parse(idnaProfile, name)
	if err != nil {
		return "", err
	}
	if endsInNumber(a) {
		return "", errors.New("the last label cannot be numeric")
	}
	return a, nil
}
