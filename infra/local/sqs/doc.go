// Package sqs runs the local stack's SQS stand-in and does, on the local
// stack, what a Lambda event-source mapping does on AWS: poll a queue and
// invoke a function with each batch.
//
// The stand-in is npm local-aws-sqs 2.0.2 (pinned in package-lock.json), the
// one stand-in found that speaks the AWS JSON 1.0 protocol aws-sdk-go-v2's
// SQS client uses (goaws and sqslite answer only the older query
// protocol). It has no command-line entry: server.mjs beside this file
// launches it on 127.0.0.1, and Start runs that under node on a free port
// and stops it by PID. Client is an SDK client for it (static fake
// credentials, BaseEndpoint), CreateQueue makes a standard queue with an
// optional dead-letter queue, and Redrive moves dead letters back.
//
// # The stand-in measured
//
// The package's tests hold local-aws-sqs to what webhook deliveries need
// (docs/webhooks.md: attempts counted by ApproximateReceiveCount, a
// per-attempt visibility schedule, a dead-letter queue after the last
// attempt):
//
//   - ApproximateReceiveCount comes back only when ReceiveMessage asks
//     through the older AttributeNames field ("All"); the newer
//     MessageSystemAttributeNames alone returns no attributes. Poller and
//     the tests ask through both, which SQS accepts.
//   - As published, ChangeMessageVisibility adds one to the message's
//     ApproximateReceiveCount, as a receive does. A consumer that sets a
//     per-attempt visibility timeout after each failed attempt then sees
//     counts 1, 3, 5, ..., and with maxReceiveCount 3 its message reaches
//     the dead-letter queue after 2 deliveries, not 3
//     (TestStandInAsPublishedCountsChangeMessageVisibilityAsAReceive).
//     server.mjs corrects this as it loads the library: corrected, the
//     same consumer sees 1, 2, 3 and 3 deliveries, with or without
//     ChangeMessageVisibility, and each redelivery comes no earlier than
//     the visibility timeout set before it.
//   - As published, ApproximateNumberOfMessages counts messages in flight
//     too; server.mjs corrects it to the messages available, as SQS counts
//     them.
//   - A message moves to the dead-letter queue when the visibility timeout
//     of its maxReceiveCount-th receive ends; SQS moves it at the next
//     receive after that. Either way it is delivered maxReceiveCount times.
//     The moved message keeps its id and body and starts again at receive
//     count 0.
//   - A ReceiveMessage that waits (WaitTimeSeconds > 0) answers only once
//     it has MaxNumberOfMessages messages or its wait is over; SQS answers
//     as soon as it has one. Poller works around it (Poller.Run).
//   - A waiting ReceiveMessage whose client has given up keeps running in
//     the stand-in and may still take a message, which then stays
//     invisible for its visibility timeout (as a receive whose answer is
//     lost on SQS does). A test that stops one Poller and starts another
//     on the same queue may lose a delivery to it.
//
// Queues live in the stand-in's memory only; queue URLs are
// Endpoint()+"/000000000000/<name>" (local.LocalAccountID) and ARNs name
// local.Region.
package sqs
