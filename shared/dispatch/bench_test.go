package dispatch

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// cpuTime is this process's user+system CPU: the client's CPU, since
// dynalite runs in its own process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDispatch measures the dispatcher against dynalite: a first-
// attempt success, a replay of a completed key, and a refusal (input that
// fails the pinned schema), next to a bare handler. It reports DynamoDB
// requests and writes per invocation and the client's CPU per call.
func BenchmarkDispatch(b *testing.B) {
	e := newEnv(b)
	var calls atomic.Int64
	run := echo(&calls)
	d := e.dispatcher(b, "test-echo", run)
	ctx := context.Background()
	report := func(b *testing.B, cpu0 time.Duration) {
		n := float64(b.N)
		b.ReportMetric(float64(e.db.puts.Load()+e.db.gets.Load()+e.db.updates.Load()+e.db.queries.Load())/n, "ddb-requests/op")
		b.ReportMetric(float64(e.db.writes())/n, "ddb-writes/op")
		b.ReportMetric(float64(e.db.failedConds.Load())/n, "failed-conds/op")
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/n, "client-cpu-µs/op")
	}
	b.Run("bare", func(b *testing.B) {
		payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hi"}`)
		cpu0 := cpuTime()
		for b.Loop() {
			var env struct{ Input json.RawMessage }
			json.Unmarshal(payload, &env)
			if _, err := run(ctx, &Call{Input: env.Input}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "client-cpu-µs/op")
	})
	b.Run("success", func(b *testing.B) {
		payloads := make([]json.RawMessage, 0, 1024)
		i := 0
		// Warm the toolset cache, then count only the invocations.
		d.Handle(ctx, envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"warm"}`))
		e.db.reset()
		cpu0 := cpuTime()
		for b.Loop() {
			if i == len(payloads) {
				b.StopTimer()
				payloads = payloads[:0]
				for range cap(payloads) {
					payloads = append(payloads, envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hi"}`))
				}
				i = 0
				b.StartTimer()
			}
			if _, err := d.Handle(ctx, payloads[i]); err != nil {
				b.Fatal(err)
			}
			i++
		}
		report(b, cpu0)
	})
	b.Run("replay", func(b *testing.B) {
		payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"hi"}`)
		d.Handle(ctx, payload)
		e.db.reset()
		cpu0 := cpuTime()
		for b.Loop() {
			if _, err := d.Handle(ctx, payload); err != nil {
				b.Fatal(err)
			}
		}
		report(b, cpu0)
	})
	b.Run("refusal", func(b *testing.B) {
		payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":42}`)
		e.db.reset()
		cpu0 := cpuTime()
		for b.Loop() {
			if _, err := d.Handle(ctx, payload); err == nil {
				b.Fatal("accepted")
			}
		}
		report(b, cpu0)
	})
}
