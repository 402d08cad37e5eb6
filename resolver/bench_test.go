package resolver

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/resolver/resolvertest"
)

// generate writes a realistic Solution of about n steps: a choice routes
// each run to one of n/5 blocks of fetch → draft → choice → review → send,
// each block looping back to its fetch on a rejected review. (Blocks in
// one sequence would keep every block's results in the state data, far
// over Step Functions' 256 KiB: [state-size].)
func generate(n int) []byte {
	var b strings.Builder
	b.WriteString("solution: generated\nversion: 1\npolicy:\n  fetch_hosts: [api.example.com]\n  run_timeout_seconds: 604800\ninput: {type: object}\nsteps:\n")
	blocks := max(1, n/5)
	b.WriteString("  - id: route\n    choice:\n")
	for i := range blocks {
		fmt.Fprintf(&b, "      - when: {value: \"${input.block}\", equals: %d}\n        next: fetch_%d\n", i, i)
	}
	b.WriteString("    default: end\n")
	for i := range blocks {
		fmt.Fprintf(&b, `  - id: fetch_%[1]d
    tool: structured-data-fetch
    with: {url: "https://api.example.com/items/%[1]d", select: /data}
    keep: [data.title, data.count, data.body]
    output_limit_bytes: 8192
    next: draft_%[1]d
  - id: draft_%[1]d
    pass: {subject: "Item %[1]d: ${steps.fetch_%[1]d.output.data.title}", to: "${input.to}"}
    next: check_%[1]d
  - id: check_%[1]d
    choice:
      - when: {value: "${steps.fetch_%[1]d.output.data.count}", greater_than: 0}
        next: approve_%[1]d
    default: end
  - id: approve_%[1]d
    review: {of: send_%[1]d, timeout_seconds: 3600}
    on_approve: send_%[1]d
    on_reject: fetch_%[1]d
  - id: send_%[1]d
    tool: send-email
    with: {to: ["${steps.draft_%[1]d.to}"], subject: "${steps.draft_%[1]d.subject}", text: "${steps.fetch_%[1]d.output.data.body}"}
    next: end
`, i)
	}
	return []byte(b.String())
}

// generateLoops writes a Solution of k for_each loops (4k+1 steps) that
// all name their item "person": a choice routes each run to one loop, whose
// body reviews and sends one e-mail per person and collects the person's
// name.
func generateLoops(k int) []byte {
	var b strings.Builder
	b.WriteString(`solution: loops
version: 1
input:
  type: object
  properties:
    loop: {type: integer, minimum: 0, maximum: 1000000}
    people:
      type: array
      maxItems: 20
      items:
        type: object
        properties:
          email: {type: string, maxLength: 254}
          name: {type: string, maxLength: 100}
steps:
  - id: route
    choice:
`)
	for i := range k {
		fmt.Fprintf(&b, "      - when: {value: \"${input.loop}\", equals: %d}\n        next: each_%d\n", i, i)
	}
	b.WriteString("    default: end\n")
	for i := range k {
		fmt.Fprintf(&b, `  - id: each_%[1]d
    for_each:
      items: "${input.people}"
      as: person
      max_items: 20
      collect: {name: "${person.name}"}
      steps:
        - id: approve_%[1]d
          review: {of: send_%[1]d, timeout_seconds: 3600}
          on_approve: send_%[1]d
          on_reject: skipped_%[1]d
        - id: send_%[1]d
          tool: send-email
          with: {to: ["${person.email}"], subject: "Hello ${person.name}", text: "number ${for_each.index}"}
        - id: skipped_%[1]d
          fail: {error: NotApproved}
    on_error:
      - {next: end}
    next: end
`, i)
	}
	return []byte(b.String())
}

var benchSizes = []int{10, 1_000, 10_000}

// parseOnce parses and decodes src, BenchmarkParse's unit of work.
func parseOnce(tb testing.TB, src []byte) {
	v, _, err := parseValue(src, formatYAML)
	if err != nil {
		tb.Fatal(err)
	}
	ds := &diags{}
	if (&decoder{ds: ds}).decodeSolution(v) == nil || ds.hasErrors() {
		tb.Fatal(ds.sorted())
	}
}

