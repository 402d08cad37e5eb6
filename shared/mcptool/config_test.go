package mcptool

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigFromEnv(t *testing.T) {
	dir := t.TempDir()
	resolve, bad := filepath.Join(dir, "resolve"), filepath.Join(dir, "bad")
	if err := os.WriteFile(resolve, []byte("mcp.internal.test=10.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("mcp.internal.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		err  string
		ttl  time.Duration
		to   time.Duration
	}{
		{name: "defaults", env: map[string]string{}, ttl: 5 * time.Second, to: 10 * time.Second},
		{name: "set", env: map[string]string{EnvAllow: "mcp.example.com, 127.0.0.1:8931", EnvAllowAddresses: "127.0.0.1/32",
			EnvSchemaTTLSeconds: "0", EnvTimeoutSeconds: "60"}, ttl: 0, to: time.Minute},
		{name: "bad host", env: map[string]string{EnvAllow: "*.com"}, err: EnvAllow},
		{name: "metadata exempted", env: map[string]string{EnvAllowAddresses: "169.254.0.0/16"}, err: EnvAllowAddresses},
		{name: "TTL over 60", env: map[string]string{EnvSchemaTTLSeconds: "61"}, err: EnvSchemaTTLSeconds},
		{name: "TTL negative", env: map[string]string{EnvSchemaTTLSeconds: "-1"}, err: EnvSchemaTTLSeconds},
		{name: "timeout 0", env: map[string]string{EnvTimeoutSeconds: "0"}, err: EnvTimeoutSeconds},
		{name: "resolve file", env: map[string]string{EnvResolveFile: resolve}, ttl: 5 * time.Second, to: 10 * time.Second},
		{name: "resolve file missing", env: map[string]string{EnvResolveFile: filepath.Join(dir, "missing")}, err: EnvResolveFile},
		{name: "resolve file bad", env: map[string]string{EnvResolveFile: bad}, err: EnvResolveFile},
		{name: "timeout not a number", env: map[string]string{EnvTimeoutSeconds: "5s"}, err: EnvTimeoutSeconds},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ConfigFromEnv(func(k string) string { return tt.env[k] })
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one naming %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.SchemaTTL != tt.ttl || c.Timeout != tt.to || c.maxBytes() != 5<<20 || c.Net.AllowName != allowName {
				t.Errorf("config %+v", c)
			}
			if tt.name == "set" && (len(c.Net.Allow) != 2 || len(c.Net.AllowAddresses) != 1 || c.Net.AllowAddresses[0] != netip.MustParsePrefix("127.0.0.1/32")) {
				t.Errorf("lists: %v, %v", c.Net.Allow, c.Net.AllowAddresses)
			}
			if tt.name == "resolve file" {
				if got, err := c.Net.Resolver.LookupNetIP(context.Background(), "ip", "mcp.internal.test"); err != nil || len(got) != 1 || got[0] != netip.MustParseAddr("10.0.0.1") {
					t.Errorf("the resolve file answers %v, %v", got, err)
				}
			} else if c.Net.Resolver != nil {
				t.Errorf("a resolver without %s", EnvResolveFile)
			}
		})
	}
}
