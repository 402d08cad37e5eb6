// Package receiver is the webhook-receiver function (docs/webhooks.md,
// "Receiving events"). Behind a Function URL with auth NONE it serves
// POST /in/<source>: it bounds the body (HardMaxBodyBytes, then the
// source's max_body_bytes), reads the source with its secrets (cached per
// container, opened with KMS), verifies the signature over the exact raw
// bytes (shared/inbound Verify: Standard Webhooks, Stripe or GitHub),
// requires a JSON body, records the event once under the provider's event
// id (shared/inbound/store Receive) and sends its key, never its body, to
// the inbound queue, which the inbound-start function consumes. On a
// scheduled event it runs the relay, which queues events left RECEIVED
// when a send failed.
//
// Nothing a refused request carries is stored or queued; no answer echoes
// the request, and no log line holds a body, a header value, a signature
// or a secret.
package receiver
