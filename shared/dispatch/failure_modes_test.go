package dispatch

// The governed dispatcher under failure: deadlines, leases, lost
// responses, a stopped DynamoDB, malformed envelopes and odd tools. The
// comment above each test says the behaviour it checks.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
)

// padEcho returns the "pad" member exactly as the tool received it.
func padEcho(calls *atomic.Int64) toolcall.Func {
	return func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		calls.Add(1)
		dec := json.NewDecoder(bytes.NewReader(c.Input))
		dec.UseNumber()
		var in map[string]any
		if err := dec.Decode(&in); err != nil {
			return nil, err
		}
		return json.Marshal(map[string]string{"text": fmt.Sprint(in["pad"])})
	}
}

func keyOf(t testing.TB, payload json.RawMessage) string {
	var v struct {
		Key string `json:"idempotency_key"`
	}
	if err := json.Unmarshal(payload, &v); err != nil {
		t.Fatal(err)
	}
	return v.Key
}

// ---------------------------------------------------------------------------
// Integers beyond 2^53 would be rounded by RFC 8785 canonicalisation, so
// {"pad":9007199254740993} and {"pad":9007199254740992} would digest alike
// while the tool acts on the exact value. An input RFC 8785 would change is
// refused (TOOL_INPUT_INVALID), and its exact neighbour runs on its own,
// with the tool handed exactly that value.
func TestInexactIntegersAreRefusedSoNoTwoInputsShareADigest(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", padEcho(&calls))
	ctx := context.Background()
	// A number that RFC 8785 would round is refused outright, so two inputs
	// can never share a digest that way.
	p1 := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x","pad":9007199254740993}`)
	if _, err := d.Handle(ctx, p1); codeOf(t, err) != string(tool.InputInvalid) || !strings.Contains(err.Error(), "exactly") {
		t.Fatalf("inexact number: %v", err)
	}
	p2 := envelopeFor("test-echo", e.ts.ID, runIDOf(t, p1), 1, `{"text":"x","pad":9007199254740992}`)
	out2, err := d.Handle(ctx, p2)
	if err != nil || calls.Load() != 1 {
		t.Fatalf("the exact neighbour: %s %v (%d calls)", out2, err, calls.Load())
	}
	if !bytes.Contains(out2, []byte("9007199254740992")) {
		t.Fatalf("the tool was not handed the exact value: %s", out2)
	}
}

// The input is validated and digested in canonical form, and the tool is
// handed that canonical input: {"pad":1.0} and {"pad":1e0}, integers to the
// pinned schema, reach the tool as 1.
func TestToolGetsTheInputThatWasValidated(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	for _, in := range []string{`{"text":"a","pad":1.0}`, `{"text":"a","pad":1e0}`} {
		out, err := d.Handle(context.Background(), envelopeFor("test-echo", e.ts.ID, "", 1, in))
		if err != nil || string(out) != `{"text":"ax"}` {
			t.Errorf("input %s accepted by the pinned schema (integer), but the tool failed on it: out %s, %v", in, out, err)
		}
	}
}

// ---------------------------------------------------------------------------
// A tool that ignores its context does not keep the handler past the
// Lambda deadline: Handle stops waiting at the deadline less the margin and
// answers TOOL_TIMEOUT, a contract code, before Lambda would end the
// sandbox.
func TestToolIgnoringItsDeadlineEndsBeforeLambdas(t *testing.T) {
	e := newEnv(t)
	d := e.dispatcher(t, "test-echo", ignoresContext(t))
	// The Lambda deadline is a context deadline, on the real clock.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_, err := d.Handle(ctx, envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`))
	took := time.Since(start)
	t.Logf("Handle returned %v after %s (Lambda deadline 3s, margin 2s)", err, took)
	if took >= 3*time.Second {
		t.Errorf("Handle returned after %s, past the 3 s Lambda deadline: the caller would see Sandbox.Timedout", took.Round(time.Millisecond))
	}
	if codeOf(t, err) != string(tool.Timeout) {
		t.Errorf("want TOOL_TIMEOUT, got %v", err)
	}
}

// A DynamoDB request that hangs is bounded by the deadline less the margin,
// so the caller gets TOOL_UPSTREAM_UNAVAILABLE before Lambda's deadline.
func TestHungLedgerAnswersBeforeTheDeadline(t *testing.T) {
	e, p := newEnvOn(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	if _, err := d.Handle(context.Background(), envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"warm"}`)); err != nil {
		t.Fatal(err) // the toolset is now cached
	}
	if err := syscall.Kill(p.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(p.PID, syscall.SIGCONT)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_, err := d.Handle(ctx, envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`))
	took := time.Since(start)
	t.Logf("hung dynalite: %v after %s", err, took)
	if took > 2900*time.Millisecond {
		t.Errorf("Handle returned after %s with a 3 s deadline: on Lambda the caller sees Sandbox.Timedout", took.Round(time.Millisecond))
	}
	if codeOf(t, err) != string(tool.UpstreamUnavailable) {
		t.Errorf("want TOOL_UPSTREAM_UNAVAILABLE, got %v", err)
	}
	if calls.Load() != 1 {
		t.Errorf("tool ran without a claim")
	}
}

