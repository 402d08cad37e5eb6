package review

import (
	"encoding/json"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/tracecontext"
)

// A review and a child run each have a place in their run's trace
// (docs/reviews.md, "Trace context"; docs/solutions.md, "Workflow
// steps"). Both are derived under the stage's external key
// (shared/secrets), as the dispatcher derives a call's, so that every
// function agrees without coordination.

// reviewSeqPrefix starts the seq a review's span id is derived from
// (tracecontext.StepSpanID): "review/<review step id>". A review Task
// carries no seq of the call it reviews (the counter advances after the
// review), and no call's seq holds "/" (tool.Seq), so a review's span id
// is never a call's.
const reviewSeqPrefix = "review/"

// PlaceInTrace sets r.Traceparent, which holds the traceparent the review
// Task carried (New: Params.Traceparent), to the review's place in its
// run's trace: the carried context, when it parses (tracecontext.Parse;
// the run's root span, which toolgate run opened), written back in W3C
// form; else a span of the trace derived from the run id under secret
// (tracecontext.TraceID), with the span id
// tracecontext.StepSpanID(trace id, run id, "review/<step>"), sampled.
// A malformed carried value is dropped, never an error.
func (r *Review) PlaceInTrace(secret []byte) {
	if sc, ok := tracecontext.Parse(tool.TraceContext{Traceparent: r.Traceparent}); ok {
		r.Traceparent = tracecontext.Format(sc).Traceparent
		return
	}
	traceID := tracecontext.TraceID(secret, r.RunID)
	r.Traceparent = tracecontext.Format(trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    traceID,
		SpanID:     tracecontext.StepSpanID(traceID, r.RunID, tool.Seq(reviewSeqPrefix+r.Step)),
		TraceFlags: trace.FlagsSampled,
		Remote:     true,
	})).Traceparent
}

// ChildTraceparent is the traceparent a workflow step's child starts
// with (its meta.traceparent): the step's span, as the dispatcher derives
// a call's (tracecontext.ForCall of the parent's run id and the step's
// seq, under the parent's carried context when it parses, else under the
// trace id derived with secret), in W3C form (55 characters).
func ChildTraceparent(secret []byte, parentRunID string, seq tool.Seq, carried tool.Traceparent) string {
	return tracecontext.Format(tracecontext.ForCall(secret, parentRunID, seq, carried.Context()).Step).Traceparent
}

// withChildTraceparent is the child's execution input input with
// meta.traceparent set to tp: its members (top level and meta's) as
// they were, re-encoded compact. The digest of the result is what the
// parent records (tool.InputDigest, over RFC 8785's form, so the order
// and spacing of members do not matter) and what the start sends.
func withChildTraceparent(input json.RawMessage, tp string) (json.RawMessage, error) {
	top, err := tool.DecodeObject("input", input)
	if err != nil {
		return nil, err
	}
	meta, err := tool.DecodeObject("input field \"meta\"", top["meta"])
	if err != nil {
		return nil, err
	}
	if meta["traceparent"], err = json.Marshal(tp); err != nil {
		return nil, err
	}
	if top["meta"], err = json.Marshal(meta); err != nil {
		return nil, fmt.Errorf("input field \"meta\": %w", err)
	}
	return json.Marshal(top)
}
