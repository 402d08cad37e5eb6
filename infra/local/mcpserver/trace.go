package mcpserver

import (
	"context"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/shared/mcpmeta"
	contract "github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/tracecontext"
	"github.com/toolgate/toolgate/shared/tracing"
)

// traceHeaderNames are the HTTP headers of the W3C trace context (Trace
// Context Level 1 §3) and of W3C Baggage that the server records as
// received, canonical as net/http keys them.
var traceHeaderNames = []string{"Traceparent", "Tracestate", "Baggage"}

// traceHeaders returns the trace headers h holds, nil when none.
func traceHeaders(h http.Header) http.Header {
	var out http.Header
	for _, n := range traceHeaderNames {
		if v, ok := h[n]; ok {
			if out == nil {
				out = http.Header{}
			}
			out[n] = slices.Clone(v)
		}
	}
	return out
}

// received is the trace context a tools/call carried: its _meta's
// traceparent and tracestate (the bare keys SEP-414 reserves), else the
// traceparent and tracestate headers of the POST that carried it.
// Values are kept as sent, whether valid or not.
func received(meta map[string]any, h http.Header) (traceparent, tracestate string) {
	if tp, ok := meta[mcpmeta.Traceparent].(string); ok && tp != "" {
		ts, _ := meta[mcpmeta.Tracestate].(string)
		return tp, ts
	}
	return h.Get("traceparent"), h.Get("tracestate")
}

// ToolNameAttribute is the one attribute of the server's spans: the
// called tool's name, under the OpenTelemetry semantic conventions' name
// for it (gen_ai.tool.name, as their MCP conventions use it).
const ToolNameAttribute = "gen_ai.tool.name"

// startSpan opens the server span of one tools/call under the context it
// carried (when that parses as W3C trace context; else a new trace):
// named "tools/call <tool>" as the OpenTelemetry semantic conventions for
// MCP name a server span ("{mcp.method.name} {target}"), of kind server,
// with the tool's name as its only attribute: never the arguments, the
// result or _meta. Without a tracer it opens nothing and returns a nil
// span.
func (s *Server) startSpan(ctx context.Context, c Call) (context.Context, trace.Span) {
	if s.tracer == nil {
		return ctx, nil
	}
	parent, _ := tracecontext.Parse(contract.TraceContext{Traceparent: c.Traceparent, Tracestate: c.Tracestate})
	return s.tracer.Start(ctx, "tools/call "+c.Tool, tracing.SpanOptions{
		Parent:     parent,
		Kind:       trace.SpanKindServer,
		Attributes: []attribute.KeyValue{attribute.String(ToolNameAttribute, c.Tool)},
	})
}

// endSpan ends a tools/call's span, its status an error for a JSON-RPC
// error or an isError result (no text of either), and flushes the
// tracer: a tracing.Tracer exports only on Flush, and the span should
// have left when the client has the answer.
func (s *Server) endSpan(ctx context.Context, span trace.Span, res mcp.Result, err error) {
	if span == nil {
		return
	}
	if r, ok := res.(*mcp.CallToolResult); err != nil || ok && r != nil && r.IsError {
		span.SetStatus(codes.Error, "tool call failed")
	}
	span.End()
	if ferr := s.tracer.Flush(ctx); ferr != nil {
		s.logger.Warn("mcpserver: spans not exported", "error", ferr)
	}
}