// With less than the margin left, the dispatcher refuses before the claim
// (TOOL_TIMEOUT, definite): an at_most_once key is not left UNKNOWN by an
// attempt that never gave its tool any time, and a retry runs it once.
func TestNoTimeLeftRefusesBeforeTheClaim(t *testing.T) {
	e := newEnv(t)
	var sends atomic.Int64
	send := e.dispatcher(t, "test-send", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		if err := ctx.Err(); err != nil {
			return nil, err // nothing sent
		}
		sends.Add(1)
		return json.RawMessage(`{"message_id":"m"}`), nil
	})
	payload := envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`)
	short, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err1 := send.Handle(short, payload)
	if codeOf(t, err1) != string(tool.Timeout) {
		t.Fatalf("first call with too little time: %v", err1)
	}
	if _, err := e.store.Record(context.Background(), keyOf(t, payload)); err == nil {
		t.Fatal("a call refused for lack of time left a record")
	}
	_, err2 := send.Handle(context.Background(), payload)
	t.Logf("first (1.5 s left, margin 2 s): %v; retry: %v; sends %d", err1, err2, sends.Load())
	if err2 != nil || sends.Load() != 1 {
		t.Errorf("the tool never got any time, yet the key is poisoned: retry %v, %d sends", err2, sends.Load())
	}
}

// After the claim, the record's finish and the row survive the caller's
// cancellation: the record is finished (not left IN_PROGRESS) and the
// attempt's row is written.
func TestCancelledAttemptStillFinishesItsRecordAndRow(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := e.dispatcher(t, "test-echo", func(c2 context.Context, call *toolcall.Call) (json.RawMessage, error) {
		cancel()
		<-c2.Done()
		return nil, c2.Err()
	})
	payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`)
	_, err := d.Handle(ctx, payload)
	if !tool.Code(codeOf(t, err)).Known() {
		t.Fatalf("not a contract code: %v", err)
	}
	rec, rerr := e.store.Record(context.Background(), keyOf(t, payload))
	rows := mustKeyRows(t, e.store, runIDOf(t, payload), "1")
	if rerr != nil || rec.State == ledger.StateInProgress {
		t.Errorf("record after a cancelled attempt: %+v %v (want it finished, not IN_PROGRESS)", rec, rerr)
	}
	if len(rows) != 1 {
		t.Errorf("%d rows after a cancelled attempt, want 1", len(rows))
	}
}

// ---------------------------------------------------------------------------
// A failure after an at_most_once tool returned (here an output schema
// that does not compile, which the registration check now refuses too) is
// maybe applied: the key is UNKNOWN, and a retry does not send again.
func TestUncompilableOutputSchemaLeavesAtMostOnceUnknown(t *testing.T) {
	e := newEnv(t)
	ts := testToolset(t, 100)
	send := ts.Tools["test-send"]
	send.OutputSchema = json.RawMessage(`{"type":"no-such-type"}`)
	ts.Tools["test-send"] = send
	id, err := ts.ComputeID()
	if err != nil {
		t.Fatal(err)
	}
	ts.ID = id
	if _, err := schema.Compile(send.OutputSchema); err == nil {
		t.Fatal("fixture schema compiles")
	}
	// Registration compiles every pinned schema, so such a toolset never
	// reaches a run.
	if _, err := e.store.RegisterToolset(context.Background(), ts); err == nil || !strings.Contains(err.Error(), "output schema") {
		t.Fatalf("a toolset with an uncompilable schema registered: %v", err)
	}
}

// An error that is no tool.Error, from an at_most_once tool that may have
// acted, is maybe applied, like a panic: a retry does not run it again.
func TestForeignErrorFromAtMostOnceIsMaybeApplied(t *testing.T) {
	e := newEnv(t)
	var sends atomic.Int64
	d := e.dispatcher(t, "test-send", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		sends.Add(1) // the email is out
		return nil, errors.New("decode provider response: unexpected EOF")
	})
	payload := envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`)
	_, err1 := d.Handle(context.Background(), payload)
	_, err2 := d.Handle(context.Background(), payload)
	t.Logf("first %v, retry %v, sends %d", err1, err2, sends.Load())
	if sends.Load() != 1 {
		t.Errorf("at_most_once tool ran %d times after an unclassified error", sends.Load())
	}
}

// ---------------------------------------------------------------------------
// A stored toolset whose body does not digest to its id, or that has no
// body, is refused with a code Step Functions does not retry, and nothing
// panics.
func TestTamperedToolsetIsRefusedNotRetried(t *testing.T) {
	e := newEnv(t)
	victim := testToolset(t, 7)
	other, err := testToolset(t, 8).Canonical()
	if err != nil {
		t.Fatal(err)
	}
	put := func(id string, body *string) {
		item := map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "TOOLSET#" + id},
			"sk": &types.AttributeValueMemberS{Value: "TOOLSET"},
		}
		if body != nil {
			item["body"] = &types.AttributeValueMemberS{Value: *body}
		}
		if _, err := e.db.API.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(e.store.Table()), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	tampered := string(other)
	put(victim.ID, &tampered)
	noBody := testToolset(t, 9)
	put(noBody.ID, nil)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	for name, id := range map[string]string{"tampered body": victim.ID, "no body": noBody.ID} {
		_, err := d.Handle(context.Background(), envelopeFor("test-echo", id, "", 1, `{"text":"x"}`))
		code := tool.Code(codeOf(t, err))
		t.Logf("%s: %v", name, err)
		if !code.Known() || code.Retryable() {
			t.Errorf("%s: caller saw %s (retryable %v); want a permanent code such as TOOL_PERMISSION_DENIED", name, code, code.Retryable())
		}
	}
	if calls.Load() != 0 {
		t.Error("the tool ran under a tampered toolset")
	}
}

// ---------------------------------------------------------------------------
// Strict envelope decoding refuses trailing data, closing brackets
// included (json.Decoder.More reports false before ']' and '}').
func TestEnvelopeWithTrailingDataIsRefused(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	for _, tail := range []string{"}", "]", " ]]]"} {
		payload := append(envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`), tail...)
		_, err := d.Handle(context.Background(), payload)
		if codeOf(t, err) != string(tool.InputInvalid) {
			t.Errorf("envelope with trailing %q accepted: %v", tail, err)
		}
	}
	if calls.Load() != 0 {
		t.Errorf("the tool ran %d times on malformed envelopes", calls.Load())
	}
}

