package request_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/toolgate/toolgate/functions/review-request/request"
	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/inputrecord"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/review/stepfunctions"
	"github.com/toolgate/toolgate/shared/tool"
)

// A child run's start is its parent's record only for one execution: of
// the version the parent starts, and the first to take it. An execution
// started by hand on the unqualified state machine ARN (the latest
// revision), or another execution of the same name later (Step Functions
// lets a name be used again 90 days after its execution closed), is
// refused. On dynalite and the local Step Functions endpoint.
func TestChildStartIsTakenOnceByThePinnedVersion(t *testing.T) {
	ctx := t.Context()
	e := startChildEnv(t)
	client, h, parent := e.client, e.h, e.parent
	created, version := e.publish(t, "toolgate-dev_child", `{"StartAt": "w", "States": {"w": {"Type": "Wait", "Seconds": 30, "End": true, "Comment": `+
		strconv.Quote(inputrecord.Prefix+`{"input_limit_bytes":1024}`)+`}}}`)

	// record has the parent's step record a child start, and starts the
	// child as the step would (by the version ARN) or by hand.
	record := func(seq int, startWith string) (arn string, input string) {
		t.Helper()
		input = fmt.Sprintf(`{"input":{"title":"t"},"meta":{"parent_run_id":%q,"parent_seq":%d},"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID":%q}`, parent, seq, parent)
		out, err := h.Handle(ctx, json.RawMessage(fmt.Sprintf(`{"parent_run_id":%q,"seq":%d,"state_machine_arn":%q,"input":%s,"attempt":0,"conflict":false}`, parent, seq, version, input)))
		if err != nil {
			t.Fatal(err)
		}
		var res tool.ChildStartResult
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
		started, err := client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(startWith), Name: aws.String(res.ExecutionName), Input: aws.String(input)})
		if err != nil || aws.ToString(started.ExecutionArn) != res.ExecutionARN {
			t.Fatalf("start %s: %v (%s, want %s)", res.ExecutionName, err, aws.ToString(started.ExecutionArn), res.ExecutionARN)
		}
		return res.ExecutionARN, input
	}
	check := func(arn, input string, started time.Time) (json.RawMessage, error) {
		return h.Handle(ctx, json.RawMessage(fmt.Sprintf(`{"execution_arn":%q,"execution_input":%s,"start_time":%q}`, arn, input, started.UTC().Format(time.RFC3339Nano))))
	}

	t.Run("the version the parent starts takes the record, once", func(t *testing.T) {
		arn, input := record(1, version)
		at := time.Now()
		for range 2 { // a retried start Task: the same execution again
			out, err := check(arn, input, at)
			if err != nil || !strings.Contains(string(out), `"starter":"arn:aws:iam::000000000000:user/starter"`) {
				t.Fatalf("%s %v", out, err)
			}
		}
		// Another execution of that name, later.
		if _, err := check(arn, input, at.Add(91*24*time.Hour)); err == nil || !strings.Contains(err.Error(), "REVIEW_UNAUTHENTICATED") || !strings.Contains(err.Error(), "another execution of that name") {
			t.Fatalf("a second execution of the name took the record: %v", err)
		}
	})
	t.Run("an execution started by hand on the latest revision is refused", func(t *testing.T) {
		arn, input := record(2, created)
		if _, err := check(arn, input, time.Now()); err == nil || !strings.Contains(err.Error(), "REVIEW_UNAUTHENTICATED") || !strings.Contains(err.Error(), "not the version") {
			t.Fatalf("an unqualified execution took the record: %v", err)
		}
	})
	t.Run("another input is refused", func(t *testing.T) {
		arn, input := record(3, version)
		if _, err := check(arn, strings.Replace(input, `"t"`, `"u"`, 1), time.Now()); err == nil || !strings.Contains(err.Error(), "not the one its parent recorded") {
			t.Fatalf("%v", err)
		}
	})
	// A start that found its name in use (conflict): the parent's own
	// child, which took the record, is followed; an execution that did
	// not is cut off from the record, and the next attempt is recorded,
	// up to tool.MaxChildAttempts.
	conflict := func(seq, attempt int, input string) (tool.ChildStartResult, error) {
		t.Helper()
		out, err := h.Handle(ctx, json.RawMessage(fmt.Sprintf(`{"parent_run_id":%q,"seq":%d,"state_machine_arn":%q,"input":%s,"attempt":%d,"conflict":true}`, parent, seq, version, input, attempt)))
		var res tool.ChildStartResult
		if err == nil {
			err = json.Unmarshal(out, &res)
		}
		return res, err
	}
	t.Run("a conflict on the parent's own child follows it", func(t *testing.T) {
		arn, input := record(4, version)
		if _, err := check(arn, input, time.Now()); err != nil {
			t.Fatal(err)
		}
		res, err := conflict(4, 0, input)
		if err != nil || !res.Taken || res.ExecutionARN != arn || res.Attempt != 0 {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("a conflict on a name another execution holds names the next attempt", func(t *testing.T) {
		arn, input := record(5, version)
		var res tool.ChildStartResult
		for attempt := range tool.MaxChildAttempts - 1 {
			for range 2 { // a retried Task answers the same
				var err error
				if res, err = conflict(5, attempt, input); err != nil || res.Taken || res.Attempt != attempt+1 ||
					res.ExecutionName != tool.ChildExecutionName(parent, "5")+"-"+strconv.Itoa(attempt+1) || len(res.ExecutionName) > 80 {
					t.Fatalf("attempt %d: %+v %v", attempt, res, err)
				}
			}
		}
		// The released record is taken by no execution after.
		if _, err := check(arn, input, time.Now()); err == nil || !strings.Contains(err.Error(), "REVIEW_UNAUTHENTICATED") {
			t.Fatalf("a released record was taken: %v", err)
		}
		if _, err := conflict(5, tool.MaxChildAttempts-1, input); err == nil || !strings.Contains(err.Error(), "REVIEW_FORBIDDEN") {
			t.Fatalf("past the last attempt: %v", err)
		}
		if _, err := conflict(5, tool.MaxChildAttempts, input); err == nil || !strings.Contains(err.Error(), "REVIEW_INVALID_REQUEST") {
			t.Fatalf("an attempt out of range: %v", err)
		}
	})
}

// childEnv is review-request's handler on dynalite and the local Step
// Functions endpoint, with a parent run whose start is verified.
type childEnv struct {
	ddb    *local.Process // the package's one dynalite (localtest.SharedTable)
	table  string         // the test's own table on it
	sf     *local.Process
	client *sfn.Client
	store  *dynamo.Store
	h      *request.Handler
	parent string
}

func startChildEnv(t testing.TB) *childEnv {
	t.Helper()
	ctx := t.Context()
	ddb, db, table := localtest.SharedTable(t, "ledger")
	sf, err := local.StartSFN(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sf.Stop() })
	// One attempt per request: a stopped endpoint answers at once.
	client := sfn.New(sfn.Options{Region: local.Region, BaseEndpoint: aws.String(sf.Endpoint()), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")})
	store := dynamo.NewStore(db, table)
	e := &childEnv{ddb: ddb, table: table, sf: sf, client: client, store: store, parent: "arn:aws:states:us-east-1:000000000000:execution:toolgate-dev_parent:run-1",
		h: request.NewHandler(request.Config{Lane: lane.SFN, Callers: caller.Config{Account: "000000000000"}}, request.Deps{Store: store, Executions: stepfunctions.Executions{Client: client}})}
	if err := store.RecordStart(ctx, e.parent, "arn:aws:iam::000000000000:user/starter"); err != nil {
		t.Fatal(err)
	}
	return e
}

// publish creates state machine name with definition and publishes its
// first version: it returns the state machine's ARN and the version's.
func (e *childEnv) publish(t testing.TB, name, definition string) (string, string) {
	t.Helper()
	created, err := e.client.CreateStateMachine(t.Context(), &sfn.CreateStateMachineInput{Name: aws.String(name),
		RoleArn: aws.String("arn:aws:iam::000000000000:role/r"), Definition: aws.String(definition), Publish: true})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(created.StateMachineArn), aws.ToString(created.StateMachineVersionArn)
}

// childStart has the parent's step at seq ask review-request to record
// the start of version with the child run input input.
func (e *childEnv) childStart(t *testing.T, seq int, version, input string) (tool.ChildStartResult, error) {
	t.Helper()
	exec := fmt.Sprintf(`{"input":%s,"meta":{"parent_run_id":%q,"parent_seq":%d},"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID":%q}`, input, e.parent, seq, e.parent)
	out, err := e.h.Handle(t.Context(), json.RawMessage(fmt.Sprintf(`{"parent_run_id":%q,"seq":%d,"state_machine_arn":%q,"input":%s,"attempt":0,"conflict":false}`, e.parent, seq, version, exec)))
	var res tool.ChildStartResult
	if err == nil {
		err = json.Unmarshal(out, &res)
	}
	return res, err
}

// A workflow step's child is started only with an input the child's
// version accepts, as toolgate run checks a run's input: review-request
// reads the version's definition (DescribeStateMachine), checks the input
// against its input record, and records nothing for an input it refuses,
// saying what is wrong without quoting the input. A version without a
// record it reads is refused too. Records are kept per version for the
// life of the container: once read, a version's record needs no Step
// Functions. On dynalite and the local Step Functions endpoint.
func TestChildStartChecksTheChildsInput(t *testing.T) {
	e := startChildEnv(t)
	child := func(comment string) string {
		return `{"StartAt": "Start", "States": {"Start": {"Type": "Pass", "End": true, "Comment": ` + strconv.Quote(comment) + `}}}`
	}
	_, version := e.publish(t, "toolgate-dev_child", child(inputrecord.Prefix+
		`{"input_limit_bytes":512,"input_schema":{"type":"object","required":["title"],"properties":{"title":{"type":"string","minLength":1,"maxLength":200}}}}`))
	_, unrecorded := e.publish(t, "toolgate-dev_old", child("the execution input must be {input, meta}"))
	_, newer := e.publish(t, "toolgate-dev_newer", child(`toolgate:input:v2 {"input_limit_bytes":512}`))
	_, uncached := e.publish(t, "toolgate-dev_other", child(inputrecord.Prefix+`{"input_limit_bytes":512}`))

	cases := []struct {
		name    string
		version string
		input   string
		code    string // "": recorded
		want    string
	}{
		{"an input the child accepts is recorded", version, `{"title":"SECRET"}`, "", ""},
		{"an input the schema refuses", version, `{"title":""}`, "REVIEW_INVALID_REQUEST", `input/title fails "minLength"`},
		{"a value over its bound", version, `{"title":"` + strings.Repeat("SECRET", 40) + `"}`, "REVIEW_INVALID_REQUEST", `input/title fails "maxLength"`},
		{"a missing member", version, `{"name":"SECRET"}`, "REVIEW_INVALID_REQUEST", `input/ fails "required"`},
		{"an input over input_limit_bytes", version, `{"title":"x","note":"` + strings.Repeat("SECRET", 100) + `"}`, "REVIEW_INVALID_REQUEST", "over the Solution's policy.input_limit_bytes of 512"},
		{"a version without an input record", unrecorded, `{"title":"SECRET"}`, "REVIEW_INVALID_REQUEST", "has no input record"},
		{"a version of a later record", newer, `{"title":"SECRET"}`, "REVIEW_INVALID_REQUEST", `input record of version "v2"`},
		{"the unqualified state machine", strings.TrimSuffix(version, ":1"), `{"title":"SECRET"}`, "REVIEW_INVALID_REQUEST", "not a published version ARN"},
		{"a version that does not exist", strings.TrimSuffix(version, ":1") + ":7", `{"title":"SECRET"}`, "REVIEW_INVALID_REQUEST", "does not exist"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := e.childStart(t, i+1, c.version, c.input)
			if c.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				if rec, err := e.store.ChildStart(t.Context(), res.ExecutionARN); err != nil || rec.StateMachineARN != c.version {
					t.Fatalf("record %+v %v, want one for %s", rec, err, c.version)
				}
				return
			}
			var edge messages.InvokeResponse_Error
			if !errors.As(err, &edge) || edge.Type != c.code || !strings.Contains(edge.Message, c.want) {
				t.Fatalf("%v, want %s: %s", err, c.code, c.want)
			}
			if strings.Contains(edge.Message, "SECRET") {
				t.Fatalf("the message quotes the input: %s", edge.Message)
			}
			childARN, _ := review.ChildExecutionARN(c.version, tool.ChildExecutionName(e.parent, tool.Seq(strconv.Itoa(i+1))))
			if _, err := e.store.ChildStart(t.Context(), childARN); !errors.Is(err, review.ErrNotFound) {
				t.Fatalf("a refused child start was recorded: %v", err)
			}
		})
	}

	t.Run("a version's record is kept; Step Functions failing is REVIEW_UNAVAILABLE", func(t *testing.T) {
		e.sf.Stop()
		if _, err := e.childStart(t, 101, version, `{"title":"t"}`); err != nil {
			t.Fatalf("a version whose record was read: %v", err)
		}
		if _, err := e.childStart(t, 102, version, `{"title":""}`); err == nil || !strings.Contains(err.Error(), "REVIEW_INVALID_REQUEST") {
			t.Fatalf("a version whose record was read: %v, want REVIEW_INVALID_REQUEST", err)
		}
		_, err := e.childStart(t, 103, uncached, `{"title":"t"}`)
		if err == nil || !strings.Contains(err.Error(), "REVIEW_UNAVAILABLE") || !strings.Contains(err.Error(), "could not describe the child version") {
			t.Fatalf("a version never read, with Step Functions down: %v, want REVIEW_UNAVAILABLE", err)
		}
		childARN, _ := review.ChildExecutionARN(uncached, tool.ChildExecutionName(e.parent, "103"))
		if _, err := e.store.ChildStart(t.Context(), childARN); !errors.Is(err, review.ErrNotFound) {
			t.Fatalf("a start whose input was not checked was recorded: %v", err)
		}
	})
}

// bigDefinitions is a Step Functions whose every version ARN names a
// child whose input record holds a schema of about 64 KiB (the most the
// resolver writes), another for each version.
type bigDefinitions struct{ described int }

func (*bigDefinitions) VersionOf(context.Context, string) (string, error) { return "", nil }

func (*bigDefinitions) SolutionVersionOf(context.Context, string) (string, int, error) {
	return "", 0, nil
}

func (d *bigDefinitions) Definition(_ context.Context, versionARN string) (string, error) {
	d.described++
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for j := range 1500 {
		if j > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string","maxLength":%d}`, j, j+1)
	}
	fmt.Fprintf(&b, `},"$comment":%q}`, versionARN)
	rec, err := inputrecord.Record{LimitBytes: 1024, Schema: json.RawMessage(b.String())}.Comment()
	if err != nil {
		return "", err
	}
	return `{"StartAt":"Start","States":{"Start":{"Type":"Pass","End":true,"Comment":` + strconv.Quote(rec) + `}}}`, nil
}

// The input records a container keeps, with their compiled schemas, fit
// in a bounded part of review-request's memory however many child
// versions its parents start: a compiled 64 KiB schema takes more than a
// MiB, and review-request has 256 MB. A version whose record was let go
// is read again.
func TestChildInputRecordsKeepBoundedMemory(t *testing.T) {
	e := startChildEnv(t)
	defs := &bigDefinitions{}
	e.h = request.NewHandler(request.Config{Lane: lane.SFN, Callers: caller.Config{Account: "000000000000"}}, request.Deps{Store: e.store, Executions: defs})
	const versions = 60
	version := func(i int) string {
		return fmt.Sprintf("arn:aws:states:us-east-1:000000000000:stateMachine:toolgate-dev_big%d:1", i)
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	for i := range versions {
		if _, err := e.childStart(t, i+1, version(i), `{"p0":"x"}`); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if grown := int64(ms.HeapAlloc) - int64(before); grown > 40<<20 {
		t.Fatalf("the heap grew by %d MiB for %d child versions' input records", grown>>20, versions)
	}
	// The last version's record is kept.
	n := defs.described
	if _, err := e.childStart(t, versions+1, version(versions-1), `{"p0":"x"}`); err != nil || defs.described != n {
		t.Fatalf("the last version read again (%d reads, want %d): %v", defs.described, n, err)
	}
}

// A parent compiled with trace context records its child's input with
// meta.traceparent null: review-request answers the step's span
// (review.ChildTraceparent, under the stage's external key) and records
// the digest of the input with it, which the start then sends; the
// child's check of the execution's own input (as Step Functions returns
// it) accepts the record. A conflict's answer, and the next attempt's,
// carry the same traceparent. On dynalite and the local Step Functions
// endpoint.
func TestTracedChildStartsWithTheRecordedInput(t *testing.T) {
	ctx := t.Context()
	e := startChildEnv(t)
	key := []byte("0123456789abcdef0123456789abcdef")
	e.h = request.NewHandler(request.Config{Lane: lane.SFN, Callers: caller.Config{Account: "000000000000"}},
		request.Deps{Store: e.store, Executions: stepfunctions.Executions{Client: e.client}, ExternalKey: key})
	_, version := e.publish(t, "toolgate-dev_child", `{"StartAt": "w", "States": {"w": {"Type": "Wait", "Seconds": 30, "End": true, "Comment": `+
		strconv.Quote(inputrecord.Prefix+`{"input_limit_bytes":1024}`)+`}}}`)
	const carried = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for seq, parentTrace := range map[int]string{1: `"` + carried + `"`, 2: `null`} {
		recorded := fmt.Sprintf(`{"input":{"title":"t"},"meta":{"parent_run_id":%q,"parent_seq":"%d","traceparent":null},"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID":%q}`, e.parent, seq, e.parent)
		ask := func(attempt int, conflict bool) tool.ChildStartResult {
			t.Helper()
			out, err := e.h.Handle(ctx, json.RawMessage(fmt.Sprintf(`{"parent_run_id":%q,"seq":"%d","state_machine_arn":%q,"input":%s,"attempt":%d,"conflict":%v,"traceparent":%s}`,
				e.parent, seq, version, recorded, attempt, conflict, parentTrace)))
			var res tool.ChildStartResult
			if err == nil {
				err = json.Unmarshal(out, &res)
			}
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		res := ask(0, false)
		var carriedTP tool.Traceparent
		_ = json.Unmarshal([]byte(parentTrace), &carriedTP)
		if want := review.ChildTraceparent(key, e.parent, tool.Seq(strconv.Itoa(seq)), carriedTP); res.Traceparent != want || len(want) != tool.MaxTraceparentLength {
			t.Fatalf("seq %d: answered %q, want the step's span %q", seq, res.Traceparent, want)
		}
		// What the start Task sends: the input with the answer in meta.
		startInput := fmt.Sprintf(`{"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID":%q,"meta":{"traceparent":%q,"parent_seq":"%d","parent_run_id":%q},"input":{"title":"t"}}`,
			e.parent, res.Traceparent, seq, e.parent)
		started, err := e.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(version), Name: aws.String(res.ExecutionName), Input: aws.String(startInput)})
		if err != nil {
			t.Fatal(err)
		}
		desc, err := e.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: started.ExecutionArn})
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.h.Handle(ctx, json.RawMessage(fmt.Sprintf(`{"execution_arn":%q,"execution_input":%s,"start_time":%q}`,
			aws.ToString(started.ExecutionArn), aws.ToString(desc.Input), aws.ToTime(desc.StartDate).UTC().Format(time.RFC3339Nano))))
		if err != nil || !strings.Contains(string(out), `"starter":`) {
			t.Fatalf("seq %d: the child's check of its own input: %s %v", seq, out, err)
		}
		// A retried start that found its name in use follows the child,
		// with the same traceparent.
		if again := ask(0, true); !again.Taken || again.Traceparent != res.Traceparent {
			t.Fatalf("seq %d: conflict answered %+v", seq, again)
		}
	}
	// The next attempt's name, after a name another execution holds,
	// keeps the step's traceparent.
	other := fmt.Sprintf(`{"input":{"title":"t"},"meta":{"parent_run_id":%q,"parent_seq":"3","traceparent":null},"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID":%q}`, e.parent, e.parent)
	payload := func(conflict bool) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"parent_run_id":%q,"seq":"3","state_machine_arn":%q,"input":%s,"attempt":0,"conflict":%v,"traceparent":null}`, e.parent, version, other, conflict))
	}
	var first, next tool.ChildStartResult
	if out, err := e.h.Handle(ctx, payload(false)); err != nil || json.Unmarshal(out, &first) != nil {
		t.Fatal(err)
	}
	if out, err := e.h.Handle(ctx, payload(true)); err != nil || json.Unmarshal(out, &next) != nil {
		t.Fatal(err)
	}
	if next.Taken || next.Attempt != 1 || next.Traceparent != first.Traceparent || first.Traceparent == "" {
		t.Fatalf("next attempt %+v after %+v", next, first)
	}
}
