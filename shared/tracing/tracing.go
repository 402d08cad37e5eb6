package tracing

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/shared/functionconfig"
)

// FlushTimeout bounds Flush: what a handler adds to an invocation so that
// its spans leave before Lambda freezes the container (docs/tracing.md,
// "Export"). Spans that cannot be sent in that time are dropped; the call
// itself is never failed or delayed further by tracing.
const FlushTimeout = 200 * time.Millisecond

// ScopeName is the instrumentation scope of toolgate's spans.
const ScopeName = "toolgate"

// Tracer opens spans for one function (its service.name). The zero
// Tracer and a nil *Tracer are off. Safe for concurrent use.
type Tracer struct {
	provider *sdktrace.TracerProvider // nil when off
	tracer   trace.Tracer
}

// New is a Tracer for the function service that exports to the OTLP/HTTP
// receiver at endpoint (a base URL as functionconfig.ParseTracing returns
// it), or an off Tracer when endpoint is "". client sends the exports;
// nil: a client with FlushTimeout as its timeout.
func New(endpoint, service string, client *http.Client) *Tracer {
	if endpoint == "" {
		return &Tracer{}
	}
	exp := &Exporter{Endpoint: endpoint + "/v1/traces", Client: client}
	provider := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Hour), sdktrace.WithExportTimeout(FlushTimeout)),
		// The deployment decides export; a caller's sampled flag never
		// forces nor stops it.
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithIDGenerator(ids{}),
		sdktrace.WithResource(sdkresource.NewSchemaless(attribute.String("service.name", service))),
	)
	return &Tracer{provider: provider, tracer: provider.Tracer(ScopeName)}
}

// FromEnv is New for the setting in functionconfig.EnvTracing, read with
// getenv. Its error is ParseTracing's.
func FromEnv(getenv func(string) string, service string) (*Tracer, error) {
	endpoint, err := functionconfig.ParseTracing(getenv(functionconfig.EnvTracing))
	if err != nil {
		return nil, err
	}
	return New(endpoint, service, nil), nil
}

// Exporting reports whether t exports its spans.
func (t *Tracer) Exporting() bool { return t != nil && t.provider != nil }

// SpanOptions are what Start opens a span with.
type SpanOptions struct {
	// Parent is the span's parent: a remote context a call carried, or a
	// span this function opened. The zero SpanContext opens a root span
	// (of TraceID's trace when set, else of a new trace).
	Parent trace.SpanContext
	// TraceID is the trace of a root span (Parent zero): a run's derived
	// trace id (shared/tracecontext). Zero: a new random one.
	TraceID trace.TraceID
	// SpanID, when set, is the span's own id instead of a random one: a
	// call's step span, whose id every attempt derives.
	SpanID trace.SpanID
	// Start is the span's start time; zero: now.
	Start time.Time
	// Kind is the span's kind (internal when zero).
	Kind trace.SpanKind
	// Attributes are set at start.
	Attributes []attribute.KeyValue
}

// Start opens a span named name as o says and returns it with a context
// holding it. Off, the span records nothing and exports nothing, but its
// SpanContext is valid and new (o.SpanID or a random span id, sampled),
// under Parent's trace or TraceID's, so that it can be sent on.
func (t *Tracer) Start(ctx context.Context, name string, o SpanOptions) (context.Context, trace.Span) {
	traceID := o.TraceID
	if o.Parent.IsValid() {
		traceID = o.Parent.TraceID()
	}
	if !t.Exporting() {
		sc := newSpanContext(traceID, o.SpanID, o.Parent.TraceState())
		ctx = trace.ContextWithSpanContext(ctx, sc)
		return ctx, trace.SpanFromContext(ctx)
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(o.Kind), trace.WithAttributes(o.Attributes...)}
	if !o.Start.IsZero() {
		opts = append(opts, trace.WithTimestamp(o.Start))
	}
	if o.Parent.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, o.Parent)
	} else {
		opts = append(opts, trace.WithNewRoot())
	}
	return t.tracer.Start(context.WithValue(ctx, forcedKey{}, forced{traceID, o.SpanID}), name, opts...)
}

