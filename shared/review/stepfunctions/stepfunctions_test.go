package stepfunctions_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/stepfunctions"
	"github.com/toolgate/toolgate/shared/solutioncomment"
)

// The tests run against infra/local's Step Functions stand-in
// (infra/local/sfn/server.mjs: aws-local-stepfunctions behind the Step
// Functions wire API). The review Task's function is a handler of this
// test, named in the stand-in's functions file: it records the task token
// of each execution and returns at once, so the Task waits for the token.

// stack is the stand-in, a client of it and the review function's tokens:
// one for the package's tests (newStack), each test creating state
// machines of its own names.
type stack struct {
	client *sfn.Client
	mu     sync.Mutex
	tokens map[string]string // execution ARN -> task token
	bad    []string          // payloads the review function could not read
}

// shared is the package's stack, started by the first test that asks and
// stopped by TestMain.
var shared struct {
	once sync.Once
	s    *stack
	sfn  *local.Process
	fn   *httptest.Server
	dir  string // holds the stand-in's functions file
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.sfn != nil {
		if shared.err = shared.sfn.Stop(); shared.err != nil {
			fmt.Fprintln(os.Stderr, "stop the Step Functions stand-in:", shared.err)
		}
	}
	if shared.fn != nil {
		shared.fn.Close()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

func newStack(t *testing.T) *stack {
	t.Helper()
	shared.once.Do(func() {
		s := &stack{tokens: map[string]string{}}
		shared.fn = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var p struct {
				TaskToken string `json:"task_token"`
				RunID     string `json:"run_id"`
			}
			b, _ := io.ReadAll(r.Body)
			s.mu.Lock()
			defer s.mu.Unlock()
			if err := json.Unmarshal(b, &p); err != nil {
				s.bad = append(s.bad, fmt.Sprintf("payload %s: %v", b, err))
			}
			s.tokens[p.RunID] = p.TaskToken
			io.WriteString(w, "{}")
		}))
		if shared.dir, shared.err = os.MkdirTemp("", "toolgate-stepfunctions-test-"); shared.err != nil {
			return
		}
		functions := filepath.Join(shared.dir, "functions.json")
		if shared.err = local.WriteSFNFunctions(functions, map[string]string{"review": shared.fn.URL}); shared.err != nil {
			return
		}
		// Not t.Context(): the stand-in outlives the test that started it.
		if shared.sfn, shared.err = local.StartSFN(context.Background(), functions); shared.err != nil {
			return
		}
		s.client = client(shared.sfn.Endpoint(), nil)
		shared.s = s
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sfn stderr:\n%s", shared.sfn.Stderr())
		}
	})
	return shared.s
}

// client is a Step Functions client of the endpoint, through hc when set.
func client(endpoint string, hc sfn.HTTPClient) *sfn.Client {
	return sfn.New(sfn.Options{BaseEndpoint: aws.String(endpoint), Region: local.Region, HTTPClient: hc,
		Credentials: credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")})
}

// reviewDefinition is a review Task as the resolver compiles one, cut to
// what delivery needs (docs/solutions.md): a .waitForTaskToken Lambda
// Task of timeout seconds whose result lands at $.review, REVIEW_REJECTED
// caught into $.review too.
func reviewDefinition(timeout int) string {
	return fmt.Sprintf(`{"StartAt": "approve", "States": {
  "approve": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
    "Parameters": {"FunctionName": "review", "Payload": {"task_token.$": "$$.Task.Token", "run_id.$": "$$.Execution.Id"}},
    "TimeoutSeconds": %d, "ResultPath": "$.review",
    "Catch": [{"ErrorEquals": ["REVIEW_REJECTED"], "ResultPath": "$.review", "Next": "Rejected"}],
    "Next": "Approved"},
  "Approved": {"Type": "Succeed"},
  "Rejected": {"Type": "Succeed"}}}`, timeout)
}

// create creates state machine name with def.
func (s *stack) create(t *testing.T, name, def string) string {
	t.Helper()
	out, err := s.client.CreateStateMachine(t.Context(), &sfn.CreateStateMachineInput{Name: aws.String(name), Definition: aws.String(def),
		RoleArn: aws.String("arn:aws:iam::000000000000:role/toolgate-test")})
	if err != nil {
		t.Fatalf("CreateStateMachine %s: %v", name, err)
	}
	return aws.ToString(out.StateMachineArn)
}

// start starts an execution of target (a state machine or version ARN).
func (s *stack) start(t *testing.T, target, name string) string {
	t.Helper()
	out, err := s.client.StartExecution(t.Context(), &sfn.StartExecutionInput{StateMachineArn: aws.String(target), Name: aws.String(name), Input: aws.String("{}")})
	if err != nil {
		t.Fatalf("StartExecution %s: %v", name, err)
	}
	return aws.ToString(out.ExecutionArn)
}

// token waits for the review Task of execution arn to have its token.
func (s *stack) token(t *testing.T, arn string) string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		s.mu.Lock()
		tok, bad := s.tokens[arn], s.bad
		s.mu.Unlock()
		if len(bad) > 0 {
			t.Fatalf("review function: %v", bad)
		}
		if tok != "" {
			return tok
		}
	}
	t.Fatalf("the review Task of %s never asked", arn)
	return ""
}

