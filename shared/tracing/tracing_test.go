package tracing_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/infra/local/otlpreceiver"
	"github.com/toolgate/toolgate/shared/tracing"
)

// startReceiver is the local stack's OTLP/HTTP receiver, which decodes
// every export with the OTLP types (protojson), for t: what it reads is
// what any OTLP receiver would.
func startReceiver(t *testing.T) *otlpreceiver.Receiver {
	t.Helper()
	rec, err := otlpreceiver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	return rec
}

var parent = trace.NewSpanContext(trace.SpanContextConfig{
	TraceID: trace.TraceID{0x4b, 0xf9, 1}, SpanID: trace.SpanID{0, 0xf0, 1}, TraceFlags: trace.FlagsSampled, Remote: true,
})

// Off, nothing is exported, and a span still has a new, valid context
// under its parent's trace, to be sent on.
func TestOffStartsSpansWithContextsAndExportsNothing(t *testing.T) {
	tr := tracing.New("", "fn", nil)
	if tr.Exporting() {
		t.Fatal("off tracer exports")
	}
	_, span := tr.Start(context.Background(), "x", tracing.SpanOptions{Parent: parent})
	sc := span.SpanContext()
	if !sc.IsValid() || sc.TraceID() != parent.TraceID() || sc.SpanID() == parent.SpanID() || span.IsRecording() {
		t.Fatalf("off span context %v", sc)
	}
	forced := trace.SpanID{9, 9}
	_, span = tr.Start(context.Background(), "step", tracing.SpanOptions{TraceID: trace.TraceID{7}, SpanID: forced})
	if span.SpanContext().SpanID() != forced || span.SpanContext().TraceID() != (trace.TraceID{7}) {
		t.Fatalf("forced ids not kept: %v", span.SpanContext())
	}
	if _, span = (*tracing.Tracer)(nil).Start(context.Background(), "nil", tracing.SpanOptions{}); !span.SpanContext().IsValid() {
		t.Fatal("a nil tracer's span has no context")
	}
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// On, Flush POSTs the ended spans as OTLP JSON: ids as hex, the parent,
// the forced span id and start time, OTLP's status numbering.
func TestFlushPostsEndedSpansAsOTLPJSON(t *testing.T) {
	rec := startReceiver(t)
	tr := tracing.New(rec.URL(), "send-email", nil)
	defer tr.Shutdown(context.Background())
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ctx, step := tr.Start(context.Background(), "toolgate.step s", tracing.SpanOptions{TraceID: trace.TraceID{7}, SpanID: trace.SpanID{9, 9}, Start: start})
	_, attempt := tr.Start(ctx, "toolgate.attempt t", tracing.SpanOptions{Parent: step.SpanContext(), Attributes: []attribute.KeyValue{
		attribute.String("toolgate.tool", "send-email"), attribute.Int("toolgate.attempt", 2), attribute.Bool("b", true)}})
	attempt.SetStatus(codes.Error, "TOOL_TIMEOUT")
	attempt.End()
	step.SetStatus(codes.Ok, "")
	step.End()
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rec.Spans()
	if len(spans) != 2 || len(rec.Refusals()) != 0 {
		t.Fatalf("received %d spans, refused %+v", len(spans), rec.Refusals())
	}
	a, s := spans[0], spans[1]
	if s.TraceID != "07000000000000000000000000000000" || s.SpanID != "0909000000000000" || s.ParentSpanID != "" ||
		!s.Start.Equal(start) || s.Status != codes.Ok || s.Kind != trace.SpanKindInternal || s.Service != "send-email" || s.Scope != tracing.ScopeName {
		t.Fatalf("step span %+v", s)
	}
	if a.TraceID != s.TraceID || a.ParentSpanID != s.SpanID || a.Status != codes.Error || a.StatusMessage != "TOOL_TIMEOUT" || len(a.Attributes) != 3 ||
		a.Attributes["toolgate.tool"] != "send-email" || a.Attributes["toolgate.attempt"] != "2" || a.Attributes["b"] != "true" {
		t.Fatalf("attempt span %+v", a)
	}
}

// A receiver that refuses or never answers costs at most FlushTimeout and
// is an error for a log line, naming the status only.
func TestFlushReportsAReceiverThatRefusesOrHangs(t *testing.T) {
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusInternalServerError) }))
	defer refuse.Close()
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer hang.Close()
	defer close(release)
	for _, url := range []string{refuse.URL, hang.URL} {
		tr := tracing.New(url, "fn", nil)
		_, span := tr.Start(context.Background(), "x", tracing.SpanOptions{})
		span.End()
		if err := tr.Flush(context.Background()); err == nil {
			t.Fatalf("%s: flush succeeded", url)
		}
	}
}

