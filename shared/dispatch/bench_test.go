package dispatch

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/review/reviewtest"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// cpuTime is this process's user+system CPU: the client's CPU, since
// dynalite runs in its own process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDispatch measures the dispatcher against dynalite: a first-
// attempt success, a replay of a completed key, the same for a gated tool
// (its approval checked and bound), and a refusal (input that fails the
// pinned schema), next to a bare handler and, on the same dynalite, the
// two-request idempotency protocol Powertools uses (baseline-success,
// baseline-replay; powertools_test.go). It reports DynamoDB requests and
// writes per invocation, the client's CPU per call, and the budgets of
// docs/ledger.md as budget-met (1 or 0). docs/performance.md has figures.
func BenchmarkDispatch(b *testing.B) {
	// The dispatcher runs as deployed, and the Go baseline beside it: with
	// the GOMAXPROCS the CDK app sets on a tool function (every one's
	// default memory is at most one vCPU's; functionconfig.GoMaxProcs).
	procs, err := strconv.Atoi(functionconfig.GoMaxProcs(functionconfig.OneVCPUMemoryMB))
	if err != nil {
		b.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	e := newFrontedEnv(b)
	var calls atomic.Int64
	run := echo(&calls)
	d := e.dispatcher(b, "test-echo", run)
	ctx := context.Background()
	var lastBytes float64 // the last report's request bytes per call
	report := func(b *testing.B, cpu0 time.Duration) (requests, writes, cpu float64) {
		n := float64(b.N)
		cpu = float64((cpuTime() - cpu0).Microseconds()) / n
		requests = float64(e.db.puts.Load()+e.db.gets.Load()+e.db.updates.Load()+e.db.queries.Load()) / n
		writes = float64(e.db.writes()) / n
		sent := e.sent(b)
		b.ReportMetric(requests, "ddb-requests/op")
		b.ReportMetric(writes, "ddb-writes/op")
		b.ReportMetric(float64(e.db.failedConds.Load())/n, "failed-conds/op")
		b.ReportMetric(cpu, "client-cpu-µs/op")
		b.ReportMetric(float64(sent.BodyBytes)/n, "req-bytes/op")
		b.ReportMetric(float64(sent.HeaderBytes)/n, "req-header-bytes/op")
		lastBytes = float64(sent.BodyBytes) / n
		return requests, writes, cpu
	}
	// budget reports 1 when the path met its budget (docs/ledger.md,
	// "DynamoDB requests per invocation"), else 0, and the client CPU's
	// ratio to the baseline's when there is one (pass mark: 1.2).
	budget := func(b *testing.B, met bool, cpu, base float64) {
		v := 0.0
		if met {
			v = 1
		}
		b.ReportMetric(v, "budget-met")
		if base > 0 {
			b.ReportMetric(cpu/base, "x-baseline-cpu")
		}
	}
	// The baseline first, on the same dynalite: the dispatcher's sub-
	// benchmarks report their client CPU as a ratio to it.
	pt := &powertoolsProtocol{db: e.db, table: e.store.Table(), lease: 60 * time.Second, ttl: time.Hour}
	ptRun := func(event json.RawMessage) (json.RawMessage, error) {
		var env struct{ Input json.RawMessage }
		json.Unmarshal(event, &env)
		return run(ctx, &toolcall.Call{Input: env.Input})
	}
	var baseSuccess, baseReplay float64 // client CPU µs per call
	b.Run("baseline-success", func(b *testing.B) {
		e.reset(b)
		cpu0 := cpuTime()
		for b.Loop() {
			b.StopTimer()
			c0 := cpuTime()
			event := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hi"}`)
			cpu0 += cpuTime() - c0
			b.StartTimer()
			if _, err := pt.handle(ctx, event, ptRun); err != nil {
				b.Fatal(err)
			}
		}
		report(b, cpu0)
		baseSuccess = float64((cpuTime() - cpu0).Microseconds()) / float64(b.N)
	})
	b.Run("baseline-replay", func(b *testing.B) {
		event := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hi"}`)
		pt.handle(ctx, event, ptRun)
		e.reset(b)
		cpu0 := cpuTime()
		for b.Loop() {
			if _, err := pt.handle(ctx, event, ptRun); err != nil {
				b.Fatal(err)
			}
		}
		report(b, cpu0)
		baseReplay = float64((cpuTime() - cpu0).Microseconds()) / float64(b.N)
	})
	var ourSuccess, ourReplay figures // for the Powertools ratios
	defer func() { powertoolsAnchor(b, e, ourSuccess, ourReplay) }()
	b.Run("bare", func(b *testing.B) {
		payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hi"}`)
		cpu0 := cpuTime()
		for b.Loop() {
			var env struct{ Input json.RawMessage }
			json.Unmarshal(payload, &env)
			if _, err := run(ctx, &toolcall.Call{Input: env.Input}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "client-cpu-µs/op")
	})
	b.Run("success", func(b *testing.B) {
		// Warm the toolset cache, then count only the invocations.
		d.Handle(ctx, envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"warm"}`))
		e.reset(b)
		cpu0 := cpuTime()
		freshRunCalls(b, ctx, d, e.ts.ID, 2)
		rq, w, cpu := report(b, cpu0)
		budget(b, w == 2 && rq == 2, cpu, baseSuccess)
		ourSuccess = figures{cpu: cpu, bytes: lastBytes, requests: rq, wall: float64(b.Elapsed().Microseconds()) / float64(b.N)}
	})
	// The same success for a tool whose target declares auth: the
	// credential resolved before the claim, in a warm container whose
	// resolver has decrypted it before (no KMS call) but reads the new
	// run's scopes (each call here is another run's): one BatchGetItem
	// more, and the ratio of its client CPU and wall time to the
	// success's without one in this run (docs/performance.md, "What a
	// credential costs").
	b.Run("credential-success", func(b *testing.B) {
		cd, id := credentialDispatcher(b, e)
		if _, err := cd.Handle(ctx, envelopeFor("test-echo", id, "", 1, `{"text":"warm"}`)); err != nil {
			b.Fatal(err)
		}
		e.reset(b)
		cpu0 := cpuTime()
		freshRunCalls(b, ctx, cd, id, 2)
		rq, w, cpu := report(b, cpu0)
		budget(b, w == 2 && rq == 3, cpu, baseSuccess)
		if ourSuccess.cpu > 0 && ourSuccess.wall > 0 {
			b.ReportMetric(cpu/ourSuccess.cpu, "x-no-credential-cpu")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/ourSuccess.wall, "x-no-credential-wall")
		}
	})
	// A run's first call (seq 1) also writes the run's key pointer: one
	// more request, once per run (docs/ledger.md, "The key pointer").
	b.Run("first-call", func(b *testing.B) {
		e.reset(b)
		cpu0 := cpuTime()
		freshRunCalls(b, ctx, d, e.ts.ID, 1)
		rq, w, cpu := report(b, cpu0)
		budget(b, w == 3 && rq == 3, cpu, 0)
	})
	b.Run("replay", func(b *testing.B) {
		payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hi"}`)
		d.Handle(ctx, payload)
		e.reset(b)
		cpu0 := cpuTime()
		for b.Loop() {
			if _, err := d.Handle(ctx, payload); err != nil {
				b.Fatal(err)
			}
		}
		rq, _, cpu := report(b, cpu0)
		budget(b, rq == 1, cpu, baseReplay)
		ourReplay = figures{cpu: cpu, bytes: lastBytes, requests: rq, wall: float64(b.Elapsed().Microseconds()) / float64(b.N)}
	})
	// The write request units a success and a replay cost, as DynamoDB
	// bills the items they write (itemSize): the claim by the item it
	// creates, the finish and a replay's claim request by the larger of
	// the item before and after. The items are read straight from
	// dynalite, past the counting front.
	b.Run("write-units", func(b *testing.B) {
		direct := dynamoClient(e.dynamo.Endpoint())
		payload := envelopeFor("test-echo", e.ts.ID, "", 2, `{"text":"hi"}`)
		key := callItemKey(runIDOf(b, payload), "2")
		snap := func() map[string]types.AttributeValue {
			out, err := direct.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.store.Table()), Key: key, ConsistentRead: aws.Bool(true)})
			if err != nil || out.Item == nil {
				b.Fatalf("read the call's item: %v", err)
			}
			return out.Item
		}
		var claimed, completed map[string]types.AttributeValue
		w := e.dispatcher(b, "test-echo", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
			claimed = snap()
			return run(ctx, c)
		})
		for _, want := range []string{"a success", "a replay"} {
			if _, err := w.Handle(ctx, payload); err != nil {
				b.Fatalf("%s: %v", want, err)
			}
			if want == "a success" {
				completed = snap()
			}
		}
		replayed := snap()
		for b.Loop() { // the figures are the items'; b.Loop runs this function once
		}
		c, f, r := itemSize(claimed), itemSize(completed), itemSize(replayed)
		b.ReportMetric(float64(c), "item-bytes-claimed")
		b.ReportMetric(float64(f), "item-bytes-completed")
		b.ReportMetric(float64(writeUnits(c)+writeUnits(max(c, f))), "wcu-success")
		b.ReportMetric(float64(writeUnits(max(f, r))), "wcu-replay")
	})
	b.Run("gated-success", func(b *testing.B) {
		rs := e.reviews()
		var gatedCalls atomic.Int64
		g := e.dispatcher(b, "test-gated", gatedTool(&gatedCalls))
		approved := func() json.RawMessage {
			return reviewtest.Approve(b, rs, envelopeFor("test-gated", e.ts.ID, "", 2, `{"text":"hi"}`))
		}
		g.Handle(ctx, approved()) // warm the toolset cache
		payloads := make([]json.RawMessage, 0, 256)
		i := len(payloads)
		e.reset(b)
		cpu0 := cpuTime()
		for b.Loop() {
			if i == len(payloads) {
				b.StopTimer()
				c0, puts, gets, updates := cpuTime(), e.db.puts.Load(), e.db.gets.Load(), e.db.updates.Load()
				f0 := e.counts(b)
				payloads = payloads[:0]
				for range cap(payloads) {
					payloads = append(payloads, approved())
				}
				// The reviews stored here are the fixture, not the call.
				cpu0 += cpuTime() - c0
				e.db.puts.Store(puts)
				e.db.gets.Store(gets)
				e.db.updates.Store(updates)
				e.excluded = e.excluded.Plus(e.counts(b).Less(f0))
				i = 0
				b.StartTimer()
			}
			if _, err := g.Handle(ctx, payloads[i]); err != nil {
				b.Fatal(err)
			}
			i++
		}
		rq, w, cpu := report(b, cpu0)
		budget(b, rq == 4 && w == 3, cpu, baseSuccess)
	})
	// A gated replay is 4 requests on dynalite, 2 of them writes: the
	// review's GetItem; the bind PutItem, whose failed condition tells an
	// approval bound to this key from one bound to another; the binding's
	// GetItem, since dynalite leaves the old item out of that failure's
	// answer (DynamoDB's holds it: 3 requests there); the claim, whose
	// answer is the record replayed. The record is not read before the
	// approval: that would answer replays the approval check refuses
	// (TestGatedReplayChecksTheApprovalFirst; docs/performance.md, "The
	// requests of a gated call", which says how one read of the review and
	// its binding would make it 2).
	b.Run("gated-replay", func(b *testing.B) {
		var gatedCalls atomic.Int64
		g := e.dispatcher(b, "test-gated", gatedTool(&gatedCalls))
		payload := reviewtest.Approve(b, e.reviews(), envelopeFor("test-gated", e.ts.ID, "", 1, `{"text":"hi"}`))
		if _, err := g.Handle(ctx, payload); err != nil {
			b.Fatal(err)
		}
		e.reset(b)
		cpu0 := cpuTime()
		for b.Loop() {
			if _, err := g.Handle(ctx, payload); err != nil {
				b.Fatal(err)
			}
		}
		rq, w, cpu := report(b, cpu0)
		budget(b, rq == 4 && w == 2, cpu, baseReplay)
	})
	b.Run("refusal", func(b *testing.B) {
		payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":42}`)
		e.reset(b)
		cpu0 := cpuTime()
		for b.Loop() {
			if _, err := d.Handle(ctx, payload); err == nil {
				b.Fatal("accepted")
			}
		}
		_, w, cpu := report(b, cpu0)
		budget(b, w == 1, cpu, 0)
	})
}

