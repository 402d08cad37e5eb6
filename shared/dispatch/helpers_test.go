package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/lane"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
)

// The test tools live here, not in the catalog: test-echo is idempotent
// (at_least_once), test-send is not (at_most_once), like send-email;
// test-gated is at_most_once and needs an approved review, like send-email
// (approval_test.go). test-send is not gated, so that the at_most_once
// tests need no approvals.
const testCatalog = `{"tools":[
 {"name":"test-echo","description":"echo","idempotent":true,"policy":"at_least_once","review_required":false,
  "retry":{"max_attempts":3,"interval_seconds":1,"backoff_rate":2},"function_timeout_seconds":10,"function":"test-echo",
  "input_schema":{"type":"object","additionalProperties":false,"required":["text"],"properties":{"text":{"type":"string","maxLength":%d},"pad":{"type":"integer","minimum":0},"fail":{"type":"string"}}},
  "output_schema":{"type":"object","required":["text"],"properties":{"text":{"type":"string"}}}},
 {"name":"test-send","description":"send","idempotent":false,"policy":"at_most_once","review_required":false,
  "retry":{"max_attempts":1,"interval_seconds":1,"backoff_rate":2},"function_timeout_seconds":10,"function":"test-send",
  "input_schema":{"type":"object","additionalProperties":false,"required":["text"],"properties":{"text":{"type":"string"},"fail":{"type":"string"}}},
  "output_schema":{"type":"object","required":["message_id"],"properties":{"message_id":{"type":"string"}}}},
 {"name":"test-gated","description":"gated send","idempotent":false,"policy":"at_most_once","review_required":true,
  "retry":{"max_attempts":1,"interval_seconds":1,"backoff_rate":2},"function_timeout_seconds":10,"function":"test-gated",
  "input_schema":{"type":"object","additionalProperties":false,"required":["text"],"properties":{"text":{"type":"string"},"n":{"type":"number"},"fail":{"type":"string"}}},
  "output_schema":{"type":"object","required":["message_id"],"properties":{"message_id":{"type":"string"}}}}
]}`

