package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/resolver/resolvertest"
)

// BenchmarkCheckDiamonds runs the built CLI's `toolgate check` on 300
// diamonds (2^300 paths) and `toolgate version` (the process's start and
// nothing else) in turns, and reports each one's time (check-ns/op,
// start-ns/op) and the median of their ratio per pair (x-start; the goal
// is at most 3), so that the machine's load moves both alike.
func BenchmarkCheckDiamonds(b *testing.B) {
	bin := build(b)
	file := filepath.Join(b.TempDir(), "diamonds.yaml")
	if err := os.WriteFile(file, resolvertest.Diamonds(300), 0o644); err != nil {
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