// A null where the envelope requires a boolean is TOOL_INPUT_INVALID
// naming the member (json.Unmarshal of null into a bool would be a no-op).
func TestEnvelopeNullForABooleanIsRefused(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	payload := strings.Replace(string(envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`)), `"tolerate_duplicates":false`, `"tolerate_duplicates":null`, 1)
	_, err := d.Handle(context.Background(), json.RawMessage(payload))
	if codeOf(t, err) != string(tool.InputInvalid) || !strings.Contains(err.Error(), "tolerate_duplicates") {
		t.Errorf("tolerate_duplicates:null: %v (tool ran %d times)", err, calls.Load())
	}
}

// An envelope member given twice is refused: a reader of the first "tool"
// and one of the last would see different calls.
func TestEnvelopeDuplicateMembersAreRefused(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	payload := `{"tool":"test-send",` + strings.TrimPrefix(string(envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`)), "{")
	_, err := d.Handle(context.Background(), json.RawMessage(payload))
	if codeOf(t, err) != string(tool.InputInvalid) {
		t.Errorf("envelope with two \"tool\" members accepted: %v (tool ran %d times)", err, calls.Load())
	}
}

// Invalid UTF-8 in run_id is refused (TOOL_INPUT_INVALID), so two
// byte-different run ids can never become one key through U+FFFD.
func TestInvalidUTF8RunIDsAreRefused(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	base := fmt.Sprintf("run-%d-", time.Now().UnixNano())
	mk := func(b byte) json.RawMessage {
		run := base + string([]byte{b})
		return json.RawMessage(fmt.Sprintf(`{"tool":"test-echo","toolset_id":%q,"run_id":"%s","seq":1,"step":"s","idempotency_key":"%s/1","attempt":1,"tolerate_duplicates":false,"input":{"text":"x"}}`, e.ts.ID, run, run))
	}
	_, err1 := d.Handle(context.Background(), mk(0xff))
	_, err2 := d.Handle(context.Background(), mk(0xfe))
	t.Logf("run ...\\xff: %v; run ...\\xfe: %v; tool ran %d times", err1, err2, calls.Load())
	if codeOf(t, err1) != string(tool.InputInvalid) || calls.Load() == 1 && err2 == nil {
		t.Errorf("invalid UTF-8 run ids accepted and merged into one key (tool ran %d times for two runs)", calls.Load())
	}
}

// ---------------------------------------------------------------------------
// TOOLGATE_INLINE_LIMIT_BYTES=0 and a negative deadline margin are
// refused at cold start. A lease shorter than the function timeout is
// allowed (tests use one): the tool's run is bounded by the lease.
func TestConfigRefusesBadValues(t *testing.T) {
	get := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if _, _, err := ConfigFromEnv(OneTool("test-echo"), get(map[string]string{EnvTable: "t", EnvInlineLimit: "0"})); err == nil {
		t.Error("TOOLGATE_INLINE_LIMIT_BYTES=0 accepted (silently the default)")
	}
	if _, err := New(Config{Mode: OneTool("x"), DeadlineMargin: -time.Minute}, Deps{}); err == nil {
		t.Error("negative DeadlineMargin accepted (the tool would run past the Lambda deadline)")
	}
}

