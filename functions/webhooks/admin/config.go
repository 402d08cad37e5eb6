package admin

import (
	"fmt"

	"github.com/toolgate/toolgate/functions/webhook-delivery/delivery"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/reviewer"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

// FunctionConfig is the webhooks function's configuration.
type FunctionConfig struct {
	// Table, DeliveriesQueue, DLQ, EventsQueue, EventsDLQ and Key are
	// webhookapi.EnvTable, EnvDeliveriesQueue, EnvDeliveriesDLQ,
	// EnvEventsQueue, EnvEventsDLQ and EnvKey.
	Table, DeliveriesQueue, DLQ, EventsQueue, EventsDLQ, Key string
	Callers                                                  caller.Config
	// Admins are webhookapi.EnvAdmins's patterns (reviewer.ParseAdmins).
	Admins []string
	// Rules are the endpoint rules (delivery.EndpointRulesFromEnv), the
	// same the delivery function applies.
	Rules webhook.EndpointRules
}

// FunctionConfigFromEnv reads and checks the webhooks function's
// configuration; an error names the variable and the rule.
func FunctionConfigFromEnv(getenv func(string) string) (FunctionConfig, error) {
	c := FunctionConfig{Table: getenv(webhookapi.EnvTable), DeliveriesQueue: getenv(webhookapi.EnvDeliveriesQueue),
		DLQ: getenv(webhookapi.EnvDeliveriesDLQ), EventsQueue: getenv(webhookapi.EnvEventsQueue), EventsDLQ: getenv(webhookapi.EnvEventsDLQ), Key: getenv(webhookapi.EnvKey)}
	for _, v := range []struct{ name, value string }{{webhookapi.EnvTable, c.Table}, {webhookapi.EnvDeliveriesQueue, c.DeliveriesQueue},
		{webhookapi.EnvDeliveriesDLQ, c.DLQ}, {webhookapi.EnvEventsQueue, c.EventsQueue}, {webhookapi.EnvEventsDLQ, c.EventsDLQ}, {webhookapi.EnvKey, c.Key}} {
		if v.value == "" {
			return c, fmt.Errorf("%s is not set", v.name)
		}
	}
	var err error
	if c.Callers, err = caller.ConfigFromEnv(getenv); err != nil {
		return c, err
	}
	if c.Admins, err = reviewer.ParseAdmins(webhookapi.EnvAdmins, getenv(webhookapi.EnvAdmins), c.Callers.Account); err != nil {
		return c, err
	}
	c.Rules, err = delivery.EndpointRulesFromEnv(getenv)
	return c, err
}
