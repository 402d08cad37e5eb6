package review_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/shared/review"
)

const (
	forkParent = "arn:aws:states:us-east-1:123456789012:execution:toolgate-dev_digest:run-1"
	forkChild  = "arn:aws:states:us-east-1:123456789012:execution:toolgate-dev_digest:run-2"
)

// A FORK_WAITING message reads back as the keys and lease it was written
// with; another message is none.
func TestForkWaitingMessageReadsBack(t *testing.T) {
	w := review.ForkWaiting{Keys: []string{forkParent + "/1", forkParent + "/2.0.1"}, LeaseUntil: "2026-12-03T12:00:00.000Z"}
	got, ok := review.ParseForkWaiting(review.ForkWaitingMessage(w))
	if !ok || strings.Join(got.Keys, " ") != strings.Join(w.Keys, " ") || got.LeaseUntil != w.LeaseUntil {
		t.Fatalf("read back %+v, %v; want %+v", got, ok, w)
	}
	for _, msg := range []string{"", "calls of the parent are in progress: k", "calls of the parent are in progress: k; their leases end by soon; ask"} {
		if _, ok := review.ParseForkWaiting(msg); ok {
			t.Errorf("%q read as a waiting answer", msg)
		}
	}
}

// A start request's fork members: forked_from an execution ARN other than
// the execution, rerun_reads only with it, and no end user with it.
func TestDecodeStartRequestReadsAFork(t *testing.T) {
	base := `{"action":"run.start","execution_arn":"` + forkChild + `","input_digest":"sha256:` + strings.Repeat("0", 64) + `","proof":"p"`
	for name, c := range map[string]struct{ body, err string }{
		"a fork":                  {base + `,"forked_from":"` + forkParent + `","rerun_reads":true}`, ""},
		"no fork":                 {base + `}`, ""},
		"forked_from no ARN":      {base + `,"forked_from":"run-1"}`, "not an execution ARN"},
		"forked from itself":      {base + `,"forked_from":"` + forkChild + `"}`, "the execution itself"},
		"rerun_reads without":     {base + `,"rerun_reads":true}`, "without forked_from"},
		"an end user with a fork": {base + `,"forked_from":"` + forkParent + `","end_user":"customer-1"}`, "a fork acts for its parent's end user"},
	} {
		r, err := review.DecodeStartRequest([]byte(c.body))
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, want %q", name, err, c.err)
		case c.err == "" && name == "a fork" && (r.ForkedFrom != forkParent || !r.RerunReads):
			t.Errorf("%s: decoded %+v", name, r)
		}
	}
}

func FuzzParseForkWaiting(f *testing.F) {
	f.Add(review.ForkWaitingMessage(review.ForkWaiting{Keys: []string{"a/1"}, LeaseUntil: "2026-12-03T12:00:00.000Z"}))
	f.Add("calls of the parent are in progress: ; their leases end by ")
	f.Fuzz(func(t *testing.T, msg string) {
		w, ok := review.ParseForkWaiting(msg)
		if !ok {
			return
		}
		if again, ok := review.ParseForkWaiting(review.ForkWaitingMessage(w)); !ok || again.LeaseUntil != w.LeaseUntil || len(again.Keys) != len(w.Keys) {
			t.Fatalf("%q read as %+v, which does not read back (%+v, %v)", msg, w, again, ok)
		}
	})
}

func FuzzDecodeStartRequest(f *testing.F) {
	f.Add([]byte(`{"action":"run.start","execution_arn":"` + forkChild + `","input_digest":"sha256:` + strings.Repeat("0", 64) + `","proof":"p","forked_from":"` + forkParent + `","rerun_reads":true}`))
	f.Add([]byte(`{"action":"run.start"}`))
	f.Add([]byte(`{"action":"run.start","execution_arn":"` + forkChild + `","input_digest":"sha256:` + strings.Repeat("0", 64) +
		`","proof":"p","origin":{"kind":"schedule","name":"nightly","added_by":"arn:aws:iam::123456789012:user/a","event":"2026-12-03T18:00:00Z"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := review.DecodeStartRequest(data)
		if err != nil {
			return
		}
		if r.RerunReads && r.ForkedFrom == "" || r.ForkedFrom != "" && r.EndUser != "" || r.ForkedFrom == r.ExecutionARN {
			t.Fatalf("accepted %+v", r)
		}
		if r.Origin != nil && r.Origin.Check() != nil {
			t.Fatalf("accepted origin %+v: %v", r.Origin, r.Origin.Check())
		}
	})
}
