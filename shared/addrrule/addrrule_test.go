package addrrule

import (
	"context"
	"net"
	"net/netip"
	"testing"
)

// TestSystemResolverIPv4 checks that the adapter over net.Resolver returns
// an A answer as IPv4 (the pure-Go resolver gives ::ffff:127.0.0.1 for
// localhost from /etc/hosts). It reads /etc/hosts only.
func TestSystemResolverIPv4(t *testing.T) {
	r := systemResolver{&net.Resolver{PreferGo: true}}
	got, err := r.LookupNetIP(context.Background(), "ip", "localhost")
	if err != nil {
		t.Skipf("no localhost entry: %v", err)
	}
	for _, a := range got {
		if a.Is4In6() {
			t.Fatalf("answer %s is IPv4-mapped", a)
		}
	}
}

// TestMetadataIsNeverExempt checks that an exemption covering a cloud
// metadata address is refused when parsed, and that Check refuses the
// address even under an exemption that covers it.
func TestMetadataIsNeverExempt(t *testing.T) {
	if _, err := ParseExemption("169.254.0.0/16"); err == nil {
		t.Error("ParseExemption accepted 169.254.0.0/16, which covers 169.254.169.254")
	}
	wide := []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}
	if ok, _ := Check(netip.MustParseAddr("169.254.169.254"), wide); ok {
		t.Error("Check allowed 169.254.169.254 under an exemption")
	}
	if ok, why := Check(netip.MustParseAddr("169.254.1.1"), wide); !ok {
		t.Errorf("Check refused 169.254.1.1 under the exemption 169.254.0.0/16: %s", why)
	}
}