// EnvPowertoolsBench names the Powertools anchor benchmark's bench.mjs
// (testdata/powertools, its npm dependencies installed by make deps;
// docs/performance.md): when set, BenchmarkDispatch runs it against the
// dynalite it started itself, through the same counting front, and
// reports toolgate's figures as ratios to Powertools'.
const EnvPowertoolsBench = "TOOLGATE_POWERTOOLS_BENCH"

// figures are one path's client CPU (µs), request bytes, requests and
// wall time (µs) per call.
type figures struct{ cpu, bytes, requests, wall float64 }

// The goals of a success against Powertools in the same run
// (docs/performance.md, "On the wire"): request bytes per success at most
// goalSuccessBytes (1.3 times the 1 079 Powertools sends), client CPU at
// most goalCPURatio of Powertools'.
const (
	goalSuccessBytes = 1400
	goalCPURatio     = 0.5
)

// powertoolsAnchor runs the anchor (N=2000 after WARMUP=200, REPS=1: with
// fewer calls Node's JIT is not warm and Powertools' CPU reads up to three
// times higher, flattering the ratio) on e's dynalite through
// e's counting front and reports, in a sub-benchmark of its own,
// Powertools' figures, toolgate's as ratios to them (x-powertools-*), and
// goal-success-bytes-met, goal-success-cpu-met (1 or 0). Without
// EnvPowertoolsBench it does nothing.
func powertoolsAnchor(b *testing.B, e *env, success, replay figures) {
	script := os.Getenv(EnvPowertoolsBench)
	if script == "" || success.cpu == 0 || replay.cpu == 0 {
		return
	}
	b.Run("powertools", func(b *testing.B) {
		out := filepath.Join(b.TempDir(), "results.json")
		cmd := exec.Command("node", script)
		cmd.Dir = filepath.Dir(script)
		cmd.Env = append(os.Environ(), "ENDPOINT="+e.front.Endpoint(), "COUNTS_URL="+e.front.Endpoint()+"/__counts",
			"SERVER_PID="+strconv.Itoa(e.dynamo.PID), "N=2000", "WARMUP=200", "REPS=1", "OUT="+out)
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", script, err, msg)
		}
		var res struct {
			Medians map[string]struct {
				Wall     float64 `json:"mean"`
				CPU      float64 `json:"clientCpuUsPerCall"`
				Bytes    float64 `json:"bodyBytesPerCall"`
				Requests float64 `json:"frontRequestsPerCall"`
			} `json:"medians_us"`
		}
		data, err := os.ReadFile(out)
		if err != nil || json.Unmarshal(data, &res) != nil {
			b.Fatalf("read %s: %v", out, err)
		}
		first, again := res.Medians["first"], res.Medians["replay"]
		if first.CPU == 0 || again.CPU == 0 || first.Bytes == 0 || again.Bytes == 0 {
			b.Fatalf("%s has no first and replay figures", out)
		}
		for b.Loop() { // the figures are the anchor's; b.Loop runs this function once
		}
		b.ReportMetric(first.CPU, "powertools-first-cpu-µs")
		b.ReportMetric(again.CPU, "powertools-replay-cpu-µs")
		b.ReportMetric(first.Bytes, "powertools-first-bytes")
		b.ReportMetric(again.Bytes, "powertools-replay-bytes")
		b.ReportMetric(first.Requests, "powertools-first-requests")
		b.ReportMetric(again.Requests, "powertools-replay-requests")
		b.ReportMetric(success.cpu/first.CPU, "x-powertools-cpu-success")
		b.ReportMetric(replay.cpu/again.CPU, "x-powertools-cpu-replay")
		b.ReportMetric(success.wall/first.Wall, "x-powertools-wall-success") // reported, not a goal
		b.ReportMetric(replay.wall/again.Wall, "x-powertools-wall-replay")
		b.ReportMetric(success.bytes/first.Bytes, "x-powertools-bytes-success")
		b.ReportMetric(replay.bytes/again.Bytes, "x-powertools-bytes-replay")
		b.ReportMetric(success.bytes, "success-bytes")
		b.ReportMetric(flag(success.bytes <= goalSuccessBytes), "goal-success-bytes-met")
		b.ReportMetric(flag(success.cpu <= goalCPURatio*first.CPU), "goal-success-cpu-met")
		b.ReportMetric(flag(replay.requests == 1), "goal-replay-one-request-met")
	})
}

// flag is 1 for true, 0 for false: a goal met, as a benchmark metric.
func flag(ok bool) float64 {
	if ok {
		return 1
	}
	return 0
}

// freshRunCalls makes b's calls of test-echo on d, each the call seq of a
// run of its own (so each claims a new key), building the envelopes 1024
// at a time with the timer stopped.
func freshRunCalls(b *testing.B, ctx context.Context, d *Dispatcher, toolsetID string, seq int64) {
	b.Helper()
	payloads := make([]json.RawMessage, 0, 1024)
	i := 0
	for b.Loop() {
		if i == len(payloads) {
			b.StopTimer()
			payloads = payloads[:0]
			for range cap(payloads) {
				payloads = append(payloads, envelopeFor("test-echo", toolsetID, "", seq, `{"text":"hi"}`))
			}
			i = 0
			b.StartTimer()
		}
		if _, err := d.Handle(ctx, payloads[i]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
