package receiver

import (
	"fmt"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/shared/inboundapi"
)

// Retention: the defaults and bounds are inboundapi's
// (DefaultRetentionDays 90, MinRetentionDays 3, MaxRetentionDays 400).
// GitHub signs no timestamp, so a captured GitHub delivery verifies for as
// long as its secret is unchanged, and only the event item stops it from
// starting a second run; GitHub and Stripe redeliver and retry for up to
// 3 days (the floor), and 90 days keeps the deduplication of a delivery
// replayed well after that (docs/webhooks.md, "Deduplication and
// retention").

// FunctionConfig is the webhook-receiver function's configuration, read
// from its environment at cold start (FunctionConfigFromEnv).
type FunctionConfig struct {
	// Table is the ledger table (TOOLGATE_TABLE), which holds the sources
	// and the event items.
	Table string
	// Queue is the inbound queue's URL (TOOLGATE_INBOUND_QUEUE).
	Queue string
	// Retention is how long an event item is kept:
	// TOOLGATE_INBOUND_RETENTION_DAYS days (inboundapi.MinRetentionDays
	// to MaxRetentionDays; unset: DefaultRetentionDays, 90).
	Retention time.Duration
	// RelayAfter is TOOLGATE_INBOUND_RELAY_AFTER (a Go duration, 1s to
	// 1h; unset: inboundapi.DefaultRelayAfter, 2 minutes).
	RelayAfter time.Duration
	// SecretCache is TOOLGATE_INBOUND_SECRET_CACHE (a Go duration, 1s to
	// 1h; unset: inboundapi.DefaultSecretCache, 5 minutes): a
	// rotated or removed secret stops verifying within that time.
	SecretCache time.Duration
}

// FunctionConfigFromEnv reads and checks the webhook-receiver function's
// configuration; an error names the variable and the rule, never a value
// other than the one refused.
func FunctionConfigFromEnv(getenv func(string) string) (FunctionConfig, error) {
	c := FunctionConfig{Table: getenv(inboundapi.EnvTable), Queue: getenv(inboundapi.EnvQueue),
		Retention: inboundapi.DefaultRetentionDays * 24 * time.Hour, RelayAfter: inboundapi.DefaultRelayAfter, SecretCache: inboundapi.DefaultSecretCache}
	for _, v := range []struct{ name, value string }{{inboundapi.EnvTable, c.Table}, {inboundapi.EnvQueue, c.Queue}} {
		if v.value == "" {
			return c, fmt.Errorf("%s is not set", v.name)
		}
	}
	if s := getenv(inboundapi.EnvRetentionDays); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < inboundapi.MinRetentionDays || n > inboundapi.MaxRetentionDays {
			return c, fmt.Errorf("%s: %q is not a whole number of days from %d to %d", inboundapi.EnvRetentionDays, s, inboundapi.MinRetentionDays, inboundapi.MaxRetentionDays)
		}
		c.Retention = time.Duration(n) * 24 * time.Hour
	}
	for _, v := range []struct {
		name string
		to   *time.Duration
	}{{inboundapi.EnvRelayAfter, &c.RelayAfter}, {inboundapi.EnvSecretCache, &c.SecretCache}} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Second || d > time.Hour {
			return c, fmt.Errorf("%s: %q is not a duration from 1s to 1h", v.name, s)
		}
		*v.to = d
	}
	return c, nil
}