// Emit records one finished span of name, as o says, from o.Start (now
// when zero) to now, with status OK, or ERROR described by errorCode
// alone when it is not "" (a code, never a message), and flushes it
// (Flush). It is what a handler that opens one span per request calls
// once its answer is decided; off, it does nothing. Its error is
// Flush's, for a log line.
func (t *Tracer) Emit(ctx context.Context, name string, o SpanOptions, errorCode string) error {
	if !t.Exporting() {
		return nil
	}
	_, span := t.Start(ctx, name, o)
	if errorCode != "" {
		span.SetStatus(codes.Error, errorCode)
	} else {
		span.SetStatus(codes.Ok, "")
	}
	span.End()
	return t.Flush(ctx)
}

// Child is the context of a new span under parent that nothing records: a
// random span id, parent's trace id (a new random one when parent is
// invalid) and tracestate, sampled. It is what Start's span has when t is
// off, without a span or a context.Context (the dispatcher's path when
// nothing is exported: no allocation).
func Child(parent trace.SpanContext) trace.SpanContext {
	var traceID trace.TraceID
	if parent.IsValid() {
		traceID = parent.TraceID()
	}
	return newSpanContext(traceID, trace.SpanID{}, parent.TraceState())
}

// newSpanContext is a sampled span context with traceID and spanID, each
// random when zero.
func newSpanContext(traceID trace.TraceID, spanID trace.SpanID, state trace.TraceState) trace.SpanContext {
	if !traceID.IsValid() {
		traceID = randomTraceID()
	}
	if !spanID.IsValid() {
		spanID = randomSpanID()
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled, TraceState: state})
}

// FlushDeadlineMargin is what Flush leaves of ctx's deadline (a Lambda
// invocation's): it never waits past the deadline less this margin.
const FlushDeadlineMargin = 50 * time.Millisecond

// Flush sends the spans ended so far, waiting at most FlushTimeout, and
// never past ctx's deadline less FlushDeadlineMargin (with less time
// left it sends nothing and says so); ctx's cancellation does not stop
// it, since a handler calls it once its answer is decided, before it
// returns. It never fails the call: its error (no time left, a receiver
// that did not answer in time, or refused) is for a log line.
func (t *Tracer) Flush(ctx context.Context) error {
	if !t.Exporting() {
		return nil
	}
	budget := FlushTimeout
	if deadline, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(deadline)-FlushDeadlineMargin)
	}
	if budget <= 0 {
		return errors.New("tracing: spans not exported: the invocation's deadline is too near")
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()
	if err := t.provider.ForceFlush(ctx); err != nil {
		return fmt.Errorf("tracing: spans not exported: %w", err)
	}
	return nil
}

// Shutdown flushes and stops t (tests, and the CLI before it exits).
func (t *Tracer) Shutdown(ctx context.Context) error {
	if !t.Exporting() {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// forced is the trace id and span id Start asks the SDK's ID generator
// for (zero: random).
type forced struct {
	traceID trace.TraceID
	spanID  trace.SpanID
}

type forcedKey struct{}

// ids is the SDK's IDGenerator: the ids Start was given, else random.
type ids struct{}

func (ids) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	f, _ := ctx.Value(forcedKey{}).(forced)
	traceID, spanID := f.traceID, f.spanID
	if !traceID.IsValid() {
		traceID = randomTraceID()
	}
	if !spanID.IsValid() {
		spanID = randomSpanID()
	}
	return traceID, spanID
}

func (ids) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if f, _ := ctx.Value(forcedKey{}).(forced); f.spanID.IsValid() {
		return f.spanID
	}
	return randomSpanID()
}

// randomTraceID and randomSpanID are W3C's random ids (Trace Context
// Level 2 §3.2.2.3: randomly generated, never all zeros), from the
// runtime's ChaCha8 generator.
func randomTraceID() trace.TraceID {
	var id trace.TraceID
	for !id.IsValid() {
		a, b := rand.Uint64(), rand.Uint64()
		for i := range 8 {
			id[i], id[8+i] = byte(a>>(8*i)), byte(b>>(8*i))
		}
	}
	return id
}

func randomSpanID() trace.SpanID {
	var id trace.SpanID
	for !id.IsValid() {
		a := rand.Uint64()
		for i := range 8 {
			id[i] = byte(a >> (8 * i))
		}
	}
	return id
}
