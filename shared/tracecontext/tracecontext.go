// Package tracecontext reads, derives and writes the W3C trace context
// (https://www.w3.org/TR/trace-context/) of a run and of its calls.
//
// A run is one trace. Its trace id is the one the run was given
// (meta.traceparent, which toolgate run takes from TRACEPARENT), or else
// derived from the run id under the stage secret (TraceID), so that every
// function derives the same one without coordination. A call's step span
// id is derived from the trace id, the run id and the call's seq
// (StepSpanID): the attempts of one call are separate invocations, and
// each names the same parent. docs/tracing.md says why.
//
// Parsing uses OpenTelemetry's W3C propagator (go.opentelemetry.io/otel/
// propagation): a malformed traceparent or tracestate is dropped, never an
// error and never echoed.
package tracecontext

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"sync"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/shared/tool"
)

var w3c = propagation.TraceContext{}

// Parse is the span context tc carries, and whether it carries a valid
// one: a version-00 traceparent with a non-zero trace id and span id (W3C
// Trace Context Level 1 §3.2), and its tracestate when that is valid too
// (§3.3; an invalid one is dropped, the traceparent kept). The result is
// remote. Never an error: a caller's malformed context is ignored.
func Parse(tc tool.TraceContext) (trace.SpanContext, bool) {
	if tc.Traceparent == "" || len(tc.Traceparent) > tool.MaxTraceparentLength || len(tc.Tracestate) > tool.MaxTracestateLength {
		return trace.SpanContext{}, false
	}
	carrier := propagation.MapCarrier{"traceparent": tc.Traceparent}
	if tc.Tracestate != "" {
		carrier["tracestate"] = tc.Tracestate
	}
	sc := trace.SpanContextFromContext(w3c.Extract(context.Background(), carrier))
	if !sc.IsValid() {
		return trace.SpanContext{}, false
	}
	return sc, true
}

// Format is sc as W3C headers: a version-00 traceparent ("00-" 32 hex
// "-" 16 hex "-" 2 hex, 55 characters; W3C Trace Context Level 1 §3.2)
// and its tracestate ("" when it has none). An invalid sc gives the zero
// TraceContext. It writes the fixed form itself (one allocation: a call
// formats its context on every attempt); FuzzParse checks that Parse
// reads back what it writes.
func Format(sc trace.SpanContext) tool.TraceContext {
	if !sc.IsValid() {
		return tool.TraceContext{}
	}
	var b [tool.MaxTraceparentLength]byte
	traceID, spanID, flags := sc.TraceID(), sc.SpanID(), [1]byte{byte(sc.TraceFlags())}
	copy(b[:], "00-")
	hex.Encode(b[3:35], traceID[:])
	b[35] = '-'
	hex.Encode(b[36:52], spanID[:])
	b[52] = '-'
	hex.Encode(b[53:55], flags[:])
	return tool.TraceContext{Traceparent: string(b[:]), Tracestate: sc.TraceState().String()}
}

// Deriver derives runs' trace ids under one stage secret. It keeps
// keyed HMAC states for reuse, so that a call's derivation allocates
// almost nothing. Safe for concurrent use.
type Deriver struct {
	pool sync.Pool // of *keyed
}

// keyed is one HMAC-SHA256 state keyed with the secret, with the buffers
// a derivation writes its message and reads its sum into, reused whole.
type keyed struct {
	mac hash.Hash
	msg []byte
	sum [sha256.Size]byte
}

// hmacOf is the HMAC-SHA256 of the message parts under d's secret.
func (d *Deriver) hmacOf(parts ...string) [sha256.Size]byte {
	k := d.pool.Get().(*keyed)
	k.msg = k.msg[:0]
	for _, p := range parts {
		k.msg = append(k.msg, p...)
	}
	k.mac.Reset()
	k.mac.Write(k.msg)
	sum := [sha256.Size]byte(k.mac.Sum(k.sum[:0]))
	d.pool.Put(k)
	return sum
}

// NewDeriver is a Deriver for secret (the stage's external-key secret,
// shared/secrets).
func NewDeriver(secret []byte) *Deriver {
	key := bytes.Clone(secret)
	return &Deriver{pool: sync.Pool{New: func() any { return &keyed{mac: hmac.New(sha256.New, key)} }}}
}

