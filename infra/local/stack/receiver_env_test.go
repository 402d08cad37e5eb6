package stack

import (
	"testing"

	"github.com/toolgate/toolgate/infra/local/sqs"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

// webhook-receiver runs without lanes, sends to the inbound queue with
// the local relay bound, and gets none of the webhook functions'
// configuration: it reaches no endpoint and admits no admin.
func TestTheReceiverHasNoLanesAndItsOwnConfiguration(t *testing.T) {
	if laned(receiverFunction) || len(lanesOf(receiverFunction)) != 1 {
		t.Errorf("%s has lanes %v", receiverFunction, lanesOf(receiverFunction))
	}
	s := &Stack{InboundQueues: InboundQueues{Queue: sqs.Queue{URL: "http://127.0.0.1:9/000000000000/toolgate-local-inbound"}}}
	env := functionEnv(receiverFunction, s, "127.0.0.1:4002", allowLists{webhook: "127.0.0.1:4003"})
	if env[inboundapi.EnvQueue] != s.InboundQueues.Queue.URL || env[inboundapi.EnvRelayAfter] != "5s" {
		t.Errorf("%s's environment %v", receiverFunction, env)
	}
	for _, k := range []string{webhookapi.EnvAllow, webhookapi.EnvAdmins, webhookapi.EnvEventsQueue, inboundapi.EnvOperators, inboundapi.EnvKey} {
		if v, ok := env[k]; ok {
			t.Errorf("%s gets %s=%s", receiverFunction, k, v)
		}
	}
}
