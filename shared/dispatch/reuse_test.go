package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/credential"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/ledger/ledgertest"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/toolset"
)

// forkCall is one call of a test run: its tool, toolset, step, seq and
// input (test-echo's schema unless said), and the run's start: the parent
// it was forked from ("" for none), whether it reruns reads, and its
// starter and end user.
type forkCall struct {
	tool, toolsetID, run, step string
	seq                        tool.Seq
	input                      string
	keep                       []string
	forkedFrom                 string
	rerunReads                 bool
	starter                    string
	endUser                    *string
}

// newRunID is a fresh execution ARN.
func newRunID(name string) string {
	return fmt.Sprintf("arn:aws:states:us-east-1:000000000000:execution:toolgate-test:%s-%d", name, runSeq.Add(1))
}

// envelope is c's envelope, as a compiled Task sends it: the run's start
// member always (the Starter's answer, which Init states write with
// nulls).
func (c forkCall) envelope(t testing.TB) json.RawMessage {
	t.Helper()
	step := c.step
	if step == "" {
		step = "s"
	}
	env := tool.Envelope{Tool: c.tool, ToolsetID: c.toolsetID, RunID: c.run, Seq: c.seq, Step: step,
		IdempotencyKey: c.run + "/" + string(c.seq), Attempt: 1, Input: json.RawMessage(c.input), Keep: c.keep,
		Start: &tool.Start{Starter: c.starter, EndUser: c.endUser, ForkedFrom: c.forkedFrom, RerunReads: c.rerunReads}}
	if env.Start.Starter == "" && c.forkedFrom != "" {
		// A fork's start record always has its starter, the forker
		// (docs/fork.md): the start member names none without one.
		env.Start.Starter = "arn:aws:iam::000000000000:user/forker"
	}
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fork is c as the same call of a fork of c.run, run as forkRun.
func (c forkCall) fork(forkRun string) forkCall {
	c.forkedFrom, c.run = c.run, forkRun
	return c
}

// numbered is test-echo's tool that numbers its runs: the input's text
// and "#n", n counting every run, so that a test tells which run a result
// came from.
func numbered(calls *atomic.Int64) toolcall.Func {
	return func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		n := calls.Add(1)
		var in struct{ Text string }
		if err := json.Unmarshal(c.Input, &in); err != nil {
			return nil, err
		}
		return json.Marshal(map[string]string{"text": fmt.Sprintf("%s#%d", in.Text, n)})
	}
}

// handle sends c through d and returns its result, failing t on an error.
func handle(t testing.TB, d *Dispatcher, c forkCall) string {
	t.Helper()
	out, err := d.Handle(context.Background(), c.envelope(t))
	if err != nil {
		t.Fatalf("%s/%s: %v", c.run, c.seq, err)
	}
	return string(out)
}

// A fork's call that matches a COMPLETED call of its parent returns the
// parent's recorded result without running the tool: its record is
// COMPLETED with that result, its attempt REUSED naming the parent's key,
// and a replay of it returns the same, the tool still not run.
func TestAForkReusesACompletedParentCall(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", numbered(&calls))
	p := forkCall{tool: "test-echo", toolsetID: e.ts.ID, run: newRunID("parent"), seq: "1", input: `{"text":"a"}`}
	want := handle(t, d, p)
	f := p.fork(newRunID("fork"))
	for i := range 2 { // the call, then its replay
		if got := handle(t, d, f); got != want || calls.Load() != 1 {
			t.Fatalf("fork call %d: %s, the tool ran %d times; want %s, once (the parent's)", i, got, calls.Load(), want)
		}
	}
	rec := mustRecord(t, e.store, f.run+"/1")
	if rec.State != ledger.StateCompleted || string(rec.Result) != want || rec.Attempts != 1 {
		t.Fatalf("fork record %+v", rec)
	}
	rows := ledgertest.RunRows(t, e.store, f.run)
	if len(rows) != 2 || rows[0].Status != ledger.StatusReused || rows[0].ReusedFrom != p.run+"/1" || rows[1].Status != ledger.StatusDeduplicated {
		t.Fatalf("fork rows %+v: want REUSED from the parent's key, then the replay", rows)
	}
}

