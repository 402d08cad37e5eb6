package sources

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inboundapi"
)

// call sends a Function URL request to the handler.
func (e *env) call(t *testing.T, method, path, body, proof string) events.LambdaFunctionURLResponse {
	t.Helper()
	ev := events.LambdaFunctionURLRequest{RawPath: path, Body: body, Headers: map[string]string{inboundapi.ProofHeader: proof}}
	ev.RequestContext.HTTP.Method = method
	payload, _ := json.Marshal(ev)
	out, err := e.h.Handle(t.Context(), payload)
	if err != nil {
		t.Fatal(err)
	}
	var resp events.LambdaFunctionURLResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

// The Function URL routes reach their operation with the proof header,
// with the statuses of their codes (a name in use 409); a body with an
// unknown member, or another path, is SOURCES_INVALID with 400, and the
// answer never echoes a given secret.
func TestFunctionURLRoutes(t *testing.T) {
	e := newEnv(t, false)
	add := inboundapi.AddSourceRequest{Name: "billing", Scheme: "github", Solution: solution, Secret: "canary-given-secret"}
	body, _ := json.Marshal(add)
	resp := e.call(t, "post", "/sources/", string(body), e.proof(t, operator, inboundapi.AddSourceBinding(add)))
	if resp.StatusCode != 200 || strings.Contains(resp.Body, "canary-given-secret") || !strings.Contains(resp.Body, `"route":"/in/billing"`) {
		t.Fatalf("add: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := e.call(t, "POST", "/sources", string(body), e.proof(t, operator, inboundapi.AddSourceBinding(add))); resp.StatusCode != 409 || !strings.Contains(resp.Body, inboundapi.CodeConflict) {
		t.Fatalf("add again: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := e.call(t, "GET", "/sources", "", e.proof(t, operator, inboundapi.ListSourcesBinding())); resp.StatusCode != 200 || !strings.Contains(resp.Body, `"name":"billing"`) {
		t.Fatalf("list: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := e.call(t, "GET", "/sources", "", e.proof(t, stranger, inboundapi.ListSourcesBinding())); resp.StatusCode != 403 || !strings.Contains(resp.Body, inboundapi.CodeRefused) {
		t.Fatalf("a stranger's list: %d %s", resp.StatusCode, resp.Body)
	}
	sched := inboundapi.AddScheduleRequest{Name: "nightly", Solution: solution, Expression: "rate(1 day)", Input: json.RawMessage(`{}`)}
	body, _ = json.Marshal(sched)
	if resp := e.call(t, "POST", "/schedules", string(body), e.proof(t, operator, inboundapi.AddScheduleBinding(sched))); resp.StatusCode != 200 {
		t.Fatalf("schedule add: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := e.call(t, "POST", inboundapi.SchedulePath("nightly", inboundapi.OpPause), "", e.proof(t, operator, inboundapi.PauseScheduleBinding("nightly"))); resp.StatusCode != 200 || !strings.Contains(resp.Body, inboundapi.StatePaused) {
		t.Fatalf("pause: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := e.call(t, "POST", inboundapi.SourcePath("none", inboundapi.OpRemove), "", e.proof(t, operator, inboundapi.RemoveSourceBinding("none"))); resp.StatusCode != 404 {
		t.Fatalf("remove of no source: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := e.call(t, "POST", "/sources", `{"name":"x","secret":"canary-given-secret","admin":true}`, ""); resp.StatusCode != 400 || !strings.Contains(resp.Body, inboundapi.CodeInvalid) || strings.Contains(resp.Body, "canary") {
		t.Fatalf("an unknown member: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := e.call(t, "GET", "/secrets", "", ""); resp.StatusCode != 400 || !strings.Contains(resp.Body, "no route") {
		t.Fatalf("no route: %d %s", resp.StatusCode, resp.Body)
	}
	if resp := e.call(t, "GET", "/dlq", "", e.proof(t, operator, inboundapi.DLQListBinding())); resp.StatusCode != 403 || !strings.Contains(resp.Body, inboundapi.EnvDLQ) {
		t.Fatalf("dlq list without queues: %d %s", resp.StatusCode, resp.Body)
	}
	if strings.Contains(e.logs.String(), "canary-given-secret") {
		t.Fatal("the log holds the given secret")
	}
}

// A direct invocation of an unknown action, or of an add without its
// request, is SOURCES_INVALID.
func TestDirectInvocationsRefuseUnknownShapes(t *testing.T) {
	e := newEnv(t, false)
	for _, req := range []inboundapi.DirectRequest{{Action: "source.drop"}, {Action: inboundapi.ActionAddSource}, {Action: inboundapi.ActionAddSchedule}} {
		if _, code, _ := e.direct(t, req); code != inboundapi.CodeInvalid {
			t.Errorf("%+v: %s, want %s", req, code, inboundapi.CodeInvalid)
		}
	}
	if _, err := e.h.Handle(t.Context(), json.RawMessage(`{"action":"source.list","proof":"","extra":1}`)); errorOfEdge(err) != inboundapi.CodeInvalid {
		t.Errorf("an unknown member: %v", err)
	}
}

// The configuration names a bad variable; EventBridge Scheduler's
// settings are all set or none; operators are of the deployment's own
// account.
func TestFunctionConfigFromEnvNamesTheBadVariable(t *testing.T) {
	base := map[string]string{inboundapi.EnvTable: "t", inboundapi.EnvKey: "alias/toolgate", caller.EnvAccount: "000000000000", "AWS_REGION": "eu-west-1",
		inboundapi.EnvOperators: `["arn:aws:iam::000000000000:role/Operators"]`, inboundapi.EnvQueue: "https://q/in", inboundapi.EnvDLQ: "https://q/in-dlq",
		inboundapi.EnvSchedulerGroup: "toolgate-dev", inboundapi.EnvSchedulerRole: schedulerRole, inboundapi.EnvQueueARN: queueARN, inboundapi.EnvDLQARN: dlqARN}
	with := func(k, v string) func(string) string {
		return func(name string) string {
			if name == k {
				return v
			}
			return base[name]
		}
	}
	c, err := FunctionConfigFromEnv(with("", ""))
	if err != nil || len(c.Operators) != 1 || c.SchedulerGroup != "toolgate-dev" || c.DLQ != "https://q/in-dlq" {
		t.Fatalf("%+v, %v", c, err)
	}
	for _, bad := range []struct{ name, value string }{
		{inboundapi.EnvTable, ""}, {inboundapi.EnvKey, ""}, {inboundapi.EnvDLQ, ""},
		{inboundapi.EnvSchedulerRole, ""}, {inboundapi.EnvSchedulerRole, "arn:aws:iam::000000000000:user/x"}, {inboundapi.EnvQueueARN, "https://q/in"},
		{inboundapi.EnvDLQARN, ""}, {inboundapi.EnvSchedulerGroup, "toolgate dev"},
		{inboundapi.EnvOperators, `["arn:aws:iam::999999999999:user/x"]`}, {inboundapi.EnvOperators, "arn:aws:iam::000000000000:user/x"},
	} {
		if _, err := FunctionConfigFromEnv(with(bad.name, bad.value)); err == nil || !strings.Contains(err.Error(), bad.name) {
			t.Errorf("%s=%q: %v, want an error naming it", bad.name, bad.value, err)
		}
	}
	local := func(name string) string {
		switch name {
		case inboundapi.EnvSchedulerGroup, inboundapi.EnvSchedulerRole, inboundapi.EnvQueueARN, inboundapi.EnvDLQARN, inboundapi.EnvQueue, inboundapi.EnvDLQ:
			return ""
		}
		return base[name]
	}
	if c, err := FunctionConfigFromEnv(local); err != nil || c.SchedulerGroup != "" || c.Queue != "" {
		t.Fatalf("without EventBridge Scheduler and queues: %+v, %v", c, err)
	}
}

// Drawn secrets are in their scheme's form and differ each time; a given
// one is checked against its scheme's form.
func TestSecretsAreInTheirSchemesForm(t *testing.T) {
	for _, scheme := range []inbound.Scheme{inbound.StandardWebhooks, inbound.GitHub} {
		a, err := DrawSecret(scheme)
		b, _ := DrawSecret(scheme)
		if err != nil || a == b || CheckSecret(scheme, a) != nil {
			t.Errorf("%s: drew %q and %q, %v", scheme, a, b, err)
		}
	}
	if _, err := DrawSecret(inbound.Stripe); err != ErrSecretRequired {
		t.Errorf("stripe: %v, want ErrSecretRequired", err)
	}
	for _, c := range []struct {
		scheme inbound.Scheme
		secret string
		ok     bool
	}{
		{inbound.StandardWebhooks, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", true}, // the specification's example, 24 bytes
		{inbound.StandardWebhooks, "whsec_" + strings.Repeat("A", 88), false},      // 66 bytes
		{inbound.StandardWebhooks, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", false},
		{inbound.Stripe, "whsec_test_secret", false}, // "_" is not a letter or digit
		{inbound.Stripe, "whsec_1234567890abcdefABCDEF", true},
		{inbound.Stripe, "whsec_", false},
		{inbound.GitHub, "It's a Secret to Everybody", true}, // GitHub's documented example
		{inbound.GitHub, " padded", false},
		{inbound.GitHub, "tab\there", false},
		{inbound.GitHub, "", false},
		{inbound.Scheme("svix"), "x", false},
	} {
		if err := CheckSecret(c.scheme, c.secret); (err == nil) != c.ok {
			t.Errorf("%s %q: %v, want ok %v", c.scheme, c.secret, err, c.ok)
		}
	}
}
