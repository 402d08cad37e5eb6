package delivery

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/toolgate/toolgate/shared/fetch"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhookapi"
)

// FunctionConfig is the webhook-delivery function's configuration.
type FunctionConfig struct {
	// Table is webhookapi.EnvTable; EventsQueue and DeliveriesQueue the
	// queues' URLs (webhookapi.EnvEventsQueue, EnvDeliveriesQueue).
	Table, EventsQueue, DeliveriesQueue string
	// Schedule is webhookapi.EnvSchedule's, or webhook.DefaultSchedule.
	Schedule webhook.Schedule
	// Rules are the endpoint rules (EndpointRulesFromEnv).
	Rules webhook.EndpointRules
	// RelayAfter is webhookapi.EnvRelayAfter's, or
	// webhookapi.DefaultRelayAfter: the relay sends events left unsent
	// this long.
	RelayAfter time.Duration
}

// FunctionConfigFromEnv reads and checks the webhook-delivery function's
// configuration; an error names the variable and the rule.
func FunctionConfigFromEnv(getenv func(string) string) (FunctionConfig, error) {
	c := FunctionConfig{Table: getenv(webhookapi.EnvTable), EventsQueue: getenv(webhookapi.EnvEventsQueue),
		DeliveriesQueue: getenv(webhookapi.EnvDeliveriesQueue), Schedule: webhook.DefaultSchedule, RelayAfter: webhookapi.DefaultRelayAfter}
	for _, v := range []struct{ name, value string }{{webhookapi.EnvTable, c.Table}, {webhookapi.EnvEventsQueue, c.EventsQueue},
		{webhookapi.EnvDeliveriesQueue, c.DeliveriesQueue}} {
		if v.value == "" {
			return c, fmt.Errorf("%s is not set", v.name)
		}
	}
	if s := getenv(webhookapi.EnvSchedule); s != "" {
		sched, err := webhook.ParseSchedule(s)
		if err != nil {
			return c, fmt.Errorf("%s: %w", webhookapi.EnvSchedule, err)
		}
		c.Schedule = sched
	}
	if s := getenv(webhookapi.EnvRelayAfter); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Second || d > time.Hour {
			return c, fmt.Errorf("%s: %q is not a duration from 1s to 1h", webhookapi.EnvRelayAfter, s)
		}
		c.RelayAfter = d
	}
	var err error
	c.Rules, err = EndpointRulesFromEnv(getenv)
	return c, err
}

// EndpointRulesFromEnv reads the endpoint rules both webhook functions
// apply: webhookapi.EnvAllow (hostlist entries; none: no endpoint is
// allowed), webhookapi.EnvAllowAddresses (exempted addresses, as
// fetch.ParseExemption reads them) and webhookapi.EnvOwnHosts (this
// deployment's Function URL hosts, webhook.ParseOwnHost's entries), each
// a comma- or space-separated list (functionconfig.SplitList), and
// webhookapi.EnvResolveFile (the local stack's file of host answers,
// fetch.FileResolver, which must exist and parse). An error names the
// variable and the entry.
func EndpointRulesFromEnv(getenv func(string) string) (webhook.EndpointRules, error) {
	var r webhook.EndpointRules
	var err error
	if r.Allow, err = hostlist.ParseList(functionconfig.SplitList(getenv(webhookapi.EnvAllow))); err != nil {
		return r, fmt.Errorf("%s: %w", webhookapi.EnvAllow, err)
	}
	for i, s := range functionconfig.SplitList(getenv(webhookapi.EnvAllowAddresses)) {
		var p netip.Prefix
		if p, err = fetch.ParseExemption(s); err != nil {
			return r, fmt.Errorf("%s[%d] %q: %w", webhookapi.EnvAllowAddresses, i, s, err)
		}
		r.AllowAddresses = append(r.AllowAddresses, p)
	}
	for i, s := range functionconfig.SplitList(getenv(webhookapi.EnvOwnHosts)) {
		h, err := webhook.ParseOwnHost(s)
		if err != nil {
			return r, fmt.Errorf("%s[%d]: %w", webhookapi.EnvOwnHosts, i, err)
		}
		r.OwnHosts = append(r.OwnHosts, h)
	}
	if path := getenv(webhookapi.EnvResolveFile); path != "" {
		f := fetch.FileResolver{Path: path}
		if _, err := f.Load(); err != nil {
			return r, fmt.Errorf("%s: %w", webhookapi.EnvResolveFile, err)
		}
		r.Resolver = f
	}
	return r, nil
}
