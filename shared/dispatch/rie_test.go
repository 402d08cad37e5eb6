package dispatch

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/review/dynamo"
	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/tool"
)

// rieTool runs testdata/testtool (the dispatcher in a real bootstrap) under
// the Lambda Runtime Interface Emulator, against dynalite.
type rieTool struct {
	e       *env
	fn      *local.Process
	effects string
}

func startRIETool(t *testing.T, e *env, dynamo *local.Process, toolName string, extra map[string]string) *rieTool {
	t.Helper()
	bootstrap := localtest.Bootstrap(t, "./testdata/testtool")
	effects := filepath.Join(t.TempDir(), "effects")
	vars := map[string]string{
		"TOOLGATE_TOOL":             toolName,
		EnvTable:                    e.store.Table(),
		"AWS_ENDPOINT_URL_DYNAMODB": dynamo.Endpoint(),
		"TEST_EFFECTS_FILE":         effects,
	}
	for k, v := range extra {
		vars[k] = v
	}
	fn := localtest.RIE(t, toolName, bootstrap, 10*time.Second, vars)
	return &rieTool{e: e, fn: fn, effects: effects}
}

// invoke posts an envelope and returns the result or the error type.
func (r *rieTool) invoke(t *testing.T, payload json.RawMessage) (json.RawMessage, string) {
	t.Helper()
	out, code, _ := localtest.Invoke(t, r.fn, payload)
	return out, code
}

func (r *rieTool) effectCount(t *testing.T) int {
	b, err := os.ReadFile(r.effects)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func newEnvOn(t *testing.T) (*env, *local.Process) {
	p := localtest.Dynalite(t)
	client := dynamoClient(p.Endpoint())
	if err := dynamo.CreateTable(context.Background(), client, "toolgate-e2e"); err != nil {
		t.Fatal(err)
	}
	db := &countingDB{API: client}
	e := &env{db: db, store: ledger.New(db, "toolgate-e2e"), ts: testToolset(t, 100)}
	if _, err := e.store.RegisterToolset(context.Background(), e.ts); err != nil {
		t.Fatal(err)
	}
	return e, p
}

// Through a real bootstrap under the RIE, every code reaches the caller as
// exactly that code, and a panic is TOOL_INTERNAL.
func TestRIEErrorTable(t *testing.T) {
	e, dynamo := newEnvOn(t)
	fn := startRIETool(t, e, dynamo, "test-echo", nil)
	if out, code := fn.invoke(t, envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hello"}`)); code != "" || string(out) != `{"text":"hello"}` {
		t.Fatalf("success: %s %s", out, code)
	}
	for _, c := range tool.Codes() {
		if _, got := fn.invoke(t, envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x","fail":"`+string(c)+`"}`)); got != string(c) {
			t.Errorf("raised %s, caller saw %q", c, got)
		}
	}
	if _, got := fn.invoke(t, envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"x","fail":"panic"}`)); got != string(tool.Internal) {
		t.Errorf("panic: caller saw %q", got)
	}
	if _, got := fn.invoke(t, json.RawMessage(`{"tool":"test-echo","extra":1}`)); got != string(tool.InputInvalid) {
		t.Errorf("bad envelope: caller saw %q", got)
	}
}

// A test-send process killed after its side effect and before the record
// completed: once the lease has passed, the same key is refused with
// TOOL_RETRY_REQUIRES_IDEMPOTENCY, the ledger shows UNKNOWN, and the effect
// happened once. An at_least_once tool killed the same way runs once more.
func TestRIECrash(t *testing.T) {
	e, dynamo := newEnvOn(t)
	ctx := context.Background()
	lease := map[string]string{EnvLeaseSeconds: "1"}
	send := startRIETool(t, e, dynamo, "test-send", lease)
	payload := envelopeFor("test-send", e.ts.ID, "", 1, `{"text":"x","fail":"crash"}`)
	if _, code := send.invoke(t, payload); code == "" {
		t.Fatal("a crashed invocation returned a result")
	}
	runID := runIDOf(t, payload)
	if rec, err := e.store.Record(ctx, runID+"/1"); err != nil || rec.State != ledger.StateInProgress {
		t.Fatalf("after the crash: %+v %v", rec, err)
	}
	time.Sleep(1100 * time.Millisecond) // real time: the function under the RIE reads the real clock for its 1 s lease
	if _, code := send.invoke(t, payload); code != string(tool.RetryRequiresIdempotency) {
		t.Fatalf("redrive after the lease: %q", code)
	}
	if n := send.effectCount(t); n != 1 {
		t.Fatalf("the side effect happened %d times", n)
	}
	rows := ledgertest.RunRows(t, e.store, runID)
	rec := mustRecord(t, e.store, runID+"/1")
	// The crashed attempt, which never recorded its outcome, and the
	// refused redrive: both UNKNOWN.
	if len(rows) != 2 || rows[0].Status != ledger.StatusUnknown || rows[1].Status != ledger.StatusUnknown || rec.State != ledger.StateUnknown {
		t.Fatalf("rows %+v record %+v", rows, rec)
	}

	echoFn := startRIETool(t, e, dynamo, "test-echo", lease)
	crashed := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"y","fail":"crash"}`)
	echoFn.invoke(t, crashed)
	time.Sleep(1100 * time.Millisecond) // real time, as above: the lease of a process under the RIE
	// The redrive is the same call: the same key and the same input.
	if _, code := echoFn.invoke(t, crashed); code != "" && !strings.HasPrefix(code, "Runtime.") {
		t.Fatalf("at_least_once redrive: %q", code)
	}
	if n := echoFn.effectCount(t); n != 2 {
		t.Fatalf("at_least_once ran %d times, want 2 (one re-run)", n)
	}
	rec, _ = e.store.Record(ctx, runIDOf(t, crashed)+"/1")
	if rec.Attempts != 2 {
		t.Fatalf("record %+v", rec)
	}
}