// A fork's call runs when no call of its parent is the same call: another
// input, another keep, another step; and a call of a run that is no fork
// sends no request beyond its own.
func TestAForkRunsWhatItsParentDidNotDo(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", numbered(&calls))
	p := forkCall{tool: "test-echo", toolsetID: e.ts.ID, run: newRunID("parent"), seq: "1", input: `{"text":"a"}`}
	handle(t, d, p)
	for name, change := range map[string]func(*forkCall){
		"changed input": func(c *forkCall) { c.input = `{"text":"b"}` },
		"another keep":  func(c *forkCall) { c.keep = []string{"text"} },
		"another step":  func(c *forkCall) { c.step = "other" },
	} {
		t.Run(name, func(t *testing.T) {
			f := p.fork(newRunID("fork"))
			change(&f)
			before := calls.Load()
			handle(t, d, f)
			if calls.Load() != before+1 {
				t.Fatalf("the tool ran %d times, want once", calls.Load()-before)
			}
			if rows := ledgertest.RunRows(t, e.store, f.run); rows[0].Status != ledger.StatusSucceeded || rows[0].ReusedFrom != "" {
				t.Fatalf("rows %+v", rows)
			}
		})
	}
	// The same keep on both sides is reused.
	pk := forkCall{tool: "test-echo", toolsetID: e.ts.ID, run: newRunID("parent"), seq: "1", input: `{"text":"k"}`, keep: []string{"text"}}
	want := handle(t, d, pk)
	before := calls.Load()
	if got := handle(t, d, pk.fork(newRunID("fork"))); got != want || calls.Load() != before {
		t.Fatalf("same keep: %s, ran %d; want %s reused", got, calls.Load()-before, want)
	}
	// No fork: the claim and the finish, nothing more.
	e.reset(t)
	handle(t, d, forkCall{tool: "test-echo", toolsetID: e.ts.ID, run: newRunID("plain"), seq: "2", input: `{"text":"a"}`})
	if q, w, g := e.db.queries.Load(), e.db.writes(), e.db.gets.Load(); q != 0 || w != 2 || g != 0 {
		t.Fatalf("a call of no fork: %d queries, %d writes, %d reads; want 0, 2, 0", q, w, g)
	}
}

// A platform tool pinned with another function in the fork's toolset is
// another destination: the fork's call runs.
func TestAForkRunsACallToAnotherDestination(t *testing.T) {
	e := newEnv(t)
	parentTS := platformToolset(t, e)
	forkTS := testToolset(t, 100)
	addPlatformEcho(forkTS)
	pt := forkTS.Tools["p-echo"]
	pt.Function = "arn:aws:lambda:us-east-1:000000000000:function:p-echo-2"
	forkTS.Tools["p-echo"] = pt
	forkTS = registerAs(t, e, forkTS)
	var calls atomic.Int64
	d := e.dispatcher(t, "", numbered(&calls), func(c *Config) { c.Mode = PlatformTools })
	p := forkCall{tool: "p-echo", toolsetID: parentTS.ID, run: newRunID("parent"), seq: "1", input: `{"text":"a"}`}
	handle(t, d, p)
	same := p.fork(newRunID("fork"))
	handle(t, d, same)
	if calls.Load() != 1 {
		t.Fatalf("same function: the tool ran %d times, want once (the parent's)", calls.Load())
	}
	other := p.fork(newRunID("fork"))
	other.toolsetID = forkTS.ID
	handle(t, d, other)
	if calls.Load() != 2 {
		t.Fatalf("another function: the tool ran %d times, want twice", calls.Load())
	}
}

// Loops and repeated calls: iteration 2 of a loop never takes iteration
// 1's call; two identical calls of a fork take its parent's first and
// second such calls, in the parent's order, and a third runs.
func TestAForkTakesEachParentCallOnceInOrder(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", numbered(&calls))
	parent := newRunID("parent")
	c := func(seq tool.Seq) forkCall {
		return forkCall{tool: "test-echo", toolsetID: e.ts.ID, run: parent, seq: seq, input: `{"text":"a"}`}
	}
	first, second, inLoop := handle(t, d, c("1")), handle(t, d, c("2")), handle(t, d, c("3.0.1"))
	fork := newRunID("fork")
	if got := handle(t, d, c("3.1.1").fork(fork)); calls.Load() != 4 || got == inLoop {
		t.Fatalf("iteration 2: %s, the tool ran %d times; want a run of its own", got, calls.Load())
	}
	if got := handle(t, d, c("3.0.1").fork(fork)); got != inLoop || calls.Load() != 4 {
		t.Fatalf("iteration 1: %s, want %s reused", got, inLoop)
	}
	for i, want := range []string{first, second} {
		if got := handle(t, d, c(tool.SeqOf(int64(i+1))).fork(fork)); got != want || calls.Load() != 4 {
			t.Fatalf("occurrence %d: %s, want %s reused", i+1, got, want)
		}
	}
	handle(t, d, c("4").fork(fork))
	if calls.Load() != 5 {
		t.Fatalf("a third identical call: the tool ran %d times in all, want 5", calls.Load())
	}
}

