package dispatch

import (
	"context"
	"encoding/json"
	"testing"

	observeddynamo "github.com/toolgate/toolgate/shared/observed/dynamo"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// BenchmarkLearning measures, in one run on one dynalite, a first-attempt
// success of a tool whose result shape is learned (p-learn: no output
// schema) by a dispatcher without learning and by one learning once the
// shape is stable (its item read and written before the measured calls).
// It reports DynamoDB requests and writes per call for each, and the
// learning one's extra writes and requests per call over the other's
// (expected: 0 and 0; docs/declarations.md, "Observed shapes").
func BenchmarkLearning(b *testing.B) {
	e := newFrontedEnv(b)
	ts := learnToolset(b, e)
	ctx := context.Background()
	run := func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		return json.RawMessage(`{"id":1,"name":"n","tags":["a","b"],"owner":{"id":2}}`), nil
	}
	plain := e.dispatcher(b, "", run, func(c *Config) { c.Mode = PlatformTools })
	learning := e.dispatcher(b, "", run, func(c *Config) { c.Mode = PlatformTools },
		func(d *Deps) { d.Shapes = observeddynamo.New(e.db, e.store.Table()) })
	measure := func(b *testing.B, d *Dispatcher) (requests, writes float64) {
		// Warm the toolset cache (and, learning, the shape: read once,
		// written once), then count only the measured calls.
		for range 2 {
			if _, err := d.Handle(ctx, envelopeFor("p-learn", ts.ID, "", 1, `{"text":"warm"}`)); err != nil {
				b.Fatal(err)
			}
		}
		e.reset(b)
		for b.Loop() {
			if _, err := d.Handle(ctx, envelopeFor("p-learn", ts.ID, "", 1, `{"text":"hi"}`)); err != nil {
				b.Fatal(err)
			}
		}
		n := float64(b.N)
		requests = float64(e.db.puts.Load()+e.db.gets.Load()+e.db.updates.Load()+e.db.queries.Load()) / n
		writes = float64(e.db.writes()) / n
		b.ReportMetric(requests, "ddb-requests/op")
		b.ReportMetric(writes, "ddb-writes/op")
		return requests, writes
	}
	var baseRequests, baseWrites float64
	b.Run("without-learning", func(b *testing.B) { baseRequests, baseWrites = measure(b, plain) })
	b.Run("learning-stable", func(b *testing.B) {
		rq, w := measure(b, learning)
		b.ReportMetric(w-baseWrites, "extra-writes/op")
		b.ReportMetric(rq-baseRequests, "extra-requests/op")
	})
}
