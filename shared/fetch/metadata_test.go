package fetch

import (
	"context"
	"net/netip"
	"testing"
)

// docs/tools.md: "Cloud metadata addresses are never exempt", and
// ParseConfig "refuses an exemption that contains one". The IPv4-mapped
// form ::ffff:169.254.169.254 is the metadata address to any dual-stack
// socket (Go's dialer turns it into an AF_INET connection to
// 169.254.169.254), yet an exemption written in IPv6 covers it: the
// metadata check and the overlap check compare an IPv4 prefix with an IPv6
// address, which netip never matches.
func TestMappedMetadataAddressesAreNeverExempt(t *testing.T) {
	for _, ex := range []string{"::ffff:0:0/96", "::ffff:169.254.169.254/128", "::ffff:a9fe:0/112"} {
		if _, err := ParseConfig(nil, []string{ex}); err == nil {
			t.Errorf("ParseConfig accepted the exemption %s, which covers ::ffff:169.254.169.254 (the metadata service)", ex)
		}
		p := netip.MustParsePrefix(ex)
		for _, a := range []string{"::ffff:169.254.169.254", "::ffff:100.100.100.200", "::ffff:168.63.129.16"} {
			if ok, why := CheckAddr(netip.MustParseAddr(a), []netip.Prefix{p}); ok {
				t.Errorf("CheckAddr(%s, exempt %s) = allow (%s); metadata addresses are never exempt", a, ex, why)
			}
		}
	}
	// The dry run (check-url) and Decide say allow for the metadata service.
	cfg := Config{
		Allow:          mustList(t, "[::ffff:169.254.169.254]:80"),
		AllowAddresses: []netip.Prefix{netip.MustParsePrefix("::ffff:0:0/96")},
	}
	if d := cfg.Decide(context.Background(), "http://[::ffff:169.254.169.254]/latest/meta-data/", cfg.Allow); d.Allow {
		t.Errorf("Decide allowed http://[::ffff:169.254.169.254]/latest/meta-data/ with an IPv6 exemption")
	}
}