// A tool's run is bounded by its claim's lease: when the lease is shorter
// than the tool takes, the attempt ends with TOOL_TIMEOUT (maybe applied)
// before another attempt can re-claim the key, so two attempts never both
// report success. For an at_least_once tool the next attempt re-claims and
// runs, and its result is the key's for every replay.
func TestToolRunBoundedByTheLeaseAtLeastOnce(t *testing.T) {
	e := newEnv(t)
	var runs atomic.Int64
	release := make(chan struct{})
	defer close(release)
	d := e.dispatcher(t, "test-echo", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		if runs.Add(1) == 1 {
			<-release // ignores ctx: outlives its lease
		}
		return json.RawMessage(fmt.Sprintf(`{"text":"attempt-%d"}`, runs.Load())), nil
	}, func(c *Config) { c.Lease = time.Second })
	payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`)
	if _, errA := d.Handle(context.Background(), payload); codeOf(t, errA) != string(tool.Timeout) {
		t.Fatalf("the attempt that outlived its lease: %v, want TOOL_TIMEOUT", errA)
	}
	outB, errB := d.Handle(context.Background(), payload)
	if errB != nil || string(outB) != `{"text":"attempt-2"}` {
		t.Fatalf("the next attempt: %s %v, want it to run", outB, errB)
	}
	replay, err := d.Handle(context.Background(), payload)
	rec := mustRecord(t, e.store, keyOf(t, payload))
	if err != nil || !bytes.Equal(replay, outB) || rec.State != ledger.StateCompleted || !bytes.Equal(rec.Result, outB) {
		t.Fatalf("replay %s %v, record %s %s: want the second attempt's result", replay, err, rec.State, rec.Result)
	}
	rows := mustKeyRows(t, e.store, runIDOf(t, payload), "1")
	var succeeded int
	for _, r := range rows {
		if r.Status == ledger.StatusSucceeded {
			succeeded++
		}
	}
	if succeeded != 1 {
		t.Fatalf("%d SUCCEEDED rows, want exactly the second attempt's: %+v", succeeded, rows)
	}
}

// The same for an at_most_once tool: the attempt that outlived its lease
// ends with TOOL_TIMEOUT and leaves the key UNKNOWN (it may have sent), so
// every later attempt is refused with TOOL_RETRY_REQUIRES_IDEMPOTENCY and
// the tool ran once.
func TestToolRunBoundedByTheLeaseAtMostOnce(t *testing.T) {
	e := newEnv(t)
	var sends atomic.Int64
	release := make(chan struct{})
	defer close(release)
	d := e.dispatcher(t, "test-send", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		sends.Add(1)
		<-release // ignores ctx: outlives its lease
		return json.RawMessage(`{"message_id":"m-1"}`), nil
	}, func(c *Config) { c.Lease = time.Second })
	payload := envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`)
	if _, errA := d.Handle(context.Background(), payload); codeOf(t, errA) != string(tool.Timeout) {
		t.Fatalf("the attempt that outlived its lease: %v, want TOOL_TIMEOUT", errA)
	}
	for _, name := range []string{"the next attempt", "a later one"} {
		if _, err := d.Handle(context.Background(), payload); codeOf(t, err) != string(tool.RetryRequiresIdempotency) {
			t.Fatalf("%s: %v, want TOOL_RETRY_REQUIRES_IDEMPOTENCY", name, err)
		}
	}
	rec := mustRecord(t, e.store, keyOf(t, payload))
	if rec.State != ledger.StateUnknown || sends.Load() != 1 {
		t.Fatalf("record %s, sends %d: want UNKNOWN and one send", rec.State, sends.Load())
	}
}

// ---------------------------------------------------------------------------
// A claim that DynamoDB applied but whose response was lost is recognised
// as this invocation's own (its per-attempt token), so the key is not left
// in flight or UNKNOWN for a tool that never ran.
func TestLostClaimResponseIsRecognisedAsOwnClaim(t *testing.T) {
	drop := &lossyUpdates{match: "if_not_exists"} // the claim, once
	e := lossyEnv(t, drop)
	// The dispatcher reads "now" for leases from its store: a clock that
	// can be moved on lets the lease pass without waiting for it.
	var skew atomic.Int64
	e.store = e.store.WithClock(func() time.Time { return time.Now().Add(time.Duration(skew.Load())) })
	var sends atomic.Int64
	d := e.dispatcher(t, "test-send", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		sends.Add(1)
		return json.RawMessage(`{"message_id":"m"}`), nil
	}, func(c *Config) { c.Lease = 3 * time.Second })
	payload := envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`)
	drop.armed.Store(true)
	_, err1 := d.Handle(context.Background(), payload)
	if drop.drops.Load() != 1 {
		t.Fatal("fixture: no claim response was dropped")
	}
	skew.Store(int64(3100 * time.Millisecond)) // the 3 s lease has passed
	_, err2 := d.Handle(context.Background(), payload)
	t.Logf("first (claim applied, response lost): %v; retry after the lease: %v; sends %d", err1, err2, sends.Load())
	if sends.Load() != 1 || err1 != nil || err2 != nil {
		t.Errorf("the tool ran %d times (first call %v, retry after the lease %v), want once and the retry its replay: none leaves the key refused for ever for a tool that never ran", sends.Load(), err1, err2)
	}
}

// ---------------------------------------------------------------------------
// Regression: DynamoDB gone. Every outcome is a contract code.
func TestDynamoStopped(t *testing.T) {
	e, p := newEnvOn(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	warm := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"warm"}`)
	if _, err := d.Handle(context.Background(), warm); err != nil {
		t.Fatal(err)
	}
	// Stopped while the tool runs: the caller still gets a contract outcome.
	var stopOnce sync.Once
	stopper := e.dispatcher(t, "test-echo", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		stopOnce.Do(func() { p.Stop() })
		return json.RawMessage(`{"text":"done"}`), nil
	})
	// the stopper's toolset cache is empty: load it before stopping
	if _, err := stopper.toolset(context.Background(), e.ts.ID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := stopper.Handle(context.Background(), envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`))
	t.Logf("stopped mid-tool: %s %v after %s (record and row are lost)", out, err, time.Since(start))
	if err != nil && !tool.Code(codeOf(t, err)).Known() {
		t.Errorf("not a contract code: %v", err)
	}
	for name, dd := range map[string]*Dispatcher{"cached toolset": d, "cold toolset": e.dispatcher(t, "test-echo", echo(&calls))} {
		start := time.Now()
		_, err := dd.Handle(context.Background(), envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`))
		t.Logf("%s, ledger down: %v after %s", name, err, time.Since(start))
		if codeOf(t, err) != string(tool.UpstreamUnavailable) {
			t.Errorf("%s, ledger down: %v", name, err)
		}
	}
	_, err = d.Handle(context.Background(), warm) // a replay with the ledger down
	if codeOf(t, err) != string(tool.UpstreamUnavailable) {
		t.Errorf("replay, ledger down: %v", err)
	}
	if calls.Load() != 1 {
		t.Errorf("the tool ran %d times", calls.Load())
	}
}

