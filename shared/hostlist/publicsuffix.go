package hostlist

import (
	"fmt"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// Wildcards stop at registrable domains, as the Public Suffix List
// (https://publicsuffix.org) draws them. The list names the suffixes under
// which separate parties register names: ICANN's (com, co.uk) in its ICANN
// section, and those of hosting providers (github.io, s3.amazonaws.com) in
// its private section. A registrable domain is a public suffix plus one
// label (eTLD+1). Both sections count: a "*.github.io" entry would allow
// every GitHub Pages site as surely as "*.co.uk" allows every British
// company, so no opt-in keeps the private section out.
//
// The list is the copy compiled into golang.org/x/net/publicsuffix at the
// version go.mod requires; the parser and every matcher use the same copy.

// probeLabel is a label no rule of the list can name (a rule is a host
// name, and "-" is no label of one), so a name "-.base" is a public suffix
// exactly when the list has the wildcard rule "*.base".
const probeLabel = "-"

// checkWildcardBase refuses the base of a wildcard entry (the name after
// "*.", normalised, at least two labels) that is a public suffix, or
// whose every child is one (a wildcard rule such as
// "*.compute.amazonaws.com"): such a wildcard covers separate sites, or,
// at match time, nothing.
func checkWildcardBase(base string) error {
	if ps, icann := publicsuffix.PublicSuffix(base); ps == base {
		return fmt.Errorf("a wildcard over the public suffix %s would allow every site under it (%s)", base, listSection(icann))
	}
	probe := probeLabel + "." + base
	if ps, icann := publicsuffix.PublicSuffix(probe); ps == probe {
		return fmt.Errorf("a wildcard over %s would allow every site under it: the names directly under it are public suffixes (rule %q, %s)", base, "*."+base, listSection(icann))
	}
	return nil
}

// sameRegistrable returns "" when the normalised name h has the same
// registrable domain (publicsuffix.EffectiveTLDPlusOne) as the wildcard
// base; otherwise why not, in words that name both.
func sameRegistrable(h, base string) string {
	want, err := publicsuffix.EffectiveTLDPlusOne(base)
	if err != nil {
		_, icann := publicsuffix.PublicSuffix(base)
		return fmt.Sprintf("%s is a public suffix (%s)", base, listSection(icann))
	}
	got, err := publicsuffix.EffectiveTLDPlusOne(h)
	if err != nil {
		_, icann := publicsuffix.PublicSuffix(h)
		return fmt.Sprintf("%s is itself a public suffix (%s), not a host of the registrable domain %s", h, listSection(icann), want)
	}
	if got != want {
		ps, icann := publicsuffix.PublicSuffix(h)
		return fmt.Sprintf("its registrable domain is %s, not %s (%s is a public suffix, %s)", got, want, ps, listSection(icann))
	}
	return ""
}

// listSection names the section of the Public Suffix List a suffix of two
// labels or more comes from. (publicsuffix.PublicSuffix also reports
// icann false for the list's default rule, a bare unlisted top-level
// label; no name this package asks about reaches that rule.)
func listSection(icann bool) string {
	if icann {
		return "Public Suffix List, ICANN section"
	}
	return "Public Suffix List, private section"
}

// WildcardRefusal says why the first wildcard entry of l that host lies
// under by name alone (a strict subdomain of its base) does not cover it:
// host is in another registrable domain than the base, because a public
// suffix lies between them, or host is itself a public suffix. For
// "*.amazonaws.com" and "bucket.s3.amazonaws.com" it names the registrable
// domains bucket.s3.amazonaws.com and amazonaws.com. host is as for Match;
// the result is "" when no wildcard entry of l is refused that way, or host
// is not valid.
func (l List) WildcardRefusal(host string) string {
	h, addr, err := normalizeHost(host)
	if err != nil || addr.IsValid() {
		return ""
	}
	for _, e := range l {
		if !e.Wildcard || e.Host == "" || !strings.HasSuffix(h, "."+e.Host) {
			continue
		}
		if why := sameRegistrable(h, e.Host); why != "" {
			return fmt.Sprintf("%s does not cover %s: %s", e, h, why)
		}
	}
	return ""
}
