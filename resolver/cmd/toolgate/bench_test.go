package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// diamonds writes a Solution of n choice diamonds in sequence (3n steps,
// 2^n paths, each pass step its own slot of the state data), the input
// of the state-size bound's path exploration at its widest.
func diamonds(n int) []byte {
	var b strings.Builder
	b.WriteString("solution: diamonds\nversion: 1\ninput: {type: object}\nsteps:\n")
	for i := range n {
		next := "end"
		if i+1 < n {
			next = fmt.Sprintf("c%d", i+1)
		}
		fmt.Fprintf(&b, `  - id: c%[1]d
    choice:
      - when: {value: "${input.x}", equals: 1}
        next: a%[1]d
    default: b%[1]d
  - id: a%[1]d
    pass: {}
    next: %[2]s
  - id: b%[1]d
    pass: {}
    next: %[2]s
`, i, next)
	}
	return []byte(b.String())
}

// BenchmarkCheckDiamonds runs the built CLI's `toolgate check` on 300
// diamonds (2^300 paths) and `toolgate version` (the process's start and
// nothing else) in turns, and reports each one's time (check-ns/op,
// start-ns/op) and the median of their ratio per pair (x-start; the goal
// is at most 3), so that the machine's load moves both alike.
func BenchmarkCheckDiamonds(b *testing.B) {
	bin := build(b)
	file := filepath.Join(b.TempDir(), "diamonds.yaml")
	if err := os.WriteFile(file, diamonds(300), 0o644); err != nil {
		b.Fatal(err)
	}
	run := func(args ...string) time.Duration {
		start := time.Now()
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			b.Fatalf("toolgate %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return time.Since(start)
	}
	run("check", file) // the binary and the file into the page cache
	run("version")
	var check, start time.Duration
	var ratios []float64
	for b.Loop() {
		c := run("check", file)
		s := run("version")
		check, start = check+c, start+s
		ratios = append(ratios, float64(c)/float64(s))
	}
	slices.Sort(ratios)
	median := ratios[len(ratios)/2]
	if len(ratios)%2 == 0 {
		median = (ratios[len(ratios)/2-1] + median) / 2
	}
	b.ReportMetric(float64(check.Nanoseconds())/float64(b.N), "check-ns/op")
	b.ReportMetric(float64(start.Nanoseconds())/float64(b.N), "start-ns/op")
	b.ReportMetric(median, "x-start")
}
