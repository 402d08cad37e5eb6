package admin_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/functions/webhooks/admin"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

// The configuration names a missing variable, and webhook admins are
// principals of the deployment's own account.
func TestFunctionConfigFromEnvNamesTheBadVariable(t *testing.T) {
	base := map[string]string{webhookapi.EnvTable: "t", webhookapi.EnvDeliveriesQueue: "https://q/d", webhookapi.EnvDeliveriesDLQ: "https://q/dlq",
		webhookapi.EnvEventsQueue: "https://q/e", webhookapi.EnvEventsDLQ: "https://q/edlq",
		webhookapi.EnvKey: "alias/toolgate", caller.EnvAccount: "000000000000", "AWS_REGION": "eu-west-1",
		webhookapi.EnvAdmins: `["arn:aws:iam::000000000000:role/Operators"]`, webhookapi.EnvAllow: "hooks.example.org"}
	with := func(k, v string) func(string) string {
		return func(name string) string {
			if name == k {
				return v
			}
			return base[name]
		}
	}
	c, err := admin.FunctionConfigFromEnv(with("", ""))
	if err != nil || len(c.Admins) != 1 || len(c.Rules.Allow) != 1 || c.DLQ != "https://q/dlq" {
		t.Fatalf("%+v, %v", c, err)
	}
	for _, bad := range []struct{ name, value string }{
		{webhookapi.EnvTable, ""}, {webhookapi.EnvDeliveriesQueue, ""}, {webhookapi.EnvDeliveriesDLQ, ""}, {webhookapi.EnvEventsQueue, ""}, {webhookapi.EnvEventsDLQ, ""}, {webhookapi.EnvKey, ""},
		{webhookapi.EnvAdmins, `["arn:aws:iam::999999999999:user/x"]`}, {webhookapi.EnvAdmins, "arn:aws:iam::000000000000:user/x"},
		{webhookapi.EnvAllowAddresses, "169.254.169.254"},
	} {
		if _, err := admin.FunctionConfigFromEnv(with(bad.name, bad.value)); err == nil || !strings.Contains(err.Error(), bad.name) {
			t.Errorf("%s=%q: %v, want an error naming it", bad.name, bad.value, err)
		}
	}
}
