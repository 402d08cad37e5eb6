package mcpserver

import (
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/infra/local/otlpreceiver"
	"github.com/toolgate/toolgate/shared/mcpmeta"
	"github.com/toolgate/toolgate/shared/tracing"
)

// tracer is a tracer exporting to a new receiver for t (the local
// stack's, which decodes exports with the OTLP types).
func tracer(t *testing.T) (*tracing.Tracer, *otlpreceiver.Receiver) {
	t.Helper()
	rec, err := otlpreceiver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	tr := tracing.New(rec.URL(), "mcpserver", nil)
	t.Cleanup(func() { _ = tr.Shutdown(t.Context()) })
	return tr, rec
}

// A caller's W3C trace context, as a client sends it.
const (
	callerTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan   = "00f067aa0ba902b7"
	callerParent = "00-" + callerTrace + "-" + callerSpan + "-01"
	callerState  = "vendor=opaque"
)

// headerTransport sets the trace headers on every request, as a client
// that carries the context in HTTP only does.
type headerTransport struct{ traceparent string }

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("traceparent", h.traceparent)
	return http.DefaultTransport.RoundTrip(req)
}

// The server span of a tools/call continues the context the call
// carried, in _meta (SEP-414) or else in its POST's headers; it holds the
// tool's name and nothing else, and has left by the time the client has
// the answer.
func TestCallSpanContinuesTheReceivedContext(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			tr, rec := tracer(t)
			opts := m.opts
			opts.Tracer = tr
			srv := start(t, opts)

			cs := connect(t, srv, "", nil)
			call(t, cs, LookupCustomer, map[string]any{"customer_id": "C-1"},
				mcp.Meta{mcpmeta.Traceparent: callerParent, mcpmeta.Tracestate: callerState, "baggage": "k=v"})
			otherSpan := "00f067aa0ba90200"
			viaHeader := connectVia(t, &mcp.StreamableClientTransport{Endpoint: srv.URL(),
				HTTPClient: &http.Client{Transport: headerTransport{"00-" + callerTrace + "-" + otherSpan + "-01"}}}, "", nil)
			call(t, viaHeader, LookupCustomer, map[string]any{"customer_id": "C-2"}, nil)

			calls := srv.Calls()
			spans := rec.Spans()
			if len(calls) != 2 || len(spans) != 2 {
				t.Fatalf("%d calls, %d spans; want 2 and 2", len(calls), len(spans))
			}
			if calls[0].Traceparent != callerParent || calls[0].Tracestate != callerState {
				t.Errorf("call in _meta recorded %q %q", calls[0].Traceparent, calls[0].Tracestate)
			}
			if calls[1].Traceparent != "00-"+callerTrace+"-"+otherSpan+"-01" || calls[1].TraceHeaders.Get("traceparent") != calls[1].Traceparent {
				t.Errorf("call in headers recorded %q, headers %v", calls[1].Traceparent, calls[1].TraceHeaders)
			}
			for i, parent := range []string{callerSpan, otherSpan} {
				s := spans[i]
				if s.TraceID != callerTrace || s.ParentSpanID != parent || s.SpanID != calls[i].Span.SpanID().String() {
					t.Errorf("span %d: trace %s parent %s id %s; want trace %s parent %s id %s", i, s.TraceID, s.ParentSpanID, s.SpanID,
						callerTrace, parent, calls[i].Span.SpanID())
				}
				if s.Name != "tools/call "+LookupCustomer || s.Kind != trace.SpanKindServer || len(s.Attributes) != 1 ||
					s.Attributes[ToolNameAttribute] != LookupCustomer {
					t.Errorf("span %d: %s kind %d attributes %+v", i, s.Name, s.Kind, s.Attributes)
				}
			}
			if spans[0].TraceState != callerState {
				t.Errorf("span tracestate %q, want the caller's", spans[0].TraceState)
			}
		})
	}
}

// Without a context, a call's span starts a trace of its own; a failing
// tool's span is an error with no text of the server's.
func TestCallSpanWithoutContextIsARoot(t *testing.T) {
	tr, rec := tracer(t)
	srv := start(t, Options{Stateless: true, Tracer: tr})
	cs := connect(t, srv, "", nil)
	res := call(t, cs, LookupCustomer, map[string]any{"customer_id": "C-9"}, nil)
	if !res.IsError {
		t.Fatal("C-9 exists")
	}
	spans := rec.Spans()
	if len(spans) != 1 || spans[0].ParentSpanID != "" || spans[0].TraceID == callerTrace || spans[0].Status != codes.Error ||
		spans[0].StatusMessage != "tool call failed" {
		t.Fatalf("spans %+v", spans)
	}
	if c := srv.Calls(); len(c) != 1 || c[0].Traceparent != "" || c[0].TraceHeaders != nil {
		t.Errorf("recorded %+v", c)
	}
}

// Without a tracer the server opens no span but records what it received.
func TestWithoutTracerTheContextIsRecordedOnly(t *testing.T) {
	srv := start(t, Options{Stateless: true})
	cs := connect(t, srv, "", nil)
	call(t, cs, SendSMS, map[string]any{"to": "+15550100", "text": "hi"}, mcp.Meta{mcpmeta.Traceparent: callerParent})
	c := srv.Calls()
	if len(c) != 1 || c[0].Traceparent != callerParent || c[0].Span.IsValid() {
		t.Fatalf("recorded %+v", c)
	}
	var toolsCall []Request
	for _, r := range srv.Requests() {
		if r.RPCMethod == "tools/call" {
			toolsCall = append(toolsCall, r)
		}
	}
	// The context came in _meta only: the POST had no trace headers.
	if len(toolsCall) != 1 || toolsCall[0].Method != http.MethodPost || toolsCall[0].TraceHeaders != nil {
		t.Errorf("tools/call requests %+v", toolsCall)
	}
}
