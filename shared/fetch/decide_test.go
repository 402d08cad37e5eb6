package fetch

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/fetch/fetchtest"
	"github.com/toolgate/toolgate/shared/tool"
)

func TestCheckAddr(t *testing.T) {
	exempt := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	tests := []struct {
		addr   string
		exempt []netip.Prefix
		ok     bool
		reason string // a piece of the reason
	}{
		{"93.184.216.34", nil, true, ""},
		{"8.8.8.8", nil, true, ""},
		{"100.128.0.1", nil, true, ""},
		{"2606:2800:220:1:248:1893:25c8:1946", nil, true, ""},
		{"127.0.0.1", nil, false, "loopback"},
		{"127.0.0.1", exempt, true, "exempted"},
		{"127.0.0.2", exempt, false, "loopback"},
		{"::ffff:127.0.0.1", exempt, false, "IPv4-mapped"},
		{"0.0.0.0", nil, false, "this network"},
		{"10.1.2.3", nil, false, "private-use"},
		{"172.31.255.255", nil, false, "private-use"},
		{"192.168.1.1", nil, false, "private-use"},
		{"169.254.1.1", nil, false, "link-local"},
		{"100.64.0.1", nil, false, "carrier-grade"},
		{"100.127.255.255", nil, false, "carrier-grade"},
		{"224.0.0.1", nil, false, "multicast"},
		{"239.255.255.250", nil, false, "multicast"},
		{"255.255.255.255", nil, false, "broadcast"},
		{"240.0.0.1", nil, false, "reserved"},
		{"192.0.2.1", nil, false, "documentation"},
		{"198.18.0.1", nil, false, "benchmarking"},
		{"192.88.99.1", nil, false, "6to4 relay"},
		{"169.254.169.254", nil, false, "metadata"},
		{"169.254.169.254", []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}, false, "metadata"},
		{"100.100.100.200", nil, false, "Alibaba"},
		{"192.0.0.192", nil, false, "Oracle"},
		{"168.63.129.16", nil, false, "Azure"},
		{"168.63.129.17", nil, true, ""},
		{"fd00:ec2::254", nil, false, "AWS"},
		{"::", nil, false, "unspecified"},
		{"::1", nil, false, "loopback"},
		{"fe80::1", nil, false, "link-local"},
		{"fec0::1", nil, false, "site-local"},
		{"fc00::1", nil, false, "unique local"},
		{"fd12:3456::1", nil, false, "unique local"},
		{"ff02::1", nil, false, "multicast"},
		{"100::1", nil, false, "discard"},
		{"2001:db8::1", nil, false, "documentation"},
		{"3fff::1", nil, false, "documentation"},
		{"5f00::1", nil, false, "RFC 9602"},
		{"2001:2::1", nil, false, "IETF protocol"},
		{"::ffff:8.8.8.8", nil, false, "IPv4-mapped"},
		{"::ffff:169.254.169.254", nil, false, "metadata"},
		{"::8.8.8.8", nil, false, "IPv4-compatible"},
		{"::127.0.0.1", nil, false, "loopback"},
		{"64:ff9b::808:808", nil, false, "NAT64"},
		{"64:ff9b::a9fe:a9fe", nil, false, "metadata"},
		{"64:ff9b::7f00:1", nil, false, "loopback"},
		{"64:ff9b:1::808:8", nil, false, "local-use NAT64"},
		{"64:ff9b:1:7f00:0:100::", nil, false, "127.0.0.1"},
		{"2002:808:808::1", nil, false, "6to4"},
		{"2002:7f00:1::1", nil, false, "loopback"},
		{"2002:a9fe:a9fe::1", nil, false, "metadata"},
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", nil, false, "Teredo"},
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", nil, false, "127.0.0.1"},
		{"fe80::1%eth0", nil, false, "zone"},
		{"", nil, false, "not an IP"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			var a netip.Addr
			if tt.addr != "" {
				a = netip.MustParseAddr(tt.addr)
			}
			ok, reason := CheckAddr(a, tt.exempt)
			if ok != tt.ok || !strings.Contains(reason, tt.reason) {
				t.Fatalf("CheckAddr(%s) = %v, %q; want %v with %q", a, ok, reason, tt.ok, tt.reason)
			}
		})
	}
}

