package functions_test

import (
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

// The webhooks function under the RIE, with the caller verifier on the
// STS stand-in and its proofs on dynalite, refuses a subscribe from
// anyone but a webhook admin, and a proof made for other events: the
// refusals come before anything is sealed or stored.
func TestWebhooksFunctionRefusesAnyoneButAWebhookAdmin(t *testing.T) {
	p, _, table := localtest.SharedTable(t, "toolgate-webhooks")
	callers := localtest.StartCallers(t)
	fn := localtest.RIE(t, "webhooks", localtest.Bootstrap(t, "./webhooks"), 10*time.Second, callers.Env(map[string]string{
		webhookapi.EnvTable: table, "AWS_ENDPOINT_URL_DYNAMODB": p.Endpoint(),
		webhookapi.EnvDeliveriesQueue: "http://127.0.0.1:9/000000000000/toolgate-test-webhook-deliveries",
		webhookapi.EnvDeliveriesDLQ:   "http://127.0.0.1:9/000000000000/toolgate-test-webhook-deliveries-dlq",
		webhookapi.EnvEventsQueue:     "http://127.0.0.1:9/000000000000/toolgate-test-webhook-events",
		webhookapi.EnvEventsDLQ:       "http://127.0.0.1:9/000000000000/toolgate-test-webhook-events-dlq",
		webhookapi.EnvKey:             "alias/toolgate-test", webhookapi.EnvAllow: "hooks.example.org",
		webhookapi.EnvAdmins: `["` + local.LocalPrincipal("ops") + `"]`,
	}))
	r := webhookapi.SubscribeRequest{URL: "https://hooks.example.org/in", Events: []string{"run.*"}}
	other := webhookapi.SubscribeRequest{URL: r.URL, Events: []string{"review.*"}}
	subscribe := func(proof string) map[string]any {
		return map[string]any{"action": webhookapi.ActionSubscribe, "subscribe": r, "proof": proof}
	}
	for _, c := range []struct {
		name, proof, code, says string
	}{
		{"a principal who is no webhook admin", callers.Proof(t, "mallory", webhookapi.SubscribeBinding(r)), webhookapi.CodeRefused, "not a webhook admin"},
		{"another account's principal of the admin's name", callers.ProofIn(t, "999999999999", "ops", webhookapi.SubscribeBinding(r)), webhookapi.CodeUnauthenticated, "[" + string(caller.WrongAccount) + "]"},
		{"the admin's proof for other events", callers.Proof(t, "ops", webhookapi.SubscribeBinding(other)), webhookapi.CodeUnauthenticated, "["},
		{"the admin's proof for another action", callers.Proof(t, "ops", webhookapi.ListBinding()), webhookapi.CodeUnauthenticated, "["},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, code, msg := call(t, fn, subscribe(c.proof))
			if code != c.code || !strings.Contains(msg, c.says) {
				t.Fatalf("%s %s (answer %s), want %s saying %q", code, msg, out, c.code, c.says)
			}
			if strings.Contains(msg, "X-Amz-Signature") || strings.Contains(msg, "whsec_") {
				t.Fatalf("the refusal shows a proof or a secret: %s", msg)
			}
		})
	}
}

// The webhook-delivery function under the RIE reports a record of a
// queue it does not serve as failed, by its message id, and refuses an
// invocation that is neither a batch nor its schedule.
func TestWebhookDeliveryFunctionAnswersPartialBatchFailures(t *testing.T) {
	p, _, table := localtest.SharedTable(t, "toolgate-webhook-delivery")
	fn := localtest.RIE(t, "webhook-delivery", localtest.Bootstrap(t, "./webhook-delivery"), 10*time.Second, map[string]string{
		webhookapi.EnvTable: table, "AWS_ENDPOINT_URL_DYNAMODB": p.Endpoint(),
		webhookapi.EnvEventsQueue:     "http://127.0.0.1:9/000000000000/toolgate-test-webhook-events",
		webhookapi.EnvDeliveriesQueue: "http://127.0.0.1:9/000000000000/toolgate-test-webhook-deliveries",
	})
	batch := map[string]any{"Records": []map[string]any{{"messageId": "m-1", "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:toolgate-test-other", "body": "{}"}}}
	out, code, msg := call(t, fn, batch)
	if code != "" || string(out) != `{"batchItemFailures":[{"itemIdentifier":"m-1"}]}` {
		t.Fatalf("%s %s %s: want m-1 reported failed", out, code, msg)
	}
	if _, code, _ := call(t, fn, map[string]any{"hello": "world"}); code == "" {
		t.Fatal("an invocation that is neither a batch nor a schedule was accepted")
	}
}
