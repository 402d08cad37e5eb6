package stack

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

// The http function's allow-list on the local stack is the recording
// service's host and port, apart from fetch's (the data server's), with
// loopback as its only address exemption; no other tool function gets it
// (publish's, which needs the stand-ins' endpoints, is the same list).
func TestHTTPAllowListIsTheRecordingServicesApartFromFetch(t *testing.T) {
	s := &Stack{}
	allow := allowLists{mcp: "127.0.0.1:4000", http: "127.0.0.1:4001"}
	const data = "127.0.0.1:4002"
	h := functionEnv("http", s, data, allow)
	if h[functionconfig.EnvHTTPAllow] != allow.http || h[functionconfig.EnvHTTPAllowAddresses] != "127.0.0.1/32" {
		t.Errorf("http's environment %v: want the recording service's allow-list and the loopback exemption", h)
	}
	for k, v := range h {
		if strings.HasPrefix(k, "TOOLGATE_FETCH_") || strings.HasPrefix(k, "TOOLGATE_MCP_") || strings.Contains(v, data) {
			t.Errorf("http gets %s=%s: another tool's configuration", k, v)
		}
	}
	for _, name := range []string{"structured-data-fetch", "send-email", "mcp-call", "workflow-validator"} {
		if v, ok := functionEnv(name, s, data, allow)[functionconfig.EnvHTTPAllow]; ok {
			t.Errorf("%s gets %s=%s", name, functionconfig.EnvHTTPAllow, v)
		}
	}
}

// The webhook functions run without lanes, and both get the queues, the
// schedule, the allow-list with only the loopback exemption, and the local
// webhook admin; no tool function gets the webhook configuration.
func TestWebhookFunctionsHaveNoLanesAndTheirOwnConfiguration(t *testing.T) {
	s := &Stack{webhookSchedule: DefaultWebhookSchedule}
	allow := allowLists{webhook: "127.0.0.1:4003"}
	for _, name := range []string{"webhooks", "webhook-delivery"} {
		if laned(name) {
			t.Errorf("%s has lanes", name)
		}
		env := functionEnv(name, s, "127.0.0.1:4002", allow)
		for k, want := range map[string]string{webhookapi.EnvAllow: allow.webhook, webhookapi.EnvAllowAddresses: "127.0.0.1/32",
			webhookapi.EnvSchedule: DefaultWebhookSchedule, webhookapi.EnvAdmins: `["` + local.LocalPrincipal(WebhookAdmin) + `"]`} {
			if env[k] != want {
				t.Errorf("%s: %s=%q, want %q", name, k, env[k], want)
			}
		}
		if v, ok := env[webhookapi.EnvOwnHosts]; ok {
			t.Errorf("%s: %s=%q: the local endpoints' 127.0.0.1 would refuse every receiver", name, webhookapi.EnvOwnHosts, v)
		}
	}
	for _, name := range []string{"http", "send-email", "structured-data-fetch", "mcp-call"} {
		if v, ok := functionEnv(name, s, "127.0.0.1:4002", allow)[webhookapi.EnvAllow]; ok {
			t.Errorf("%s gets %s=%s", name, webhookapi.EnvAllow, v)
		}
	}
}