// By the parent call's state: a FAILED one runs the fork's call; an
// UNKNOWN one refuses it, TOOL_PERMISSION_DENIED, naming the parent's key
// and toolgate ledger reconcile, nothing run.
func TestAForkRunsAfterAFailedParentCallAndRefusesAnUnknownOne(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	var fail atomic.Bool
	run := func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		if fail.Load() {
			calls.Add(1)
			return nil, tool.Errorf(tool.PermanentFailure, "refused by the upstream")
		}
		return numbered(&calls)(ctx, c)
	}
	d := e.dispatcher(t, "test-echo", run)
	fail.Store(true)
	p := forkCall{tool: "test-echo", toolsetID: e.ts.ID, run: newRunID("parent"), seq: "1", input: `{"text":"a"}`}
	if _, err := d.Handle(context.Background(), p.envelope(t)); codeOf(t, err) != string(tool.PermanentFailure) {
		t.Fatalf("parent: %v", err)
	}
	fail.Store(false)
	handle(t, d, p.fork(newRunID("fork")))
	if calls.Load() != 2 {
		t.Fatalf("after a FAILED parent call the tool ran %d times in all, want 2", calls.Load())
	}

	var sends atomic.Int64
	send := e.dispatcher(t, "test-send", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		sends.Add(1)
		return nil, errBoom // unclassified, at_most_once: maybe applied
	})
	ps := forkCall{tool: "test-send", toolsetID: e.ts.ID, run: newRunID("parent"), seq: "1", input: `{"text":"a"}`}
	send.Handle(context.Background(), ps.envelope(t))
	if rec := mustRecord(t, e.store, ps.run+"/1"); rec.State != ledger.StateUnknown {
		t.Fatalf("parent record %s, want UNKNOWN", rec.State)
	}
	f := ps.fork(newRunID("fork"))
	_, err := send.Handle(context.Background(), f.envelope(t))
	if codeOf(t, err) != string(tool.PermissionDenied) || !strings.Contains(err.Error(), ps.run+"/1") || !strings.Contains(err.Error(), "toolgate ledger reconcile") {
		t.Fatalf("fork of an UNKNOWN call: %v", err)
	}
	if sends.Load() != 1 {
		t.Fatalf("the tool ran %d times, want once (the parent's)", sends.Load())
	}
	if rec := mustRecord(t, e.store, f.run+"/1"); rec.State != ledger.StateFailed {
		t.Fatalf("fork record %s, want FAILED (nothing applied)", rec.State)
	}
}

// A forked_from naming a run whose call items another function wrote
// (its seal does not verify under this function's key) is never reused:
// the call runs.
func TestAForkNeverReusesARecordItDidNotSeal(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	other := e.dispatcher(t, "test-echo", numbered(&calls), func(deps *Deps) {
		deps.Ledger = e.store.WithMAC(mustSealKey(t, bytes.Repeat([]byte{9}, 32)))
	})
	p := forkCall{tool: "test-echo", toolsetID: e.ts.ID, run: newRunID("parent"), seq: "1", input: `{"text":"a"}`}
	want := handle(t, other, p)
	d := e.dispatcher(t, "test-echo", numbered(&calls))
	if got := handle(t, d, p.fork(newRunID("fork"))); got == want || calls.Load() != 2 {
		t.Fatalf("fork of another function's record: %s, the tool ran %d times; want a run of its own", got, calls.Load())
	}
}

