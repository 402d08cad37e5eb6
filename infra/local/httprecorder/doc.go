// Package httprecorder is a local HTTP service that records what it
// receives, for testing the http tool against: a net/http server run
// in-process on a free 127.0.0.1 port (never another interface), with
// answers scripted per path and an idempotency key store.
//
//	srv, err := httprecorder.Start(httprecorder.Options{})
//	...
//	defer srv.Close()
//	srv.Script("/hooks/chat", httprecorder.TooManyRequests(1), httprecorder.OK(nil))
//	// send requests to srv.URL() + "/hooks/chat"
//	reqs, err := srv.Wait(ctx, 2)
//
// # Records
//
// Each request it receives is a Request: its method, path and query, its
// headers (the values of Authorization, Proxy-Authorization and Cookie
// replaced by "<redacted>": a record shows that a credential was sent,
// never the credential), its idempotency key, its body's length and SHA-256
// digest (never the body), and what the service did: the status it
// answered, whether it applied the request, whether the answer was a
// replay of the key's.
//
// # Applying
//
// POST, PUT, PATCH and DELETE are writes: a write answered with a 2xx
// status, or with an answer marked Applied (a 5xx the origin sent after
// acting, a Hang), applies it: the service counts an application
// (A-1, A-2, …) and keeps its answer, 200 with {"id": "A-<n>", "method",
// "path", "bytes", "sha256"}. GET and HEAD never apply.
//
// # Idempotency keys
//
// A write carrying Options.KeyHeader (default Idempotency-Key) is applied
// at most once per key, as the IETF HTTPAPI draft "The Idempotency-Key
// HTTP Header Field" describes a resource server: once a key is applied,
// every later write with that key and the same body gets the kept answer
// again (Request.Replayed) and is not applied, whatever the script, even
// while the first request's Hang still holds its connection (the write was
// applied before the hang); the same key with another body is 422
// Unprocessable Content. A write that was not applied (a 429, a 503, a
// 4xx) leaves its key free.
//
// # Scripts
//
// Script(path, answers...) queues answers for a path, one per request in
// order; when the queue is empty the path answers by default: 200 with
// the application's JSON for a write, 200 {"path": ...} for a read, 405
// for any other method. OK, Status, Redirect, TooManyRequests and Hang
// build the answers tests need: 200 JSON, a status with headers, 307 and
// 308, 429 with Retry-After, and a slow answer that reads the whole body,
// applies the write, and then answers nothing until the client gives up or
// the service closes (a timeout after the request was sent).
//
// # Waiting
//
// Wait(ctx, n) blocks until n requests have been recorded, so tests never
// sleep to let a request arrive; Requests returns the records so far.
package httprecorder
