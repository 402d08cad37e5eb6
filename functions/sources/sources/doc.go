// Package sources is the sources function (functions/sources): behind an
// IAM-authorised Function URL, each request with a caller proof of its own
// action (sources.manage for sources and the inbound dead-letter queue,
// schedules.manage for schedules), it lets inbound operators
// (inboundapi.EnvOperators) add, list, rotate the secrets of and remove
// the sources webhooks are received from, and add, list, pause, resume
// and remove the schedules that start Solutions' runs (docs/webhooks.md,
// "Sources"; docs/schedules.md). A source's secret is stored only sealed
// under the credentials' KMS key with the purpose webhook-source; one the
// function draws is answered once. On AWS a schedule item has an
// EventBridge Scheduler schedule that sends its firings to the inbound
// queue (Scheduler); on the local stack the item is all. Its requests,
// answers, error codes and bindings are shared/inboundapi's.
package sources