// Two functions under the RIE, each with its own MAC parameter in the SSM
// stand-in (localtest.RIE provisions them): a record function A wrote is
// refused by function B, which serves the same tool (a forger's role
// writing under another function's key): neither replayed nor run, and
// its row says record-forged. A replays its own.
func TestRIEARecordSealedByAnotherFunctionIsRefused(t *testing.T) {
	e, dynamo := newEnvOn(t)
	bootstrap := localtest.Bootstrap(t, "./testdata/testtool")
	start := func(name string) *rieTool {
		effects := filepath.Join(t.TempDir(), "effects")
		fn := localtest.RIE(t, name, bootstrap, 10*time.Second, map[string]string{"TOOLGATE_TOOL": "test-echo", EnvTable: e.store.Table(),
			"AWS_ENDPOINT_URL_DYNAMODB": dynamo.Endpoint(), "TEST_EFFECTS_FILE": effects})
		return &rieTool{e: e, fn: fn, effects: effects}
	}
	a, b := start("function-a"), start("function-b")
	payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hello"}`)
	if out, code := a.invoke(t, payload); code != "" || string(out) != `{"text":"hello"}` {
		t.Fatalf("function A: %s %s", out, code)
	}
	if out, code := b.invoke(t, payload); code != string(tool.Internal) {
		t.Fatalf("function B on A's record: %s %q, want TOOL_INTERNAL", out, code)
	}
	if b.effectCount(t) != 0 || a.effectCount(t) != 1 {
		t.Fatalf("effects: A %d, B %d; want 1 and 0", a.effectCount(t), b.effectCount(t))
	}
	rows := ledgertest.RunRows(t, e.store, runIDOf(t, payload))
	if last := rows[len(rows)-1]; last.Status != ledger.StatusRefused || last.Reason != seal.ReasonRecordForged {
		t.Fatalf("rows %+v, want B's refusal with record-forged", rows)
	}
	if out, code := a.invoke(t, payload); code != "" || string(out) != `{"text":"hello"}` {
		t.Fatalf("function A's replay: %s %s", out, code)
	}
}
