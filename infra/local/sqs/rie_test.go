package sqs_test

import (
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/infra/local/sqs"
)

// TestPollerRunsAFunctionUnderTheRIE runs testdata/sqsfn, a Lambda
// function that reports a body "fail" as a batch item failure and fails
// outright on "crash", under the Runtime Interface Emulator through
// InvokeURL.
func TestPollerRunsAFunctionUnderTheRIE(t *testing.T) {
	t.Parallel()
	s := sqs.StartForTest(t)
	c := s.Client()
	fn, err := local.StartRIE(t.Context(), "sqsfn", localtest.Bootstrap(t, "./testdata/sqsfn"), 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fn.Stop() })

	for _, tc := range []struct {
		name        string
		bodies      []string
		wantDeleted []string // bodies
		wantErr     string
	}{
		{name: "partial batch response", bodies: []string{"ok", "fail"}, wantDeleted: []string{"ok"}},
		{name: "function error", bodies: []string{"ok", "crash"}, wantErr: "function failed: errorString"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := createQueue(t, s, strings.ReplaceAll(tc.name, " ", "-"), sqs.QueueOptions{VisibilityTimeout: time.Hour})
			for _, body := range tc.bodies {
				send(t, c, q, body, nil)
			}
			p := run(t, sqs.Poller{Client: c, Queue: q, Invoke: sqs.InvokeURL(fn.InvokeURL())})
			b := p.next(t)
			if len(b.Event.Records) != len(tc.bodies) {
				t.Fatalf("batch of %d records, want %d", len(b.Event.Records), len(tc.bodies))
			}
			if (b.Err == nil) != (tc.wantErr == "") || (b.Err != nil && !strings.Contains(b.Err.Error(), tc.wantErr)) {
				t.Errorf("invoke error %v, want %q", b.Err, tc.wantErr)
			}
			body := map[string]string{}
			for _, r := range b.Event.Records {
				body[r.MessageId] = r.Body
			}
			var deleted []string
			for _, id := range b.Deleted {
				deleted = append(deleted, body[id])
			}
			if strings.Join(deleted, ",") != strings.Join(tc.wantDeleted, ",") {
				t.Errorf("deleted %v, want %v", deleted, tc.wantDeleted)
			}
		})
	}
}
