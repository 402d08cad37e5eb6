// Package recipient is the send-email recipient allow-list: which addresses
// the send-email tool may hand to Amazon SES. It is a pure decision with a
// reason and no I/O, in the shape of smokescreen's ACL: the list is data,
// validated when it is loaded at cold start, and Decide says Allow, Refuse
// or Invalid for one recipient. No entry means deny.
//
// It links no AWS SDK, so that every side calls the same functions (issue
// 14 §3): the tool (package sendemail) at run time; the resolver, which
// applies Parse and CheckCount to a Solution's literal recipients
// (`toolgate check`, rule [recipient]); and the publish function, which
// reads the deployment's list with ParseCommaList, as send-email does, and
// refuses a Solution whose literal recipients Decide would refuse.
//
// # Recipients
//
// A recipient must be one bare addr-spec (RFC 5322 §3.4.1) in dot-atom form
// that SES accepts, written local@domain:
//
//	alice@example.com                 accepted
//	Alice@Example.COM                 accepted, same mailbox as the line above
//	user+tag/dept=x@example.com       accepted: + / = are atext (RFC 5322 §3.2.3)
//	alice@bücher.example              accepted, sent as alice@xn--bcher-kva.example
//	"Alice" <alice@example.com>       invalid: display name (name-addr, RFC 5322 §3.4)
//	a@example.com, b@example.com      invalid: an address list
//	G:a@example.com;                  invalid: group syntax
//	(c)alice@example.com              invalid: comment (CFWS, RFC 5322 §3.2.2)
//	"a b"@example.com                 invalid: quoted local part
//	alice@[192.0.2.1]                 invalid: domain literal
//	alice@example.com.                invalid: trailing dot
//	admın@example.com                 invalid: non-ASCII local part
//
// Refused as invalid, with the rule in the error:
//   - CR or LF anywhere (header injection), other control, whitespace and
//     invisible format characters (U+200B, U+00AD, U+FEFF, …);
//   - display names and angle brackets, address lists, groups, comments,
//     quoted strings and quoted-pairs, domain literals (RFC 5322 §3.4,
//     §3.2.1–§3.2.4, §3.4.1; RFC 5321 §4.1.3);
//   - anything but exactly one "@";
//   - a local part that is empty, over 64 octets (RFC 5321 §4.5.3.1.1), not
//     ASCII (SMTPUTF8, RFC 6531, is not supported: SES needs 7-bit
//     addresses), not a dot-atom of atext (no leading, trailing or double
//     dots; RFC 5322 §3.2.3), or holding an RFC 2047 encoded-word (RFC 2047
//     §5: never inside an addr-spec);
//   - a domain that is empty, ends in a dot, has an empty label, a label over
//     63 octets or more than 253 octets in all (RFC 1035 §2.3.4, measured on
//     the A-label form), a label other than letters, digits and inner hyphens
//     (RFC 1123 §2.1, RFC 5891 §4.2.3.1), a single label (RFC 5321 §2.3.5:
//     mail domains are fully qualified; ICANN SAC053 on dotless domains), a
//     numeric last label (an IP address is not a domain name, RFC 3696 §2),
//     or a special-use top-level domain: localhost, invalid and test (RFC
//     6761 §6), local (RFC 6762), onion (RFC 7686), alt (RFC 9476) and arpa
//     (RFC 3172, with home.arpa special-use by RFC 8375). The example TLD and
//     example.com, example.net, example.org (RFC 2606, RFC 6761 §6.5) stay
//     usable;
//   - an internationalized domain that is not already in the form IDNA2008
//     registers (RFC 5891 §4): if the UTS #46 mapping would remove or change
//     anything other than ASCII case (full-width letters, upper-case
//     non-ASCII letters, U+3002 as a dot, ignorable characters, non-NFC
//     text), the domain is refused rather than silently normalised, since a
//     silent mapping is how look-alike addresses slip past a list.
//
// # Comparison
//
// IDN domains are converted to lower-case A-labels (RFC 5890, RFC 5891) and
// compared as such, so an entry and a recipient may each be written as
// U-label or A-label. Domains compare case-insensitively (RFC 5321 §2.4,
// RFC 4343). Local parts are ASCII and also compare case-insensitively: RFC
// 5321 §2.4 lets a server treat them as case-sensitive, but no mail system
// SES delivers to does, and a list that admitted Alice@ but not alice@
// would only surprise.
//
// # Entries
//
// An entry is a full address (alice@example.com: that mailbox only) or
// "@domain" (@example.com: any mailbox at exactly that domain, never a
// subdomain and never evilexample.com). Both parts follow the recipient rules
// above, so an entry that no valid recipient could ever match (@[127.0.0.1],
// @a.test, "a b"@example.com) is an error when the list is loaded.
//
// # The canonical form and IAM
//
// Address.Canonical is the form addresses compare in: the local part
// lower-cased, the domain its lower-case A-label (Bob@Bücher.example is
// bob@xn--bcher-kva.example). send-email gives SES every recipient in that
// form, and its role carries the same list as an IAM condition on
// ses:Recipients (ForAllValues:StringLike), whose values List.IAMPatterns
// makes from the same entries: IAM compares case-sensitively, so the code
// and the policy agree only on one form of each address.
package recipient