// TraceLabel starts the message a run's trace id is the HMAC of, so that
// the same secret's HMAC of the bare run id (the external key's opaque
// run id, shared/externalkey) and a trace id, which is sent to every
// server a run calls, are unrelated (docs/tracing.md, "A run's trace").
const TraceLabel = "toolgate-trace-id/1\x00"

// TraceID is the trace id of a run given no context: the first 16 bytes
// of HMAC-SHA256 (RFC 2104) of TraceLabel and the run id under the stage
// secret, so every function derives the same one and a third party
// cannot confirm a guessed run id. A rotated secret gives a running run a
// second trace id (docs/tracing.md). Never all zeros (W3C §3.2.2.3 calls
// that invalid): such a digest takes a last byte of 1.
func (d *Deriver) TraceID(runID string) trace.TraceID {
	sum := d.hmacOf(TraceLabel, runID)
	var id trace.TraceID
	copy(id[:], sum[:])
	if !id.IsValid() {
		id[len(id)-1] = 1
	}
	return id
}

// TraceID is NewDeriver(secret).TraceID(runID).
func TraceID(secret []byte, runID string) trace.TraceID {
	return NewDeriver(secret).TraceID(runID)
}

// SpanLabel starts the message a step span's id is the HMAC of, apart
// from TraceLabel's.
const SpanLabel = "toolgate-span-id/1\x00"

// StepSpanID is the span id of a call's step span: the first 8 bytes of
// HMAC-SHA256, under the stage secret, of SpanLabel, the trace id, the
// run id and the seq, the last two each ended by a zero byte. Every
// attempt of the call (a separate invocation) derives the same id, and
// the attempt that ends the call emits the span (docs/tracing.md,
// "Spans"); keyed, so that whoever reads exported spans cannot test a
// guessed execution ARN against a span id. Never all zeros.
func (d *Deriver) StepSpanID(traceID trace.TraceID, runID string, seq tool.Seq) trace.SpanID {
	sum := d.hmacOf(SpanLabel, string(traceID[:]), runID, "\x00", string(seq), "\x00")
	var id trace.SpanID
	copy(id[:], sum[:])
	if !id.IsValid() {
		id[len(id)-1] = 1
	}
	return id
}

// StepSpanID is NewDeriver(secret).StepSpanID.
func StepSpanID(secret []byte, traceID trace.TraceID, runID string, seq tool.Seq) trace.SpanID {
	return NewDeriver(secret).StepSpanID(traceID, runID, seq)
}

// Call is where one call sits in its run's trace.
type Call struct {
	// Parent is the run's context, when the call carried a valid one
	// (the span toolgate run or a parent's workflow step opened); the
	// zero SpanContext when the trace id was derived (the run then has no
	// root span).
	Parent trace.SpanContext
	// Step is the call's step span: the trace id, StepSpanID, sampled.
	// The caller's sampled flag is not copied: it never forces export,
	// which is the deployment's choice alone (docs/tracing.md).
	Step trace.SpanContext
}

// ForCall places the call runID/seq in its run's trace: under carried
// when it parses (Parse), else under the trace id derived with secret
// (TraceID). It is NewDeriver(secret).ForCall.
func ForCall(secret []byte, runID string, seq tool.Seq, carried tool.TraceContext) Call {
	return NewDeriver(secret).ForCall(runID, seq, carried)
}

// ForCall places the call runID/seq in its run's trace: under carried
// when it parses (Parse), else under the trace id d derives (TraceID).
func (d *Deriver) ForCall(runID string, seq tool.Seq, carried tool.TraceContext) Call {
	var c Call
	var traceID trace.TraceID
	if sc, ok := Parse(carried); ok {
		c.Parent, traceID = sc, sc.TraceID()
	} else {
		traceID = d.TraceID(runID)
	}
	c.Step = trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    traceID,
		SpanID:     d.StepSpanID(traceID, runID, seq),
		TraceFlags: trace.FlagsSampled,
		TraceState: c.Parent.TraceState(),
		Remote:     true,
	})
	return c
}
