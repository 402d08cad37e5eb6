package dispatch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/infra/local/otlpreceiver"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
	"github.com/toolgate/toolgate/shared/tracecontext"
	"github.com/toolgate/toolgate/shared/tracing"
)

// spanSink is the local stack's OTLP/HTTP receiver (it decodes every
// export with the OTLP types).
type spanSink struct{ *otlpreceiver.Receiver }

func (s spanSink) named(prefix string) []otlpreceiver.Span {
	var out []otlpreceiver.Span
	for _, sp := range s.Spans() {
		if strings.HasPrefix(sp.Name, prefix) {
			out = append(out, sp)
		}
	}
	return out
}

func tracedDispatcher(t *testing.T, e *env, run toolcall.Func) (*Dispatcher, spanSink) {
	t.Helper()
	rec, err := otlpreceiver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	tr := tracing.New(rec.URL(), "test-echo", nil)
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return e.dispatcher(t, "test-echo", run, func(c *Config) { c.Tracer = tr }), spanSink{rec}
}

// A call retried after a retryable failure shows its attempts under one
// step span: the id every attempt derives, in the run's derived trace,
// emitted once by the attempt that ends the call, started at the first
// claim. Each attempt sends its own span's context to the tool.
func TestRetriedCallShowsItsAttemptsUnderOneStepSpan(t *testing.T) {
	e := newEnv(t)
	var sent []tool.TraceContext
	d, sink := tracedDispatcher(t, e, func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		sent = append(sent, c.Trace)
		if len(sent) == 1 {
			return nil, tool.Errorf(tool.UpstreamUnavailable, "try again")
		}
		return json.RawMessage(`{"text":"ok"}`), nil
	})
	payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"CANARY-input-7f3a"}`)
	run := runIDOf(t, payload)
	if _, err := d.Handle(context.Background(), payload); codeOf(t, err) != string(tool.UpstreamUnavailable) {
		t.Fatalf("first attempt: %v", err)
	}
	if steps := sink.named("toolgate.step"); len(steps) != 0 {
		t.Fatalf("a retryable failure emitted the step span: %+v", steps)
	}
	if _, err := d.Handle(context.Background(), payload); err != nil {
		t.Fatal(err)
	}
	// A replay (the Task's answer lost, say) adds an attempt span under
	// the same step span, and no second step span.
	if _, err := d.Handle(context.Background(), payload); err != nil {
		t.Fatal(err)
	}
	want := tracecontext.ForCall(testSecret, run, "1", tool.TraceContext{}).Step
	steps, attempts := sink.named("toolgate.step s"), sink.named("toolgate.attempt test-echo")
	if len(steps) != 1 || len(attempts) != 3 || attempts[2].Attributes[AttrOutcome] != "DEDUPLICATED" || attempts[2].ParentSpanID != steps[0].SpanID {
		t.Fatalf("%d step spans and %d attempt spans, want 1 and 3, the last a replay under the step span", len(steps), len(attempts))
	}
	attempts = attempts[:2]
	step := steps[0]
	if step.TraceID != want.TraceID().String() || step.SpanID != want.SpanID().String() || step.ParentSpanID != "" || step.Status != codes.Ok {
		t.Fatalf("step span %+v, want trace %s span %s", step, want.TraceID(), want.SpanID())
	}
	if !step.Start.Equal(attempts[0].Start) {
		t.Fatalf("step span starts at %s, the first attempt at %s", step.Start, attempts[0].Start)
	}
	for i, a := range attempts {
		if a.TraceID != step.TraceID || a.ParentSpanID != step.SpanID {
			t.Fatalf("attempt %d not under the step span: %+v", i+1, a)
		}
		sc, ok := tracecontext.Parse(sent[i])
		if !ok || sc.SpanID().String() != a.SpanID || sc.TraceID().String() != a.TraceID {
			t.Fatalf("attempt %d sent %+v, its span is %s", i+1, sent[i], a.SpanID)
		}
	}
	if attempts[0].Status != codes.Error || attempts[0].StatusMessage != string(tool.UpstreamUnavailable) {
		t.Fatalf("failed attempt's status %v %q", attempts[0].Status, attempts[0].StatusMessage)
	}
	for _, sp := range sink.Spans() {
		body, err := json.Marshal(sp)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(body), "CANARY") || strings.Contains(string(body), run) || strings.Contains(string(body), `"ok"`) {
			t.Fatalf("an exported span holds the call's input, output or run id: %s", body)
		}
	}
}

// A run given a context (toolgate run's TRACEPARENT, a parent's workflow
// step) keeps its trace id, and the step span is its child; a malformed
// one is ignored and the derived trace is used.
func TestCallJoinsTheTraceItCarries(t *testing.T) {
	e := newEnv(t)
	d, sink := tracedDispatcher(t, e, func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		return json.RawMessage(`{"text":"ok"}`), nil
	})
	carried := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
	for _, tc := range []struct{ member, traceID, parent string }{
		{`{"traceparent":"` + carried + `"}`, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"},
		{`{"traceparent":"00-zz-00f067aa0ba902b7-01"}`, "", ""},
		{`null`, "", ""},
	} {
		payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"a"}`)
		payload = json.RawMessage(strings.TrimSuffix(string(payload), "}") + `,"trace":` + tc.member + `}`)
		if _, err := d.Handle(context.Background(), payload); err != nil {
			t.Fatal(err)
		}
		steps := sink.named("toolgate.step")
		step := steps[len(steps)-1]
		traceID := tc.traceID
		if traceID == "" {
			traceID = tracecontext.TraceID(testSecret, runIDOf(t, payload)).String()
		}
		if step.TraceID != traceID || step.ParentSpanID != tc.parent {
			t.Fatalf("trace %s: step span in trace %s under %q, want %s under %q", tc.member, step.TraceID, step.ParentSpanID, traceID, tc.parent)
		}
	}
}

// With export off, the tool still gets a valid context to send on, a new
// span under the call's step span.
func TestExportOffStillGivesTheToolAContext(t *testing.T) {
	e := newEnv(t)
	var got tool.TraceContext
	d := e.dispatcher(t, "test-echo", func(ctx context.Context, c *toolcall.Call) (json.RawMessage, error) {
		got = c.Trace
		return json.RawMessage(`{"text":"ok"}`), nil
	})
	payload := envelopeFor("test-echo", e.ts.ID, "", 1, `{"text":"a"}`)
	if _, err := d.Handle(context.Background(), payload); err != nil {
		t.Fatal(err)
	}
	sc, ok := tracecontext.Parse(got)
	step := tracecontext.ForCall(testSecret, runIDOf(t, payload), "1", tool.TraceContext{}).Step
	if !ok || sc.TraceID() != step.TraceID() || sc.SpanID() == step.SpanID() || sc.TraceFlags() != trace.FlagsSampled {
		t.Fatalf("the tool got %+v", got)
	}
}
