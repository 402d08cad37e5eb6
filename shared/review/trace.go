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
// (tracecontext.StepSpanID): "review/<review id>", so that every review
// of a run (a for_each's, a loop's, a retried Task's) has a span of its
// own. No call's seq holds "/" (tool.Seq), so a review's span id is never
// a call's.
const reviewSeqPrefix = "review/"

// PlaceInTrace sets r.Traceparent, which holds the traceparent the review
// Task carried (New: Params.Traceparent), to the review's own span in its
// run's trace, and returns that span's parent. The trace is the carried
// context's when it parses (tracecontext.Parse: the run's root span,
// which toolgate run opened; then it is the parent), else the one derived
// from the run id under secret (tracecontext.TraceID; no parent). The
// span id is tracecontext.StepSpanID(secret, trace id, run id, "review/<review id>"),
// sampled: review-request opens the span "toolgate.review.create" with
// it, and review-decision "toolgate.review.decide" under it
// (docs/tracing.md). A malformed carried value is dropped, never an
// error.
func (r *Review) PlaceInTrace(secret []byte) (parent trace.SpanContext) {
	// A review is placed as a call at the seq "review/<review id>" is.
	c := tracecontext.ForCall(secret, r.RunID, tool.Seq(reviewSeqPrefix+r.ID), tool.TraceContext{Traceparent: r.Traceparent})
	r.Traceparent = tracecontext.Format(c.Step).Traceparent
	return c.Parent
}

// Span is r's own span context (Traceparent, as PlaceInTrace set it), and
// whether it has a valid one (a review stored before reviews had one has
// none).
func (r *Review) Span() (trace.SpanContext, bool) {
	return tracecontext.Parse(tool.TraceContext{Traceparent: r.Traceparent})
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
