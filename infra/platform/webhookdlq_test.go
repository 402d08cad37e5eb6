package platform

import (
	"strings"
	"testing"
)

// The webhooks function's dlq redrive sends every message of the two
// dead-letter queues, body verbatim, to the queue it came from, under
// the webhooks function's role, which those queues' policies admit. A
// message put on a dead-letter queue therefore reaches the events or the
// deliveries queue as if a producer had sent it: a forged Step Functions
// status change ({"source":"aws.states", a run of toolgate-<stage>_<Solution>,
// "status":"SUCCEEDED"}) put on the events dead-letter queue is recorded
// and signed as a run.succeeded at the next redrive, which the DLQ alarm
// itself asks an operator to run. The dead-letter queues must deny
// sqs:SendMessage to the account's other principals as their source
// queues do (SQS moves a message to a dead-letter queue itself; the
// status-change rule's dead-letter messages come from EventBridge).
func TestWebhookDeadLetterQueuesTakeNoMessageFromOtherPrincipals(t *testing.T) {
	for _, name := range []string{"toolgate-test-webhook-events-dlq", "toolgate-test-webhook-deliveries-dlq"} {
		queueID := mustQueueID(platformJSON, name)
		denied := false
		for _, pol := range resources(platformJSON, "AWS::SQS::QueuePolicy") {
			if !strings.Contains(text(props(pol)["Queues"]), "${"+queueID+"}") {
				continue
			}
			doc, _ := props(pol)["PolicyDocument"].(tmpl)
			for _, st := range asList(doc["Statement"]) {
				s, _ := st.(tmpl)
				actions := text(s["Action"])
				// The EnforceSSL statement (aws:SecureTransport false) refuses
				// plain HTTP only, not a principal.
				// A deny that exempts only named principals or a service, or
				// no one.
				cond := text(s["Condition"])
				if s["Effect"] == "Deny" && (strings.Contains(actions, "sqs:SendMessage") || strings.Contains(actions, "sqs:*")) &&
					(s["Condition"] == nil || strings.Contains(cond, "aws:PrincipalArn") || strings.Contains(cond, "aws:PrincipalServiceName")) {
					denied = true
				}
			}
		}
		if !denied {
			t.Errorf("%s: no queue policy statement denies sqs:SendMessage to other principals: a message put there is sent on by dlq redrive as a producer's", name)
		}
	}
}
