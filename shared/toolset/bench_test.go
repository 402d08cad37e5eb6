package toolset

import (
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/catalog"
)

// BenchmarkLoadCheck measures what the registration check adds to a
// toolset load (docs/ledger.md, "Toolsets are checked on every load"): the
// baseline is decoding the stored body alone (ParseStored); the check is
// ParseStored then Verify. Both run in the same process, one after the
// other, so the ratio holds on a noisy machine. It runs once per container
// and toolset (the dispatcher caches toolsets that pass), on the three
// catalog tools with a fetch host.
func BenchmarkLoadCheck(b *testing.B) {
	ts, err := FromCatalog(catalog.Default(), []string{"send-email", "structured-data-fetch", "workflow-validator"}, nil, []string{"api.example.com"})
	if err != nil {
		b.Fatal(err)
	}
	body, err := ts.Canonical()
	if err != nil {
		b.Fatal(err)
	}
	measure := func(n int, check bool) time.Duration {
		start := time.Now()
		for range n {
			got, err := ParseStored(ts.ID, body)
			if err != nil {
				b.Fatal(err)
			}
			if check {
				if err := got.Verify(catalog.Default()); err != nil {
					b.Fatal(err)
				}
			}
		}
		return time.Since(start)
	}
	b.ResetTimer()
	checked := measure(b.N, true)
	b.StopTimer()
	base := measure(b.N, false)
	perLoad := float64(checked.Nanoseconds()) / float64(b.N)
	b.ReportMetric(perLoad/1e3, "µs/checked-load")
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N)/1e3, "µs/decode-only")
	b.ReportMetric(float64(checked)/float64(base), "x-decode-only")
}
