package dispatch

// Adversarial tests of the governed dispatcher. Tests named TestAdv* that
// fail demonstrate a defect; the comment above each says what should happen.
// Tests marked "regression" are expected to pass and pin behaviour that was
// probed and found correct.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	"github.com/toolgate/toolgate/shared/schema"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// padEcho returns the "pad" member exactly as the tool received it.
func padEcho(calls *atomic.Int64) tool.Func {
	return func(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
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
// DEFECT: two different inputs share one digest. Integers beyond 2^53 are
// rounded by RFC 8785 canonicalisation, so {"pad":9007199254740993} and
// {"pad":9007199254740992} digest alike; the tool, however, receives the raw
// input and acts on the exact value. A second call on the same key with the
// other input gets the first call's result (DEDUPLICATED) — another call's
// result. Should: TOOL_INPUT_INVALID "idempotency key reused with a
// different call" (or refuse inputs that are not exactly representable /
// hand the tool the canonical input that was digested).
func TestAdvBigIntegerInputsShareDigest(t *testing.T) {
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
	if !bytes.Contains(out2, []byte("9007199254740992")) && len(out2) < 100 {
		t.Logf("result %s", out2)
	}
}

// DEFECT: the input is validated (and digested) in canonical form, but the
// tool receives the raw bytes. {"pad":1.0} is validated as an integer (its
// canonical form is 1), then the tool is handed 1.0, which a Go int field
// rejects: TOOL_INTERNAL for an input the pinned schema accepted. Should:
// the tool gets the value that was validated (the canonical input).
func TestAdvValidatedInputDiffersFromDelivered(t *testing.T) {
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
// DEFECT: the deadline is only advisory. A tool that ignores ctx keeps the
// handler past the Lambda deadline; on Lambda the runtime is killed and the
// caller sees Sandbox.Timedout, not one of the nine codes, and the record
// stays IN_PROGRESS with no row. Should: Handle returns TOOL_TIMEOUT at
// deadline minus margin (run the tool in a goroutine and stop waiting), with
// the record finished and the row written before the Lambda deadline.
func TestAdvToolIgnoringDeadlineOverrunsLambda(t *testing.T) {
	e := newEnv(t)
	d := e.dispatcher(t, "test-echo", func(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
		time.Sleep(4 * time.Second) // ignores ctx
		return json.RawMessage(`{"text":"late"}`), nil
	})
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

// DEFECT: a DynamoDB request that hangs is bounded only by the Lambda
// deadline itself, not by deadline minus margin, so the handler returns at
// (or after) the instant Lambda kills it. Should: ledger calls are bounded so
// that the caller gets TOOL_UPSTREAM_UNAVAILABLE before the deadline.
func TestAdvHungLedgerReturnsBeforeDeadline(t *testing.T) {
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

// DEFECT: when less than the margin is left, the dispatcher still claims the
// key and hands the tool an already-expired context. A well-behaved
// at_most_once tool returns ctx.Err() without doing anything, Classify makes
// that TOOL_TIMEOUT *maybe applied*, the record becomes UNKNOWN and the call
// can never run again (TOOL_RETRY_REQUIRES_IDEMPOTENCY) although nothing was
// sent. Should: refuse before the claim (TOOL_TIMEOUT, definite) or record
// FAILED because the tool got no time, so the retry runs it once.
func TestAdvNoTimeLeftPoisonsAtMostOnce(t *testing.T) {
	e := newEnv(t)
	var sends atomic.Int64
	send := e.dispatcher(t, "test-send", func(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
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

// DEFECT: after the claim, the record finish and the row use the caller's
// context. If it is cancelled, both writes fail: the record stays IN_PROGRESS
// (an at_most_once tool becomes UNKNOWN once the lease passes) and no row is
// written. Should: the finish and the row use a context that survives
// cancellation (context.WithoutCancel with its own short bound).
func TestAdvCancelAfterClaimLeavesNoTrace(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := e.dispatcher(t, "test-echo", func(c2 context.Context, call *tool.Call) (json.RawMessage, error) {
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
	rows, _ := e.store.KeyRows(context.Background(), runIDOf(t, payload), 1)
	if rerr != nil || rec.State == ledger.InProgress {
		t.Errorf("record after a cancelled attempt: %+v %v (want it finished, not IN_PROGRESS)", rec, rerr)
	}
	if len(rows) != 1 {
		t.Errorf("%d rows after a cancelled attempt, want 1", len(rows))
	}
}

// ---------------------------------------------------------------------------
// DEFECT: an at_most_once tool runs twice when the pinned output schema does
// not compile. checkOutput returns TOOL_INTERNAL after the tool ran; fail()
// promotes only TOOL_OUTPUT_INVALID to maybe-applied, so the record becomes
// FAILED (definite) and a retry sends again. RegisterToolset does not compile
// schemas, so such a toolset can be registered. Should: any failure after
// the tool returned is maybe-applied for a non-idempotent tool (UNKNOWN), or
// the schemas are compiled before the claim / at registration.
func TestAdvUncompilableOutputSchemaRerunsAtMostOnce(t *testing.T) {
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

// DEFECT (policy): a non-tool.Error from an at_most_once tool is recorded as
// a definite failure, so a retry runs it again, although the dispatcher
// cannot know the effect did not happen (a panic in the same place is treated
// as maybe applied). Should: an unclassified error after Run began is
// maybe-applied for a non-idempotent tool (UNKNOWN), like a panic.
func TestAdvForeignErrorAfterEffectRerunsAtMostOnce(t *testing.T) {
	e := newEnv(t)
	var sends atomic.Int64
	d := e.dispatcher(t, "test-send", func(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
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
// DEFECT: a stored toolset whose body does not digest to its id (tampered)
// is reported as TOOL_UPSTREAM_UNAVAILABLE "the ledger is unavailable",
// which is retryable: Step Functions retries a permanent condition. A toolset
// item with no body makes Store.Toolset panic (recovered as TOOL_INTERNAL).
// Should: a non-retryable code (TOOL_PERMISSION_DENIED, or TOOL_INTERNAL),
// no panic.
func TestAdvTamperedToolset(t *testing.T) {
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
// DEFECT: strict envelope decoding accepts trailing data that is a closing
// bracket: json.Decoder.More reports false before ']' and '}', so
// `{...}}` and `{...}]` pass. Should: TOOL_INPUT_INVALID.
func TestAdvEnvelopeTrailingCloser(t *testing.T) {
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

// DEFECT: a null where a boolean is required is accepted silently
// (json.Unmarshal of null into a bool is a no-op). Should: TOOL_INPUT_INVALID
// naming "tolerate_duplicates".
func TestAdvEnvelopeNullForBool(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	payload := strings.Replace(string(envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`)), `"tolerate_duplicates":false`, `"tolerate_duplicates":null`, 1)
	_, err := d.Handle(context.Background(), json.RawMessage(payload))
	if codeOf(t, err) != string(tool.InputInvalid) || !strings.Contains(err.Error(), "tolerate_duplicates") {
		t.Errorf("tolerate_duplicates:null: %v (tool ran %d times)", err, calls.Load())
	}
}

// DEBATABLE: duplicate envelope members are accepted, the last one wins. A
// policy layer that reads the first "tool" sees test-send; the dispatcher
// runs test-echo. Input objects with duplicate members are refused (jcs), so
// the envelope is less strict than its input.
func TestAdvEnvelopeDuplicateMembers(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	payload := `{"tool":"test-send",` + strings.TrimPrefix(string(envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`)), "{")
	_, err := d.Handle(context.Background(), json.RawMessage(payload))
	if codeOf(t, err) != string(tool.InputInvalid) {
		t.Errorf("envelope with two \"tool\" members accepted: %v (tool ran %d times)", err, calls.Load())
	}
}

// DEBATABLE: invalid UTF-8 in run_id is silently replaced by U+FFFD, so two
// byte-different run ids become one key: the second run gets the first's
// result. Should: TOOL_INPUT_INVALID naming run_id.
func TestAdvInvalidUTF8RunIDsCollide(t *testing.T) {
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
// TOOLGATE_INLINE_LIMIT_BYTES=0 and negative durations are refused. A lease
// shorter than the function timeout is allowed (tests use one): the tool's
// run is bounded by the lease, see the two lease tests below.
func TestAdvConfigAcceptsBadValues(t *testing.T) {
	get := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if _, _, err := ConfigFromEnv("test-echo", get(map[string]string{EnvTable: "t", EnvInlineLimit: "0"})); err == nil {
		t.Error("TOOLGATE_INLINE_LIMIT_BYTES=0 accepted (silently the default)")
	}
	if _, err := New(Config{Tool: "x", DeadlineMargin: -time.Minute}, nil, nil, nil); err == nil {
		t.Error("negative DeadlineMargin accepted (the tool would run past the Lambda deadline)")
	}
}

// DEFECT: the tool is not bounded by the lease, and a lost finish is
// ignored. With a lease shorter than the tool's run (no ctx deadline, or a
// lease under the timeout), attempt B re-claims the key while A still runs.
// A's Finish fails its condition, the error is dropped, and A still writes a
// SUCCEEDED row and returns its own result, which differs from the one the
// record keeps and every replay returns. Should: the tool's context ends
// before the lease does; a lost finish is detected (row not SUCCEEDED, or the
// recorded result returned).
func TestAdvLeaseExpiresWhileRunningAtLeastOnce(t *testing.T) {
	e := newEnv(t)
	var runs atomic.Int64
	d := e.dispatcher(t, "test-echo", func(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
		runs.Add(1)
		if c.Attempt == 1 {
			time.Sleep(2500 * time.Millisecond)
		}
		return json.RawMessage(fmt.Sprintf(`{"text":"attempt-%d"}`, c.Attempt)), nil
	}, func(c *Config) { c.Lease = time.Second })
	payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x"}`)
	var outA json.RawMessage
	var errA error
	done := make(chan struct{})
	go func() { outA, errA = d.Handle(context.Background(), payload); close(done) }()
	time.Sleep(1300 * time.Millisecond)
	outB, errB := d.Handle(context.Background(), payload)
	<-done
	replay, _ := d.Handle(context.Background(), payload)
	rec, _ := e.store.Record(context.Background(), keyOf(t, payload))
	rows, _ := e.store.KeyRows(context.Background(), runIDOf(t, payload), 1)
	t.Logf("A: %s %v; B: %s %v; replay %s; record %s %s attempts %d; tool ran %d", outA, errA, outB, errB, replay, rec.State, rec.Result, rec.Attempts, runs.Load())
	for _, r := range rows {
		t.Logf("row attempt %d %s %s", r.Attempt, r.Status, r.OutputDigest)
	}
	if errA == nil && !bytes.Equal(outA, rec.Result) {
		t.Errorf("A returned %s and wrote a SUCCEEDED row, but its finish was lost: the key's result is %s", outA, rec.Result)
	}
}

// Same race for at_most_once: B finds the lease expired, marks the record
// UNKNOWN and reports TOOL_RETRY_REQUIRES_IDEMPOTENCY while A is still
// legitimately running; A then succeeds, its Finish fails silently, it
// returns success with a SUCCEEDED row, and the record stays UNKNOWN for
// ever: every later retry is refused although the outcome is known.
func TestAdvLeaseExpiresWhileRunningAtMostOnce(t *testing.T) {
	e := newEnv(t)
	var sends atomic.Int64
	d := e.dispatcher(t, "test-send", func(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
		sends.Add(1)
		time.Sleep(2500 * time.Millisecond)
		return json.RawMessage(`{"message_id":"m-1"}`), nil
	}, func(c *Config) { c.Lease = time.Second })
	payload := envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`)
	var outA json.RawMessage
	var errA error
	done := make(chan struct{})
	go func() { outA, errA = d.Handle(context.Background(), payload); close(done) }()
	time.Sleep(1300 * time.Millisecond)
	_, errB := d.Handle(context.Background(), payload)
	<-done
	_, errC := d.Handle(context.Background(), payload)
	rec, _ := e.store.Record(context.Background(), keyOf(t, payload))
	rows, _ := e.store.KeyRows(context.Background(), runIDOf(t, payload), 1)
	t.Logf("A: %s %v; B (during A): %v; C (after A): %v; record %s; sends %d", outA, errA, errB, errC, rec.State, sends.Load())
	for _, r := range rows {
		t.Logf("row attempt %d %s %s", r.Attempt, r.Status, r.ErrorCode)
	}
	if errA == nil && rec.State != ledger.Completed {
		t.Errorf("A succeeded (row SUCCEEDED, result returned) but the record is %s; later callers get %v", rec.State, errC)
	}
}

// ---------------------------------------------------------------------------
// DEFECT: a claim that DynamoDB applied but whose response was lost (the SDK
// retries the PutItem after "connection reset") is not recognised as this
// invocation's own: the retried conditional put fails, the record reads as
// IN_PROGRESS with a live lease, and the caller gets "in flight". Once the
// lease passes, an at_most_once key is UNKNOWN for ever although the tool
// never ran. Should: the claim carries a per-attempt token, and a failed
// condition on a record holding our own token is our claim.
func TestAdvClaimResponseLost(t *testing.T) {
	drop := &lossyUpdates{match: "if_not_exists"} // the claim, once
	e := lossyEnv(t, drop)
	var sends atomic.Int64
	d := e.dispatcher(t, "test-send", func(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
		sends.Add(1)
		return json.RawMessage(`{"message_id":"m"}`), nil
	}, func(c *Config) { c.Lease = 3 * time.Second })
	payload := envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`)
	drop.armed.Store(true)
	_, err1 := d.Handle(context.Background(), payload)
	if drop.drops.Load() != 1 {
		t.Fatal("fixture: no claim response was dropped")
	}
	time.Sleep(3100 * time.Millisecond)
	_, err2 := d.Handle(context.Background(), payload)
	t.Logf("first (claim applied, response lost): %v; retry after the lease: %v; sends %d", err1, err2, sends.Load())
	if sends.Load() != 1 {
		t.Errorf("the tool never ran, and the key is refused for ever: %v", err2)
	}
}

// ---------------------------------------------------------------------------
// Regression: DynamoDB gone. Every outcome is a contract code.
func TestAdvDynamoStopped(t *testing.T) {
	e, p := newEnvOn(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	warm := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"warm"}`)
	if _, err := d.Handle(context.Background(), warm); err != nil {
		t.Fatal(err)
	}
	// Stopped while the tool runs: the caller still gets a contract outcome.
	var stopOnce sync.Once
	stopper := e.dispatcher(t, "test-echo", func(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
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
func TestAdvCancelledBeforeInvoke(t *testing.T) {
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

// Regression: 90 concurrent invocations on one key with three different
// inputs: the tool runs once, nobody receives another input's result, every
// other outcome is key reuse or in flight, and every invocation is on the
// ledger.
func TestAdvMixedInputsOneKey(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", func(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
		time.Sleep(200 * time.Millisecond)
		return echo(&calls)(ctx, c)
	})
	runID := runIDOf(t, envelopeFor("test-echo", e.ts.ID, "", 1, `{}`))
	inputs := []string{"a", "b", "c"}
	var wg sync.WaitGroup
	errs := make(chan error, 90)
	for i := range 90 {
		text := inputs[i%3]
		wg.Go(func() {
			out, err := d.Handle(context.Background(), envelopeFor("test-echo", e.ts.ID, runID, 1, fmt.Sprintf(`{"text":%q}`, text)))
			switch code := codeOf(t, err); {
			case err == nil && string(out) != fmt.Sprintf(`{"text":%q}`, text):
				errs <- fmt.Errorf("input %s got %s", text, out)
			case code != "" && code != string(tool.InputInvalid) && code != string(tool.UpstreamUnavailable):
				errs <- fmt.Errorf("input %s: %v", text, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if calls.Load() != 1 {
		t.Errorf("tool ran %d times", calls.Load())
	}
	// Every invocation is on the ledger: a row each, replays one row with
	// their count.
	rows, _ := e.store.RunRows(context.Background(), runID)
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
func TestAdvConcurrentRetriesAttemptCap(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", func(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
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
	rec, _ := e.store.Record(context.Background(), keyOf(t, payload))
	codes.Range(func(k, v any) bool { t.Logf("%s: %d", k, v.(*atomic.Int64).Load()); return true })
	if calls.Load() > tool.MaxAttempts || rec.Attempts > tool.MaxAttempts {
		t.Errorf("tool ran %d times, record attempts %d", calls.Load(), rec.Attempts)
	}
	rows, _ := e.store.KeyRows(context.Background(), runIDOf(t, payload), 1)
	for _, r := range rows {
		if r.Attempt > tool.MaxAttempts {
			t.Errorf("row with attempt %d", r.Attempt)
		}
	}
}

// Regression: replays formatted differently (key order, escapes, number
// spellings, whitespace) are the same call.
func TestAdvReplayFormatting(t *testing.T) {
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

// Regression: odd envelopes are TOOL_INPUT_INVALID naming the field.
func TestAdvEnvelopeOddNumbers(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", echo(&calls))
	base := string(envelopeFor("test-echo", e.ts.ID, "r", 1, `{"text":"x"}`))
	for _, seq := range []string{"1.0", "1e0", "9223372036854775808", "-1", "0", `"1"`, "true", "null", "-0"} {
		payload := strings.Replace(base, `"seq":1,`, `"seq":`+seq+`,`, 1)
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
func TestAdvOddOutputs(t *testing.T) {
	e := newEnv(t)
	var out atomic.Value
	d := e.dispatcher(t, "test-echo", func(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
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

// Regression: a panic after the effect: TOOL_INTERNAL, record UNKNOWN, the
// at_most_once tool never runs again.
func TestAdvPanicAfterPartialWork(t *testing.T) {
	e := newEnv(t)
	var sends atomic.Int64
	d := e.dispatcher(t, "test-send", func(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
		sends.Add(1)
		panic("after send")
	})
	payload := envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`)
	_, err1 := d.Handle(context.Background(), payload)
	_, err2 := d.Handle(context.Background(), payload)
	rec, _ := e.store.Record(context.Background(), keyOf(t, payload))
	if codeOf(t, err1) != string(tool.Internal) || codeOf(t, err2) != string(tool.RetryRequiresIdempotency) || sends.Load() != 1 || rec.State != ledger.Unknown {
		t.Errorf("%v / %v / %d sends / %s", err1, err2, sends.Load(), rec.State)
	}
}

// DEBATABLE: a replay under a different toolset id returns the recorded
// result although it does not match the replaying envelope's pinned output
// schema; toolset_id is not part of SameCall.
func TestAdvReplayUnderOtherToolset(t *testing.T) {
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

// DEBATABLE: a tool that returns a valid result after its deadline (but
// before the Lambda deadline) has it discarded as TOOL_TIMEOUT, maybe
// applied: for at_most_once the key is UNKNOWN although the outcome is known.
func TestAdvLateSuccessDiscarded(t *testing.T) {
	e := newEnv(t)
	d := e.dispatcher(t, "test-send", func(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
		time.Sleep(1700 * time.Millisecond)
		return json.RawMessage(`{"message_id":"m"}`), nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3500*time.Millisecond)
	defer cancel()
	payload := envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x"}`)
	out, err := d.Handle(ctx, payload)
	rec, _ := e.store.Record(context.Background(), keyOf(t, payload))
	if err != nil {
		t.Errorf("known success discarded: %v, record %s", err, rec.State)
	}
	_ = out
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
	l := &lossyUpdates{match: `"result"`} // the finish of a success: the only update that sets the result
	e := lossyEnv(t, l)
	var sends atomic.Int64
	d := e.dispatcher(t, "test-send", func(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
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
	rows, _ := e.store.RunRows(context.Background(), runIDOf(t, payload))
	if len(rows) != 1 || rows[0].Status != ledger.Succeeded || sends.Load() != 1 {
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
	d := e.dispatcher(t, "test-send", func(ctx context.Context, c *tool.Call) (json.RawMessage, error) {
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
	if err != nil || rec.State != ledger.Failed {
		t.Fatalf("record %+v %v, want FAILED (released)", rec, err)
	}
	if _, err := d.Handle(context.Background(), payload); err != nil || sends.Load() != 1 {
		t.Fatalf("the retry: %v, %d sends; want the tool run once", err, sends.Load())
	}
	rows, _ := e.store.RunRows(context.Background(), runIDOf(t, payload))
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
	rec := &ledger.Record{Key: "run-late/1", Step: "s", Tool: "test-echo", ToolsetID: e.ts.ID, InputDigest: "sha256:x", LeaseUntil: now.Add(-time.Second), StartedAt: now}
	if ok, _, err := e.store.Claim(ctx, rec); !ok || err != nil {
		t.Fatal(ok, err)
	}
	second := *rec
	second.Token = ""
	_, old, _ := e.store.Claim(ctx, &second)
	if ok, err := e.store.Reclaim(ctx, old, time.Now().Add(time.Minute)); !ok || err != nil {
		t.Fatal(ok, err)
	}
	owned, err := e.store.Finish(ctx, rec.Key, rec.Token, ledger.Completed, json.RawMessage(`{}`), &ledger.Row{Attempt: 1, Status: ledger.Succeeded, StartedAt: now, EndedAt: now})
	if owned || err != nil {
		t.Fatalf("the late finish: owned %v, %v", owned, err)
	}
	rows, _ := e.store.RunRows(ctx, "run-late")
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%d:%s", r.Attempt, r.Status))
	}
	if strings.Join(got, " ") != "1:SUCCEEDED 2:IN_PROGRESS" {
		t.Fatalf("rows %v", got)
	}
}
