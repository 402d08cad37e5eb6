package hookreceiver

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

// Subscription is a subscription as `toolgate webhooks subscribe --json`
// printed it (docs/webhooks.md, "The secret"): the function's answer, and
// the key of its "whsec_" secret, which verifies the subscription's
// deliveries (Verify). The secret itself is not kept.
type Subscription struct {
	webhookapi.Subscription
	Key []byte
}

// ReadSubscription reads the standard output of `toolgate webhooks
// subscribe --json`: one webhookapi.SubscribeResult object. It fails on
// anything else, on a subscription without an id, and on a secret
// webhook.ParseSecret refuses; its errors never quote the output, which
// holds the secret.
func ReadSubscription(out []byte) (Subscription, error) {
	var res webhookapi.SubscribeResult
	if err := json.Unmarshal(out, &res); err != nil {
		return Subscription{}, errors.New("hookreceiver: the output of toolgate webhooks subscribe --json is not one JSON object")
	}
	if res.Subscription.ID == "" {
		return Subscription{}, errors.New("hookreceiver: toolgate webhooks subscribe --json printed no subscription id")
	}
	key, err := webhook.ParseSecret(res.Secret)
	if err != nil {
		return Subscription{}, fmt.Errorf("hookreceiver: subscription %s: %w", res.Subscription.ID, err)
	}
	return Subscription{Subscription: res.Subscription, Key: key}, nil
}
