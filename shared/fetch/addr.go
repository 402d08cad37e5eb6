package fetch

import (
	"net/netip"

	"github.com/toolgate/toolgate/shared/addrrule"
)

// CheckAddr reports whether a fetch may connect to a, and if not, why: it
// is addrrule.Check, whose comment lists the rules (the IANA
// special-purpose registries, embedded IPv4 forms, cloud metadata
// addresses, which no exemption reaches). exempt is
// Config.AllowAddresses.
func CheckAddr(a netip.Addr, exempt []netip.Prefix) (ok bool, reason string) {
	return addrrule.Check(a, exempt)
}
