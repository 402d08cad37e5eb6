// Package resolvertest generates Solutions for the resolver's and the
// CLI's benchmarks and allocation tests, so that both measure the same
// inputs (docs/performance.md, "The resolver").
package resolvertest

import (
	"fmt"
	"strings"
)

// Diamonds writes a Solution of n choice diamonds in sequence, as YAML:
// 3n steps and 2^n paths. Each choice goes to one of two pass steps,
// both of which go to the next choice, and every pass step writes its
// own slot, so the state-size bound's written sets differ on every path
// (its path exploration at its widest).
func Diamonds(n int) []byte {
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
