// Package webhookapi is the webhooks function's contract with those who
// call and deploy it (docs/webhooks.md): the CLI (toolgate webhooks), the
// local stack and infra. It holds the requests (DirectRequest for a direct
// invocation; SubscribeRequest and ProofHeader for the Function URL's
// routes), the answers (SubscribeResult, ListResult, RotateResult,
// DisableResult, DeliveriesResult, DLQResult, RedriveResult; ErrorBody
// and the Code* error codes for a refusal), the caller-proof bindings each
// request is signed for, the messages the webhook queues carry, and the
// environment both webhook functions read.
//
// The functions themselves are functions/webhooks/admin and
// functions/webhook-delivery/delivery. This package links no AWS SDK and
// nothing of the functions, so that a caller links neither.
package webhookapi