// Regression: a context cancelled before the call: a contract code, no
// record, the tool not run.
func TestCancelledBeforeInvoke(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`)
	_, err := d.Handle(ctx, payload)
	if codeOf(t, err) != string(tool.UpstreamUnavailable) || calls.Load() != 0 {
		t.Errorf("cancelled context: %v, %d calls", err, calls.Load())
	}
	if _, err := e.store.Record(context.Background(), keyOf(t, payload)); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("record after a cancelled call: %v", err)
	}
}

// Regression: 90 concurrent invocations on one key, 30 with each of three
// inputs: the tool runs once, for the invocation that claims the key; the
// 29 others with its input, arriving while it runs, get the in-flight error
// (TOOL_UPSTREAM_UNAVAILABLE); the 60 with another input are refused as key
// reuse (TOOL_INPUT_INVALID), so nobody receives another input's result;
// and every invocation is on the ledger.
func TestConcurrentMixedInputsOnOneKeyRunTheToolOnce(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	order := newOthersFirst(89)
	d := e.dispatcher(t, "test-echo", order.hold(t, echo(&calls)))
	runID := runIDOf(t, envelopeFor("test-echo", e.ts.ID, "", 1, `{}`))
	inputs := []string{"a", "b", "c"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[[2]string]int{} // {input, outcome}: invocations
	for i := range 90 {
		text := inputs[i%3]
		wg.Go(func() {
			out, err := d.Handle(context.Background(), envelopeFor("test-echo", e.ts.ID, runID, 1, fmt.Sprintf(`{"text":%q}`, text)))
			order.done()
			outcome := codeOf(t, err)
			if err == nil {
				outcome = "result " + string(out)
			}
			mu.Lock()
			seen[[2]string{text, outcome}]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if calls.Load() != 1 {
		t.Errorf("tool ran %d times", calls.Load())
	}
	var ran string
	for k := range seen {
		if strings.HasPrefix(k[1], "result ") {
			ran = k[0]
		}
	}
	want := map[[2]string]int{}
	for _, in := range inputs {
		if in == ran {
			want[[2]string{in, fmt.Sprintf(`result {"text":%q}`, in)}] = 1
			want[[2]string{in, string(tool.UpstreamUnavailable)}] = 29
		} else {
			want[[2]string{in, string(tool.InputInvalid)}] = 30
		}
	}
	if !maps.Equal(seen, want) {
		t.Errorf("outcomes by input %v, want %v", seen, want)
	}
	// Every invocation is on the ledger: a row each, replays one row with
	// their count.
	rows := ledgertest.RunRows(t, e.store, runID)
	n := 0
	for _, r := range rows {
		n += r.Invocations()
	}
	if n != 90 {
		t.Errorf("%d rows stand for %d invocations, want 90", len(rows), n)
	}
}

// Regression: concurrent retries of a key whose tool always fails
// definitely never exceed 10 attempts, counted by the ledger.
func TestConcurrentRetriesAttemptCap(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		calls.Add(1)
		return nil, tool.Errorf(tool.RateLimited, "429")
	})
	payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`)
	codes := sync.Map{}
	for range 6 {
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				_, err := d.Handle(context.Background(), payload)
				c := codeOf(t, err)
				v, _ := codes.LoadOrStore(c, new(atomic.Int64))
				v.(*atomic.Int64).Add(1)
			})
		}
		wg.Wait()
	}
	rec := mustRecord(t, e.store, keyOf(t, payload))
	codes.Range(func(k, v any) bool { t.Logf("%s: %d", k, v.(*atomic.Int64).Load()); return true })
	if calls.Load() > tool.MaxAttempts || rec.Attempts > tool.MaxAttempts {
		t.Errorf("tool ran %d times, record attempts %d", calls.Load(), rec.Attempts)
	}
	rows := mustKeyRows(t, e.store, runIDOf(t, payload), "1")
	for _, r := range rows {
		if r.Attempt > tool.MaxAttempts {
			t.Errorf("row with attempt %d", r.Attempt)
		}
	}
}

