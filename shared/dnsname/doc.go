// Package dnsname checks a DNS host name and gives the one form it compares
// in: lower-case A-labels (RFC 5890 §2.3.2.1) without a trailing dot. It
// holds the name rules that the http tool's host allow-list (package
// hostlist) and the send-email recipient allow-list (package recipient)
// share; each caller adds its own rules around them and words the errors in
// its own terms.
//
// # Rules
//
// A name that Parse accepts
//   - has no empty label (RFC 1035 §2.3.1); the caller decides what a
//     trailing dot means and removes it first;
//   - has labels of letters, digits and hyphens only, not starting or ending
//     with a hyphen (the LDH rule: RFC 1034 §3.5, RFC 1123 §2.1, RFC 5891
//     §4.2.3.1), measured and checked on its A-label form;
//   - has labels of at most 63 octets and at most 253 octets in all (RFC 1035
//     §2.3.4: 255 octets on the wire, 253 as text without the root dot);
//   - if it holds anything but ASCII, is valid for registration under the
//     caller's IDNA2008 profile (RFC 5891 §4), which should apply no UTS #46
//     mapping, so that input needing one (upper-case non-ASCII letters,
//     full-width forms, U+3002 as a dot, ignorable characters, non-NFC text)
//     is refused rather than silently changed;
//   - has A-labels that decode to valid U-labels and encode back to
//     themselves (RFC 5891 §5.4), which also refuses reserved "ab--" labels
//     that are not A-labels (RFC 5890 §2.3.1).
//
// ASCII letters are the only characters folded to lower case: DNS names
// compare case-insensitively in ASCII (RFC 4343), and any other case is
// left for the IDNA profile to refuse.
//
// # Not here
//
// What a name may stand for is the caller's business: whether a numeric last
// label is an IPv4 address (the WHATWG URL Standard, for hosts) or simply not
// a domain (RFC 3696 §2, for mail), whether one label is enough, and which
// top-level domains are refused.
package dnsname