// ended waits for execution arn to end and returns its description.
func (s *stack) ended(t *testing.T, arn string) *sfn.DescribeExecutionOutput {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		d, err := s.client.DescribeExecution(t.Context(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
		if err != nil {
			t.Fatalf("DescribeExecution %s: %v", arn, err)
		}
		if d.Status != sfntypes.ExecutionStatusRunning {
			return d
		}
	}
	t.Fatalf("execution %s never ended", arn)
	return nil
}

// reviewResult is the execution's $.review.
func reviewResult(t *testing.T, d *sfn.DescribeExecutionOutput) json.RawMessage {
	t.Helper()
	var out struct {
		Review json.RawMessage `json:"review"`
	}
	if err := json.Unmarshal([]byte(aws.ToString(d.Output)), &out); err != nil {
		t.Fatalf("execution output %q: %v", aws.ToString(d.Output), err)
	}
	return out.Review
}

func decision(v review.Verdict) review.Decision {
	return review.Decision{ReviewID: "rv_00000000000000000000000000000001", Decision: v, Approver: "arn:aws:iam::000000000000:user/alice",
		Authenticated: true, DecidedAt: "2025-06-02T09:35:00.123Z", Reason: "because",
		InputDigest: "sha256:8f31b626ff2fe164ebc3ed4c700b6db781bbe841ffb68cd3792d98853791e6bf"}
}

func taskEnded(err error) string {
	var ended *review.TaskEndedError
	if errors.As(err, &ended) {
		return ended.Name
	}
	return ""
}

// An approval is the Task's output; a rejection its REVIEW_REJECTED
// failure with the decision as cause. Either spends the token: delivering
// again is TaskTimedOut, a *review.TaskEndedError.
func TestSenderDelivers(t *testing.T) {
	s := newStack(t)
	sm := s.create(t, "review", reviewDefinition(60))
	sender := stepfunctions.Sender{Client: s.client}
	ctx := context.Background()

	t.Run("approve", func(t *testing.T) {
		arn := s.start(t, sm, "approved")
		tok := s.token(t, arn)
		d := decision(review.Approve)
		if err := sender.Deliver(ctx, tok, d); err != nil {
			t.Fatalf("Deliver: %v", err)
		}
		out := s.ended(t, arn)
		var got review.Decision
		if err := json.Unmarshal(reviewResult(t, out), &got); err != nil || !sameDecision(got, d) || out.Status != sfntypes.ExecutionStatusSucceeded {
			t.Fatalf("execution %s, $.review %s (%v); want SUCCEEDED with %+v", out.Status, reviewResult(t, out), err, d)
		}
		if err := sender.Deliver(ctx, tok, d); taskEnded(err) != "TaskTimedOut" {
			t.Fatalf("Deliver again: %v, want the Task ended (TaskTimedOut)", err)
		}
	})
	t.Run("reject", func(t *testing.T) {
		arn := s.start(t, sm, "rejected")
		tok := s.token(t, arn)
		d := decision(review.Reject)
		if err := sender.Deliver(ctx, tok, d); err != nil {
			t.Fatalf("Deliver: %v", err)
		}
		out := s.ended(t, arn)
		var got struct{ Error, Cause string }
		if err := json.Unmarshal(reviewResult(t, out), &got); err != nil || got.Error != review.ErrorRejected {
			t.Fatalf("$.review %s (%v), want the error %s", reviewResult(t, out), err, review.ErrorRejected)
		}
		var cause review.Decision
		if err := json.Unmarshal([]byte(got.Cause), &cause); err != nil || !sameDecision(cause, d) {
			t.Fatalf("cause %q (%v), want the decision %+v", got.Cause, err, d)
		}
		if err := sender.Deliver(ctx, tok, d); taskEnded(err) != "TaskTimedOut" {
			t.Fatalf("Deliver again: %v, want the Task ended (TaskTimedOut)", err)
		}
	})
}

// A token Step Functions no longer accepts is a *review.TaskEndedError
// naming Step Functions' error: the Task timed out, the token names no
// Task, or it is no token.
func TestSenderTaskEnded(t *testing.T) {
	s := newStack(t)
	short := s.create(t, "short-review", reviewDefinition(1))
	sender := stepfunctions.Sender{Client: s.client}
	ctx := context.Background()

	arn := s.start(t, short, "ignored")
	tok := s.token(t, arn)
	if d := s.ended(t, arn); d.Status != sfntypes.ExecutionStatusFailed || aws.ToString(d.Error) != "States.Timeout" {
		t.Fatalf("the unanswered review ended %s %s, want FAILED States.Timeout", d.Status, aws.ToString(d.Error))
	}
	unknown := tok[:len(tok)-4] + "AAAA"
	if unknown == tok {
		unknown = tok[:len(tok)-4] + "BBBB"
	}
	for _, c := range []struct{ name, token, want string }{
		{"timed out", tok, "TaskTimedOut"},
		{"no such Task", unknown, "TaskDoesNotExist"},
		{"not a token", "not-a-token", "InvalidToken"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range []review.Verdict{review.Approve, review.Reject} {
				if err := sender.Deliver(ctx, c.token, decision(v)); taskEnded(err) != c.want {
					t.Errorf("Deliver(%s): %v, want the Task ended (%s)", v, err, c.want)
				}
			}
		})
	}
}

