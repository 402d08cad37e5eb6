package sqs

import "testing"

// StartAsPublishedForTest starts the stand-in with local-aws-sqs loaded
// unchanged (server.mjs --as-published), for the tests that measure what
// the launcher corrects.
func StartAsPublishedForTest(t testing.TB) *Server {
	t.Helper()
	return startedForTest(t, true)
}
