package otlpreceiver

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
)

// t0 is the start of the spans below; ms(n) is t0 + n milliseconds.
var t0 = time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)

func ms(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Millisecond))) }

func TestTree(t *testing.T) {
	const tr = "4bf92f3577b34da6a3ce929d0e0e4736"
	sp := func(id, parent, name string, start, end float64) Span {
		return Span{TraceID: tr, SpanID: id, ParentSpanID: parent, Name: name, Start: ms(start), End: ms(end)}
	}
	failed := sp("0000000000000003", "0000000000000002", "toolgate.attempt fetch", 1, 2.5)
	failed.Status, failed.Attributes = codes.Error, map[string]string{OutcomeKey: "retryable"}
	cases := []struct {
		name  string
		spans []Span
		want  string
	}{
		{"no spans", nil, ""},
		{"children under their parent by start time, whatever the order received", []Span{
			sp("0000000000000004", "0000000000000002", "toolgate.attempt fetch", 3, 4),
			failed,
			sp("0000000000000002", "0000000000000001", "toolgate.step fetch", 0.5, 4.25),
			sp("0000000000000001", "", "toolgate.run", 0, 10),
			sp("0000000000000005", "0000000000000001", "toolgate.step mail", 5, 9),
		}, "toolgate.run 10.000ms Unset\n" +
			"  toolgate.step fetch 3.750ms Unset\n" +
			"    toolgate.attempt fetch 1.500ms Error toolgate.outcome=\"retryable\"\n" +
			"    toolgate.attempt fetch 1.000ms Unset\n" +
			"  toolgate.step mail 4.000ms Unset\n"},
		{"a span whose parent is not in the trace is a root", []Span{
			sp("0000000000000001", "", "toolgate.run", 0, 10),
			sp("0000000000000009", "00000000000000ff", "toolgate.review.decide", 2, 3),
		}, "toolgate.run 10.000ms Unset\ntoolgate.review.decide 1.000ms Unset\n"},
		{"the same start time: by span id", []Span{
			sp("0000000000000002", "", "b", 0, 1),
			sp("0000000000000001", "", "a", 0, 1),
		}, "a 1.000ms Unset\nb 1.000ms Unset\n"},
		{"no end time: no duration", []Span{{TraceID: tr, SpanID: "0000000000000001", Name: "open", Start: t0}}, "open 0.000ms Unset\n"},
		{"a shared span id: children under the earlier", []Span{
			sp("0000000000000001", "", "first", 0, 10),
			sp("0000000000000001", "", "second", 1, 10),
			sp("0000000000000002", "0000000000000001", "child", 2, 3),
		}, "first 10.000ms Unset\n  child 1.000ms Unset\nsecond 9.000ms Unset\n"},
		{"a cycle of parents is shown once, from where it is entered", []Span{
			sp("0000000000000001", "0000000000000002", "a", 0, 1),
			sp("0000000000000002", "0000000000000001", "b", 1, 2),
			sp("0000000000000003", "0000000000000003", "self", 2, 3),
		}, "a 1.000ms Unset\n  b 1.000ms Unset\nself 1.000ms Unset\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Tree(c.spans); got != c.want {
				t.Errorf("Tree:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}
