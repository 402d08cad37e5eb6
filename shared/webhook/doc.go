// Package webhook holds the rules of toolgate's webhooks out
// (docs/webhooks.md): the event types and their payloads, each checked
// against a JSON Schema embedded from schemas/; subscription patterns;
// signing and verifying with the Standard Webhooks specification
// (github.com/standard-webhooks/standard-webhooks, through its Go library);
// the per-attempt retry schedule; the outcome of one attempt; and the
// Sender, which POSTs one delivery under the endpoint rules.
//
// It links no AWS SDK: the outbox and subscriptions live in
// shared/webhook/store, the queues and the delivery loop in the
// webhook-delivery function.
//
// # Events
//
// An Event is recorded once and delivered to every matching subscription.
// Its id is derived from its type and its source (EventID), so a producer
// that runs twice records one event, and receivers dedupe on the
// webhook-id header, which is the event id on every attempt. The POSTed
// body (Body) is the envelope the Standard Webhooks specification
// recommends: {"type", "timestamp", "data"}. A payload carries ids,
// digests and statuses only, never a tool's inputs or outputs, a
// recipient or a secret: every schema closes its objects
// (additionalProperties false) and Validate bounds every string to
// MaxString bytes.
//
// # Signatures
//
// Sign produces the webhook-signature header, "v1,<base64 HMAC-SHA256>"
// per key, space-separated, over "<id>.<unix seconds>.<body>" (Standard
// Webhooks, "Signature scheme"). While a secret is rotated, the old and the
// new key both sign (RotationGrace), which the specification allows with
// several signatures in one header. Verify checks the timestamp against the
// caller's clock within a tolerance (Tolerance) and then the signatures
// with the library's VerifyIgnoringTimestamp, since the library's own
// Verify reads time.Now with a fixed tolerance. Secrets are "whsec_" and
// standard base64 of 24 to 64 random bytes; ParseSecret accepts them with
// or without padding (the library's NewWebhook refuses an unpadded one,
// so keys are decoded here and handed to NewWebhookRaw).
//
// # Delivery
//
// A Schedule is the visibility delay after each failed attempt, applied
// with SQS ChangeMessageVisibility (at most 12 hours each, the SQS
// maximum); Schedule.Attempts is the deliveries queue's maxReceiveCount,
// after which SQS moves the message to the dead-letter queue. Classify
// maps one attempt to an Outcome: 2xx delivered, 410 gone (the subscription
// is disabled), anything else retried.
//
// EndpointRules decides a subscription's URL at subscribe time and before
// every attempt: https only (plain http only to exempted addresses, the
// local stack's 127.0.0.1), the platform's webhook host allow-list
// (package hostlist's syntax), never one of the deployment's own Function
// URLs, no userinfo, no fragment. Sender resolves the host once, refuses
// the special-purpose and metadata addresses of package addrrule (the
// rules the http tools use), connects to a checked address only, follows no
// redirect, gives up after DefaultTimeout and reads at most MaxResponse
// bytes of the answer, which it discards.
package webhook
