package starter_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/functions/inbound-start/starter"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/inbound"
	"github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/tool"
)

// The tests run the handler on the real parts it talks to: the inbound
// store on dynalite (a table of each test's own) and the local Step
// Functions endpoint holding the compiled test Solution. The start lane
// is review-request's, on the other side of a Lambda invocation: here a
// recorder stands in for it (recorder below) and says what it was asked;
// lane_test.go checks the Lane, the real StartRecorder, against the STS
// stand-in and review-request's own handler.

func TestMain(m *testing.M) {
	code := m.Run()
	if sfnShared.p != nil {
		sfnShared.p.Stop()
	}
	if err := localtest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "stop the shared dynalite:", err)
	}
	os.Exit(code)
}

// sfnShared is the package's one local Step Functions endpoint.
var sfnShared struct {
	once sync.Once
	p    *local.Process
	err  error
}

const (
	stage   = "dev"
	account = "000000000000"
)

var solutions atomicCounter

type atomicCounter struct {
	mu sync.Mutex
	n  int
}

func (c *atomicCounter) next(prefix string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return fmt.Sprintf("%s-%d", prefix, c.n)
}

// recorder stands in for review-request's start lane: it records each
// start request with its session, and answers fail's error when set.
type recorder struct {
	mu       sync.Mutex
	requests []recorded
	fail     func(req review.StartRequest) error
}

type recorded struct {
	session string
	req     review.StartRequest
}

func (r *recorder) RecordStart(_ context.Context, session string, req review.StartRequest) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, recorded{session, req})
	if r.fail != nil {
		return r.fail(req)
	}
	return nil
}

func (r *recorder) all() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requests)
}

