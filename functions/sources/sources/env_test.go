package sources

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	schedtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/toolgate/toolgate/infra/local"
	localkms "github.com/toolgate/toolgate/infra/local/kms"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/ledger"
)

// The package's tests share one dynalite, each on a table of its own.
func TestMain(m *testing.M) { os.Exit(localtest.RunShared(m)) }

// Local users of the tests: the inbound operator, and one who is not.
const (
	operator = "ops"
	stranger = "mallory"
)

// Published Solutions of the tests, and the input limit of the first.
const (
	solution      = "refunds"
	inputLimit    = 1024
	schedulerRole = "arn:aws:iam::000000000000:role/toolgate-test-scheduler"
	queueARN      = "arn:aws:sqs:eu-west-1:000000000000:toolgate-test-inbound"
	dlqARN        = "arn:aws:sqs:eu-west-1:000000000000:toolgate-test-inbound-dlq"
)

// clock is an injected clock tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is the sources function's handler in process, as functions/sources
// wires it: the ledger table on dynalite, secrets sealed by local-kms,
// caller proofs verified by the real verifier against the STS stand-in
// (signed with local keys, arn:aws:iam::000000000000:user/NAME), and,
// when asked, EventBridge Scheduler as fakeScheduler.
type env struct {
	svc     *Service
	h       *Handler
	db      *dynamodb.Client
	table   string
	st      *store.Store
	kms     *localkms.Server
	callers *localtest.Callers
	sched   *fakeScheduler // nil: no EventBridge Scheduler (the local stack)
	clock   *clock
	logs    *bytes.Buffer
}

func newEnv(t *testing.T, withScheduler bool) *env {
	t.Helper()
	_, db, name := localtest.SharedTable(t, "sources")
	e := &env{db: db, table: name, st: store.New(db, name), kms: localkms.StartForTest(t, "test"), callers: localtest.StartCallers(t),
		clock: &clock{t: time.Now().UTC().Truncate(time.Second)}, logs: &bytes.Buffer{}}
	v, err := caller.NewVerifier(caller.Config{Endpoint: e.callers.STS.Endpoint(), AllowHTTP: true, Account: local.LocalAccountID}, ledger.ProofTable{DB: db, Table: name})
	if err != nil {
		t.Fatal(err)
	}
	led := ledger.New(db, name)
	for _, sol := range []string{solution, "digest"} {
		if err := led.RecordPublished(t.Context(), ledger.Published{Solution: sol, VersionARN: "arn:aws:states:eu-west-1:000000000000:stateMachine:toolgate-test_" + sol + ":1",
			Version: 1, OutputBoundBytes: 4096, InputLimitBytes: inputLimit, Publisher: local.LocalPrincipal(operator)}); err != nil {
			t.Fatal(err)
		}
	}
	k := e.kms.Client()
	e.svc = &Service{Callers: v, Operators: []string{local.LocalPrincipal(operator)}, Store: e.st,
		Seal: func(ctx context.Context, source string, secret []byte) (vault.Sealed, error) {
			return store.SealSecret(ctx, k, e.kms.Alias, source, secret)
		},
		Published: led.PublishedSolution, Now: e.clock.Now, Log: slog.New(slog.NewJSONHandler(&syncWriter{w: e.logs}, nil))}
	if withScheduler {
		e.sched = newFakeScheduler()
		e.svc.Scheduler = &Scheduler{API: e.sched, Group: "toolgate-test", QueueARN: queueARN, RoleARN: schedulerRole, DLQARN: dlqARN}
	}
	e.h = NewHandler(e.svc)
	return e
}

// syncWriter serialises the logger's writes.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// proof signs a proof for b as local user name.
func (e *env) proof(t *testing.T, name string, b caller.Binding) string {
	t.Helper()
	return e.callers.Proof(t, name, b)
}