// testToolset builds the test toolset; maxLen varies test-echo's schema so
// that two toolsets differ only in a schema.
func testToolset(t testing.TB, maxLen int) *toolset.Toolset {
	t.Helper()
	c, err := catalog.Parse([]byte(fmt.Sprintf(testCatalog, maxLen)))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := toolset.FromCatalog(c, []string{"test-echo", "test-send", "test-gated"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// countingDB counts the DynamoDB requests a dispatcher makes.
type countingDB struct {
	ledger.API
	puts, gets, updates, queries, failedConds atomic.Int64
}

func (c *countingDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.puts.Add(1)
	out, err := c.API.PutItem(ctx, in, o...)
	if ledger.IsConditionFailed(err) {
		c.failedConds.Add(1)
	}
	return out, err
}

func (c *countingDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.gets.Add(1)
	return c.API.GetItem(ctx, in, o...)
}

func (c *countingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.updates.Add(1)
	out, err := c.API.UpdateItem(ctx, in, o...)
	if ledger.IsConditionFailed(err) {
		c.failedConds.Add(1)
	}
	return out, err
}

func (c *countingDB) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.queries.Add(1)
	return c.API.Query(ctx, in, o...)
}

func (c *countingDB) reset() {
	c.queries.Store(0)
	c.puts.Store(0)
	c.gets.Store(0)
	c.updates.Store(0)
	c.failedConds.Store(0)
}

func (c *countingDB) writes() int64 { return c.puts.Load() + c.updates.Load() }

// env is a dispatcher test environment on a fresh dynalite.
type env struct {
	db     *countingDB
	store  *ledger.Store
	ts     *toolset.Toolset
	dynamo *local.Process // the dynalite newEnv started
	// front is the counting front the env's client sends through
	// (newFrontedEnv), or nil.
	front *local.CountingFront
	// mark is the front's count at the last reset; excluded what was
	// sent since that is not the measured calls'.
	mark, excluded local.Counts
}

func dynamoClient(endpoint string) *dynamodb.Client {
	return local.DynamoDB(endpoint)
}

func newEnv(t testing.TB) *env {
	t.Helper()
	p := localtest.Dynalite(t)
	return newEnvAt(t, p, nil)
}

// newFrontedEnv is newEnv whose client sends through a counting front
// before dynalite, so that a benchmark counts the bytes it sends.
func newFrontedEnv(t testing.TB) *env {
	t.Helper()
	p := localtest.Dynalite(t)
	return newEnvAt(t, p, localtest.CountingFront(t, p.Endpoint()))
}

// newEnvAt is the env on dynalite p, through front when it is not nil.
func newEnvAt(t testing.TB, p *local.Process, front *local.CountingFront) *env {
	t.Helper()
	endpoint := p.Endpoint()
	if front != nil {
		endpoint = front.Endpoint()
	}
	client := dynamoClient(endpoint)
	if err := dynamo.CreateTable(context.Background(), client, "toolgate-test"); err != nil {
		t.Fatal(err)
	}
	db := &countingDB{API: client}
	e := &env{db: db, store: ledger.New(db, "toolgate-test"), ts: testToolset(t, 100), dynamo: p, front: front}
	if _, err := e.store.RegisterToolset(context.Background(), e.ts); err != nil {
		t.Fatal(err)
	}
	return e
}

// testMAC is the test dispatchers' sealing key; testSince the stage's
// first deploy with seals, long before any test run.
var (
	testMAC   = bytes.Repeat([]byte{7}, 32)
	testSince = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
)

// dispatcher is a test dispatcher of tool name on e; each of mod is a
// func(*Config) or a func(*Deps) that changes them.
func (e *env) dispatcher(t testing.TB, name string, run toolcall.Func, mod ...any) *Dispatcher {
	t.Helper()
	cfg := Config{Mode: OneTool(name), MemoryMB: 128, Lane: lane.SFN, LedgerSince: testSince, CompactSince: time.Now(), ExternalKeySecret: testSecret}
	deps := e.deps(t, run, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	for _, m := range mod {
		switch m := m.(type) {
		case func(*Config):
			m(&cfg)
		case func(*Deps):
			m(&deps)
		default:
			t.Fatalf("dispatcher: %T is neither func(*Config) nor func(*Deps)", m)
		}
	}
	d, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// deps are a test dispatcher's collaborators: the env's stores, sealed
// with testMAC as the function's main seals them (shared/toolfunction),
// and no caller verifier (the sfn lane's tests need none).
func (e *env) deps(t testing.TB, run toolcall.Func, log *slog.Logger) Deps {
	t.Helper()
	return Deps{Ledger: e.store.WithMAC(mustSealKey(t, testMAC)), Reviews: e.reviews(), Run: run, Log: log}
}

// testSecret is the tests' external key secret (Config.ExternalKeySecret).
var testSecret = []byte("the dispatcher tests' external key secret")

var runSeq atomic.Int64

// envelopeFor writes an envelope for a fresh run (or the given one).
func envelopeFor(toolName, toolsetID, runID string, seq int64, input string) json.RawMessage {
	if runID == "" {
		runID = fmt.Sprintf("arn:aws:states:us-east-1:000000000000:execution:toolgate-test:run-%d-%d", time.Now().UnixNano(), runSeq.Add(1))
	}
	return json.RawMessage(fmt.Sprintf(`{"tool":%q,"toolset_id":%q,"run_id":%q,"seq":"%d","step":"s","idempotency_key":"%s/%d","attempt":1,"tolerate_duplicates":false,"input":%s}`,
		toolName, toolsetID, runID, seq, runID, seq, input))
}

func runIDOf(t testing.TB, payload json.RawMessage) string {
	var v struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(payload, &v); err != nil {
		t.Fatal(err)
	}
	return v.RunID
}

// mustRecord reads the record of key through Store.Record, failing t with
// the error (never a nil record to dereference).
func mustRecord(t testing.TB, s *ledger.Store, key string) *ledger.Record {
	t.Helper()
	rec, err := s.Record(context.Background(), key)
	if err != nil {
		t.Fatalf("Record(%s): %v", key, err)
	}
	return rec
}

// mustKeyRows reads the rows of call seq of runID through Store.KeyRows,
// failing t with the error.
func mustKeyRows(t testing.TB, s *ledger.Store, runID string, seq tool.Seq) []ledger.Row {
	t.Helper()
	rows, err := s.KeyRows(context.Background(), runID, seq)
	if err != nil {
		t.Fatalf("KeyRows(%s, %s): %v", runID, seq, err)
	}
	return rows
}

// codeOf returns the caller-visible error type of Handle's error.
func codeOf(t testing.TB, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	ive, ok := err.(messages.InvokeResponse_Error)
	if !ok {
		t.Fatalf("Handle returned %T %v, not a messages.InvokeResponse_Error", err, err)
	}
	return ive.Type
}

func echo(calls *atomic.Int64) toolcall.Func {
	return func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		calls.Add(1)
		var in struct {
			Text string
			Pad  int
		}
		if err := json.Unmarshal(c.Input, &in); err != nil {
			return nil, err
		}
		return json.Marshal(map[string]string{"text": in.Text + strings.Repeat("x", in.Pad)})
	}
}

var errBoom = errors.New("boom")

// orderingTimeout bounds a test's wait for an order it sets up with a
// channel: a broken order fails the test instead of hanging it.
const orderingTimeout = 20 * time.Second

// othersFirst orders concurrent invocations on one key: the tool of the
// invocation that wins the claim starts only once every other invocation
// has returned, so that each of them meets the key in flight, none of them
// completed.
type othersFirst struct {
	others   int64
	returned atomic.Int64
	open     chan struct{} // closed when the others have returned
}

func newOthersFirst(others int) *othersFirst {
	return &othersFirst{others: int64(others), open: make(chan struct{})}
}

// done counts an invocation that has returned; the test calls it after
// every Handle.
func (o *othersFirst) done() {
	if o.returned.Add(1) == o.others {
		close(o.open)
	}
}

// hold wraps run to start once the others have returned; after
// orderingTimeout it fails the test and the call instead.
func (o *othersFirst) hold(t testing.TB, run toolcall.Func) toolcall.Func {
	return func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		select {
		case <-o.open:
			return run(ctx, c)
		case <-time.After(orderingTimeout):
			t.Errorf("the tool waited %s for the %d other invocations to return; %d did", orderingTimeout, o.others, o.returned.Load())
			return nil, errors.New("the other invocations did not return")
		}
	}
}

// mustSealKey is b as a seal.Key.
func mustSealKey(t testing.TB, b []byte) seal.Key {
	t.Helper()
	k, err := seal.NewKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// reset zeroes the env's request counts, and marks where the counting
// front's count of what was sent starts (sent).
func (e *env) reset(t testing.TB) {
	t.Helper()
	e.db.reset()
	if e.front != nil {
		e.mark, e.excluded = e.counts(t), local.Counts{}
	}
}

// counts reads the env's counting front.
func (e *env) counts(t testing.TB) local.Counts {
	t.Helper()
	c, err := e.front.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sent is what the env's client sent through the counting front since
// reset, less what was marked excluded (a benchmark's fixture writes).
func (e *env) sent(t testing.TB) local.Counts {
	t.Helper()
	if e.front == nil {
		return local.Counts{}
	}
	return e.counts(t).Less(e.mark).Less(e.excluded)
}