// countingClient counts the HTTP requests a client sends.
type countingClient struct {
	n atomic.Int32
}

func (c *countingClient) Do(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultClient.Do(r)
}

// One attempt per Deliver: an SDK retry of a send whose answer was lost
// would be told TaskTimedOut although the decision was delivered. A
// failure that says nothing of the Task (here, no endpoint at all) is
// returned as it is, not as an ended Task.
func TestSenderTriesOnce(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	endpoint := closed.URL
	closed.Close() // nothing listens there now
	hc := &countingClient{}
	sender := stepfunctions.Sender{Client: client(endpoint, hc)}
	for _, v := range []review.Verdict{review.Approve, review.Reject} {
		before := hc.n.Load()
		err := sender.Deliver(context.Background(), "token", decision(v))
		if err == nil || taskEnded(err) != "" {
			t.Fatalf("Deliver(%s) with no endpoint: %v, want the failure as it is", v, err)
		}
		if n := hc.n.Load() - before; n != 1 {
			t.Fatalf("Deliver(%s) sent %d requests, want 1", v, n)
		}
	}
}

// VersionOf names the version an execution was started with, "" for one
// started by the state machine's own ARN; Definition reads a version's
// definition, and a version or ARN that does not exist is
// review.ErrNotFound.
func TestExecutions(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	def := `{"StartAt": "done", "States": {"done": {"Type": "Pass", "End": true}}}`
	sm := s.create(t, "child-solution", def)
	pub, err := s.client.PublishStateMachineVersion(ctx, &sfn.PublishStateMachineVersionInput{StateMachineArn: aws.String(sm)})
	if err != nil {
		t.Fatal(err)
	}
	version := aws.ToString(pub.StateMachineVersionArn)
	e := stepfunctions.Executions{Client: s.client}

	byVersion, byMachine := s.start(t, version, "by-version"), s.start(t, sm, "by-machine")
	if got, err := e.VersionOf(ctx, byVersion); err != nil || got != version {
		t.Errorf("VersionOf(an execution of %s) = %q, %v", version, got, err)
	}
	if got, err := e.VersionOf(ctx, byMachine); err != nil || got != "" {
		t.Errorf("VersionOf(an execution of the state machine) = %q, %v; want \"\"", got, err)
	}
	if _, err := e.VersionOf(ctx, strings.Replace(byVersion, "by-version", "never-started", 1)); err == nil {
		t.Errorf("VersionOf(an execution that does not exist) succeeded")
	}

	if got, err := e.Definition(ctx, version); err != nil || got != def {
		t.Errorf("Definition(%s) = %q, %v; want %q", version, got, err, def)
	}
	for _, arn := range []string{sm + ":9", "arn:aws:states:us-east-1:000000000000:stateMachine:no-such-solution:1", "not-an-arn"} {
		if _, err := e.Definition(ctx, arn); !errors.Is(err, review.ErrNotFound) {
			t.Errorf("Definition(%s) = %v, want ErrNotFound", arn, err)
		}
	}
}