// direct invokes the handler as a direct invocation and returns its
// answer, or its error code (the Lambda errorType) and message.
func (e *env) direct(t *testing.T, req inboundapi.DirectRequest) (json.RawMessage, string, string) {
	t.Helper()
	payload, _ := json.Marshal(req)
	out, err := e.h.Handle(t.Context(), payload)
	var ie messages.InvokeResponse_Error
	if errors.As(err, &ie) {
		var eb inboundapi.ErrorBody
		if err := json.Unmarshal([]byte(ie.Message), &eb); err != nil || eb.Error.Code != ie.Type {
			t.Fatalf("error body %q: %v", ie.Message, err)
		}
		return nil, ie.Type, eb.Error.Message
	}
	if err != nil {
		t.Fatal(err)
	}
	return out, "", ""
}

// addSource adds r as user who, directly, and decodes the answer.
func (e *env) addSource(t *testing.T, who string, r inboundapi.AddSourceRequest) (inboundapi.AddSourceResult, string, string) {
	t.Helper()
	out, code, msg := e.direct(t, inboundapi.DirectRequest{Action: inboundapi.ActionAddSource, AddSource: &r, Proof: e.proof(t, who, inboundapi.AddSourceBinding(r))})
	var res inboundapi.AddSourceResult
	if code == "" {
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
	}
	return res, code, msg
}

// items is every item of the table, as its raw JSON (what an insider
// with read access sees).
func (e *env) items(t *testing.T) string {
	t.Helper()
	out, err := e.db.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(e.table)})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out.Items)
	return string(b)
}

// count is how many items of the table hold want.
func (e *env) count(t *testing.T, want string) int {
	t.Helper()
	out, err := e.db.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(e.table)})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, it := range out.Items {
		if b, _ := json.Marshal(it); strings.Contains(string(b), want) {
			n++
		}
	}
	return n
}

// fakeScheduler stands in for EventBridge Scheduler: a fake, since no
// local stand-in of its API exists. It keeps schedules by group and name,
// and refuses what the real one refuses (EventBridge Scheduler API
// Reference, CreateSchedule and UpdateSchedule): a name or group outside
// 1 to 64 of [0-9a-zA-Z-_.], no expression, no flexible time window or a
// maximum window with OFF, a state other than ENABLED or DISABLED, a
// target without an ARN, without a role ARN of an IAM role, or with an
// input that is not 1 to 8192 characters, a retry policy outside 0 to 185
// attempts or 60 to 86400 seconds, a dead-letter ARN that is not an ARN
// (ValidationException); creating a name that exists (ConflictException);
// updating or deleting one that does not (ResourceNotFoundException).
// fail, when set, fails every call with it.
type fakeScheduler struct {
	mu        sync.Mutex
	schedules map[string]scheduler.CreateScheduleInput // group/name
	calls     []string
	fail      error
}

func newFakeScheduler() *fakeScheduler {
	return &fakeScheduler{schedules: map[string]scheduler.CreateScheduleInput{}}
}

var (
	schedulerName = regexp.MustCompile(`^[0-9a-zA-Z._-]{1,64}$`)
	iamRole       = regexp.MustCompile(`^arn:aws(-[a-z]+)?:iam::\d{12}:role/[\w+=,.@/-]+$`)
	anyARN        = regexp.MustCompile(`^arn:aws(-[a-z]+)?:[a-z0-9-]+:[a-z0-9-]*:\d{12}:.+$`)
)

func invalidInput(msg string) error { return &schedtypes.ValidationException{Message: aws.String(msg)} }

// check refuses what CreateSchedule and UpdateSchedule refuse.
func (f *fakeScheduler) check(name, group, expr *string, w *schedtypes.FlexibleTimeWindow, state schedtypes.ScheduleState, tg *schedtypes.Target) error {
	switch {
	case name == nil || !schedulerName.MatchString(*name):
		return invalidInput("name")
	case group == nil || !schedulerName.MatchString(*group):
		return invalidInput("group")
	case expr == nil || *expr == "":
		return invalidInput("schedule expression")
	case w == nil || (w.Mode != schedtypes.FlexibleTimeWindowModeOff && w.Mode != schedtypes.FlexibleTimeWindowModeFlexible):
		return invalidInput("flexible time window")
	case w.Mode == schedtypes.FlexibleTimeWindowModeOff && w.MaximumWindowInMinutes != nil:
		return invalidInput("a maximum window with mode OFF")
	case state != "" && state != schedtypes.ScheduleStateEnabled && state != schedtypes.ScheduleStateDisabled:
		return invalidInput("state")
	case tg == nil || tg.Arn == nil || !anyARN.MatchString(*tg.Arn):
		return invalidInput("target arn")
	case tg.RoleArn == nil || !iamRole.MatchString(*tg.RoleArn):
		return invalidInput("target role arn")
	case tg.Input != nil && (len(*tg.Input) < 1 || len(*tg.Input) > 8192):
		return invalidInput("target input")
	}
	if p := tg.RetryPolicy; p != nil {
		if a := p.MaximumRetryAttempts; a != nil && (*a < 0 || *a > 185) {
			return invalidInput("maximum retry attempts")
		}
		if a := p.MaximumEventAgeInSeconds; a != nil && (*a < 60 || *a > 86400) {
			return invalidInput("maximum event age")
		}
	}
	if d := tg.DeadLetterConfig; d != nil && (d.Arn == nil || !anyARN.MatchString(*d.Arn)) {
		return invalidInput("dead-letter config arn")
	}
	return nil
}

