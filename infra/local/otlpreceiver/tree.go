package otlpreceiver

import (
	"fmt"
	"slices"
	"strings"
)

// Tree renders spans (one trace's, as Receiver.Trace returns them) as an
// indented tree, one line per span:
//
//	<two spaces per depth><name> <duration>ms <outcome>
//
// where duration is Span.Duration in milliseconds with three decimals and
// outcome is Span.Outcome. A span's children are the spans that name it as
// their parent, sorted by start time, then span id. Roots are the spans
// whose parent is not among spans (or who name none), in the same order.
// When two spans share a span id, children hang under the earlier one.
// Spans that only a cycle of parents reaches are shown as roots where the
// cycle is entered, so every span is shown exactly once. "" for no spans.
func Tree(spans []Span) string {
	spans = slices.Clone(spans)
	sortByStart(spans)
	first := map[string]int{} // span id -> its first span's index
	for i, s := range spans {
		if _, ok := first[s.SpanID]; !ok {
			first[s.SpanID] = i
		}
	}
	children := map[int][]int{}
	var roots []int
	for i, s := range spans {
		if p, ok := first[s.ParentSpanID]; ok && s.ParentSpanID != "" {
			children[p] = append(children[p], i)
			continue
		}
		roots = append(roots, i)
	}
	var b strings.Builder
	shown := make([]bool, len(spans))
	var walk func(i, depth int)
	walk = func(i, depth int) {
		if shown[i] {
			return
		}
		shown[i] = true
		s := spans[i]
		fmt.Fprintf(&b, "%s%s %.3fms %s\n", strings.Repeat("  ", depth), s.Name, float64(s.Duration().Microseconds())/1000, s.Outcome())
		for _, c := range children[i] {
			walk(c, depth+1)
		}
	}
	for _, i := range roots {
		walk(i, 0)
	}
	for i := range spans {
		walk(i, 0) // in a cycle of parents: no root reaches it
	}
	return b.String()
}

// sortByStart orders spans by start time, then span id, stably.
func sortByStart(spans []Span) {
	slices.SortStableFunc(spans, func(a, b Span) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return strings.Compare(a.SpanID, b.SpanID)
	})
}
