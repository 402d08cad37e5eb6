package dispatch

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/toolgate/toolgate/infra/local/otlpreceiver"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/tracecontext"
	"github.com/toolgate/toolgate/shared/tracing"
)

// Budgets of what tracing adds to one call with export off
// (docs/tracing.md, "Export"): at most traceAllocBudget allocations and
// traceByteBudget bytes, on the success path (the attempt placed in its
// trace, its context formatted for the tool, the attempt ended).
const (
	traceAllocBudget = 8
	traceByteBudget  = 1024
)

// BenchmarkCallTraceOff is tracing's own work per call with export off,
// next to what deriving an external key costs in the same run (the
// dispatcher's other per-call HMAC): allocations and bytes per call, and
// budget-met (1 or 0) for traceAllocBudget and traceByteBudget.
func BenchmarkCallTraceOff(b *testing.B) {
	d := &Dispatcher{traces: tracecontext.NewDeriver(testSecret), cfg: Config{Tracer: tracing.New("", "bench", nil)}}
	env := &tool.Envelope{Tool: "send-email", Step: "send", RunID: "arn:aws:states:us-east-1:123456789012:execution:toolgate-dev-newsletter:run-20261202T101010Z-0123456789abcdef", Seq: "12"}
	ctx := context.Background()
	o := succeeded([]byte(`{}`))
	var sink tool.TraceContext
	// per is f's allocations and bytes per run, over 1 000 runs after a
	// warm-up (runtime.MemStats: Mallocs and TotalAlloc).
	per := func(f func()) (allocs, bytes float64) {
		const runs = 1000
		f()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			f()
		}
		runtime.ReadMemStats(&after)
		return float64(after.Mallocs-before.Mallocs) / runs, float64(after.TotalAlloc-before.TotalAlloc) / runs
	}
	allocs, bytes := per(func() {
		inv := &invocation{d: d, env: env, started: time.Time{}}
		inv.startAttempt(ctx)
		sink = inv.callTrace()
		inv.endAttempt(ctx, o)
	})
	keyAllocs, keyBytes := per(func() { _ = tracecontext.TraceID(testSecret, env.RunID) })
	_ = sink
	for b.Loop() {
		inv := &invocation{d: d, env: env}
		inv.startAttempt(ctx)
		sink = inv.callTrace()
		inv.endAttempt(ctx, o)
	}
	met := 0.0
	if allocs <= traceAllocBudget && bytes <= traceByteBudget {
		met = 1
	}
	b.ReportMetric(allocs, "trace-allocs/call")
	b.ReportMetric(bytes, "trace-bytes/call")
	b.ReportMetric(allocs/max(keyAllocs, 1), "x-unpooled-hmac-allocs")
	b.ReportMetric(bytes/max(keyBytes, 1), "x-unpooled-hmac-bytes")
	b.ReportMetric(met, "budget-met")
}

// BenchmarkCallTraceExport is what export adds to one call when it is
// on: the attempt and step spans recorded, then flushed to an OTLP/HTTP
// receiver on loopback (the stack's) before the invocation would return,
// in µs per call, next to the same call's tracing work with export off
// measured in the same run (x-off), and whether the flush stayed within
// tracing.FlushTimeout (within-flush-bound, 1 or 0).
func BenchmarkCallTraceExport(b *testing.B) {
	rec, err := otlpreceiver.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Close()
	on := tracing.New(rec.URL(), "bench", nil)
	defer on.Shutdown(context.Background())
	env := &tool.Envelope{Tool: "send-email", Step: "send", RunID: "arn:aws:states:us-east-1:123456789012:execution:toolgate-dev-newsletter:run-1", Seq: "12"}
	ctx := context.Background()
	o := succeeded([]byte(`{}`))
	call := func(d *Dispatcher) time.Duration {
		start := time.Now()
		inv := &invocation{d: d, env: env, started: start}
		inv.startAttempt(ctx)
		_ = inv.callTrace()
		inv.endAttempt(ctx, o)
		if err := d.cfg.Tracer.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	offD := &Dispatcher{traces: tracecontext.NewDeriver(testSecret), cfg: Config{Tracer: tracing.New("", "bench", nil)}}
	onD := &Dispatcher{traces: tracecontext.NewDeriver(testSecret), cfg: Config{Tracer: on}}
	var offTotal, onTotal, worst time.Duration
	n := 0
	for b.Loop() {
		offTotal += call(offD)
		d := call(onD)
		onTotal += d
		worst = max(worst, d)
		n++
	}
	within := 0.0
	if worst <= tracing.FlushTimeout {
		within = 1
	}
	b.ReportMetric(float64(onTotal.Microseconds())/float64(n), "export-µs/call")
	b.ReportMetric(float64(onTotal)/float64(max(offTotal, 1)), "x-off")
	b.ReportMetric(float64(worst.Microseconds()), "worst-µs")
	b.ReportMetric(within, "within-flush-bound")
}
