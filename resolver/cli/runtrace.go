package cli

import (
	"context"
	"fmt"
	"io"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/tracecontext"
	"github.com/toolgate/toolgate/shared/tracing"
)

// The environment toolgate run reads a parent trace context from: the
// OpenTelemetry environment-variable carrier's names (OpenTelemetry
// specification, "Environment Variables as Context Propagation
// Carriers"). BAGGAGE is never read.
const (
	EnvTraceparent = "TRACEPARENT"
	EnvTracestate  = "TRACESTATE"
)

// runTrace is a run's trace as toolgate run starts it (docs/tracing.md,
// "A run's trace"): the run continues TRACEPARENT (and TRACESTATE) when
// they hold a valid W3C context (a malformed one is ignored, with a
// warning that does not quote it); when TOOLGATE_TRACING exports, run
// opens the run's root span, "toolgate.run <solution>", and the run
// continues that. traceparent is what goes into the execution input's
// meta ("" when there is neither); end ends the root span with the run's
// outcome and flushes it (a no-op without one). The error is
// TOOLGATE_TRACING's (functionconfig.ParseTracing).
func runTrace(ctx context.Context, getenv func(string) string, solution string, stderr io.Writer) (traceparent string, end func(outcome string, failed bool), err error) {
	tracer, err := tracing.FromEnv(getenv, "toolgate-cli")
	if err != nil {
		return "", nil, err
	}
	parent := carriedTrace(getenv, "toolgate run", stderr)
	if !tracer.Exporting() {
		return tracecontext.Format(parent).Traceparent, func(string, bool) {}, nil
	}
	_, span := tracer.Start(ctx, "toolgate.run "+solution, tracing.SpanOptions{Parent: parent, Kind: trace.SpanKindClient})
	end = func(outcome string, failed bool) {
		span.SetAttributes(attribute.String("toolgate.outcome", outcome))
		if failed {
			span.SetStatus(codes.Error, outcome)
		} else {
			span.SetStatus(codes.Ok, "")
		}
		span.End()
		if err := tracer.Shutdown(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(stderr, "toolgate run: the run's root span was not exported: %v\n", err)
		}
	}
	return tracecontext.Format(span.SpanContext()).Traceparent, end, nil
}

// carriedTrace is the W3C context in TRACEPARENT and TRACESTATE, or the
// zero SpanContext when there is none or it is malformed (then with a
// warning on stderr, from command, that does not quote it).
func carriedTrace(getenv func(string) string, command string, stderr io.Writer) trace.SpanContext {
	carried := tool.TraceContext{Traceparent: getenv(EnvTraceparent), Tracestate: getenv(EnvTracestate)}
	sc, ok := tracecontext.Parse(carried)
	if !ok && carried.Traceparent != "" {
		fmt.Fprintf(stderr, "%s: %s is not a W3C traceparent (version 00, 55 characters): ignored\n", command, EnvTraceparent)
	}
	return sc
}

// tracingHelp is the run command's help on tracing.
var tracingHelp = fmt.Sprintf(`
Tracing: the run continues the W3C trace context in $%s (and $%s),
if any, so its spans join the caller's trace; with %s=otlp:URL the run
opens its root span and exports it to that OTLP/HTTP receiver
(docs/tracing.md).`, EnvTraceparent, EnvTracestate, functionconfig.EnvTracing)
