// Package outbox records webhook events once in the ledger table
// (table.WebhookEvent, and a call's table.WebhookCallEvent;
// docs/webhooks.md, "How an event is produced"): the
// conditional put that begins the transactional outbox, its event id the
// dedupe key, with the event marked unsent so that the relay finds it in
// the sparse index table.WebhookUnsent and sends it.
//
// It is the part of shared/webhook/store a tool function links: Recorder
// records and sends nothing, so a tool function's dispatcher records its
// events (a parked call, an at_most_once call whose outcome is unknown)
// under the call events' own prefix (RecordCall), without linking the
// SQS client, or the KMS client that store's
// subscription secrets need (docs/performance.md: no tool function links
// a service client it does not call). store.Store.RecordEvent is Record.
//
// Nothing here logs or returns an event's data in an error.
package outbox