// Regression: replays formatted differently (key order, escapes, number
// spellings, whitespace) are the same call.
func TestReplayFormatting(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	first := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"a","pad":2}`)
	out, err := d.Handle(context.Background(), first)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{`{"pad":2,"text":"a"}`, `{"text":"\u0061","pad":2}`, `{"text":"a","pad":2.0}`, `{"text":"a","pad":2e0}`, "{\n\t\"text\" : \"a\" ,\"pad\":2 }"} {
		again, err := d.Handle(context.Background(), envelopeFor("test-echo", e.ts.ID, runIDOf(t, first), 1, in))
		if err != nil || !bytes.Equal(again, out) {
			t.Errorf("replay %s: %s %v", in, again, err)
		}
	}
	if calls.Load() != 1 {
		t.Errorf("tool ran %d times", calls.Load())
	}
}

// A seq is a string; the JSON number an earlier definition sent names the
// same call (one key, the tool run once); the calls of a for_each's items
// ("5.0.1", "5.1.1") are calls of their own.
func TestSeqKeys(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	first := envelopeFor("test-echo", e.ts.ID, "", 5, `{"text":"x"}`)
	run := runIDOf(t, first)
	payloads := []string{string(first), strings.Replace(string(first), `"seq":"5",`, `"seq":5,`, 1)}
	for _, seq := range []string{"5.0.1", "5.1.1"} {
		p := strings.Replace(string(first), `"seq":"5",`, `"seq":"`+seq+`",`, 1)
		payloads = append(payloads, strings.Replace(p, run+`/5"`, run+`/`+seq+`"`, 1))
	}
	for _, p := range payloads {
		if _, err := d.Handle(context.Background(), json.RawMessage(p)); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	if calls.Load() != 3 {
		t.Errorf("tool ran %d times, want 3 (5 twice, then 5.0.1 and 5.1.1)", calls.Load())
	}
	rows, err := e.store.RunRows(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, string(r.Seq)+":"+string(r.Status))
	}
	if want := "[5:SUCCEEDED 5:DEDUPLICATED 5.0.1:SUCCEEDED 5.1.1:SUCCEEDED]"; fmt.Sprint(got) != want {
		t.Errorf("rows %v, want %s", got, want)
	}
}

// Regression: odd envelopes are TOOL_INPUT_INVALID naming the field.
func TestEnvelopeOddNumbers(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	base := string(envelopeFor("test-echo", e.ts.ID, "r", 1, `{"text":"x"}`))
	for _, seq := range []string{"1.0", "1e0", "9223372036854775808", "-1", "0", "true", "null", "-0",
		`"01"`, `"1.0"`, `"1.0.0"`, `""`, `"1."`, `" 1"`, `"9223372036854775808"`} {
		payload := strings.Replace(base, `"seq":"1",`, `"seq":`+seq+`,`, 1)
		_, err := d.Handle(context.Background(), json.RawMessage(payload))
		if codeOf(t, err) != string(tool.InputInvalid) || !strings.Contains(err.Error(), "seq") {
			t.Errorf("seq %s: %v", seq, err)
		}
	}
	if calls.Load() != 0 {
		t.Errorf("tool ran %d times", calls.Load())
	}
}

// Regression: odd outputs are TOOL_OUTPUT_INVALID; an output of exactly the
// inline limit passes.
func TestOddOutputs(t *testing.T) {
	e := newEnv(t)
	var out atomic.Value
	d := e.dispatcher(t, "test-echo", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		return out.Load().(json.RawMessage), nil
	}, func(c *Config) { c.InlineLimit = 100 })
	for _, o := range []json.RawMessage{nil, json.RawMessage(`null`), json.RawMessage(`{"text":"a"} {"x":1}`), json.RawMessage(`"text"`), json.RawMessage(`{"text":1}`)} {
		out.Store(o)
		_, err := d.Handle(context.Background(), envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`))
		if codeOf(t, err) != string(tool.OutputInvalid) {
			t.Errorf("output %q: %v", o, err)
		}
	}
	exact := json.RawMessage(`{"text":"` + strings.Repeat("y", 100-11) + `"}`)
	out.Store(exact)
	if got, err := d.Handle(context.Background(), envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`)); err != nil || len(got) != 100 {
		t.Errorf("exactly at the limit: %d %v", len(got), err)
	}
}

// A number written with more characters than a double's shortest form is
// TOOL_OUTPUT_INVALID, naming its length, not its digits: the state-size
// check counts a bounded number at inputrecord.NumberBytes. The same
// characters inside a string pass.
func TestResultNumbersLongerThanADoubleAreRefused(t *testing.T) {
	e := newEnv(t)
	var out atomic.Value
	d := e.dispatcher(t, "test-echo", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		return out.Load().(json.RawMessage), nil
	})
	long := "1." + strings.Repeat("0", 30)
	out.Store(json.RawMessage(`{"text":"a","n":` + long + `}`))
	_, err := d.Handle(context.Background(), envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`))
	if codeOf(t, err) != string(tool.OutputInvalid) || !strings.Contains(err.Error(), "writes a number with 32 characters") || strings.Contains(err.Error(), long) {
		t.Fatalf("a 32-character number: %v", err)
	}
	out.Store(json.RawMessage(`{"text":"` + long + `"}`))
	if _, err := d.Handle(context.Background(), envelopeFor("test-echo", e.ts.ID, "", 2, `{"text":"x"}`)); err != nil {
		t.Fatalf("the same characters in a string: %v", err)
	}
}

