package request_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolgate/toolgate/functions/review-request/request"
	"github.com/toolgate/toolgate/infra/local/localtest"
	localsqs "github.com/toolgate/toolgate/infra/local/sqs"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/stepfunctions"
	"github.com/toolgate/toolgate/shared/solutioncomment"
	"github.com/toolgate/toolgate/shared/webhook"
	"github.com/toolgate/toolgate/shared/webhook/store"
)

// A review of a run of one of the stage's Solutions records its
// review.requested event once, with the Solution, the version the
// execution runs (its definition's Comment), the run, step, tool, expiry
// and the commands that
// decide it, and never the call's input; found again (a retried Task),
// it records nothing more. A direct-lane review records none. On dynalite
// and the local Step Functions endpoint; the events queue is not named,
// so the event is left to the relay (docs/webhooks.md).
func TestAReviewRecordsItsReviewRequestedEventOnce(t *testing.T) {
	e := startChildEnv(t)
	_, db, table := localtest.SharedTable(t, "webhooks")
	events := store.New(db, table, nil)
	h := request.NewHandler(request.Config{Lane: lane.SFN, Stage: "dev", Callers: caller.Config{Account: "000000000000"}},
		request.Deps{Store: e.store, Executions: stepfunctions.Executions{Client: e.client}, Webhooks: &store.Emitter{Store: events}})
	_, version := e.publish(t, "toolgate-dev_refunds", solutionDefinition("refunds", 1, 30))
	started, err := e.client.StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: aws.String(version), Name: aws.String("run-7"), Input: aws.String(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	const canary = "canary-input-5e1f"
	r := &review.Review{ID: "rev-1", RunID: aws.ToString(started.ExecutionArn), Step: "refund", Tool: "send-email", Input: json.RawMessage(`{"to":"` + canary + `"}`),
		ExpiresAt: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)}
	for range 2 {
		if err := h.EmitRequested(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	ev, ok, err := events.Event(t.Context(), webhook.EventID(webhook.ReviewRequested, r.ID))
	if err != nil || !ok {
		t.Fatalf("no review.requested event recorded: %v", err)
	}
	var got webhook.ReviewRequestedData
	if err := json.Unmarshal(ev.Data, &got); err != nil {
		t.Fatal(err)
	}
	want := webhook.ReviewRequestedData{ReviewID: "rev-1", Solution: "refunds", Version: 1, Run: "run-7", Step: "refund", Tool: "send-email",
		ExpiresAt: "2026-12-03T00:00:00.000Z", DecideCommand: "toolgate review approve rev-1 | toolgate review reject rev-1 --reason TEXT"}
	if got != want || ev.Solution != "refunds" || ev.Type != webhook.ReviewRequested {
		t.Fatalf("event %+v %+v, want %+v", ev, got, want)
	}
	if strings.Contains(string(ev.Data), canary) {
		t.Fatal("the event holds the call's input")
	}
	unsent, err := events.Unsent(t.Context(), time.Now().Add(time.Minute), 10)
	if err != nil || len(unsent) != 1 || unsent[0] != ev.ID {
		t.Fatalf("unsent %v (%v), want the one event, left to the relay", unsent, err)
	}
	direct := &review.Review{ID: "rev-2", RunID: "direct/arn:aws:iam::000000000000:user/x/1", Step: "s", Tool: "send-email", ExpiresAt: r.ExpiresAt}
	if err := h.EmitRequested(t.Context(), direct); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := events.Event(t.Context(), webhook.EventID(webhook.ReviewRequested, direct.ID)); ok {
		t.Fatal("a direct-lane review recorded an event")
	}
}

// A run started on the state machine (as toolgate run starts it) runs
// the revision that was latest when it started. When the Solution is
// published again while the run waits (a new version, and the published
// record naming it), the run's review.requested names the version the
// run executes, 1, read from its own definition; a run started after the
// republish names 2. The version is the Solution's own (its definition's
// Comment), not Step Functions' number of the state machine version. On
// dynalite and the local Step Functions endpoint.
func TestAReviewOfARunStartedBeforeARepublishNamesTheVersionItRuns(t *testing.T) {
	e := startChildEnv(t)
	_, db, table := localtest.SharedTable(t, "webhooks-republished")
	events := store.New(db, table, nil)
	published := ledger.New(db, table)
	h := request.NewHandler(request.Config{Lane: lane.SFN, Stage: "dev", Callers: caller.Config{Account: "000000000000"}},
		request.Deps{Store: e.store, Ledger: published, Executions: stepfunctions.Executions{Client: e.client}, Webhooks: &store.Emitter{Store: events}})
	machine, v1 := e.publish(t, "toolgate-dev_rebates", solutionDefinition("rebates", 1, 30))
	before, err := e.client.StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: aws.String(machine), Name: aws.String("run-9"), Input: aws.String(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	// Published again as the Solution's version 2 (the publish function's
	// UpdateStateMachine with publish, then its published record).
	updated, err := e.client.UpdateStateMachine(t.Context(), &sfn.UpdateStateMachineInput{StateMachineArn: aws.String(machine), Publish: true,
		Definition: aws.String(solutionDefinition("rebates", 2, 60))})
	if err != nil {
		t.Fatal(err)
	}
	v2 := aws.ToString(updated.StateMachineVersionArn)
	if v2 == "" || v2 == v1 {
		t.Fatalf("the second publish made version %q (first %q)", v2, v1)
	}
	if err := published.RecordPublished(t.Context(), ledger.Published{Solution: "rebates", VersionARN: v2, Version: 2, ToolsetID: testSolutionToolset, OutputBoundBytes: 1 << 10, InputLimitBytes: 1 << 10}); err != nil {
		t.Fatal(err)
	}
	after, err := e.client.StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: aws.String(machine), Name: aws.String("run-10"), Input: aws.String(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, review, run string
		version           int
	}{
		{"started before the republish", "rev-before", aws.ToString(before.ExecutionArn), 1},
		{"started after it", "rev-after", aws.ToString(after.ExecutionArn), 2},
	} {
		r := &review.Review{ID: c.review, RunID: c.run, Step: "pay", Tool: "send-email", ExpiresAt: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)}
		if err := h.EmitRequested(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		ev, ok, err := events.Event(t.Context(), webhook.EventID(webhook.ReviewRequested, r.ID))
		if err != nil || !ok {
			t.Fatalf("%s: no review.requested event recorded: %v", c.name, err)
		}
		var got webhook.ReviewRequestedData
		if err := json.Unmarshal(ev.Data, &got); err != nil || got.Version != c.version || got.Solution != "rebates" || got.Run != r.RunID[strings.LastIndex(r.RunID, ":")+1:] {
			t.Errorf("%s: event %s (%v); want version %d of rebates, the version the run executes", c.name, ev.Data, err, c.version)
		}
	}
}

// A run whose definition's Comment names no Solution version of its own
// (a state machine not written by the publish function, or one whose
// Comment names another Solution than the state machine's name) records
// no review.requested event, and the review goes on.
func TestAReviewOfARunOfNoPublishedVersionRecordsNoEvent(t *testing.T) {
	e := startChildEnv(t)
	_, db, table := localtest.SharedTable(t, "webhooks-unpublished")
	events := store.New(db, table, nil)
	h := request.NewHandler(request.Config{Lane: lane.SFN, Stage: "dev", Callers: caller.Config{Account: "000000000000"}},
		request.Deps{Store: e.store, Executions: stepfunctions.Executions{Client: e.client}, Webhooks: &store.Emitter{Store: events}})
	for i, c := range []struct{ name, machine, definition string }{
		{"no Comment", "toolgate-dev_payouts", `{"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 30, "End": true}}}`},
		{"another Solution's Comment", "toolgate-dev_bonuses", solutionDefinition("payouts", 1, 30)},
	} {
		machine, _ := e.publish(t, c.machine, c.definition)
		started, err := e.client.StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: aws.String(machine), Name: aws.String("run-8"), Input: aws.String(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		r := &review.Review{ID: fmt.Sprintf("rev-none-%d", i), RunID: aws.ToString(started.ExecutionArn), Step: "pay", Tool: "send-email", ExpiresAt: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)}
		if err := h.EmitRequested(t.Context(), r); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if _, ok, _ := events.Event(t.Context(), webhook.EventID(webhook.ReviewRequested, r.ID)); ok {
			t.Errorf("%s: a review of a run of no published version recorded an event", c.name)
		}
	}
}

// testSolutionToolset is the toolset id the tests' definitions name.
const testSolutionToolset = "ts_0123456789abcdef0123456789abcdef"

// solutionDefinition is a definition of version of Solution name as the
// publish function writes it (its top-level Comment,
// shared/solutioncomment), whose one state waits seconds.
func solutionDefinition(name string, version, seconds int) string {
	return fmt.Sprintf(`{"Comment": %q, "StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": %d, "End": true}}}`,
		solutioncomment.Format(name, version, testSolutionToolset), seconds)
}

// BenchmarkReviewRequestedEvent measures what review.requested adds to
// the review Task, as deployed, for a run started on the state machine as
// toolgate run starts it: its requests (one
// DescribeStateMachineForExecution, whose answer carries a definition the
// size of the largest example Solution's, about 18 KiB; one conditional
// PutItem of the event, one SendMessage to the events queue, one
// UpdateItem marking it sent: four, counted on the clients) and their
// wall time, beside the
// review item's own conditional PutItem (dynamo.Store.Create), the
// Task's one request before webhooks, measured in the same iterations on
// the same dynalite, local Step Functions endpoint and SQS stand-in. It
// prints both figures and their ratio (x-review-put). Each iteration is a
// new review.
func BenchmarkReviewRequestedEvent(b *testing.B) {
	e := startChildEnv(b)
	_, db, table := localtest.SharedTable(b, "webhooks")
	q := localsqs.StartForTest(b)
	events, err := q.CreateQueue(b.Context(), "bench-webhook-events", localsqs.QueueOptions{VisibilityTimeout: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	// The event's requests are counted on clients of their own; the
	// review item's put goes through e.store's.
	var calls localtest.Calls
	countedDB := dynamodb.New(db.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, calls.Option()) })
	// The Step Functions client makes up to three attempts, as the SDK's
	// standard retryer does when deployed, not one as e.client does, but
	// without its backoff: against the local endpoint, the SDK now and
	// then fails to read an answer this large (a closed connection, the
	// same for DescribeStateMachine), and a backoff of up to a second
	// would be most of what is measured. The counter counts operations,
	// not attempts.
	countedSFN := sfn.New(e.client.Options(), func(o *sfn.Options) {
		o.APIOptions, o.RetryMaxAttempts = append(o.APIOptions, calls.Option()), 3
		o.Retryer = retry.NewStandard(func(r *retry.StandardOptions) {
			r.MaxAttempts = 3
			r.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		})
	})
	countedSQS := q.Client(func(o *awssqs.Options) { o.APIOptions = append(o.APIOptions, calls.Option()) })
	h := request.NewHandler(request.Config{Lane: lane.SFN, Stage: "dev", Callers: caller.Config{Account: "000000000000"}},
		request.Deps{Store: e.store, Executions: stepfunctions.Executions{Client: countedSFN},
			Webhooks: &store.Emitter{Store: store.New(countedDB, table, nil), Queue: countedSQS, QueueURL: events.URL}})
	// The Comment first, as the publish function's definitions have it,
	// then states of about 18 KiB.
	def := fmt.Sprintf(`{"Comment": %q, "StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 600, "Next": "Pad"}, "Pad": {"Type": "Pass", "Result": %q, "End": true}}}`,
		solutioncomment.Format("bench", 1, testSolutionToolset), strings.Repeat("x", 18<<10))
	machine, _ := e.publish(b, "toolgate-dev_bench", def)
	started, err := e.client.StartExecution(b.Context(), &sfn.StartExecutionInput{StateMachineArn: aws.String(machine), Name: aws.String("run-b"), Input: aws.String(`{}`)})
	if err != nil {
		b.Fatal(err)
	}
	run := aws.ToString(started.ExecutionArn)
	newReview := func(i int) *review.Review {
		return &review.Review{ID: fmt.Sprintf("rev-b-%d", i), RunID: run, Step: "s", Tool: "send-email", ToolsetID: "ts_x",
			Input: json.RawMessage(`{}`), InputDigest: "sha256:00", TaskToken: fmt.Sprintf("tok-b-%d", i), TimeoutSeconds: 3600, Requester: "arn:aws:iam::000000000000:user/a"}
	}
	var put, emit time.Duration
	before := calls.Total()
	for i := 0; b.Loop(); i++ {
		r := newReview(i)
		t0 := time.Now()
		if _, _, err := e.store.Create(b.Context(), r); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := h.EmitRequested(b.Context(), r); err != nil {
			b.Fatal(err)
		}
		put, emit = put+t1.Sub(t0), emit+time.Since(t1)
	}
	b.ReportMetric(float64(put.Microseconds())/float64(b.N), "review-put-µs/op")
	b.ReportMetric(float64(emit.Microseconds())/float64(b.N), "event-µs/op")
	b.ReportMetric(float64(emit)/float64(put), "x-review-put")
	b.ReportMetric(float64(calls.Total()-before)/float64(b.N), "added-requests/op")
}