// SolutionVersionOf names the Solution version whose definition an
// execution runs: the one it started on, whether started on a version or
// on the state machine, after the Solution was published again too; a
// definition without the resolver's Comment names none, and an execution
// that does not exist is an error. On the local Step Functions endpoint.
func TestSolutionVersionOfNamesTheRevisionTheExecutionStartedOn(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	const toolset = "ts_0123456789abcdef0123456789abcdef"
	def := func(version int) string {
		return `{"Comment": "` + solutioncomment.Format("refunds", version, toolset) + `", "StartAt": "w", "States": {"w": {"Type": "Wait", "Seconds": 600, "End": true}}}`
	}
	sm := s.create(t, "toolgate-dev_refunds", def(1))
	v1, err := s.client.PublishStateMachineVersion(ctx, &sfn.PublishStateMachineVersionInput{StateMachineArn: aws.String(sm)})
	if err != nil {
		t.Fatal(err)
	}
	before := s.start(t, sm, "before-republish")
	if _, err := s.client.UpdateStateMachine(ctx, &sfn.UpdateStateMachineInput{StateMachineArn: aws.String(sm), Definition: aws.String(def(2)), Publish: true}); err != nil {
		t.Fatal(err)
	}
	onV1, after := s.start(t, aws.ToString(v1.StateMachineVersionArn), "on-version-1"), s.start(t, sm, "after-republish")
	plain := s.start(t, s.create(t, "hand-written", `{"Comment": "a hand-written state machine", "StartAt": "done", "States": {"done": {"Type": "Pass", "End": true}}}`), "plain")
	e := stepfunctions.Executions{Client: s.client}
	for _, c := range []struct {
		name, exec, solution string
		version              int
	}{
		{"started on the state machine before the republish", before, "refunds", 1},
		{"started on version 1 after it", onV1, "refunds", 1},
		{"started on the state machine after it", after, "refunds", 2},
		{"a definition without the resolver's Comment", plain, "", 0},
	} {
		solution, version, err := e.SolutionVersionOf(ctx, c.exec)
		if err != nil || solution != c.solution || version != c.version {
			t.Errorf("%s: SolutionVersionOf = %q, %d, %v; want %q, %d", c.name, solution, version, err, c.solution, c.version)
		}
	}
	if _, _, err := e.SolutionVersionOf(ctx, strings.Replace(before, "before-republish", "never-started", 1)); err == nil {
		t.Errorf("SolutionVersionOf(an execution that does not exist) succeeded")
	}
}

// describer is a FAKE DescribeStateMachine for the two answers the
// stand-in never gives: it has no IAM (AccessDeniedException), and it
// always answers for the ARN it was asked about.
type describer struct {
	stepfunctions.Describer
	out *sfn.DescribeStateMachineOutput
	err error
}

func (d describer) DescribeStateMachine(context.Context, *sfn.DescribeStateMachineInput, ...func(*sfn.Options)) (*sfn.DescribeStateMachineOutput, error) {
	return d.out, d.err
}

// A version the role may not read is review.ErrDenied; an answer for
// another state machine is an error; a throttled one is returned as it is.
func TestDefinitionRefusals(t *testing.T) {
	const version = "arn:aws:states:us-east-1:000000000000:stateMachine:child-solution:1"
	ctx := context.Background()
	denied := &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not authorized", Fault: smithy.FaultClient}
	if _, err := (stepfunctions.Executions{Client: describer{err: denied}}).Definition(ctx, version); !errors.Is(err, review.ErrDenied) {
		t.Errorf("AccessDeniedException: %v, want ErrDenied", err)
	}
	throttled := &smithy.GenericAPIError{Code: "ThrottlingException", Fault: smithy.FaultClient}
	if _, err := (stepfunctions.Executions{Client: describer{err: throttled}}).Definition(ctx, version); !errors.Is(err, throttled) ||
		errors.Is(err, review.ErrDenied) || errors.Is(err, review.ErrNotFound) {
		t.Errorf("ThrottlingException: %v, want it as it is", err)
	}
	other := &sfn.DescribeStateMachineOutput{StateMachineArn: aws.String(strings.TrimSuffix(version, ":1")), Definition: aws.String("{}")}
	if _, err := (stepfunctions.Executions{Client: describer{out: other}}).Definition(ctx, version); err == nil || !strings.Contains(err.Error(), "answered for") {
		t.Errorf("an answer for the state machine: %v, want refused", err)
	}
}

// sameDecision reports whether two decision JSONs say the same: their
// JSON forms are equal (an absent answer and a null one are both null).
func sameDecision(a, b review.Decision) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(x) == string(y)
}