// benchAgainstParse measures compile of src interleaved with parse of the
// same src, one of each per iteration, and reports compile's time per op
// (compile-ns/op), parse's (parse-ns/op), the median over the iterations
// of their ratio (x-parse), the same for the process's CPU time, user and
// system (x-parse-cpu), and the ratio of the bytes each allocates
// (x-parse-B, from one run of each). Each phase ends with a collection of
// its own garbage, so that neither pays for the other's. Interleaving,
// and the median of the pairs, keep the ratios steady on a loaded
// machine, where absolute times move several-fold; the CPU time's ratio
// is the steadier where other processes compete for the cores. ok checks
// compile's result. It returns compile's time per op.
func benchAgainstParse(b *testing.B, src []byte, ok func(*Result) error) time.Duration {
	b.SetBytes(int64(len(src)))
	var ms0, ms1, ms2 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	if err := ok(Compile("bench.yaml", src, Options{})); err != nil {
		b.Fatal(err)
	}
	runtime.ReadMemStats(&ms1)
	parseOnce(b, src)
	runtime.ReadMemStats(&ms2)
	compileB, parseB := ms1.TotalAlloc-ms0.TotalAlloc, ms2.TotalAlloc-ms1.TotalAlloc
	runtime.GC()
	b.ResetTimer()
	var compileNs, parseNs time.Duration
	var wall, cpu []float64
	for b.Loop() {
		t0, c0 := time.Now(), cpuTime(b)
		Compile("bench.yaml", src, Options{})
		runtime.GC()
		t1, c1 := time.Now(), cpuTime(b)
		parseOnce(b, src)
		runtime.GC()
		t2, c2 := time.Now(), cpuTime(b)
		compileNs += t1.Sub(t0)
		parseNs += t2.Sub(t1)
		wall = append(wall, float64(t1.Sub(t0))/float64(t2.Sub(t1)))
		cpu = append(cpu, float64(c1-c0)/float64(max(c2-c1, 1)))
	}
	b.ReportMetric(float64(compileNs.Nanoseconds())/float64(b.N), "compile-ns/op")
	b.ReportMetric(float64(parseNs.Nanoseconds())/float64(b.N), "parse-ns/op")
	b.ReportMetric(median(wall), "x-parse")
	b.ReportMetric(median(cpu), "x-parse-cpu")
	b.ReportMetric(float64(compileB)/float64(parseB), "x-parse-B")
	return compileNs / time.Duration(b.N)
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// median is the middle of xs (the mean of the two middle ones when even).
func median(xs []float64) float64 {
	slices.Sort(xs)
	m := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		m = (xs[len(xs)/2-1] + m) / 2
	}
	return m
}

// BenchmarkCompile measures the whole pipeline: parse, checks, Gate A,
// toolset and definition, against parsing alone (benchAgainstParse: the
// goal is x-parse ≤ 3 at 1 000 and 10 000 steps). At 10 000 steps the
// definition exceeds Step Functions' 1 MiB and the result is the quota
// diagnostic, after all the work is done.
func BenchmarkCompile(b *testing.B) {
	for _, n := range benchSizes {
		src := generate(n)
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			// From about 1 000 steps the generated definition is over
			// Step Functions' 1 MiB (1.05 MiB at 1 000), which compile
			// finds once every other check is done.
			benchAgainstParse(b, src, func(res *Result) error {
				if n < 1_000 {
					return firstError(res)
				}
				return firstErrorBesidesQuota(res)
			})
		})
	}
}

// BenchmarkCompileDiamonds measures compile of n diamonds (2^n paths for
// the state-size bound to consider) against parse.
func BenchmarkCompileDiamonds(b *testing.B) {
	for _, n := range []int{10, 300, 3_333} {
		src := resolvertest.Diamonds(n)
		b.Run(fmt.Sprintf("diamonds=%d", n), func(b *testing.B) {
			benchAgainstParse(b, src, firstErrorBesidesQuota)
		})
	}
}