func (f *fakeScheduler) CreateSchedule(_ context.Context, in *scheduler.CreateScheduleInput, _ ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "create "+aws.ToString(in.Name))
	if f.fail != nil {
		return nil, f.fail
	}
	if err := f.check(in.Name, in.GroupName, in.ScheduleExpression, in.FlexibleTimeWindow, in.State, in.Target); err != nil {
		return nil, err
	}
	k := aws.ToString(in.GroupName) + "/" + aws.ToString(in.Name)
	if _, ok := f.schedules[k]; ok {
		return nil, &schedtypes.ConflictException{Message: aws.String("schedule exists")}
	}
	f.schedules[k] = *in
	return &scheduler.CreateScheduleOutput{ScheduleArn: aws.String("arn:aws:scheduler:eu-west-1:000000000000:schedule/" + k)}, nil
}

func (f *fakeScheduler) UpdateSchedule(_ context.Context, in *scheduler.UpdateScheduleInput, _ ...func(*scheduler.Options)) (*scheduler.UpdateScheduleOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "update "+aws.ToString(in.Name))
	if f.fail != nil {
		return nil, f.fail
	}
	if err := f.check(in.Name, in.GroupName, in.ScheduleExpression, in.FlexibleTimeWindow, in.State, in.Target); err != nil {
		return nil, err
	}
	k := aws.ToString(in.GroupName) + "/" + aws.ToString(in.Name)
	if _, ok := f.schedules[k]; !ok {
		return nil, &schedtypes.ResourceNotFoundException{Message: aws.String("no schedule")}
	}
	// UpdateSchedule replaces the whole schedule.
	f.schedules[k] = scheduler.CreateScheduleInput{Name: in.Name, GroupName: in.GroupName, ScheduleExpression: in.ScheduleExpression,
		FlexibleTimeWindow: in.FlexibleTimeWindow, State: in.State, Target: in.Target}
	return &scheduler.UpdateScheduleOutput{ScheduleArn: aws.String("arn:aws:scheduler:eu-west-1:000000000000:schedule/" + k)}, nil
}

func (f *fakeScheduler) DeleteSchedule(_ context.Context, in *scheduler.DeleteScheduleInput, _ ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "delete "+aws.ToString(in.Name))
	if f.fail != nil {
		return nil, f.fail
	}
	k := aws.ToString(in.GroupName) + "/" + aws.ToString(in.Name)
	if _, ok := f.schedules[k]; !ok {
		return nil, &schedtypes.ResourceNotFoundException{Message: aws.String("no schedule")}
	}
	delete(f.schedules, k)
	return &scheduler.DeleteScheduleOutput{}, nil
}

// get is schedule name of group toolgate-test, and whether it exists.
func (f *fakeScheduler) get(name string) (scheduler.CreateScheduleInput, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.schedules["toolgate-test/"+name]
	return s, ok
}

// errorCode is err's SOURCES_ code, "" for none.
func errorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return fmt.Sprint(err)
}

// regexpMatch reports whether s matches pattern.
func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

// errorOfEdge is the errorType of a direct invocation's error, "" for
// none.
func errorOfEdge(err error) string {
	var ie messages.InvokeResponse_Error
	if errors.As(err, &ie) {
		return ie.Type
	}
	return ""
}
