package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/shared/tracing"
)

// Request is the proxy's request (docs/tools.md, "Platform tools"); this
// function reads the members it needs and ignores any other, as the
// contract asks (aws-lambda-go decodes the event with encoding/json,
// which skips unknown members), so that members the proxy adds later
// reach it harmlessly.
type Request struct {
	Input          TicketInput `json:"input"`
	IdempotencyKey string      `json:"idempotency_key"`
	Attempt        int         `json:"attempt"`
	// RunID is the run part of IdempotencyKey, opaque: the same for
	// every call of one run.
	RunID string `json:"run_id"`
	Step  string `json:"step"`
	Tool  string `json:"tool"`
	// Trace is the W3C trace context of the proxy's call span; absent
	// when the call has none.
	Trace Trace `json:"trace"`
}

// Trace is the request's trace member: the traceparent and tracestate
// HTTP headers' values (W3C Trace Context).
type Trace struct {
	Traceparent string `json:"traceparent"`
	Tracestate  string `json:"tracestate"`
}

// TicketInput is the tool's input, already validated by the proxy
// against the toolset's pinned input schema.
type TicketInput struct {
	Title    string `json:"title"`
	Body     string `json:"body,omitempty"`
	Priority string `json:"priority,omitempty"`
}

// Result is the tool's result: the ticket's id, and whether this call
// created it (false when an earlier attempt under the same key did).
type Result struct {
	TicketID string `json:"ticket_id"`
	Created  bool   `json:"created"`
}

// ErrorAnswer is the documented error shape: {"error": {"code", "message",
// "maybe_applied"}}.
type ErrorAnswer struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody is an ErrorAnswer's member.
type ErrorBody struct {
	Code         string `json:"code"`
	Message      string `json:"message"`
	MaybeApplied bool   `json:"maybe_applied,omitempty"`
}

// Handler creates tickets through the ticket service at Base.
type Handler struct {
	Base   string
	Client *http.Client
	// Tracer opens the function's span; nil (or off) exports none.
	Tracer *tracing.Tracer
}

// SpanName is the name of the span Handle opens for each request.
const SpanName = "create-ticket"

// Handle answers one request: a Result, or an ErrorAnswer for a failure
// the tool contract has a code for. It returns a Go error only for what
// it cannot answer at all, which the proxy reports as TOOL_INTERNAL.
//
// It continues the request's trace: one span, SpanName, of kind server,
// under the request's trace member (a new trace when it has none or it
// does not parse), whose status is the error code of a failure and which
// holds nothing of the input or the key. The span is flushed before
// Handle returns, since Lambda freezes the container once it has.
func (h *Handler) Handle(ctx context.Context, req Request) (answer any, err error) {
	carrier := propagation.MapCarrier{"traceparent": req.Trace.Traceparent, "tracestate": req.Trace.Tracestate}
	parent := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(ctx, carrier))
	ctx, span := h.Tracer.Start(ctx, SpanName, tracing.SpanOptions{Parent: parent, Kind: trace.SpanKindServer})
	defer func() {
		switch a := answer.(type) {
		case ErrorAnswer:
			span.SetStatus(codes.Error, a.Error.Code)
		default:
			if err != nil {
				span.SetStatus(codes.Error, "TOOL_INTERNAL")
			}
		}
		span.End()
		if ferr := h.Tracer.Flush(ctx); ferr != nil {
			slog.WarnContext(ctx, "create-ticket: spans not exported", "error", ferr)
		}
	}()
	return h.handle(ctx, req)
}

func (h *Handler) handle(ctx context.Context, req Request) (any, error) {
	if req.IdempotencyKey == "" {
		return fail("TOOL_INPUT_INVALID", "the request carries no idempotency key", false), nil
	}
	body, err := json.Marshal(req.Input)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(h.Base, "/")+"/tickets", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	// The ticket service keeps one ticket per Idempotency-Key: a retry
	// under the same key answers the ticket the first attempt created.
	hr.Header.Set("Idempotency-Key", req.IdempotencyKey)
	resp, err := h.Client.Do(hr)
	if err != nil {
		// The request may have reached the service.
		return fail("TOOL_UPSTREAM_UNAVAILABLE", "the ticket service did not answer", true), nil
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusOK:
		var t struct {
			ID string `json:"id"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&t); err != nil || t.ID == "" {
			return fail("TOOL_UPSTREAM_UNAVAILABLE", "the ticket service answered no ticket id", true), nil
		}
		return Result{TicketID: t.ID, Created: resp.StatusCode == http.StatusCreated}, nil
	case resp.StatusCode == http.StatusTooManyRequests:
		return fail("TOOL_RATE_LIMITED", "the ticket service is rate limiting", false), nil
	case resp.StatusCode >= 500:
		return fail("TOOL_UPSTREAM_UNAVAILABLE", fmt.Sprintf("the ticket service answered HTTP %d", resp.StatusCode), true), nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fail("TOOL_PERMISSION_DENIED", "the ticket service refused this function's credentials", false), nil
	default:
		return fail("TOOL_PERMANENT_FAILURE", fmt.Sprintf("the ticket service refused the ticket (HTTP %d)", resp.StatusCode), false), nil
	}
}

func fail(code, message string, maybeApplied bool) ErrorAnswer {
	return ErrorAnswer{Error: ErrorBody{Code: code, Message: message, MaybeApplied: maybeApplied}}
}
