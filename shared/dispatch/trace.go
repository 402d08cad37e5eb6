package dispatch

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/tracecontext"
	"github.com/toolgate/toolgate/shared/tracing"
)

// The attributes of toolgate's call spans (docs/tracing.md, "Spans"):
// names, counts, codes and the opaque external key, never an input, an
// output, a recipient, a URL or a header value.
const (
	AttrTool        = "toolgate.tool"
	AttrStep        = "toolgate.step"
	AttrSeq         = "toolgate.seq"
	AttrAttempt     = "toolgate.attempt"
	AttrOutcome     = "toolgate.outcome"
	AttrErrorCode   = "toolgate.error_code"
	AttrExternalKey = "toolgate.external_key"
	// AttrReusedFrom is, on a fork's call that took its parent's recorded
	// result, the parent call's idempotency key (docs/fork.md,
	// "Matching"); never the result.
	AttrReusedFrom = "toolgate.reused_from"
	// AttrXRayTraceID is the invocation's X-Ray trace id (the Root of
	// the X-Amzn-Trace-Id header Lambda gives the invocation), so that a
	// span and the X-Ray segments of the same invocation can be joined.
	AttrXRayTraceID = "aws.xray.trace_id"
)

// xrayContextKey is where aws-lambda-go keeps the invocation's
// X-Amzn-Trace-Id header in a handler's context.
const xrayContextKey = "x-amzn-trace-id"

// startAttempt places the admitted call in its run's trace
// (tracecontext.ForCall: the carried context, else the run id's derived
// trace) and opens this attempt's span under the call's step span. The
// attempt span's context is what the tool sends on (toolcall.Call.Trace).
func (inv *invocation) startAttempt(ctx context.Context) {
	env := inv.env
	var carried tool.TraceContext
	if env.Trace != nil {
		carried = *env.Trace
	}
	inv.trace = inv.d.traces.ForCall(env.RunID, env.Seq, carried)
	if !inv.d.cfg.Tracer.Exporting() {
		// Nothing is recorded: the tool still sends a new span's context.
		inv.callSpan = tracing.Child(inv.trace.Step)
		return
	}
	attrs := callAttributes(env)
	if h, ok := ctx.Value(xrayContextKey).(string); ok {
		if root := xrayRoot(h); root != "" {
			attrs = append(attrs, attribute.String(AttrXRayTraceID, root))
		}
	}
	_, inv.span = inv.d.cfg.Tracer.Start(ctx, "toolgate.attempt "+env.Tool, tracing.SpanOptions{
		Parent: inv.trace.Step, Start: inv.started, Kind: trace.SpanKindServer, Attributes: attrs,
	})
	inv.callSpan = inv.span.SpanContext()
}

// callAttributes are the attributes that name a call: its tool, step and
// seq, on its attempt spans and its step span alike.
func callAttributes(env *tool.Envelope) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String(AttrTool, env.Tool), attribute.String(AttrStep, env.Step), attribute.String(AttrSeq, string(env.Seq))}
}

// callTrace is the context a tool sends with the call: the attempt span's.
func (inv *invocation) callTrace() tool.TraceContext {
	return tracecontext.Format(inv.callSpan)
}

// endAttempt ends the attempt's span (when it is recorded) with its outcome and, when this
// attempt ends the call for good, emits the call's step span (its id
// derived, so that every attempt names it as parent; started at the first
// claim). An outcome is final when no later attempt can change it: a
// success, UNKNOWN, or an error that is not retryable; a replay's attempt
// span is under the step span its completing attempt emitted. A call
// whose Task gives up after a retryable error has no step span; its
// attempts still share one parent id (docs/tracing.md).
func (inv *invocation) endAttempt(ctx context.Context, o *outcome) {
	if inv.span == nil {
		return
	}
	outcome, final := spanOutcome(o)
	attrs := []attribute.KeyValue{attribute.String(AttrOutcome, outcome), attribute.Int(AttrAttempt, inv.attempt)}
	if inv.externalKey != "" {
		attrs = append(attrs, attribute.String(AttrExternalKey, inv.externalKey))
	}
	if o.err != nil {
		attrs = append(attrs, attribute.String(AttrErrorCode, string(o.err.Code)))
	}
	if o.reusedFrom != "" {
		attrs = append(attrs, attribute.String(AttrReusedFrom, o.reusedFrom))
	}
	inv.span.SetAttributes(attrs...)
	setStatus(inv.span, o)
	inv.span.End()
	if !final {
		return
	}
	env, step := inv.env, inv.trace.Step
	start := inv.firstStarted
	if start.IsZero() {
		start = inv.started
	}
	_, span := inv.d.cfg.Tracer.Start(ctx, "toolgate.step "+env.Step, tracing.SpanOptions{
		Parent: inv.trace.Parent, TraceID: step.TraceID(), SpanID: step.SpanID(), Start: start,
		Attributes: append(callAttributes(env), attrs...),
	})
	setStatus(span, o)
	span.End()
}

// spanOutcome is the outcome attribute of an attempt (the ledger row's
// status; a replay is "DEDUPLICATED") and whether it ends the call: a
// replay does not (the attempt that completed the call emitted its step
// span, and a second one would repeat its id).
func spanOutcome(o *outcome) (string, bool) {
	switch {
	case o.write == writeNone:
		return string(ledger.StatusDeduplicated), false
	case o.row != nil:
		return string(o.row.Status), o.err == nil || !o.err.Retryable()
	}
	return string(o.status), o.err == nil || o.status == ledger.StatusUnknown || !o.err.Retryable()
}

// setStatus is the span's status: ok, or an error whose description is
// the error code alone (a tool's message may quote what it was sent).
func setStatus(span trace.Span, o *outcome) {
	if o.err != nil {
		span.SetStatus(codes.Error, string(o.err.Code))
		return
	}
	span.SetStatus(codes.Ok, "")
}

// xrayRoot is the Root field of an X-Amzn-Trace-Id header
// ("Root=1-…;Parent=…;Sampled=1"), or "".
func xrayRoot(header string) string {
	for field := range strings.SplitSeq(header, ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(field), "Root="); ok && len(v) <= 64 {
			return v
		}
	}
	return ""
}