// BenchmarkCompileLoops measures compile of k for_each loops that share
// their as name against parse; compile-ns/loop is compile's time per
// loop, and x-parse its ratio to parse (linear in k), both of which stay
// flat when compile is linear in k.
func BenchmarkCompileLoops(b *testing.B) {
	for _, k := range []int{10, 320, 2_500} {
		src := generateLoops(k)
		b.Run(fmt.Sprintf("loops=%d", k), func(b *testing.B) {
			perOp := benchAgainstParse(b, src, firstErrorBesidesQuota)
			b.ReportMetric(float64(perOp.Nanoseconds())/float64(k), "compile-ns/loop")
		})
	}
}

// firstError is a compile's first diagnostic, nil when it has none.
func firstError(res *Result) error {
	if len(res.Diagnostics) > 0 {
		return fmt.Errorf("%+v", res.Diagnostics[0])
	}
	return nil
}

// firstErrorBesidesQuota is firstError, except that a definition over
// Step Functions' size quota passes: a large generated Solution's
// definition exceeds it, which compile finds after all the work is done.
func firstErrorBesidesQuota(res *Result) error {
	if len(res.Diagnostics) == 1 && res.Diagnostics[0].Rule == RuleQuota {
		return nil
	}
	return firstError(res)
}

// BenchmarkParse measures parsing and decoding alone, the baseline the
// compile/parse ratio is taken against.
func BenchmarkParse(b *testing.B) {
	for _, n := range benchSizes {
		src := generate(n)
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				parseOnce(b, src)
			}
		})
	}
}

// A generated Solution of 900 steps fits Step Functions' 1 MiB quota (of
// 1000, the definition is just over it: each tool step's Task and counter
// carry the run's traceparent), and one of 10 000 is refused by it.
func TestGeneratedCompiles(t *testing.T) {
	res := Compile("gen.yaml", generate(900), Options{})
	if !res.OK() {
		t.Fatal(res.Diagnostics[0])
	}
	big := Compile("gen.yaml", generate(10_000), Options{})
	if big.OK() || big.Diagnostics[0].Rule != RuleQuota {
		t.Fatalf("10 000 steps: %v", big.Diagnostics)
	}
}

// allocsOf counts the heap allocations of one compile of src, and the
// bytes they take.
func allocsOf(src []byte) (count, bytes uint64) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	Compile("growth.yaml", src, Options{})
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc
}

// Compile's allocations grow linearly with the Solution: at 10 000 steps
// at most 12 times those at 1 000 (10 times, and some slack for slices
// and maps that grow by doubling), in number and in bytes, for the
// generated blocks, for diamonds (2^n paths for the state-size bound) and
// for for_each loops that name their item alike. Allocations do not
// depend on the machine's load, so unlike times they can be asserted; a
// check that walks the whole Solution once per step or per loop shows here
// as tens of times more.
func TestCompileAllocationsGrowLinearly(t *testing.T) {
	cases := []struct {
		name       string
		small, big []byte
	}{
		{"blocks", generate(1_000), generate(10_000)},
		{"diamonds", resolvertest.Diamonds(333), resolvertest.Diamonds(3_333)},
		{"loops", generateLoops(250), generateLoops(2_500)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			small, smallB := allocsOf(c.small)
			big, bigB := allocsOf(c.big)
			t.Logf("about 1 000 steps: %d allocations, %d bytes; 10 000: %d (%.2f×), %d bytes (%.2f×)",
				small, smallB, big, float64(big)/float64(small), bigB, float64(bigB)/float64(smallB))
			if big > 12*small {
				t.Errorf("%d allocations at about 10 000 steps, %.1f× the %d at 1 000; want at most 12×", big, float64(big)/float64(small), small)
			}
			if bigB > 12*smallB {
				t.Errorf("%d bytes allocated at about 10 000 steps, %.1f× the %d at 1 000; want at most 12×", bigB, float64(bigB)/float64(smallB), smallB)
			}
		})
	}
}
