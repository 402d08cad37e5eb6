// Package inbound verifies webhooks that providers send to toolgate: the
// signature over the exact raw body, the timestamp within Tolerance where
// the scheme signs one, and the provider's event id, which receivers
// deduplicate on (docs/webhooks.md, "Receiving events: verification").
//
// Three schemes are known (Scheme): Standard Webhooks (its specification,
// github.com/standard-webhooks/standard-webhooks, through its Go library),
// Stripe's Stripe-Signature header, and GitHub's X-Hub-Signature-256.
// Verify takes the source's secrets (several while a secret is rotated),
// the request's headers and body, and the clock's now; it answers an Event
// or one of the Err* values, wrapped, which never quote the body, a
// signature or a secret.
//
// ExecutionName names the Step Functions execution an inbound event or a
// schedule's firing starts: a keyed digest of its source and event id, so
// a duplicate that slips past deduplication cannot start a second run.
//
// The package links no AWS SDK and reads no clock: the receiver function
// (functions/webhook-receiver) bounds the body and gives the clock before
// it calls Verify.
package inbound
