package delivery_test

import (
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