// fixture is a handler on a table of the test's own, with the test
// Solution published under a name of its own.
type fixture struct {
	h        *starter.Handler
	st       *store.Store
	sf       *sfn.Client
	rec      *recorder
	cfg      starter.FunctionConfig
	solution string
	nameKey  []byte
	now      time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	_, db, table := localtest.SharedTable(t, "inbound")
	sfnShared.once.Do(func() { sfnShared.p, sfnShared.err = local.StartSFN(context.Background(), "") })
	if sfnShared.err != nil {
		t.Fatal(sfnShared.err)
	}
	sf := sfn.New(sfn.Options{Region: local.Region, BaseEndpoint: aws.String(sfnShared.p.Endpoint()), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")})
	f := &fixture{st: store.New(db, table), sf: sf, rec: &recorder{}, solution: solutions.next("notify"),
		nameKey: starter.NameKey([]byte("an external key of 32 bytes....")), now: time.Now().UTC().Truncate(time.Second)}
	f.cfg = starter.FunctionConfig{Table: table, Stage: stage, Account: account, Region: local.Region, Partition: "aws",
		InboundRole: "arn:aws:iam::" + account + ":role/toolgate-dev-inbound-start", Retention: 90 * 24 * time.Hour}
	src, err := os.ReadFile(filepath.Join("..", "..", "..", "infra", "local", "stack", "testdata", "inbound-notify.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res := resolver.Compile("inbound-notify.yaml", []byte(strings.Replace(string(src), "solution: inbound-notify", "solution: "+f.solution, 1)), resolver.Options{})
	if res.Definition == nil {
		t.Fatalf("the test Solution does not compile: %+v", res.Diagnostics)
	}
	if _, err := sf.CreateStateMachine(t.Context(), &sfn.CreateStateMachineInput{Name: aws.String(deployment.StateMachineName(stage, f.solution)),
		RoleArn: aws.String("arn:aws:iam::" + account + ":role/r"), Definition: aws.String(string(res.Definition)), Publish: true}); err != nil {
		t.Fatal(err)
	}
	f.h = starter.New(starter.Config{Function: f.cfg, Store: f.st, SFN: sf, Starts: f.rec, NameKey: f.nameKey,
		Now: func() time.Time { return f.now }, Log: slog.New(slog.DiscardHandler)})
	return f
}

func (f *fixture) addSource(t *testing.T, name string, scheme inbound.Scheme, endUser string) store.Source {
	t.Helper()
	s := store.Source{Name: name, Scheme: string(scheme), Solution: f.solution, EndUser: endUser, AddedBy: "arn:aws:iam::" + account + ":user/ops",
		MaxBodyBytes: 64 << 10, Secrets: []store.Secret{{Sealed: unopened}}, AddedAt: f.now, UpdatedAt: f.now, Version: 1}
	if err := f.st.PutSource(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

// unopened is a source's sealed secret that nothing here opens: the
// function never reads a source's secrets (its projection leaves them out).
var unopened = vault.Sealed{Ciphertext: []byte{1}, Nonce: []byte{2}, EncryptedKey: []byte{3}, KeyID: "alias/toolgate-dev-credentials"}

// receive records an event as the receiver does (RECEIVED, then QUEUED)
// and returns its message.
func (f *fixture) receive(t *testing.T, source, id, body string) (store.EventKey, events.SQSMessage) {
	t.Helper()
	k := store.EventKey{Origin: inboundapi.OriginSource, Name: source, ID: id}
	sum := sha256.Sum256([]byte(body))
	if _, err := f.st.Receive(t.Context(), store.Event{Key: k, EventType: "invoice.paid", BodySHA256: "sha256:" + hex.EncodeToString(sum[:]),
		Body: []byte(body), ReceivedAt: f.now}, f.now.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := f.st.MarkQueued(t.Context(), k, f.now); err != nil {
		t.Fatal(err)
	}
	return k, message(inboundapi.SourceMessage(source, id))
}

var messageIDs atomicCounter

func message(m inboundapi.Message) events.SQSMessage {
	return events.SQSMessage{MessageId: messageIDs.next("m"), Body: string(m.Encode()),
		EventSourceARN: "arn:aws:sqs:" + local.Region + ":" + account + ":toolgate-dev-inbound"}
}

// handle runs one batch and returns the ids of the records it failed.
func (f *fixture) handle(t *testing.T, msgs ...events.SQSMessage) []string {
	t.Helper()
	resp, err := f.h.Handle(t.Context(), events.SQSEvent{Records: msgs})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range resp.BatchItemFailures {
		ids = append(ids, x.ItemIdentifier)
	}
	return ids
}

func (f *fixture) event(t *testing.T, k store.EventKey) store.Event {
	t.Helper()
	ev, err := f.st.Event(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// executions are the names of the test Solution's executions.
func (f *fixture) executions(t *testing.T) []string {
	t.Helper()
	out, err := f.sf.ListExecutions(t.Context(), &sfn.ListExecutionsInput{StateMachineArn: aws.String(f.cfg.StateMachineARN(f.solution))})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range out.Executions {
		names = append(names, aws.ToString(x.Name))
	}
	slices.Sort(names)
	return names
}

const recipientBody = `{"id":"evt_1","recipient":"team@example.com"}`

func TestAnEventStartsOneRunRecordedAsItsSourcesSession(t *testing.T) {
	f := newFixture(t)
	src := f.addSource(t, "billing", inbound.StandardWebhooks, "customer-7")
	k, m := f.receive(t, "billing", "msg_1", recipientBody)
	if failed := f.handle(t, m); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	name := inbound.ExecutionName(f.nameKey, inbound.PrefixInbound, "billing", "msg_1")
	arn := f.cfg.ExecutionARN(f.solution, name)
	ev := f.event(t, k)
	if ev.Status != store.StatusStarted || ev.ExecutionARN != arn || len(ev.Body) != 0 {
		t.Fatalf("event %s %q, body %d bytes; want STARTED %s without its body", ev.Status, ev.ExecutionARN, len(ev.Body), arn)
	}
	d, err := f.sf.DescribeExecution(t.Context(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"input":{"source":"billing","event_id":"msg_1","event_type":"invoice.paid","payload":` + recipientBody + `},"meta":{"end_user":"customer-7"}}`
	if got := aws.ToString(d.Input); got != want {
		t.Errorf("execution input\n got %s\nwant %s", got, want)
	}
	reqs := f.rec.all()
	if len(reqs) != 1 {
		t.Fatalf("%d start requests, want 1", len(reqs))
	}
	r := reqs[0]
	_, digest, err := tool.InputDigest([]byte(want))
	if err != nil {
		t.Fatal(err)
	}
	wantOrigin := review.StartOrigin{Kind: inboundapi.OriginSource, Name: "billing", AddedBy: src.AddedBy, Event: "msg_1", Holders: []string{src.AddedBy}}
	if r.session != inbound.SessionPrefixSource+"billing" || r.req.Action != review.StartAction || r.req.ExecutionARN != arn ||
		r.req.InputDigest != digest || r.req.EndUser != "customer-7" || r.req.Origin == nil || !reflect.DeepEqual(*r.req.Origin, wantOrigin) {
		t.Errorf("start request as %s: %+v (origin %+v)", r.session, r.req, r.req.Origin)
	}
}

func TestTheSameEventFiveTimesStartsOneRun(t *testing.T) {
	f := newFixture(t)
	f.addSource(t, "billing", inbound.Stripe, "")
	k, m := f.receive(t, "billing", "evt_1", recipientBody)
	batch := []events.SQSMessage{m}
	for range 4 {
		batch = append(batch, message(inboundapi.SourceMessage("billing", "evt_1")))
	}
	if failed := f.handle(t, batch...); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	if got := f.executions(t); len(got) != 1 {
		t.Fatalf("executions %v, want one", got)
	}
	if ev := f.event(t, k); ev.Status != store.StatusStarted {
		t.Fatalf("event %s", ev.Status)
	}
	// Delivered again later: done, nothing asked of the start lane.
	before := len(f.rec.all())
	if failed := f.handle(t, message(inboundapi.SourceMessage("billing", "evt_1"))); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	if after := len(f.rec.all()); after != before {
		t.Errorf("a duplicate of a started event asked for %d more starts", after-before)
	}
}

func TestAGitHubEventsRunIsNamedAfterItsBody(t *testing.T) {
	f := newFixture(t)
	f.addSource(t, "repo", inbound.GitHub, "")
	k, m := f.receive(t, "repo", "72d3162e-cc78-11e3-81ab-4c9367dc0958", recipientBody)
	if failed := f.handle(t, m); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	sum := sha256.Sum256([]byte(recipientBody))
	name := inbound.ExecutionName(f.nameKey, inbound.PrefixInbound, "repo", "sha256:"+hex.EncodeToString(sum[:]))
	if ev := f.event(t, k); ev.ExecutionARN != f.cfg.ExecutionARN(f.solution, name) {
		t.Fatalf("execution %s, want the name %s", ev.ExecutionARN, name)
	}
	// The same body under another delivery id names the same run.
	k2, m2 := f.receive(t, "repo", "0b7c4a4e-1c5f-4b8e-9d3c-1f2e3d4c5b6a", recipientBody)
	if failed := f.handle(t, m2); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	if ev := f.event(t, k2); ev.Status != store.StatusStarted || !strings.HasSuffix(ev.ExecutionARN, ":"+name) {
		t.Fatalf("replayed body: %s %s", ev.Status, ev.ExecutionARN)
	}
	if got := f.executions(t); len(got) != 1 {
		t.Fatalf("executions %v, want one", got)
	}
}

func TestAnInputTheSchemaRefusesIsFailedWithoutItsValues(t *testing.T) {
	f := newFixture(t)
	f.addSource(t, "billing", inbound.StandardWebhooks, "")
	k, m := f.receive(t, "billing", "msg_bad", `{"id":"evt","recipient":12345678,"note":"do-not-record-7c1e"}`)
	if failed := f.handle(t, m); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	ev := f.event(t, k)
	problems := strings.Join(ev.Problems, "\n")
	if ev.Status != store.StatusFailed || len(ev.Body) != 0 || !strings.Contains(problems, "/payload/recipient") {
		t.Fatalf("event %s, body %d bytes, problems %q", ev.Status, len(ev.Body), problems)
	}
	if strings.Contains(problems, "12345678") || strings.Contains(problems, "do-not-record") {
		t.Errorf("problems quote the body: %q", problems)
	}
	if len(f.rec.all()) != 0 || len(f.executions(t)) != 0 {
		t.Errorf("a refused input was recorded or started")
	}
}

func TestARemovedSourceOrUnpublishedSolutionFailsTheEvent(t *testing.T) {
	f := newFixture(t)
	f.addSource(t, "gone", inbound.StandardWebhooks, "")
	k, m := f.receive(t, "gone", "msg_1", recipientBody)
	if err := f.st.DeleteSource(t.Context(), "gone"); err != nil {
		t.Fatal(err)
	}
	s := store.Source{Name: "unpublished", Scheme: string(inbound.StandardWebhooks), Solution: "never-published", AddedBy: "arn:aws:iam::" + account + ":user/ops",
		MaxBodyBytes: 1024, Secrets: []store.Secret{{Sealed: unopened}}, AddedAt: f.now, UpdatedAt: f.now, Version: 1}
	if err := f.st.PutSource(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	k2, m2 := f.receive(t, "unpublished", "msg_1", recipientBody)
	if failed := f.handle(t, m, m2); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	for _, c := range []struct {
		k    store.EventKey
		want string
	}{{k, "was removed"}, {k2, "is not published"}} {
		if ev := f.event(t, c.k); ev.Status != store.StatusFailed || !strings.Contains(strings.Join(ev.Problems, " "), c.want) {
			t.Errorf("%s: %s %v, want FAILED saying %q", c.k.Name, ev.Status, ev.Problems, c.want)
		}
	}
}

func TestATransientFailureFailsItsRecordOnlyAndTheRetryStarts(t *testing.T) {
	f := newFixture(t)
	f.addSource(t, "flaky", inbound.StandardWebhooks, "")
	f.addSource(t, "steady", inbound.StandardWebhooks, "")
	kFlaky, mFlaky := f.receive(t, "flaky", "msg_1", recipientBody)
	kSteady, mSteady := f.receive(t, "steady", "msg_1", recipientBody)
	f.rec.fail = func(req review.StartRequest) error {
		if req.Origin.Name == "flaky" {
			return errors.New("review-request's start alias: REVIEW_UNAVAILABLE")
		}
		return nil
	}
	if failed := f.handle(t, mFlaky, mSteady); !slices.Equal(failed, []string{mFlaky.MessageId}) {
		t.Fatalf("failed records %v, want only %s", failed, mFlaky.MessageId)
	}
	if ev := f.event(t, kFlaky); ev.Status != store.StatusQueued || len(ev.Body) == 0 {
		t.Fatalf("the failed event is %s with %d body bytes, want QUEUED with its body", ev.Status, len(ev.Body))
	}
	if ev := f.event(t, kSteady); ev.Status != store.StatusStarted {
		t.Fatalf("the other event is %s", ev.Status)
	}
	f.rec.fail = nil
	if failed := f.handle(t, mFlaky); len(failed) != 0 {
		t.Fatalf("the retry failed: %v", failed)
	}
	if ev := f.event(t, kFlaky); ev.Status != store.StatusStarted {
		t.Fatalf("after the retry the event is %s", ev.Status)
	}
}

func TestAStartRecordedForAnotherInputStartsOnlyWhenTheRunExists(t *testing.T) {
	f := newFixture(t)
	f.addSource(t, "billing", inbound.StandardWebhooks, "")
	k, m := f.receive(t, "billing", "msg_1", recipientBody)
	f.rec.fail = func(review.StartRequest) error {
		return fmt.Errorf("%w: REVIEW_FORBIDDEN [start-recorded]", starter.ErrStartRecorded)
	}
	if failed := f.handle(t, m); len(failed) != 1 {
		t.Fatalf("failed records %v, want the message retried: no execution of the name exists", failed)
	}
	if got := f.executions(t); len(got) != 0 {
		t.Fatalf("executions %v", got)
	}
	// Someone started the run of that name after all: the event is done.
	name := inbound.ExecutionName(f.nameKey, inbound.PrefixInbound, "billing", "msg_1")
	if _, err := f.sf.StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: aws.String(f.cfg.StateMachineARN(f.solution)),
		Name: aws.String(name), Input: aws.String(`{"input":{},"meta":{}}`)}); err != nil {
		t.Fatal(err)
	}
	if failed := f.handle(t, m); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	if ev := f.event(t, k); ev.Status != store.StatusStarted || !strings.HasSuffix(ev.ExecutionARN, ":"+name) {
		t.Fatalf("event %s %s", ev.Status, ev.ExecutionARN)
	}
}

func TestAnUndecodableMessageIsDroppedNotRetried(t *testing.T) {
	f := newFixture(t)
	for _, body := range []string{`{}`, `not json`, `{"source":"billing","event_id":"e","schedule":"nightly"}`, `{"source":"Billing","event_id":"e"}`} {
		if failed := f.handle(t, events.SQSMessage{MessageId: "m", Body: body}); len(failed) != 0 {
			t.Errorf("%s: failed %v, want dropped", body, failed)
		}
	}
	// A message whose event item is gone (past its retention) too.
	if failed := f.handle(t, message(inboundapi.SourceMessage("billing", "never-received"))); len(failed) != 0 {
		t.Errorf("failed %v, want dropped", failed)
	}
}

func TestAFiringStartsOneRunAndARedeliveryNone(t *testing.T) {
	f := newFixture(t)
	sch := store.Schedule{Name: "nightly", Solution: f.solution, Expression: "rate(1 day)", Input: json.RawMessage(`{"payload":{"recipient":"ops@example.com"}}`),
		AddedBy: "arn:aws:iam::" + account + ":user/ops", State: inboundapi.StateEnabled, AddedAt: time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC),
		UpdatedAt: f.now, Version: 1}
	if err := f.st.PutSchedule(t.Context(), sch); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	if failed := f.handle(t, message(inboundapi.FiringMessage("nightly", at))); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	name := inbound.ExecutionName(f.nameKey, inbound.PrefixSchedule, "nightly", "2026-12-03T18:00:00Z")
	k := store.EventKey{Origin: inboundapi.OriginSchedule, Name: "nightly", ID: "2026-12-03T18:00:00Z"}
	if ev := f.event(t, k); ev.Status != store.StatusStarted || !strings.HasSuffix(ev.ExecutionARN, ":"+name) {
		t.Fatalf("firing %s %s, want STARTED %s", ev.Status, ev.ExecutionARN, name)
	}
	reqs := f.rec.all()
	if len(reqs) != 1 || reqs[0].session != inbound.SessionPrefixSchedule+"nightly" ||
		!reflect.DeepEqual(*reqs[0].req.Origin, review.StartOrigin{Kind: inboundapi.OriginSchedule, Name: "nightly", AddedBy: sch.AddedBy, Event: "2026-12-03T18:00:00Z", Holders: []string{sch.AddedBy}}) {
		t.Fatalf("start requests %+v", reqs)
	}
	d, err := f.sf.DescribeExecution(t.Context(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(f.cfg.ExecutionARN(f.solution, name))})
	if err != nil || aws.ToString(d.Input) != `{"input":{"payload":{"recipient":"ops@example.com"}},"meta":{}}` {
		t.Fatalf("execution input %s (%v)", aws.ToString(d.Input), err)
	}
	// EventBridge Scheduler delivers at least once: again, nothing.
	if failed := f.handle(t, message(inboundapi.FiringMessage("nightly", at))); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	if len(f.rec.all()) != 1 || len(f.executions(t)) != 1 {
		t.Fatalf("a redelivered firing started again: %d requests, executions %v", len(f.rec.all()), f.executions(t))
	}
	// Paused: the next firing is FAILED, not run.
	if err := f.st.SetScheduleState(t.Context(), "nightly", inboundapi.StatePaused, 1, f.now); err != nil {
		t.Fatal(err)
	}
	next := at.Add(24 * time.Hour)
	if failed := f.handle(t, message(inboundapi.FiringMessage("nightly", next))); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	k2 := store.EventKey{Origin: inboundapi.OriginSchedule, Name: "nightly", ID: next.Format(time.RFC3339)}
	if ev := f.event(t, k2); ev.Status != store.StatusFailed || !strings.Contains(strings.Join(ev.Problems, " "), "PAUSED") {
		t.Fatalf("firing of a paused schedule: %s %v", ev.Status, ev.Problems)
	}
	// Removed: dropped, nothing recorded.
	if err := f.st.DeleteSchedule(t.Context(), "nightly"); err != nil {
		t.Fatal(err)
	}
	later := next.Add(24 * time.Hour)
	if failed := f.handle(t, message(inboundapi.FiringMessage("nightly", later))); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	if _, err := f.st.Event(t.Context(), store.EventKey{Origin: inboundapi.OriginSchedule, Name: "nightly", ID: later.Format(time.RFC3339)}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a firing of a removed schedule was recorded: %v", err)
	}
}

func TestTheConfigurationIsCheckedAtColdStart(t *testing.T) {
	base := map[string]string{inboundapi.EnvTable: "t", inboundapi.EnvStage: "dev", inboundapi.EnvAccount: account, "AWS_REGION": "eu-west-1",
		inboundapi.EnvRole: "arn:aws:iam::" + account + ":role/toolgate-dev-inbound-start", inboundapi.EnvRunStartFunction: "arn:aws:lambda:eu-west-1:" + account + ":function:toolgate-dev-review-request:start",
		inboundapi.EnvExternalKeyParam: "/toolgate/dev/secret/external-key"}
	env := func(over map[string]string) func(string) string {
		return func(k string) string {
			if v, ok := over[k]; ok {
				return v
			}
			return base[k]
		}
	}
	c, err := starter.FunctionConfigFromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.StateMachineARN("notify") != "arn:aws:states:eu-west-1:"+account+":stateMachine:toolgate-dev_notify" || c.STSEndpoint != "https://sts.eu-west-1.amazonaws.com" ||
		c.Retention != 90*24*time.Hour {
		t.Errorf("config %+v", c)
	}
	for _, bad := range []struct {
		name, value, says string
	}{
		{inboundapi.EnvTable, "", inboundapi.EnvTable},
		{inboundapi.EnvRole, "arn:aws:iam::" + account + ":user/x", inboundapi.EnvRole},
		{inboundapi.EnvRole, "arn:aws:iam::111111111111:role/x", "names account"},
		{inboundapi.EnvStage, "Dev", inboundapi.EnvStage},
		{inboundapi.EnvAccount, "12", inboundapi.EnvAccount},
		{inboundapi.EnvRunStartFunction, "http://example.com", inboundapi.EnvRunStartFunction},
		{inboundapi.EnvRetentionDays, "2", inboundapi.EnvRetentionDays},
		{inboundapi.EnvRetentionDays, "401", inboundapi.EnvRetentionDays},
	} {
		if _, err := starter.FunctionConfigFromEnv(env(map[string]string{bad.name: bad.value})); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("%s=%q: %v, want an error naming %q", bad.name, bad.value, err, bad.says)
		}
	}
	if c, err := starter.FunctionConfigFromEnv(env(map[string]string{inboundapi.EnvRetentionDays: "3"})); err != nil || c.Retention != 3*24*time.Hour {
		t.Errorf("3 days: %v %v", c.Retention, err)
	}
}

func TestAnEventOfARemovedSourceStartsNoRunOfTheSourceReAddedUnderItsName(t *testing.T) {
	f := newFixture(t)
	f.addSource(t, "billing", inbound.StandardWebhooks, "")
	k, m := f.receive(t, "billing", "msg_1", recipientBody)
	// The event waits (in the dead-letter queue, say) while an operator
	// removes the source and adds another of the same name: the event was
	// signed for the first source, and starts nothing of the second.
	if err := f.st.DeleteSource(t.Context(), "billing"); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(time.Hour)
	f.addSource(t, "billing", inbound.StandardWebhooks, "customer-9")
	if failed := f.handle(t, m); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	if ev := f.event(t, k); ev.Status != store.StatusFailed || !strings.Contains(strings.Join(ev.Problems, " "), "before the source billing was added") {
		t.Errorf("event %s %v, want FAILED saying it was received before the source was added", ev.Status, ev.Problems)
	}
	if n := len(f.rec.all()); n != 0 {
		t.Errorf("%d start requests, want none", n)
	}
	if names := f.executions(t); len(names) != 0 {
		t.Errorf("executions %v, want none", names)
	}
	// An event the re-added source received is its own.
	k2, m2 := f.receive(t, "billing", "msg_2", recipientBody)
	if failed := f.handle(t, m2); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	if ev := f.event(t, k2); ev.Status != store.StatusStarted {
		t.Errorf("the re-added source's event %s %v, want STARTED", ev.Status, ev.Problems)
	}
}

func TestAFiringOfARemovedScheduleStartsNoRunOfTheScheduleReAddedUnderItsName(t *testing.T) {
	f := newFixture(t)
	at := f.now.Add(-time.Hour)
	// nightly was removed after its firing at `at` went to the dead-letter
	// queue, and another nightly added now, of its own input: the redriven
	// firing starts nothing of it.
	sch := store.Schedule{Name: "nightly", Solution: f.solution, Expression: "rate(1 day)", Input: json.RawMessage(`{"payload":{"recipient":"ops@example.com"}}`),
		AddedBy: "arn:aws:iam::" + account + ":user/ops", State: inboundapi.StateEnabled, AddedAt: f.now, UpdatedAt: f.now, Version: 1}
	if err := f.st.PutSchedule(t.Context(), sch); err != nil {
		t.Fatal(err)
	}
	if failed := f.handle(t, message(inboundapi.FiringMessage("nightly", at))); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	k := store.EventKey{Origin: inboundapi.OriginSchedule, Name: "nightly", ID: at.Format(time.RFC3339)}
	if ev := f.event(t, k); ev.Status != store.StatusFailed || !strings.Contains(strings.Join(ev.Problems, " "), "before the schedule nightly was added") {
		t.Errorf("firing %s %v, want FAILED saying it was scheduled before the schedule was added", ev.Status, ev.Problems)
	}
	if n, names := len(f.rec.all()), f.executions(t); n != 0 || len(names) != 0 {
		t.Errorf("%d start requests, executions %v; want none", n, names)
	}
	// A firing scheduled in the minute of its adding (EventBridge
	// Scheduler's scheduled time of a rate schedule's first firing) is its own.
	if failed := f.handle(t, message(inboundapi.FiringMessage("nightly", f.now.Add(-30*time.Second)))); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	if n := len(f.rec.all()); n != 1 {
		t.Errorf("%d start requests for a firing of the schedule's first minute, want 1", n)
	}
}
