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
// schedule, the allow-list with only the loopback exemption, the local
// webhook admin, the Function-URL functions' endpoints as their own hosts
// and the stack's resolve file; no tool function gets the webhook
// configuration.
func TestWebhookFunctionsHaveNoLanesAndTheirOwnConfiguration(t *testing.T) {
	s := &Stack{webhookSchedule: DefaultWebhookSchedule, WebhookResolveFile: "/stack/webhook-resolve"}
	allow := allowLists{webhook: "127.0.0.1:4003", webhookOwn: "127.0.0.1:4004,127.0.0.1:4005,127.0.0.1:4006"}
	for _, name := range []string{"webhooks", "webhook-delivery"} {
		if laned(name) {
			t.Errorf("%s has lanes", name)
		}
		env := functionEnv(name, s, "127.0.0.1:4002", allow)
		for k, want := range map[string]string{webhookapi.EnvAllow: allow.webhook, webhookapi.EnvAllowAddresses: "127.0.0.1/32",
			webhookapi.EnvSchedule: DefaultWebhookSchedule, webhookapi.EnvAdmins: `["` + local.LocalPrincipal(WebhookAdmin) + `"]`,
			webhookapi.EnvOwnHosts: allow.webhookOwn, webhookapi.EnvResolveFile: s.WebhookResolveFile} {
			if env[k] != want {
				t.Errorf("%s: %s=%q, want %q", name, k, env[k], want)
			}
		}
	}
	for _, name := range []string{"http", "send-email", "structured-data-fetch", "mcp-call"} {
		env := functionEnv(name, s, "127.0.0.1:4002", allow)
		for _, k := range []string{webhookapi.EnvAllow, webhookapi.EnvOwnHosts, webhookapi.EnvResolveFile} {
			if v, ok := env[k]; ok {
				t.Errorf("%s gets %s=%s", name, k, v)
			}
		}
	}
}

// The webhook allow-list adds WebhookTestHost on each loopback receiver's
// port, and only there.
func TestWebhookAllowListAddsTheTestHostOnEachLoopbackPort(t *testing.T) {
	got := webhookAllowList([]string{"127.0.0.1:4003", "hooks.example.org", "127.0.0.1:4007"})
	if want := "127.0.0.1:4003,hooks.example.org,127.0.0.1:4007," + WebhookTestHost + ":4003," + WebhookTestHost + ":4007"; got != want {
		t.Errorf("webhookAllowList = %q, want %q", got, want)
	}
	if got := webhookAllowList(nil); got != "" {
		t.Errorf("no receivers: %q, want no entry", got)
	}
}

// The Function-URL functions' endpoints are reserved before the functions
// start, and the own hosts name exactly those, with their ports.
func TestOwnHostsAreTheReservedFunctionURLEndpoints(t *testing.T) {
	reserved, err := reserveFunctionURLs([]string{"http", "publish", "review-decision", "webhook-delivery", "webhooks", "sources"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, ln := range reserved {
			ln.Close()
		}
	}()
	if len(reserved) != 4 {
		t.Fatalf("reserved %v, want review-decision, publish, webhooks and sources", reserved)
	}
	var want []string
	for _, name := range FunctionURLFunctions {
		want = append(want, reserved[name].Addr().String())
	}
	if got := ownHosts(reserved); got != strings.Join(want, ",") || !strings.HasPrefix(got, "127.0.0.1:") {
		t.Errorf("ownHosts = %q, want %q", got, strings.Join(want, ","))
	}
}

// review-request sends review notices through the SES emulator itself
// (never StackOptions.SESEndpoint's proxy, whose refusal is send-email's),
// from send-email's sender, to ReviewNotices only, and review-request's
// own parser accepts them; no tool function gets the notices'
// configuration.
func TestReviewRequestSendsNoticesThroughTheEmulator(t *testing.T) {
	s := &Stack{SFN: &local.Process{Addr: "127.0.0.1:4010"}, SES: &local.Process{Addr: "127.0.0.1:4011"}, SSM: &local.SSM{}, sesEndpoint: "http://127.0.0.1:4012"}
	env := functionEnv("review-request", s, "127.0.0.1:4002", allowLists{})
	for k, want := range map[string]string{functionconfig.EnvReviewNotices: `["ops@example.com", "@reviewers.example.com"]`,
		functionconfig.EnvNoticeSender: "toolgate-demo@example.com", "AWS_ENDPOINT_URL_SESV2": "http://127.0.0.1:4011"} {
		if env[k] != want {
			t.Errorf("review-request: %s=%q, want %q", k, env[k], want)
		}
	}
	n, err := functionconfig.ReviewRequestFromEnv(func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return map[string]string{"TOOLGATE_TABLE": "t", "AWS_REGION": "us-east-1", "TOOLGATE_ACCOUNT": "000000000000"}[k]
	})
	if err != nil || !n.Notices.On() {
		t.Fatalf("review-request's environment: %+v, %v", n.Notices, err)
	}
	for _, name := range []string{"send-email", "structured-data-fetch", "http", "mcp-call"} {
		if v, ok := functionEnv(name, s, "127.0.0.1:4002", allowLists{})[functionconfig.EnvReviewNotices]; ok {
			t.Errorf("%s gets %s=%s", name, functionconfig.EnvReviewNotices, v)
		}
	}
}

// review-decision gets send-email's own sender and recipient allow-list,
// the same values, so that a show of a send-email review says From and
// each recipient's verdict as send-email would decide it.
func TestReviewDecisionGetsSendEmailsSenderAndAllowList(t *testing.T) {
	s := &Stack{SFN: &local.Process{Addr: "127.0.0.1:4010"}}
	rd := functionEnv("review-decision", s, "127.0.0.1:4002", allowLists{})
	se := functionEnv("send-email", s, "127.0.0.1:4002", allowLists{})
	for _, k := range []string{functionconfig.EnvSender, functionconfig.EnvRecipientAllow} {
		if rd[k] == "" || rd[k] != se[k] {
			t.Errorf("review-decision: %s=%q, send-email's %q", k, rd[k], se[k])
		}
	}
}