func TestLongestNumber(t *testing.T) {
	for js, want := range map[string]int{
		`{"a":1}`: 1, `[-1.5e+10, 2]`: 8, `{"a":"12345678901234567890123456789"}`: 0, `{"a\"":123}`: 3, `true`: 1, `{"a":"\\","b":12}`: 2,
	} {
		if got := longestNumber([]byte(js)); got != want {
			t.Errorf("longestNumber(%s) = %d, want %d", js, got, want)
		}
	}
}

// Regression: a panic after the effect: TOOL_INTERNAL, record UNKNOWN, the
// at_most_once tool never runs again.
func TestPanicAfterPartialWork(t *testing.T) {
	e := newEnv(t)
	var sends atomic.Int64
	d := e.dispatcher(t, "test-send", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		sends.Add(1)
		panic("after send")
	})
	payload := envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`)
	_, err1 := d.Handle(context.Background(), payload)
	_, err2 := d.Handle(context.Background(), payload)
	rec := mustRecord(t, e.store, keyOf(t, payload))
	if codeOf(t, err1) != string(tool.Internal) || codeOf(t, err2) != string(tool.RetryRequiresIdempotency) || sends.Load() != 1 || rec.State != ledger.StateUnknown {
		t.Errorf("%v / %v / %d sends / %s", err1, err2, sends.Load(), rec.State)
	}
}

// A replay under another toolset id is refused: the toolset is part of the
// call (SameCall), so a recorded result is never returned against another
// pinned output schema.
func TestReplayUnderOtherToolsetIsRefused(t *testing.T) {
	e := newEnv(t)
	other := testToolset(t, 100)
	echoTool := other.Tools["test-echo"]
	echoTool.OutputSchema = json.RawMessage(`{"type":"object","required":["other"]}`)
	other.Tools["test-echo"] = echoTool
	id, _ := other.ComputeID()
	other.ID = id
	if _, err := e.store.RegisterToolset(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	first := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`)
	if _, err := d.Handle(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	out, err := d.Handle(context.Background(), envelopeFor("test-echo", other.ID, runIDOf(t, first), 1, `{"text":"x"}`))
	if err == nil {
		t.Errorf("replay under toolset %s returned %s, which its pinned output schema rejects", other.ID, out)
	}
}

// A tool that returns a valid result after its own deadline but before the
// Lambda deadline has its result kept: the outcome is known, so an
// at_most_once key is not left UNKNOWN.
func TestLateSuccessIsKept(t *testing.T) {
	e := newEnv(t)
	d := e.dispatcher(t, "test-send", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		<-ctx.Done() // the tool's deadline: the Lambda deadline less the margin
		return json.RawMessage(`{"message_id":"m"}`), nil
	})
	// The Lambda deadline is a context deadline, on the real clock: 3.5 s
	// less the 2 s margin leaves the tool 1.5 s.
	ctx, cancel := context.WithTimeout(context.Background(), 3500*time.Millisecond)
	defer cancel()
	payload := envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`)
	out, err := d.Handle(ctx, payload)
	rec, rerr := e.store.Record(context.Background(), keyOf(t, payload))
	if rerr != nil {
		t.Fatalf("the call's record: %v (Handle: %s %v)", rerr, out, err)
	}
	if err != nil || string(out) != `{"message_id":"m"}` || rec.State != ledger.StateCompleted {
		t.Errorf("known success discarded: %s %v, record %s", out, err, rec.State)
	}
}

var _ = toolset.Tool{}

// lossyUpdates forwards UpdateItem requests whose body contains match to
// DynamoDB and, after the server applied one, reports a connection reset
// instead of its response (once, or every time), so that the SDK sends it
// again or gives up.
type lossyUpdates struct {
	base   http.RoundTripper
	match  string
	always bool
	armed  atomic.Bool
	drops  atomic.Int64
}

func (l *lossyUpdates) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := l.base.RoundTrip(r)
	if err == nil && l.armed.Load() && strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".UpdateItem") &&
		bytes.Contains(body, []byte(l.match)) && (l.always || l.drops.Load() == 0) {
		l.drops.Add(1)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, errors.New("read tcp 127.0.0.1: connection reset by peer")
	}
	return resp, err
}

func lossyEnv(t *testing.T, l *lossyUpdates) *env {
	p := localtest.Dynalite(t)
	l.base = http.DefaultTransport
	client := local.DynamoDB(p.Endpoint(), func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: l} })
	if err := ledger.CreateTable(context.Background(), client, "toolgate-lossy"); err != nil {
		t.Fatal(err)
	}
	e := &env{db: &countingDB{API: client}, ts: testToolset(t, 100)}
	e.store = ledger.New(e.db, "toolgate-lossy")
	if _, err := e.store.RegisterToolset(context.Background(), e.ts); err != nil {
		t.Fatal(err)
	}
	return e
}

// A finish whose response is lost, which the SDK sends again, records its
// attempt once: the second send's failed condition reads as our own
// finish, not as a lost claim.
func TestFinishSentTwiceRecordsOneRow(t *testing.T) {
	l := &lossyUpdates{match: `,r=:r`} // the finish of a success: the only update that sets the result
	e := lossyEnv(t, l)
	var sends atomic.Int64
	d := e.dispatcher(t, "test-send", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		sends.Add(1)
		return json.RawMessage(`{"message_id":"m"}`), nil
	})
	payload := envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`)
	l.armed.Store(true)
	if _, err := d.Handle(context.Background(), payload); err != nil {
		t.Fatal(err)
	}
	if l.drops.Load() != 1 {
		t.Fatal("fixture: no finish response was dropped")
	}
	rows := ledgertest.RunRows(t, e.store, runIDOf(t, payload))
	if len(rows) != 1 || rows[0].Status != ledger.StatusSucceeded || sends.Load() != 1 {
		t.Fatalf("rows %+v, %d sends; want one SUCCEEDED row", rows, sends.Load())
	}
}