// TestDecideDryRun is what `toolgate check-url` does: the allow entries
// stand for both lists and --resolve gives a FixedResolver.
func TestDecideDryRun(t *testing.T) {
	cfg, err := ParseConfig([]string{"api.example.com", "*.example.org:8443"}, []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := ParseResolve([]string{"API.Example.com.=93.184.216.34,2606:2800:220:1::1", "x.example.org=10.0.0.1", "local.example.org=127.0.0.1", "mixed.example.org=8.8.8.8,127.0.0.2"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Resolver = res
	tests := []struct {
		url   string
		allow bool
		code  tool.Code
		why   string
		addrs string
	}{
		{"https://api.example.com/x", true, "", "", "93.184.216.34 2606:2800:220:1::1"},
		{"https://API.EXAMPLE.COM./x", true, "", "", "93.184.216.34 2606:2800:220:1::1"},
		{"https://x.example.org:8443/", false, tool.PermissionDenied, "private-use", ""},
		{"https://local.example.org:8443/", true, "", "", "127.0.0.1"},
		{"https://mixed.example.org:8443/", false, tool.PermissionDenied, "127.0.0.2", ""},
		{"https://x.example.org/", false, tool.PermissionDenied, "port 443", ""},
		{"https://api.example.com:8443/", false, tool.PermissionDenied, "port 8443", ""},
		{"https://nothere.example.org:8443/", false, tool.PermanentFailure, "no address", ""},
		{"https://evil.test/", false, tool.PermissionDenied, "not on the platform allow-list", ""},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			d := cfg.Decide(context.Background(), tt.url, cfg.Allow)
			var got []string
			for _, a := range d.Addrs {
				got = append(got, a.String())
			}
			if d.Allow != tt.allow || d.Code != tt.code || !strings.Contains(d.Reason, tt.why) || (tt.allow && strings.Join(got, " ") != tt.addrs) {
				t.Fatalf("Decide = %+v", d)
			}
			if tt.allow != (d.Reason == "") {
				t.Fatalf("reason %q with allow %v", d.Reason, d.Allow)
			}
		})
	}
	t.Run("pinned narrower than the platform", func(t *testing.T) {
		d := cfg.Decide(context.Background(), "https://api.example.com/", mustList(t, "other.example.com"))
		if d.Allow || !strings.Contains(d.Reason, "this run's toolset") {
			t.Fatalf("Decide = %+v", d)
		}
	})
	t.Run("wildcard stops at the registrable domain", func(t *testing.T) {
		res := &fetchtest.Resolver{Answers: fetchtest.Addrs(t, public)}
		c := Config{Allow: mustList(t, "*.amazonaws.com"), Resolver: res}
		d := c.Decide(context.Background(), "https://bucket.s3.amazonaws.com/key", c.Allow)
		if d.Allow || d.Code != tool.PermissionDenied || d.Reason != "host bucket.s3.amazonaws.com is not on the platform allow-list: *.amazonaws.com does not cover bucket.s3.amazonaws.com: its registrable domain is bucket.s3.amazonaws.com, not amazonaws.com (s3.amazonaws.com is a public suffix, Public Suffix List, private section)" {
			t.Fatalf("Decide = %+v", d)
		}
		if got := res.Hosts(); len(got) != 0 {
			t.Fatalf("looked up %q", got)
		}
		d = c.Decide(context.Background(), "https://ec2.amazonaws.com/", c.Allow)
		if !d.Allow {
			t.Fatalf("Decide = %+v", d)
		}
		// The pinned list is held to the same rule.
		c.Allow = mustList(t, "bucket.s3.amazonaws.com")
		d = c.Decide(context.Background(), "https://bucket.s3.amazonaws.com/key", mustList(t, "*.amazonaws.com"))
		if d.Allow || !strings.Contains(d.Reason, "this run's toolset (fetch_hosts): *.amazonaws.com does not cover bucket.s3.amazonaws.com") {
			t.Fatalf("Decide = %+v", d)
		}
	})
	t.Run("empty platform list", func(t *testing.T) {
		empty := Config{Resolver: res}
		d := empty.Decide(context.Background(), "https://api.example.com/", mustList(t, "api.example.com"))
		if d.Allow || !strings.Contains(d.Reason, "no fetch") {
			t.Fatalf("Decide = %+v", d)
		}
	})
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name           string
		allow, address []string
		err            string
	}{
		{"ok", []string{"api.example.com", "*.example.org:8443", "8.8.8.8"}, []string{"127.0.0.1/32", "::1"}, ""},
		{"empty", nil, nil, ""},
		{"bad entry", []string{"api.example.com", "http://x"}, nil, `entry 1 "http://x"`},
		{"odd ipv4", []string{"0x7f.1"}, nil, `"0x7f.1"`},
		{"wildcard over a public suffix", []string{"*.co.uk"}, nil, `entry 0 "*.co.uk": a wildcard over the public suffix co.uk would allow every site under it (Public Suffix List, ICANN section)`},
		{"wildcard over a private-section suffix", []string{"api.example.com", "*.github.io"}, nil, `entry 1 "*.github.io": a wildcard over the public suffix github.io would allow every site under it (Public Suffix List, private section)`},
		{"wildcard over s3", []string{"*.s3.amazonaws.com"}, nil, "public suffix s3.amazonaws.com"},
		{"wildcard over amazonaws.com", []string{"*.amazonaws.com"}, nil, ""},
		{"exact public suffix", []string{"co.uk", "s3.amazonaws.com"}, nil, ""},
		{"bad prefix", nil, []string{"127.0.0.1/33"}, `"127.0.0.1/33"`},
		{"host bits", nil, []string{"127.0.0.1/8"}, "127.0.0.0/8"},
		{"zone", nil, []string{"fe80::1%eth0"}, "zone"},
		{"covers metadata", nil, []string{"169.254.0.0/16"}, "169.254.169.254"},
		{"everything", nil, []string{"0.0.0.0/0"}, "never exempted"},
		{"everything v6", nil, []string{"::/0"}, "never exempted"},
		{"azure", nil, []string{"168.63.129.16"}, "Azure"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConfig(tt.allow, tt.address)
			if tt.err == "" {
				if err != nil || len(c.Allow) != len(tt.allow) || len(c.AllowAddresses) != len(tt.address) {
					t.Fatalf("ParseConfig = %+v, %v", c, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("ParseConfig error = %v, want %q", err, tt.err)
			}
		})
	}
	c, err := ConfigFromEnv(envMap{EnvAllow: "api.example.com, *.example.org\n8.8.8.8", EnvAllowAddresses: "127.0.0.1/32"}.get)
	if err != nil || len(c.Allow) != 3 || len(c.AllowAddresses) != 1 {
		t.Fatalf("ConfigFromEnv = %+v, %v", c, err)
	}
	if _, err := ConfigFromEnv(envMap{EnvAllow: "a..b"}.get); err == nil || !strings.Contains(err.Error(), EnvAllow) {
		t.Fatalf("ConfigFromEnv error = %v", err)
	}
	if _, err := ConfigFromEnv(envMap{EnvAllow: "api.example.com,*.github.io"}.get); err == nil || !strings.Contains(err.Error(), EnvAllow) || !strings.Contains(err.Error(), "public suffix github.io") {
		t.Fatalf("ConfigFromEnv error = %v", err)
	}
}

type envMap map[string]string

func (m envMap) get(k string) string { return m[k] }

func TestParseResolve(t *testing.T) {
	for _, bad := range []string{"a.example", "a.example=", "=1.2.3.4", "a.example=1.2.3", "a.example=fe80::1%eth0", "a..example=1.2.3.4"} {
		if _, err := ParseResolve([]string{bad}); err == nil {
			t.Errorf("ParseResolve(%q) accepted", bad)
		}
	}
	f, err := ParseResolve([]string{"a.example=1.2.3.4", "A.EXAMPLE=2001:4860::1"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.LookupNetIP(context.Background(), "ip6", "a.example."); len(got) != 1 || got[0].String() != "2001:4860::1" {
		t.Fatalf("ip6 = %v", got)
	}
	if _, err := f.LookupNetIP(context.Background(), "ip", "b.example"); err == nil {
		t.Fatal("unknown host answered")
	}
}
