package delivery_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/functions/webhook-delivery/delivery"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

// The configuration names the variable that is missing or wrong; an
// exemption covering the metadata address is refused (fetch's rule).
func TestFunctionConfigFromEnvNamesTheBadVariable(t *testing.T) {
	base := map[string]string{webhookapi.EnvTable: "t", webhookapi.EnvEventsQueue: "https://q/e", webhookapi.EnvDeliveriesQueue: "https://q/d",
		webhookapi.EnvAllow: "hooks.example.org", webhookapi.EnvAllowAddresses: "127.0.0.1/32", webhookapi.EnvOwnHosts: "abc.lambda-url.eu-west-1.on.aws"}
	with := func(k, v string) func(string) string {
		return func(name string) string {
			if name == k {
				return v
			}
			return base[name]
		}
	}
	c, err := delivery.FunctionConfigFromEnv(with("", ""))
	if err != nil || len(c.Schedule) != len(webhook.DefaultSchedule) || len(c.Rules.Allow) != 1 || len(c.Rules.AllowAddresses) != 1 || len(c.Rules.OwnHosts) != 1 || c.RelayAfter != webhookapi.DefaultRelayAfter {
		t.Fatalf("%+v, %v", c, err)
	}
	if c, err := delivery.FunctionConfigFromEnv(with(webhookapi.EnvRelayAfter, "5s")); err != nil || c.RelayAfter != 5*time.Second {
		t.Errorf("%s=5s: %v, %v", webhookapi.EnvRelayAfter, c.RelayAfter, err)
	}
	for _, bad := range []struct{ name, value string }{
		{webhookapi.EnvTable, ""}, {webhookapi.EnvEventsQueue, ""}, {webhookapi.EnvDeliveriesQueue, ""},
		{webhookapi.EnvAllowAddresses, "169.254.0.0/16"}, {webhookapi.EnvAllow, "https://x"}, {webhookapi.EnvOwnHosts, "a b%"},
		{webhookapi.EnvRelayAfter, "5"}, {webhookapi.EnvRelayAfter, "500ms"}, {webhookapi.EnvRelayAfter, "2h"},
	} {
		if _, err := delivery.FunctionConfigFromEnv(with(bad.name, bad.value)); err == nil || !strings.Contains(err.Error(), bad.name) {
			t.Errorf("%s=%q: %v, want an error naming it", bad.name, bad.value, err)
		}
	}
}

// Own hosts may carry a port (the local stack's functions on 127.0.0.1),
// and the resolve file, when set, answers the names it lists for both
// webhook functions' rules; a missing or bad file stops the function.
func TestEndpointRulesFromEnvReadsOwnHostPortsAndTheResolveFile(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "resolve"), filepath.Join(dir, "bad")
	if err := os.WriteFile(good, []byte("# the receiver's name\nhooks.internal.test=169.254.169.254\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("hooks.internal.test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{webhookapi.EnvAllow: "hooks.internal.test:8080", webhookapi.EnvAllowAddresses: "127.0.0.1/32",
		webhookapi.EnvOwnHosts: "127.0.0.1:8081, abc.lambda-url.eu-west-1.on.aws", webhookapi.EnvResolveFile: good}
	r, err := delivery.EndpointRulesFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.OwnHosts, ",") != "127.0.0.1:8081,abc.lambda-url.eu-west-1.on.aws" {
		t.Errorf("own hosts %v", r.OwnHosts)
	}
	if _, err := r.Check("http://127.0.0.1:8081/"); err == nil || !strings.Contains(err.Error(), webhookapi.EnvOwnHosts) {
		t.Errorf("an own host:port: %v", err)
	}
	if a, err := r.Resolver.LookupNetIP(context.Background(), "ip", "hooks.internal.test"); err != nil || len(a) != 1 || a[0] != netip.MustParseAddr("169.254.169.254") {
		t.Errorf("the resolve file's answer: %v, %v", a, err)
	}
	if _, _, err := r.CheckResolved(context.Background(), "https://hooks.internal.test:8080/"); err == nil || !strings.Contains(err.Error(), "169.254.169.254") {
		t.Errorf("a name the file resolves to the metadata address: %v", err)
	}
	for _, path := range []string{bad, filepath.Join(dir, "missing")} {
		env[webhookapi.EnvResolveFile] = path
		if _, err := delivery.EndpointRulesFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), webhookapi.EnvResolveFile) {
			t.Errorf("%s=%s: %v, want an error naming it", webhookapi.EnvResolveFile, path, err)
		}
	}
	delete(env, webhookapi.EnvResolveFile)
	if r, err := delivery.EndpointRulesFromEnv(func(k string) string { return env[k] }); err != nil || r.Resolver != nil {
		t.Errorf("without a resolve file: %v, %v; want the system resolver", r.Resolver, err)
	}
}
