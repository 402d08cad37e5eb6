// Package delivery is the webhook-delivery function (docs/webhooks.md). It
// takes three kinds of invocation:
//
//   - a batch of the events queue (an event id from a producer or the
//     relay, or a Step Functions status change from the EventBridge rule,
//     which it first records as a run.* event): it fans each event out to
//     one message of the deliveries queue per active subscription whose
//     patterns and Solution filter match it, so that each subscriber is
//     retried and dead-lettered on its own;
//   - a batch of the deliveries queue: it signs the event with every
//     secret of the subscription that has not retired (Standard Webhooks)
//     and POSTs it; a 2xx is delivered, a 410 disables the subscription,
//     anything else sets the message's visibility to the retry schedule's
//     next delay and reports it failed, so that SQS redelivers it then and
//     moves it to the dead-letter queue after the last attempt;
//   - a scheduled event: the relay, which hands over events whose
//     producer recorded them but did not send them.
//
// A batch's records run concurrently (MaxConcurrency) and failures are
// reported per record (SQS partial batch responses).
package delivery
