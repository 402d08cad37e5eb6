// Package admin is the webhooks function (functions/webhooks): behind an
// IAM-authorised Function URL, each request with a caller proof of its own
// action (webhooks.subscribe, webhooks.manage, webhooks.redrive), it lets
// webhook admins (webhookapi.EnvAdmins) subscribe an endpoint, list,
// rotate the secret of and disable subscriptions, read an event's
// delivery attempts, and list and redrive the deliveries' dead-letter
// queue (docs/webhooks.md). A subscription's "whsec_" secret is answered
// once, at subscribe and at rotate-secret, and stored only sealed under
// the credentials' KMS key with the purpose webhook-subscription. Its
// requests, answers, error codes and bindings are shared/webhookapi's.
package admin
