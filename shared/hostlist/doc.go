// Package hostlist parses and matches entries of the http tool's host
// allow-list (a Solution's policy.fetch_hosts). The resolver uses it at
// compile time to check literal URLs; the fetch Lambda uses it at run time
// before every request. Both sides go through the same normalisation, so an
// entry and a URL host are compared in one form only.
//
// # Entries
//
// An entry is a host with an optional port:
//
//	api.example.com          exact host name
//	*.example.com            any strict subdomain, at any depth, in the registrable domain example.com; never example.com itself
//	8.8.8.8                  IPv4 literal, dotted-quad decimal only
//	2001:db8::1              IPv6 literal, bare or in brackets
//	[2001:db8::1]:8443       IPv6 literal with a port (brackets required, RFC 3986 §3.2.2)
//	api.example.com:8443     any of the above with a port 1–65535
//
// An entry without a port allows only the scheme's default port (80 for
// http, 443 for https); an entry with a port allows that port only, for
// either scheme.
//
// # Names
//
// Host names compare as lower-case A-labels (RFC 5890, RFC 5891) without a
// trailing dot, checked by package dnsname. ASCII letters are case-folded;
// anything else must already be in the form IDNA2008 registers (see the
// idnaProfile comment in hostlist.go). Labels are letters, digits and
// hyphens, 1–63 octets, not starting or ending with a hyphen (RFC 1123
// §2.1); names are at most 253 octets (RFC 1035 §2.3.4). One trailing dot is
// dropped; more than one is an empty label.
//
// A name whose last label is numeric (all digits, or 0x plus hex digits) is
// read as an IPv4 address, as the WHATWG URL Standard and browsers do, and
// must then be a dotted-quad: forms such as 0x7f.1, 2130706433 or 0177.0.0.1
// are refused rather than compared as text.
//
// # Public suffixes
//
// Wildcards stop where the Public Suffix List (https://publicsuffix.org,
// the copy in golang.org/x/net/publicsuffix) says separate parties
// register names. Both sections of the list count: ICANN's suffixes (com,
// co.uk, 公司.cn) and those hosting providers list in the private section
// (github.io, s3.amazonaws.com). There is no opt-in.
//
//   - A wildcard whose base is a public suffix is refused when parsed:
//     "*.co.uk", "*.github.io", "*.s3.amazonaws.com", "*.xn--55qx5d.cn".
//     So is one whose base has a wildcard rule of the list, every name
//     directly under it being a public suffix ("*.compute.amazonaws.com",
//     "*.kawasaki.jp").
//   - At match time a wildcard covers a host only when the host's
//     registrable domain (publicsuffix.EffectiveTLDPlusOne) is the base's.
//     "*.amazonaws.com" covers ec2.amazonaws.com (registrable domain
//     amazonaws.com) but not bucket.s3.amazonaws.com (registrable domain
//     bucket.s3.amazonaws.com, under the suffix s3.amazonaws.com), nor
//     s3.amazonaws.com, itself a suffix. List.WildcardRefusal says why.
//
// Exact entries are not affected: "co.uk" or "bucket.s3.amazonaws.com"
// allows that one host, which is all it ever allowed.
//
// The list grows as providers add suffixes, and golang.org/x/net carries a
// snapshot of it: updating that module can refuse an entry, or a host under
// a wildcard, that was accepted before, in compiled toolsets too.
//
// # Refused
//
// Schemes, paths, queries, fragments, userinfo, percent-encoding, IPv6 zone
// identifiers (RFC 6874), whitespace and control characters, wildcards other
// than a whole leading "*." label, wildcards on IP literals, wildcards with
// fewer than two labels after them (such as *.com), wildcards over public
// suffixes (above), and IPv4 addresses in brackets. IP literals match the same netip.Addr only: ::ffff:8.8.8.8 and
// 8.8.8.8 are different entries.
package hostlist
