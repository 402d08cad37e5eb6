// Package store keeps inbound sources, schedules and inbound events in the
// ledger table (table.InboundSource, table.Schedule, table.InboundEvent;
// docs/webhooks.md, "Receiving events"), and seals and opens the secrets
// that verify a source's deliveries with shared/credential/vault under
// the purpose webhook-source.
//
// Sources and schedules each sit in one partition, which one Query lists;
// writes to them are conditional (attribute_not_exists on add, version on
// change). An inbound event is recorded once, its key the dedupe key
// ("INEVT#<origin>/<name>/<event id>"): webhook-receiver records a
// delivery RECEIVED with its body and marks it QUEUED once the inbound
// queue took its message; the relay reads the sparse index
// inbound-unqueued for what was recorded but not queued; inbound-start
// records a schedule's firing QUEUED and marks either STARTED or FAILED,
// removing the body. Errors name the item and the rule, never a body, a
// secret or a value of either.
package store
