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
		denied := false
		for _, s := range sendDenials(name) {
			if strings.Contains(text(s["Condition"]), "WebhookDeliveryFunctionRole") {
				denied = true
			}
		}
		if !denied {
			t.Errorf("%s: no queue policy statement denies sqs:SendMessage to principals other than its producers (%s)", name,
				fmt.Sprintf("webhook-delivery's role%s", map[bool]string{true: ", the status-change rule", false: ", the webhooks function's role"}[strings.HasSuffix(name, "events")]))
		}
	}
}

// The webhooks function's dlq redrive sends every message of the two
// dead-letter queues, body verbatim, to the queue it came from, under its
// role, which those queues' policies admit: a message put on a
// dead-letter queue reaches the events or the deliveries queue as if a
// producer had sent it (a forged status change would be recorded and
// signed as a run.succeeded at the next redrive, which the DLQ alarm asks
// an operator to run). The dead-letter queues must deny sqs:SendMessage
// to every principal but EventBridge (the status-change rule's dead
// letters) or to every principal (SQS moves a message there itself).
func TestWebhookDeadLetterQueuesTakeNoMessageFromOtherPrincipals(t *testing.T) {
	for _, name := range []string{"toolgate-test-webhook-events-dlq", "toolgate-test-webhook-deliveries-dlq"} {
		denied := false
		for _, s := range sendDenials(name) {
			cond := text(s["Condition"])
			if s["Condition"] == nil || strings.Contains(cond, "aws:PrincipalArn") || strings.Contains(cond, "aws:PrincipalServiceName") {
				denied = true
			}
		}
		if !denied {
			t.Errorf("%s: no queue policy statement denies sqs:SendMessage to other principals: a message put there is sent on by dlq redrive as a producer's", name)
		}
	}
}

// sendDenials are the statements of the queue policies of the queue named
// name that deny sqs:SendMessage (or sqs:*).
func sendDenials(name string) []tmpl {
	queueID := mustQueueID(platformJSON, name)
	var out []tmpl
	for _, pol := range resources(platformJSON, "AWS::SQS::QueuePolicy") {
		if !strings.Contains(text(props(pol)["Queues"]), "${"+queueID+"}") {
			continue
		}
		doc, _ := props(pol)["PolicyDocument"].(tmpl)
		for _, st := range asList(doc["Statement"]) {
			s, _ := st.(tmpl)
			actions := text(s["Action"])
			if s["Effect"] == "Deny" && (strings.Contains(actions, "sqs:SendMessage") || strings.Contains(actions, "sqs:*")) {
				out = append(out, s)
			}
		}
	}
	return out
}

// A message the events queue dead-letters (a fan-out that failed five
// times, an event EventBridge could not send) has no other way back: its
// {"event_id"} was marked sent, so the relay never sends it again, and
// the DLQ alarm asks an operator to act. Some producer the events queue
// admits must therefore be able to read the events dead-letter queue and
// send on (as the webhooks function does for the deliveries queue, dlq
// redrive): the queue policy's deny also refuses an operator's own
// redrive (SQS StartMessageMoveTask sends with the caller's permissions),
// so without one the events are stranded for 14 days and then lost. The
// webhooks function is that producer (dlq redrive).
func TestWebhookEventsDeadLetterQueueCanBeRedriven(t *testing.T) {
	dlq := mustQueueID(platformJSON, "toolgate-test-webhook-events-dlq")
	events := mustQueueID(platformJSON, "toolgate-test-webhook-events")
	var exempt string
	for _, pol := range resources(platformJSON, "AWS::SQS::QueuePolicy") {
		if !strings.Contains(text(props(pol)["Queues"]), "${"+events+"}") {
			continue
		}
		doc, _ := props(pol)["PolicyDocument"].(tmpl)
		for _, st := range asList(doc["Statement"]) {
			if s, _ := st.(tmpl); s["Effect"] == "Deny" && strings.Contains(text(s["Action"]), "sqs:SendMessage") {
				exempt += text(s["Condition"])
			}
		}
	}
	for _, pol := range resources(platformJSON, "AWS::IAM::Policy") {
		doc, _ := props(pol)["PolicyDocument"].(tmpl)
		reads := false
		for _, st := range asList(doc["Statement"]) {
			s, _ := st.(tmpl)
			if s["Effect"] == "Allow" && strings.Contains(text(s["Action"]), "sqs:ReceiveMessage") && strings.Contains(text(s["Resource"]), dlq) {
				reads = true
			}
		}
		if !reads {
			continue
		}
		for _, role := range asList(props(pol)["Roles"]) {
			if r := text(role); r != "" && strings.Contains(exempt, strings.Trim(r, "${}")) {
				return
			}
		}
	}
	t.Error("no role both reads the events dead-letter queue and may send to the events queue: a dead-lettered event cannot be redriven")
}