// Slice attributes reach a receiver as OTLP arrays of their elements.
func TestSliceAttributesAreOTLPArrays(t *testing.T) {
	rec := startReceiver(t)
	tr := tracing.New(rec.URL(), "fn", nil)
	defer tr.Shutdown(context.Background())
	_, span := tr.Start(context.Background(), "x", tracing.SpanOptions{Attributes: []attribute.KeyValue{
		attribute.StringSlice("s", []string{"a", "b"}), attribute.IntSlice("i", []int{1, 2}),
		attribute.BoolSlice("b", []bool{true}), attribute.Float64Slice("f", []float64{1.5})}})
	span.End()
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rec.Spans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, refused %+v", len(spans), rec.Refusals())
	}
	for k, want := range map[string]string{"s": `["a","b"]`, "i": `[1,2]`, "b": `[true]`, "f": `[1.5]`} {
		if got := spans[0].Attributes[k]; got != want {
			t.Errorf("attribute %s = %s, want %s", k, got, want)
		}
	}
}

// Flush never waits past the invocation's deadline less its margin: with
// less time left it sends nothing and says so.
func TestFlushKeepsClearOfTheDeadline(t *testing.T) {
	rec := startReceiver(t)
	tr := tracing.New(rec.URL(), "fn", nil)
	defer tr.Shutdown(context.Background())
	_, span := tr.Start(context.Background(), "x", tracing.SpanOptions{})
	span.End()
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(tracing.FlushDeadlineMargin/2))
	defer cancel()
	if err := tr.Flush(ctx); err == nil {
		t.Fatal("flushed with less than the margin left")
	}
	if len(rec.Spans()) != 0 {
		t.Fatal("spans sent with less than the margin left")
	}
	if err := tr.Flush(context.Background()); err != nil || len(rec.Spans()) != 1 {
		t.Fatalf("the next flush: %v, %d spans", err, len(rec.Spans()))
	}
}

// Emit records one finished span with its status (an error by its code
// alone) and has sent it when it returns; off, it records nothing.
func TestEmitSendsOneFinishedSpan(t *testing.T) {
	rec := startReceiver(t)
	tr := tracing.New(rec.URL(), "fn", nil)
	defer tr.Shutdown(context.Background())
	if err := tr.Emit(context.Background(), "ok", tracing.SpanOptions{Parent: parent}, ""); err != nil {
		t.Fatal(err)
	}
	if err := tr.Emit(context.Background(), "failed", tracing.SpanOptions{}, "REVIEW_TASK_ENDED"); err != nil {
		t.Fatal(err)
	}
	if err := tracing.New("", "fn", nil).Emit(context.Background(), "off", tracing.SpanOptions{}, ""); err != nil {
		t.Fatal(err)
	}
	spans := rec.Spans()
	if len(spans) != 2 || spans[0].Name != "ok" || spans[0].Status != codes.Ok || spans[0].ParentSpanID != parent.SpanID().String() ||
		spans[1].Status != codes.Error || spans[1].StatusMessage != "REVIEW_TASK_ENDED" {
		t.Fatalf("spans %+v", spans)
	}
}
