package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/examples/create-ticket/ticketservice"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/infra/local/otlpreceiver"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/tracing"
)

// startReceiver is the local stack's OTLP/HTTP receiver, which decodes
// exports with the OTLP types, for t.
func startReceiver(t *testing.T) (*otlpreceiver.Receiver, string) {
	t.Helper()
	rec, err := otlpreceiver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	return rec, rec.URL()
}

// The proxy's call span, as the request's trace member carries it.
const (
	callTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callSpan  = "00f067aa0ba902b7"
)

var member = Trace{Traceparent: "00-" + callTrace + "-" + callSpan + "-01", Tracestate: "vendor=opaque"}

// wantChildSpan checks that spans is the function's one span, under the
// member's context, holding nothing but its name, kind and status.
func wantChildSpan(t *testing.T, spans []otlpreceiver.Span, status codes.Code) {
	t.Helper()
	if len(spans) != 1 {
		t.Fatalf("%d spans exported, want 1", len(spans))
	}
	s := spans[0]
	if s.TraceID != callTrace || s.ParentSpanID != callSpan || s.SpanID == callSpan || s.TraceState != member.Tracestate {
		t.Errorf("span trace %s parent %s id %s state %q; want trace %s parent %s", s.TraceID, s.ParentSpanID, s.SpanID, s.TraceState, callTrace, callSpan)
	}
	if s.Name != SpanName || s.Kind != trace.SpanKindServer || len(s.Attributes) != 0 || s.Status != status {
		t.Errorf("span %s kind %d attributes %+v status %+v", s.Name, s.Kind, s.Attributes, s.Status)
	}
}

// Handle opens its span under the request's trace member and has
// exported it when it returns; a failure's span carries its code.
func TestHandleContinuesTheRequestsTrace(t *testing.T) {
	svc := ticketservice.New()
	tickets := httptest.NewServer(svc)
	defer tickets.Close()
	for _, c := range []struct {
		name   string
		fail   int
		status codes.Code
		code   string
	}{
		{"created", 0, codes.Unset, ""},
		{"rate limited", http.StatusTooManyRequests, codes.Error, "TOOL_RATE_LIMITED"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, url := startReceiver(t)
			tr := tracing.New(url, "create-ticket", nil)
			defer tr.Shutdown(context.Background())
			if c.fail != 0 {
				svc.FailNext(c.fail)
			}
			h := &Handler{Base: tickets.URL, Client: tickets.Client(), Tracer: tr}
			if _, err := h.Handle(context.Background(), Request{Input: TicketInput{Title: "x"}, IdempotencyKey: "run/" + c.name, Trace: member}); err != nil {
				t.Fatal(err)
			}
			wantChildSpan(t, rec.Spans(), c.status)
			if got := rec.Spans()[0].StatusMessage; got != c.code {
				t.Errorf("status message %q, want %q", got, c.code)
			}
		})
	}
}

// Under the RIE, as Lambda runs it: an event with members the function
// does not know (ones a later proxy may add) is answered as before, and
// the function's span, exported before it answers, continues the trace
// member's context.
func TestFunctionToleratesUnknownMembersAndContinuesTheTrace(t *testing.T) {
	svc := ticketservice.New()
	tickets := httptest.NewServer(svc)
	t.Cleanup(tickets.Close)
	rec, url := startReceiver(t)
	fn := localtest.RIE(t, "create-ticket", localtest.Bootstrap(t, "."), 10*time.Second, map[string]string{
		"TICKETS_URL":             tickets.URL,
		functionconfig.EnvTracing: "otlp:" + url,
	})
	event := map[string]any{
		"input": map[string]any{"title": "printer on fire"}, "idempotency_key": "q3Xb0Yl2u1Vv9tA8rXkE_w/2", "attempt": 1,
		"run_id": "q3Xb0Yl2u1Vv9tA8rXkE_w", "step": "file-ticket", "tool": "create-ticket",
		"trace":  map[string]any{"traceparent": member.Traceparent, "tracestate": member.Tracestate, "later": true},
		"future": map[string]any{"nested": []any{1, "two"}}, "another_later_member": "x",
	}
	out, errType, errMsg := localtest.Invoke(t, fn, event)
	if errType != "" {
		t.Fatalf("the function failed: %s %s", errType, errMsg)
	}
	var res Result
	if err := json.Unmarshal(out, &res); err != nil || res != (Result{TicketID: "T-1", Created: true}) {
		t.Fatalf("answer %s (%v)", out, err)
	}
	wantChildSpan(t, rec.Spans(), codes.Unset)
}
