package platform

import (
	"fmt"
	"strings"
	"testing"
)

// The webhook queues take messages only from their producers: the events
// queue from the status-change rule (EventBridge) and webhook-delivery's
// relay, the deliveries queue from webhook-delivery's fan-out and the
// webhooks function's redrive. webhook-delivery trusts what they carry: a
// status change on the events queue is recorded and signed as a run.*
// event of whatever execution and Solution it names, and a delivery
// message makes an event be delivered to the subscription it names. Each
// queue's policy must therefore deny sqs:SendMessage to every other
// principal of the account, whose identity policies may grant sqs:* on
// any queue (an operator, a CI role, another team's function).
func TestWebhookQueuesTakeMessagesOnlyFromTheirProducers(t *testing.T) {
	for _, name := range []string{"toolgate-test-webhook-events", "toolgate-test-webhook-deliveries"} {
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
				if s["Effect"] == "Deny" && (strings.Contains(actions, "sqs:SendMessage") || strings.Contains(actions, "sqs:*")) &&
					strings.Contains(text(s["Condition"]), "WebhookDeliveryFunctionRole") {
					denied = true
				}
			}
		}
		if !denied {
			t.Errorf("%s: no queue policy statement denies sqs:SendMessage to principals other than its producers (%s)", name,
				fmt.Sprintf("webhook-delivery's role%s", map[bool]string{true: ", the status-change rule", false: ", the webhooks function's role"}[strings.HasSuffix(name, "events")]))
		}
	}
}
