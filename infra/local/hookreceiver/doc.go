// Package hookreceiver is a local webhook receiver for the local stack's
// tests and the `make run` demo: a net/http server run in-process on a
// free 127.0.0.1 port (never another interface) that records every
// request it gets, answers each path by attempt number, and verifies a
// delivery's Standard Webhooks signature.
//
//	r, err := hookreceiver.Start()
//	...
//	defer r.Close()
//	// stack.StackOptions{WebhookAllow: []string{r.Host()}}: the
//	// receiver listens before the stack starts.
//	r.Answer("/flaky", func(attempt int) int { return 500 }) // before the deliveries
//	// out: the standard output of
//	// toolgate webhooks subscribe --url r.URL("/flaky") ... --json
//	sub, err := hookreceiver.ReadSubscription(out)
//	got, err := r.Wait(ctx, "/flaky", func(got []hookreceiver.Request) bool { return len(got) >= 3 })
//	err = hookreceiver.Verify(got[0], sub.Key)
//
// # Records
//
// Each request, whatever its method and path, is a Request: its path,
// its attempt number on that path (1 for the first request to it), the
// three Standard Webhooks headers (webhook-id, webhook-timestamp,
// webhook-signature) and traceparent, every header field as received
// (for tests that check what no field carries), its body, when it
// arrived (the receiver's clock) and the status it was answered. A body
// is read to at most MaxBody bytes, 64 KiB; a longer one is recorded cut
// (Request.Truncated) and answered 413 Content Too Large whatever its
// path's answer. The records stay in memory until Close, and are never
// written out: a test's secret signs them.
//
// # Answers
//
// Answer sets a path's answer function: the status of its n-th request
// (n from 1, counted from the first request to the path whatever the
// answer then was). A path without one answers 200 OK. The answer has
// no body.
//
// # Waiting
//
// Wait blocks until a path's requests satisfy a condition, woken by a
// channel closed at every arrival: tests never sleep or poll to let a
// delivery arrive. Its deadline is its context's.
//
// # Verifying
//
// Verify checks a Request as docs/webhooks.md ("Verifying a delivery")
// tells a receiver to: shared/webhook's Verify (the Standard Webhooks Go
// library, its timestamp tolerance webhook.Tolerance) against the moment
// the request arrived. ReadSubscription reads the key to verify with from
// what `toolgate webhooks subscribe --json` printed (docs/webhooks.md,
// "The secret"), and keeps the key only, never the "whsec_" text, so that
// nothing prints it by mistake.
package hookreceiver