// With rerun_reads, a call whose contract needs no review runs again.
func TestAForkRerunsReadsWhenAsked(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", numbered(&calls))
	p := forkCall{tool: "test-echo", toolsetID: e.ts.ID, run: newRunID("parent"), seq: "1", input: `{"text":"a"}`}
	handle(t, d, p)
	f := p.fork(newRunID("fork"))
	f.rerunReads = true
	handle(t, d, f)
	if calls.Load() != 2 {
		t.Fatalf("rerun_reads: the tool ran %d times, want twice", calls.Load())
	}
}

// A call made under a run-scope credential is never reused (the
// credential was the parent run's own); one under an end-user scope only
// for the same end user.
func TestAForkReusesCredentialedCallsOnlyForTheSameEndUser(t *testing.T) {
	e := newEnv(t)
	ts := credToolset(t, e)
	target := credential.Target{ToolsetName: "crm-tools", Name: "crm", Origin: "https://mcp.crm.example.com:8443"}
	const starter = "arn:aws:iam::000000000000:role/alice"
	alice, bob := "end_user:"+strings.Repeat("ab", 32), "end_user:"+strings.Repeat("cd", 32)
	for _, c := range []struct {
		name             string
		parent, fork     credential.Scope
		parentEU, forkEU *string
		reused           bool
	}{
		{"toolset scope", credential.ScopeToolset, credential.ScopeToolset, nil, nil, true},
		{"run scope", credential.RunScope("parent"), credential.RunScope("fork"), nil, nil, false},
		{"the same end user", credential.Scope(alice), credential.Scope(alice), &alice, &alice, true},
		{"another end user", credential.Scope(alice), credential.Scope(bob), &alice, &bob, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &resolver{cred: &credential.Credential{Target: target, Scope: c.parent, Version: 1}}
			var calls atomic.Int64
			d := credDispatcher(t, e, r, nil, echoSend(&calls))
			p := forkCall{tool: "crm.create_ticket", toolsetID: ts.ID, run: newRunID("parent"), seq: "1", input: `{"text":"a"}`, starter: starter, endUser: c.parentEU}
			want := handle(t, d, p)
			r.set(&credential.Credential{Target: target, Scope: c.fork, Version: 1}, nil)
			f := p.fork(newRunID("fork"))
			f.endUser = c.forkEU
			got := handle(t, d, f)
			if reused := calls.Load() == 1 && got == want; reused != c.reused {
				t.Fatalf("reused %v (the tool ran %d times), want %v", reused, calls.Load(), c.reused)
			}
		})
	}
}

// toolsetWithEchoMax is the test toolset whose test-echo input schema
// has another maxLength: another pinned schema, registered on e.
func toolsetWithEchoMax(t *testing.T, e *env, maxLen int) *toolset.Toolset {
	t.Helper()
	ts := testToolset(t, maxLen)
	if _, err := e.store.RegisterToolset(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	return ts
}

// A fork whose toolset pins another input schema for the tool runs the
// call: the parent's result was checked against another contract.
func TestAForkRunsACallWhoseSchemaChanged(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	d := e.dispatcher(t, "test-echo", numbered(&calls))
	p := forkCall{tool: "test-echo", toolsetID: e.ts.ID, run: newRunID("parent"), seq: "1", input: `{"text":"a"}`}
	handle(t, d, p)
	f := p.fork(newRunID("fork"))
	f.toolsetID = toolsetWithEchoMax(t, e, 50).ID
	handle(t, d, f)
	if calls.Load() != 2 {
		t.Fatalf("another schema: the tool ran %d times, want twice", calls.Load())
	}
}

// A parent call still in flight (IN_PROGRESS, its lease live) refuses the
// fork's call, retryable, naming the parent's key, nothing run; once the
// parent's call completed, the fork's call sent again takes its result.
func TestAForkWaitsForAParentCallInFlight(t *testing.T) {
	e := newEnv(t)
	var calls atomic.Int64
	started, release := make(chan struct{}), make(chan struct{})
	run := func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		if c.Envelope.Start.ForkedFrom == "" {
			close(started)
			select {
			case <-release:
			case <-time.After(orderingTimeout):
				t.Error("the parent's call was not released")
			}
		}
		return numbered(&calls)(ctx, c)
	}
	d := e.dispatcher(t, "test-echo", run)
	p := forkCall{tool: "test-echo", toolsetID: e.ts.ID, run: newRunID("parent"), seq: "1", input: `{"text":"a"}`}
	done := make(chan string)
	go func() {
		out, _ := d.Handle(context.Background(), p.envelope(t))
		done <- string(out)
	}()
	<-started
	f := p.fork(newRunID("fork"))
	_, err := d.Handle(context.Background(), f.envelope(t))
	if codeOf(t, err) != string(tool.UpstreamUnavailable) || !strings.Contains(err.Error(), p.run+"/1") {
		t.Fatalf("fork of a call in flight: %v", err)
	}
	close(release)
	want := <-done
	if got := handle(t, d, f); got != want || calls.Load() != 1 {
		t.Fatalf("sent again: %s, the tool ran %d times; want %s reused", got, calls.Load(), want)
	}
	if rows := ledgertest.RunRows(t, e.store, f.run); len(rows) != 2 || rows[0].Status != ledger.StatusFailed || rows[1].Status != ledger.StatusReused {
		t.Fatalf("fork rows %+v: want the FAILED attempt, then the REUSED one", rows)
	}
}

