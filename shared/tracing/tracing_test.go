package tracing_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/shared/tracing"
)

// receiver is an OTLP/HTTP JSON receiver for these tests: it decodes each
// request into the exporter's own types and keeps them (the local stack's
// receiver, infra/local/otlpreceiver, decodes with the OTLP types).
type receiver struct {
	mu       sync.Mutex
	requests []tracing.Request
	types    []string
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var in tracing.Request
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if req.URL.Path != "/v1/traces" || dec.Decode(&in) != nil {
		http.Error(w, "bad", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.requests, r.types = append(r.requests, in), append(r.types, req.Header.Get("Content-Type"))
	r.mu.Unlock()
	_, _ = w.Write([]byte("{}"))
}

func (r *receiver) spans() []tracing.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []tracing.Span
	for _, req := range r.requests {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	return out
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
	rec := &receiver{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	tr := tracing.New(srv.URL, "send-email", nil)
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
	spans := rec.spans()
	if len(spans) != 2 || rec.types[0] != "application/json" {
		t.Fatalf("received %d spans (%v)", len(spans), rec.types)
	}
	a, s := spans[0], spans[1]
	if s.TraceID != "07000000000000000000000000000000" || s.SpanID != "0909000000000000" || s.ParentSpanID != "" ||
		s.StartTimeUnixNano != "1796205600000000000" || s.Status.Code != 1 || s.Kind != 1 {
		t.Fatalf("step span %+v", s)
	}
	if a.TraceID != s.TraceID || a.ParentSpanID != s.SpanID || a.Status.Code != 2 || a.Status.Message != "TOOL_TIMEOUT" || len(a.Attributes) != 3 ||
		*a.Attributes[1].Value.IntValue != "2" || !*a.Attributes[2].Value.BoolValue {
		t.Fatalf("attempt span %+v", a)
	}
	if rs := rec.requests[0].ResourceSpans; len(rs) != 1 || *rs[0].Resource.Attributes[0].Value.StringValue != "send-email" || rs[0].ScopeSpans[0].Scope.Name != tracing.ScopeName {
		t.Fatalf("resource %+v", rs)
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
