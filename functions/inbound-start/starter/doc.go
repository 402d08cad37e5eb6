// Package starter is the inbound-start function (functions/inbound-start):
// the consumer of the inbound queue, whose messages name a source's event
// ({"source", "event_id"}, from the webhook receiver or its relay) or a
// schedule's firing ({"schedule", "scheduled_time"}, from EventBridge
// Scheduler or the local stack's ticker); shared/inboundapi decodes them.
//
// For each, it reads the event item (or records the firing's item,
// store.PutFiring), builds the run's input ({source, event_id,
// event_type, payload} of an event, the schedule's stored input of a
// firing) and the execution input {input, meta} (meta.end_user when the
// source or schedule names one), reads the Solution's state machine
// definition and checks the input against its input record
// (shared/inputrecord: refused, the item is FAILED with the problems'
// lines and no run starts). It names the execution
// inbound.ExecutionName(NameKey, "in-", source, event id) ("sha256:" and
// the body's hex SHA-256 instead of the event id for GitHub, which does
// not sign its delivery id) or ("sc-", schedule, scheduled time), so that
// a duplicate finds ExecutionAlreadyExists. When the definition begins
// with the Starter state, it records the start through review-request's
// start alias as a session of the inbound-start role ("src-<source>" or
// "sched-<schedule>"), with the origin bound in the proof (Lane), then
// starts the execution and marks the item STARTED.
//
// A batch's records run concurrently (MaxConcurrency); a transient
// failure is reported for its record only (SQS partial batch responses),
// so SQS delivers it again and moves it to the dead-letter queue after
// five receives (docs/webhooks.md, "How an event starts a run").
package starter