// A claim DynamoDB applied although its every response was lost is
// released: the at_most_once key is FAILED, not in doubt, so a retry runs
// the tool, once; the ledger shows the refused attempt and the success.
// (Each claim request the SDK sent again counted one invocation on the
// item: the call's DEDUPLICATED count may show them, docs/ledger.md.)
func TestClaimAppliedButLostIsReleased(t *testing.T) {
	l := &lossyUpdates{match: "if_not_exists", always: true}
	e := lossyEnv(t, l)
	var sends atomic.Int64
	d := e.dispatcher(t, "test-send", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		sends.Add(1)
		return json.RawMessage(`{"message_id":"m"}`), nil
	}, func(c *Config) { c.Lease = 2 * time.Second })
	payload := envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`)
	l.armed.Store(true)
	if _, err := d.Handle(context.Background(), payload); codeOf(t, err) != string(tool.UpstreamUnavailable) {
		t.Fatalf("claim lost: %v", err)
	}
	l.armed.Store(false)
	rec, err := e.store.Record(context.Background(), keyOf(t, payload))
	if err != nil || rec.State != ledger.StateFailed {
		t.Fatalf("record %+v %v, want FAILED (released)", rec, err)
	}
	if _, err := d.Handle(context.Background(), payload); err != nil || sends.Load() != 1 {
		t.Fatalf("the retry: %v, %d sends; want the tool run once", err, sends.Load())
	}
	rows := ledgertest.RunRows(t, e.store, runIDOf(t, payload))
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%d:%s", r.Attempt, r.Status))
	}
	if len(got) < 2 || strings.Join(got[:2], " ") != "1:REFUSED 2:SUCCEEDED" {
		t.Fatalf("rows %v, want the released attempt and the success", got)
	}
}

// A finish that arrives after its lease, when another attempt holds the
// key, records its outcome on its own attempt's entry: attempt 1 shows
// once, with its outcome.
func TestLateFinishRecordsItsOwnEntry(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now()
	rec := &ledger.Record{Key: "run-late/1", ExternalKey: "AAAAAAAAAAAAAAAAAAAAAA/1", Step: "s", Tool: "test-echo", ToolsetID: e.ts.ID, InputDigest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", LeaseUntil: now.Add(-time.Second), StartedAt: now}
	if ok, _, err := e.store.Claim(ctx, rec); !ok || err != nil {
		t.Fatal(ok, err)
	}
	second := *rec
	second.Token = ""
	_, old, _ := e.store.Claim(ctx, &second)
	if ok, err := e.store.Reclaim(ctx, old, time.Now().Add(time.Minute)); !ok || err != nil {
		t.Fatal(ok, err)
	}
	owned, err := e.store.Finish(ctx, rec.Key, rec.Token, ledger.StateCompleted, json.RawMessage(`{}`), &ledger.Row{Attempt: 1, Status: ledger.StatusSucceeded, StartedAt: now, EndedAt: now})
	if owned || err != nil {
		t.Fatalf("the late finish: owned %v, %v", owned, err)
	}
	rows := ledgertest.RunRows(t, e.store, "run-late")
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%d:%s", r.Attempt, r.Status))
	}
	if strings.Join(got, " ") != "1:SUCCEEDED 2:IN_PROGRESS" {
		t.Fatalf("rows %v", got)
	}
}

// ignoresContext is a test-echo tool that ignores its context: it returns
// once the test has ended, or after orderingTimeout should Handle wait
// for it.
func ignoresContext(t *testing.T) toolcall.Func {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		select {
		case <-release:
		case <-time.After(orderingTimeout):
		}
		return json.RawMessage(`{"text":"late"}`), nil
	}
}
