package resolver

import (
	"fmt"
	"strings"
	"testing"
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

var benchSizes = []int{10, 1_000, 10_000}

// BenchmarkCompile measures the whole pipeline: parse, checks, Gate A,
// toolset and definition. At 10 000 steps the definition exceeds Step
// Functions' 1 MiB and the result is the quota diagnostic, after all the
// work is done.
func BenchmarkCompile(b *testing.B) {
	for _, n := range benchSizes {
		src := generate(n)
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				res := Compile("bench.yaml", src, Options{})
				if len(res.Diagnostics) > 0 && n < 10_000 {
					b.Fatal(res.Diagnostics[0])
				}
			}
		})
	}
}

// BenchmarkParse measures parsing and decoding alone, the baseline the
// compile/parse ratio is taken against.
func BenchmarkParse(b *testing.B) {
	for _, n := range benchSizes {
		src := generate(n)
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				v, _, err := parseValue(src, formatYAML)
				if err != nil {
					b.Fatal(err)
				}
				ds := &diags{}
				if (&decoder{ds: ds}).decodeSolution(v) == nil || ds.hasErrors() {
					b.Fatal(ds.sorted())
				}
			}
		})
	}
}

func TestGeneratedCompiles(t *testing.T) {
	res := Compile("gen.yaml", generate(1000), Options{})
	if !res.OK() {
		t.Fatal(res.Diagnostics[0])
	}
	big := Compile("gen.yaml", generate(10_000), Options{})
	if big.OK() || big.Diagnostics[0].Rule != RuleQuota {
		t.Fatalf("10 000 steps: %v", big.Diagnostics)
	}
}