// A fork's call whose parent call is UNKNOWN follows the parent call's
// reconciliation: applied with a result, the parent's record becomes
// COMPLETED with it and the fork's call takes it, REUSED, nothing sent;
// applied without one, the fork's call fails CALL_RECONCILED_NO_RESULT;
// not applied, the parent's record becomes FAILED and the fork's call is
// sent, once.
func TestAForkFollowsTheParentCallsReconciliation(t *testing.T) {
	e := newEnv(t)
	var sends atomic.Int64
	send := e.dispatcher(t, "test-send", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		if sends.Add(1); c.Envelope.Start == nil || c.Envelope.Start.ForkedFrom == "" {
			return nil, errBoom // the parent's send: unclassified, at_most_once, maybe applied
		}
		return json.RawMessage(`{"message_id":"m-fork"}`), nil
	})
	unknownParent := func() forkCall {
		t.Helper()
		p := forkCall{tool: "test-send", toolsetID: e.ts.ID, run: newRunID("parent"), seq: "1", input: `{"text":"a"}`}
		send.Handle(context.Background(), p.envelope(t))
		if rec := mustRecord(t, e.store, p.run+"/1"); rec.State != ledger.StateUnknown {
			t.Fatalf("parent record %s, want UNKNOWN", rec.State)
		}
		return p
	}

	p := unknownParent()
	reconcileAs(t, e, p.run+"/1", ledger.Applied, `{"message_id":"m-parent"}`)
	before := sends.Load()
	f := p.fork(newRunID("fork"))
	if got := handle(t, send, f); got != `{"message_id":"m-parent"}` || sends.Load() != before {
		t.Fatalf("applied: the fork's call answered %s and sent %d times, want the reconciled result, nothing sent", got, sends.Load()-before)
	}
	if rec := mustRecord(t, e.store, p.run+"/1"); rec.State != ledger.StateCompleted {
		t.Fatalf("applied: parent record %s, want COMPLETED", rec.State)
	}
	if rows := ledgertest.RunRows(t, e.store, f.run); len(rows) != 1 || rows[0].Status != ledger.StatusReused || rows[0].ReusedFrom != p.run+"/1" {
		t.Fatalf("applied: fork rows %+v, want one REUSED naming the parent's key", rows)
	}

	p = unknownParent()
	reconcileAs(t, e, p.run+"/1", ledger.Applied, "")
	before = sends.Load()
	_, err := send.Handle(context.Background(), p.fork(newRunID("fork")).envelope(t))
	if codeOf(t, err) != string(tool.CallReconciledNoResult) || sends.Load() != before {
		t.Fatalf("applied without a result: %v, %d sends, want %s and nothing sent", err, sends.Load()-before, tool.CallReconciledNoResult)
	}

	p = unknownParent()
	reconcileAs(t, e, p.run+"/1", ledger.NotApplied, "")
	before = sends.Load()
	if got := handle(t, send, p.fork(newRunID("fork"))); got != `{"message_id":"m-fork"}` || sends.Load() != before+1 {
		t.Fatalf("not applied: the fork's call answered %s and sent %d times, want its own send, once", got, sends.Load()-before)
	}
	if rec := mustRecord(t, e.store, p.run+"/1"); rec.State != ledger.StateFailed {
		t.Fatalf("not applied: parent record %s, want FAILED", rec.State)
	}
}
