package mcptool

import (
	"testing"

	"github.com/toolgate/toolgate/infra/local/mcpserver"
	"github.com/toolgate/toolgate/shared/mcpmeta"
	"github.com/toolgate/toolgate/shared/tool"
)

// A call span's context, as the dispatcher puts it on a claimed call.
const (
	traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tracestate  = "vendor=opaque,other=1"
)

// traced pins send_sms on srv, calls it with the trace context tc, and
// returns how many HTTP requests srv had received before the call.
func traced(t *testing.T, c *Client, srv *mcpserver.Server, tc tool.TraceContext) int {
	t.Helper()
	pinned := pin(t, c, srv, mcpserver.SendSMS)
	before := len(srv.Requests())
	call := callOf(pinned, `{"text":"hi","to":"+15550100"}`, "run-1/1", 1)
	call.Trace = tc
	if _, err := c.Call(t.Context(), call); err != nil {
		t.Fatalf("Call: %v", err)
	}
	return before
}

// A claimed call carries its trace context as SEP-414 puts it, bare keys
// at the top of params._meta beside the idempotency key, and as the
// traceparent and tracestate headers of every HTTP request of its
// session; never baggage.
func TestCallSendsTheTraceContextInMetaAndHeaders(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := start(t, m.opts)
			before := traced(t, clientFor(t, srv), srv, tool.TraceContext{Traceparent: traceparent, Tracestate: tracestate})
			calls := srv.Calls()
			if len(calls) != 1 {
				t.Fatalf("calls: %d, want 1", len(calls))
			}
			got := calls[0]
			if got.Meta[mcpmeta.Traceparent] != traceparent || got.Meta[mcpmeta.Tracestate] != tracestate || got.Meta[mcpmeta.IdempotencyKey] != "run-1/1" {
				t.Errorf("_meta %v", got.Meta)
			}
			if _, ok := got.Meta["baggage"]; ok {
				t.Errorf("_meta carries baggage: %v", got.Meta)
			}
			reqs := srv.Requests()[before:]
			var sawCall bool
			for _, r := range reqs {
				h := r.TraceHeaders
				if h.Get("traceparent") != traceparent || h.Get("tracestate") != tracestate || h.Get("baggage") != "" || len(h) != 2 {
					t.Errorf("%s %s: trace headers %v", r.Method, r.RPCMethod, h)
				}
				sawCall = sawCall || r.RPCMethod == "tools/call"
			}
			if !sawCall || len(reqs) < 2 {
				t.Errorf("the call's session made %d requests, the tools/call among them %v; want the handshake and the call", len(reqs), sawCall)
			}
			// The listing that pinned the tool sent none.
			for _, r := range srv.Requests()[:before] {
				if r.TraceHeaders != nil {
					t.Errorf("listing %s %s: trace headers %v", r.Method, r.RPCMethod, r.TraceHeaders)
				}
			}
		})
	}
}

// A context without a tracestate sends a traceparent alone; a call
// without one (none is claimed so, but a Func must not invent one) sends
// neither.
func TestCallSendsOnlyTheTraceContextItHas(t *testing.T) {
	for _, c := range []struct {
		name string
		tc   tool.TraceContext
	}{
		{"no tracestate", tool.TraceContext{Traceparent: traceparent}},
		{"no context", tool.TraceContext{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := start(t, mcpserver.Options{Stateless: true})
			before := traced(t, clientFor(t, srv), srv, c.tc)
			got := srv.Calls()[0]
			_, hasState := got.Meta[mcpmeta.Tracestate]
			tp, hasParent := got.Meta[mcpmeta.Traceparent]
			if hasState || hasParent != (c.tc.Traceparent != "") || hasParent && tp != traceparent {
				t.Errorf("_meta %v", got.Meta)
			}
			for _, r := range srv.Requests()[before:] {
				if r.TraceHeaders.Get("traceparent") != c.tc.Traceparent || r.TraceHeaders.Get("tracestate") != "" {
					t.Errorf("%s %s: trace headers %v", r.Method, r.RPCMethod, r.TraceHeaders)
				}
			}
		})
	}
}

// The check before a claim sends no trace context, even on a call that
// has one: its listing is not the call.
func TestCheckSendsNoTraceContext(t *testing.T) {
	srv := start(t, mcpserver.Options{Stateless: true})
	c := clientFor(t, srv)
	call := callOf(pin(t, c, srv, mcpserver.SendSMS), `{"text":"hi","to":"+15550100"}`, "", 1)
	call.Trace = tool.TraceContext{Traceparent: traceparent, Tracestate: tracestate}
	before := len(srv.Requests())
	fresh := New(c.cfg, nil) // no listing kept: the check lists again
	if err := fresh.Check(t.Context(), call); err != nil {
		t.Fatalf("Check: %v", err)
	}
	reqs := srv.Requests()[before:]
	if len(reqs) == 0 {
		t.Fatal("the check listed nothing")
	}
	for _, r := range reqs {
		if r.TraceHeaders != nil {
			t.Errorf("%s %s: trace headers %v", r.Method, r.RPCMethod, r.TraceHeaders)
		}
	}
	if n := len(srv.Calls()); n != 0 {
		t.Errorf("calls: %d", n)
	}
}
