// Package store keeps outgoing webhooks in the ledger table
// (docs/webhooks.md; docs/ledger.md, "Webhook items"): subscriptions
// (table.WebhookSubscription) with their signing secrets sealed under
// {purpose: webhook-subscription, subscription: <id>} (SealSecret,
// OpenSecret), events recorded once (table.WebhookEvent) and each
// delivery attempt (table.WebhookAttempt).
//
// An event leaves its producer without a dual write (the transactional
// outbox): RecordEvent's conditional put, its id the dedupe key, records
// it with unsent set, which puts it in the sparse index
// table.WebhookUnsent; SendMessage hands it to the events queue; MarkSent
// removes unsent, and with it the index entry. A producer that stops
// between the put and the send leaves the event in the index, where
// Relay, run on a schedule, finds it once it is older than a bound and
// sends it. Emitter.Emit is that sequence; a tool function records only
// (no queue permission, no request on its hot path) and leaves the
// sending to the relay. Delivery is at least once: a receiver dedupes on
// the event id (webhook-id).
//
// Nothing here logs or returns a secret, a request or response body, or
// an event's data in an error.
package store
